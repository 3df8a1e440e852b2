"""Users' control over their data: purge what a summary covers, delete a
channel with everything in it, and (staff) export a channel as JSON.

Purging blanks the covered messages instead of deleting them: the tree's
shape, each message's depth and the running totals stored at insert stay
exactly as they were, so every other path, boundary and pressure figure stays
consistent (invariant 1 is about compaction; a purge is the owner's explicit
choice, confirmed, and audited). A summary whose originals were purged can no
longer be reverted: there would be nothing to go back to.

The summaries of that path still quote their originals (chatcore.quotes): a
purge finds those passages before it blanks the messages, says how many stay,
and records where they are on each summary, so that the owner can have them
blanked too, then or later (`quotes=True`). That is a purge of the summaries'
text the same way: each passage replaced by a marker, a note at the end saying
how many were removed, the time on the row, an audit row; never silent.
"""

import dataclasses
import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from chatcore import conf
from chatcore.errors import Conflict, NotFound
from chatcore.locks import channel_lock, summaries_lock, summary_lock
from chatcore.models import Channel, Cursor, Message, Summary
from chatcore.permissions import EXPORT_ANY_CHANNEL
from chatcore.quotes import quotes_blanked_all, quotes_count, quotes_found, source_grams
from chatcore.services import audit_record, cursors_refresh
from chatcore.tokens import count_tokens

EXPORT_FORMAT = "compaction-channel-export/1"


@dataclasses.dataclass(frozen=True)
class PurgeResult:
    summary_id: int
    channel_id: int
    purged_count: int
    already_purged: int
    quotes_kept: int = 0  # passages of the path's summaries that still quote the purged messages
    quotes_removed: int = 0


def summary_get_for_owner(*, user: User, summary_id: Any) -> Summary:
    """A summary of one of the user's live channels; anything else is 'not found'."""
    try:
        return Summary.objects.select_related("channel", "through_message").get(
            pk=summary_id, channel__owner=user, channel__deleted_at__isnull=True
        )
    except (Summary.DoesNotExist, ValueError, TypeError):
        raise NotFound("Summary not found.") from None


def channel_get_for_staff(*, channel_id: Any) -> Channel:
    """Any channel, deleted ones included: staff export what exists."""
    try:
        return Channel.objects.select_related("owner", "persona", "model").get(pk=channel_id)
    except (Channel.DoesNotExist, ValueError, TypeError):
        raise NotFound("Channel not found.") from None


def _path_ids(*, leaf_id: int) -> list[int]:
    table = Message._meta.db_table
    sql = f"""
        WITH RECURSIVE up(id, parent_id) AS (
            SELECT id, parent_id FROM {table} WHERE id = %s
            UNION ALL
            SELECT m.id, m.parent_id FROM {table} m JOIN up ON m.id = up.parent_id
        )
        SELECT id FROM up
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [leaf_id])
        return [row[0] for row in cursor.fetchall()]


def _quotes_offer(count: int) -> str:
    passages = "1 passage" if count == 1 else f"{count:,} passages"
    return (
        f"The summaries of these messages quote {passages} of them word for word; they stay unless you also "
        "send quotes=true, which blanks them in the summaries (each says where)."
    )


def _require_confirmation(confirm: Any, *, quotes: int) -> None:
    if confirm is not True:
        offer = f" {_quotes_offer(quotes)}" if quotes else ""
        raise ValidationError({"confirm": f"Purging cannot be undone: send confirm=true to go ahead.{offer}"})


def _path_summaries(*, channel_id: int, ids: list[int]) -> list[Summary]:
    """Every summary of the path (the one purged through, those it updated, reverted ones): all quote it."""
    return list(Summary.objects.filter(channel_id=channel_id, through_message_id__in=ids).order_by("pk"))


def _quotes_record(*, summaries: list[Summary], sources: list[str]) -> None:
    """Each summary's record of where it quotes `sources`, added to what an earlier purge recorded (saved by
    the caller)."""
    grams = source_grams(sources)
    if not grams:
        return
    for summary in summaries:
        summary.purged_quotes = quotes_found(
            content=summary.content, extracts=summary.extracts, grams=grams, known=summary.purged_quotes
        )


def _quotes_blank(summaries: list[Summary]) -> int:
    """Blank every recorded passage (and say so at the end of each text); how many were removed."""
    removed, now = 0, timezone.now()
    for summary in summaries:
        count = quotes_count(summary.purged_quotes)
        if not count:
            continue
        summary.content, summary.extracts = quotes_blanked_all(
            content=summary.content, extracts=summary.extracts, record=summary.purged_quotes
        )
        summary.tokens = count_tokens(summary.content) + conf.MESSAGE_OVERHEAD_TOKENS
        summary.purged_quotes, summary.quotes_purged_at = {}, now
        removed += count
    return removed


def summary_purge_preview(*, summary: Summary) -> int:
    """How many passages of the path's summaries quote the messages a purge through `summary` would blank."""
    ids = _path_ids(leaf_id=summary.through_message_id)
    summaries = _path_summaries(channel_id=summary.channel_id, ids=ids)
    sources = Message.objects.filter(pk__in=ids, purged_at__isnull=True).values_list("content", flat=True)
    _quotes_record(summaries=summaries, sources=list(sources))
    return sum(quotes_count(s.purged_quotes) for s in summaries)


