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


def lease_release(*, channel_id: int, holder: str, outcome: str, error: str = "", auto: bool = False) -> bool:
    """Give the lease back and record the outcome; False if it was no longer ours.

    `outcome` is "success", "dry_run", "skipped" or "failed"; a failure
    counts towards `failure_count`, a success resets it.
    """
    now = timezone.now()
    changes: dict = {"holder": "", "expires_at": None, "last_finished_at": now, "last_outcome": outcome[:32],
                     "last_error": error[:4000]}
    if outcome == "failed":
        changes["failure_count"] = F("failure_count") + 1
    elif outcome == "success":
        changes["failure_count"] = 0
        if auto:
            changes["last_auto_at"] = now
    return CompactionLease.objects.filter(channel_id=channel_id, holder=holder).update(**changes) == 1
