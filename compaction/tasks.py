"""django-q2 tasks: primitive arguments, re-fetch, one service call each."""

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
