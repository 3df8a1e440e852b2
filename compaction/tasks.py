"""django-q2 tasks: primitive arguments, re-fetch, one service call each."""

from compaction.scanner.services import auto_compaction_run, scan_run


def scan() -> dict:
    """The scheduled tick (Schedule `compaction-scan`)."""
    report = scan_run(source="scan")
    return {"enabled": report.enabled, "candidates": len(report.decisions), "enqueued": report.enqueued}


def auto_compact(channel_id: int, ticket: str | None = None) -> str:
    """One automatic compaction; `ticket` is the reservation made by a scan,
    None when the event trigger asks (the task then checks and reserves)."""
    outcome = auto_compaction_run(channel_id=channel_id, ticket=ticket)
    return f"{outcome.outcome}: {outcome.detail}" if outcome.detail else outcome.outcome
