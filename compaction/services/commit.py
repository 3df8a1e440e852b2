"""Writing a draft: one atomic block that first re-checks that the channel did
not change underneath and that the lease is still ours (invariant 3), then
writes the summary, the audit row, and announces it after commit."""

from collections.abc import Callable

from django.contrib.auth.models import User
from django.db import transaction

from chatcore import selectors as chatcore_selectors
from chatcore.errors import Conflict
from chatcore.locks import channel_lock_with_cursor
from chatcore.models import Channel, Cursor, Summary
from chatcore.services import audit_record, summary_write
from compaction.leases import lease_release
from compaction.models import CompactionLease
from compaction.services.draft import Draft, DraftRequest

SYSTEM_ACTOR = "system:compaction"


def _locked_with_owner_cursor(*, channel: Channel) -> tuple[Channel, Cursor | None]:
    """The channel locked, and its owner's cursor as it is under the lock: read in the lock's statement (the
    owner known from the channel the compaction loaded), or after it when that statement could not give it
    (no cursor, a cursor moved while the lock was awaited, or a channel that changed hands meanwhile)."""
    locked, cursor = channel_lock_with_cursor(channel_id=channel.pk, user_id=channel.owner_id)
    if locked.owner_id != channel.owner_id:
        return locked, chatcore_selectors.cursor_get(channel=locked, user=locked.owner)
    if cursor is None:
        cursor = chatcore_selectors.cursor_get(channel=locked, user=channel.owner)
    return locked, cursor


def _check_unchanged(*, cursor: Cursor | None, draft: Draft) -> None:
    """Conflict unless the owner's path (`cursor`, read under the lock) still holds the draft's boundary and
    summarized messages."""
    previous, through = draft.previous, draft.through
    if cursor is None or cursor.summary_id != (previous.pk if previous else None):
        raise Conflict(
            "The channel changed during the compaction (its summary in force is not the same); nothing was written.",
            code="channel_changed",
        )
    if cursor.leaf_id != draft.plan.leaf.pk:
        on_path = chatcore_selectors.message_path(leaf_id=cursor.leaf_id, after_depth=through.depth - 1)
        if not on_path or on_path[0].pk != through.pk:
            raise Conflict(
                "The channel changed during the compaction (the active branch no longer contains "
                "the summarized messages); nothing was written.",
                code="channel_changed",
            )


def draft_commit(
    *,
    request: DraftRequest,
    draft: Draft,
    actor: User | None,
    holder: str,
    record: bool,
    announce: Callable[[Channel, Summary], None],
) -> Summary:
    """Write the draft as the channel's new boundary, giving the lease back in the same transaction.

    Raises Conflict (channel_changed, lease_lost) and writes nothing then.
    `announce` runs after commit with the locked channel and the summary.
    """
    channel, summarized = request.channel, draft.summarized
    with transaction.atomic():
        locked, cursor = _locked_with_owner_cursor(channel=channel)
        _check_unchanged(cursor=cursor, draft=draft)
        if not lease_release(channel_id=channel.pk, holder=holder, outcome=CompactionLease.Outcome.DONE, record=record):
            raise Conflict(
                "This compaction's lease expired and was taken over; nothing was written.", code="lease_lost"
            )
        summary = summary_write(
            channel=locked,
            through_message=draft.through,
            content=draft.text,
            created_by=actor,
            trigger=request.trigger,
            profile_slug=request.profile.slug,
            messages_covered=draft.through.depth + 1,
            extracts=draft.extracts,
            edited=request.edited,
            **draft.figures(),
        )
        audit_record(
            actor=actor,
            actor_label=SYSTEM_ACTOR if request.trigger == Summary.Trigger.AUTO else "",
            action="summary.compact",
            resource=f"summary:{summary.pk}",
            details={
                "channel": channel.pk,
                "trigger": request.trigger,
                "profile": request.profile.slug,
                "model": summarized.model,
                "used_fallback": summarized.used_fallback,
                "summarized": len(draft.plan.to_summarize),
                "tokens_before": draft.tokens_before,
                "tokens_after": draft.tokens_after,
                "edited": request.edited,
                "redactions": dict(draft.redactions),
            },
        )
        transaction.on_commit(lambda: announce(locked, summary))
    return summary
