"""The compaction app's use cases; every interface calls these."""

from compaction.services.branch import summary_branch
from compaction.services.compact import CompactionResult, channel_compact
from compaction.services.profiles import (
    profile_create,
    profile_delete,
    profile_duplicate,
    profile_export,
    profile_import,
    profile_reset,
    profile_resolve,
    profile_update,
)

__all__ = [
    "CompactionResult",
    "channel_compact",
    "summary_branch",
    "profile_create",
    "profile_delete",
    "profile_duplicate",
    "profile_export",
    "profile_import",
    "profile_reset",
    "profile_resolve",
    "profile_update",
]
