"""The per-channel compaction lease (invariant 4).

Every process and machine shares one database, so the lease lives there: a
row per channel, taken by a conditional UPDATE that succeeds only when the
row is free or its expiry has passed. Two takers can never both see one row
updated. No transaction is held while the lease is owned: the holder works
in autocommit and gives the lease back when it is done, recording how it
ended; a holder that dies simply lets the expiry pass.
"""

import os
import socket
import uuid
from datetime import timedelta

from django.db.models import F, Q
from django.utils import timezone

from compaction.models import CompactionLease


def lease_holder_name() -> str:
    """Unique per attempt, readable in the admin: host, process, random tag."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_acquire(*, channel_id: int, holder: str, seconds: int) -> bool:
    """Take the channel's lease if it is free or expired; True when taken."""
    CompactionLease.objects.bulk_create([CompactionLease(channel_id=channel_id)], ignore_conflicts=True)
    now = timezone.now()
    taken = (
        CompactionLease.objects.filter(channel_id=channel_id)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__lte=now))
        .update(holder=holder, expires_at=now + timedelta(seconds=seconds), last_started_at=now)
    )
    return taken == 1


def lease_release(*, channel_id: int, holder: str, outcome: str = "", error: str = "", record: bool = True) -> bool:
    """Give the lease back; False if it was no longer ours.

    With `record`, also note how the attempt ended ("done", "failed",
    "nothing": the scanner's words): a failure counts towards
    `failure_count` and keeps its error, a success resets both. Automatic
    attempts pass record=False because the scanner's task records their
    outcome itself, and dry runs because they change nothing.
    """
    changes: dict = {"holder": "", "expires_at": None}
    if record:
        changes.update(last_finished_at=timezone.now(), last_outcome=outcome[:32], last_error=error[:4000])
        if outcome == "failed":
            changes["failure_count"] = F("failure_count") + 1
        elif outcome == "done":
            changes["failure_count"] = 0
    return CompactionLease.objects.filter(channel_id=channel_id, holder=holder).update(**changes) == 1
