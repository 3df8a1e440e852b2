"""The compaction app's admin: automatic compaction (settings, leases) and the
profiles with the channel and summary actions that call the compaction service."""

from compaction.admin import profiles, settings

__all__ = ["profiles", "settings"]
