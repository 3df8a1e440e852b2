"""django-q2 tasks: primitive arguments, re-fetch, one service call each."""

from compaction import conf
from compaction.imports.jobs import import_run
from compaction.scanner.services import auto_compaction_drain, scan_run


def scan() -> dict:
    """The scheduled tick (Schedule `compaction-scan`)."""
    report = scan_run(source="scan")
    return {"enabled": report.enabled, "candidates": len(report.decisions), "enqueued": report.enqueued}


def auto_compact(channel_id: int, ticket: str | None = None) -> str:
    """Automatic compaction of the channel; `ticket` is the reservation made by
    a scan, None when the event trigger asks (the task then checks and
    reserves). The worker may go on with channels it reserves for itself."""
    outcomes = auto_compaction_drain(channel_id=channel_id, ticket=ticket)
    return "; ".join(f"channel {o.channel_id} {o.outcome}" + (f": {o.detail}" if o.detail else "") for o in outcomes)


def conversations_import(import_id: int) -> str:
    """Go on with an import for one slice of time (the next slice is queued by the run itself)."""
    job = import_run(import_id=import_id, slice_seconds=conf.IMPORT_SLICE_SECONDS)
    if job is None:
        return f"import {import_id}: gone"
    return f"import {import_id} {job.status}: {job.conversations_done} of {job.conversations_total} conversations"
