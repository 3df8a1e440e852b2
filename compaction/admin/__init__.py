"""The compaction app's admin: automatic compaction (settings, leases) and the
profiles with the channel and summary actions that call the compaction service,
and the staff usage dashboard."""

from compaction.admin import dashboard, profiles, settings

__all__ = ["dashboard", "profiles", "settings"]