@transaction.atomic
def summary_purge(*, summary: Summary, actor: User, confirm: bool, quotes: bool = False) -> PurgeResult:
    """Blank the content of every message the summary stands in for (the path
    from the root through its message) and mark them purged; with `quotes`,
    blank the passages of the path's summaries that quote them too (now, or
    after an earlier purge that kept them).

    Only an active summary can be purged through: a reverted one no longer
    stands in for anything, so its originals are what the model reads.
    """
    if confirm is not True:
        _require_confirmation(confirm, quotes=summary_purge_preview(summary=summary))
    channel, summary = summary_lock(summary=summary)
    if summary.reverted_at is not None:
        raise Conflict(
            "This summary was reverted: its messages are in the context again and cannot be purged through it.",
            code="summary_reverted",
        )
    ids = _path_ids(leaf_id=summary.through_message_id)
    summaries = summaries_lock(channel=channel, through_message_ids=ids)  # the same rows, locked
    covered = Message.objects.filter(pk__in=ids)
    sources = list(covered.filter(purged_at__isnull=True).values_list("content", flat=True))
    _quotes_record(summaries=summaries, sources=sources)
    already = len(ids) - len(sources)
    purged = covered.filter(purged_at__isnull=True).update(
        content="", metadata={"purged": True}, purged_at=timezone.now()
    )
    removed = _quotes_blank(summaries) if quotes else 0
    kept = sum(quotes_count(s.purged_quotes) for s in summaries)
    fields = ["purged_quotes", "content", "extracts", "tokens", "quotes_purged_at"]
    Summary.objects.bulk_update(summaries, fields if removed else ["purged_quotes"])
    # Always, not only when quotes went: the cursors' rows then change, so a reply that read the channel before
    # this purge cannot write from that read (chatcore.locks.RowsSeen) and reads the blanked messages under the
    # lock instead; and the summary in force may be shorter now (its quotes blanked): the pressure follows.
    cursors_refresh(channel=channel)
    audit_record(
        actor=actor,
        action="summary.purge",
        resource=f"summary:{summary.pk}",
        details={
            "channel": summary.channel_id,
            "through_message": summary.through_message_id,
            "purged": purged,
            "already_purged": already,
            "quotes_kept": kept,
            "quotes_removed": removed,
            "summaries": [s.pk for s in summaries],
        },
    )
    return PurgeResult(summary.pk, summary.channel_id, purged, already, kept, removed)


def purge_note(result: PurgeResult) -> str:
    """What a purge did to the summaries' text, in words for the person (empty when they quote nothing)."""
    if result.quotes_kept:
        return _quotes_offer(result.quotes_kept)
    if result.quotes_removed:
        count = result.quotes_removed
        passages = "1 passage" if count == 1 else f"{count:,} passages"
        blanked = "was" if count == 1 else "were"
        return f"{passages} of the summaries quoted the purged messages and {blanked} blanked; each summary says where."
    return ""


@transaction.atomic
def channel_purge(*, channel: Channel, actor: User) -> dict[str, int]:
    """Delete the channel and everything in it: messages, summaries, cursors,
    its compaction lease. Usage rows stay for accounting, detached from it
    (they hold counts and model names, no content); the audit row says what
    went, by number only."""
    channel = channel_lock(channel_id=channel.pk)
    counts = {
        "messages": Message.objects.filter(channel=channel).count(),
        "summaries": Summary.objects.filter(channel=channel).count(),
    }
    Cursor.objects.filter(channel=channel).delete()
    Summary.objects.filter(channel=channel).delete()
    # Children before parents would take one statement per level; unhooking
    # the tree first deletes any depth in two statements.
    Message.objects.filter(channel=channel).update(parent=None)
    Message.objects.filter(channel=channel).delete()
    channel_id = channel.pk
    channel.delete()
    audit_record(actor=actor, action="channel.purge", resource=f"channel:{channel_id}", details=counts)
    return counts


_MESSAGE_FIELDS = (
    *("id", "parent_id", "role", "content", "metadata", "author_id", "created_at", "depth", "tokens", "purged_at"),
)
_SUMMARY_FIELDS = (
    *("id", "through_message_id", "previous_id", "content", "tokens", "trigger", "profile_slug", "model"),
    *("used_fallback", "input_tokens", "output_tokens", "tokens_before", "tokens_after", "messages_covered"),
    *("extracts", "edited", "reverted_at", "quotes_purged_at", "created_by_id", "created_at"),
)


def _row(obj: Any, fields: tuple[str, ...]) -> dict:
    """The named attributes of a row, times as ISO 8601 text."""
    values = {name: getattr(obj, name) for name in fields}
    return {
        name: value.isoformat() if isinstance(value, datetime.datetime) else value for name, value in values.items()
    }


def _channel_row(channel: Channel) -> dict:
    return {
        **_row(channel, ("id", "title", "type", "owner_id")),
        "persona": channel.persona.slug if channel.persona else None,
        "model": channel.model.name if channel.model else None,
        **_row(channel, ("settings", "archived", "ephemeral", "deleted_at", "created_at", "last_activity_at")),
        "branched_from": channel.branched_from_id,
        "branched_from_summary": channel.branched_from_summary_id,
    }


def channel_export(*, channel: Channel, actor: User) -> dict:
    """The whole channel as one JSON-ready document: every message of every
    branch (purged ones as they are now), every summary (reverted ones too),
    and the cursors. Needs `chatcore.export_channel` (PermissionDenied otherwise); audited, since staff read
    other people's data here."""
    EXPORT_ANY_CHANNEL.check(actor)
    messages: QuerySet[Message] = Message.objects.filter(channel=channel).order_by("id")
    summaries = Summary.objects.filter(channel=channel).order_by("id")
    cursors = Cursor.objects.filter(channel=channel).order_by("id")
    document = {
        "format": EXPORT_FORMAT,
        "exported_at": timezone.now().isoformat(),
        "channel": _channel_row(channel),
        "messages": [_row(m, _MESSAGE_FIELDS) for m in messages],
        "summaries": [_row(s, _SUMMARY_FIELDS) for s in summaries],
        "cursors": [_row(c, ("user_id", "leaf_id", "summary_id")) for c in cursors],
    }
    audit_record(
        actor=actor,
        action="channel.export",
        resource=f"channel:{channel.pk}",
        details={"messages": len(document["messages"]), "summaries": len(document["summaries"])},
    )
    return document
