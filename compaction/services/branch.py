"""Branching: continue in a new channel that starts from a summary.

A branch carries everything after its summary (docs/design.md, invariant 9): the
new channel opens with the summary, shown as a carried-over summary block,
followed by copies of the messages the summary did not cover (the kept
ones), in order, each with provenance metadata pointing at its original. So
the source's path is exactly the summary's covered messages plus what was
copied, and nothing said after the summary is lost to the new channel.
"""

from __future__ import annotations

import dataclasses

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from chatcore import selectors as chatcore_selectors
from chatcore.bulk import NewMessage, messages_bulk_import
from chatcore.errors import Conflict, NotFound, Unprocessable
from chatcore.metadata.stored import metadata_repaired
from chatcore.models import Channel, Message, Summary
from chatcore.services import audit_record, channel_create
from chatcore.teams.budgets import team_budget_check
from chatcore.throttling import expensive_call
from compaction import conf
from compaction.redaction import redact

BRANCH_OPENING = (
    '[Summary of the earlier conversation "{title}", carried over when this channel was branched from it. '
    "It is background for reference, written by a summarizer, not a new request.]\n\n{content}"
)
BRANCH_SUMMARY_KIND = "branch_summary"


@dataclasses.dataclass
class _Source:
    """What the branch starts from: the summary's text, the last message it covers and what follows it."""

    text: str
    summary: Summary | None
    through: Message
    kept: list[Message]


@dataclasses.dataclass(frozen=True)
class _Draft:
    """Without a stored summary: the draft's text (None: make one now, with the profile and focus) and the
    message it ends with (None: the cut a compaction would make now)."""

    content: str | None
    profile_slug: str | None
    focus: str
    through_message_id: int | None


def summary_branch(
    *,
    channel: Channel,
    actor: User | None,
    summary: Summary | None = None,
    content: str | None = None,
    profile_slug: str | None = None,
    focus: str = "",
    through_message_id: int | None = None,
) -> Channel:
    """A new channel of the same owner, persona and model: the summary, then copies of the kept messages.

    From a stored summary, from a (possibly edited) draft's text (`through_message_id`
    says which message the draft ends with; without it, the cut a compaction would make
    now), or, given neither, from a fresh dry-run draft made with `profile_slug` and
    `focus`. The source channel is not touched.
    """
    if summary is not None and summary.channel_id != channel.pk:
        raise NotFound("Summary not found.")
    # One call of the limit (chatcore.throttling), a fresh draft's model call included.
    with expensive_call(user=actor or channel.owner):
        team_budget_check(team_id=channel.team_id)
        if summary is not None:
            through = Message.objects.get(pk=summary.through_message_id)
            text = summary.content
        else:
            draft = _Draft(
                content=content, profile_slug=profile_slug, focus=focus, through_message_id=through_message_id
            )
            text, through = _draft(channel=channel, actor=actor, draft=draft)
        kept = _kept_after(channel=channel, through=through)
        return _branch_write(channel=channel, actor=actor, source=_Source(text, summary, through, kept))


def _draft(*, channel: Channel, actor: User | None, draft: _Draft) -> tuple[str, Message]:
    """The draft's text (redacted) and the last message it stands for."""
    from compaction.services.compact import channel_compact, compaction_cut

    content, through_message_id, profile_slug = draft.content, draft.through_message_id, draft.profile_slug
    if content is None:
        result = channel_compact(
            channel=channel, actor=actor, profile_slug=profile_slug, focus=draft.focus, dry_run=True
        )
        content, through_message_id = result.content, result.through_message_id
    if not isinstance(content, str) or not content.strip():
        raise ValidationError({"content": "The summary to branch from may not be empty."})
    if len(content) > conf.MAX_CONTENT_CHARS:
        raise ValidationError({"content": f"At most {conf.MAX_CONTENT_CHARS:,} characters."})
    if through_message_id is None:
        try:
            through_message_id = compaction_cut(channel=channel, profile_slug=profile_slug)
        except Unprocessable:
            # Too little for a compaction to cut: the draft stands for the whole active path.
            cursor = chatcore_selectors.cursor_get(channel=channel, user=channel.owner)
            through_message_id = cursor.leaf_id if cursor else None
    through = (
        Message.objects.filter(channel=channel, pk=through_message_id).first()
        if through_message_id is not None
        else None
    )
    if through is None:
        raise ValidationError({"through_message_id": "No such message in this channel."})
    return redact(content.strip()).text, through


def _kept_after(*, channel: Channel, through: Message) -> list[Message]:
    """The messages after `through` on the owner's active path (or, when that path left it, on its newest branch)."""
    cursor = chatcore_selectors.cursor_get(channel=channel, user=channel.owner)
    for leaf_id in dict.fromkeys(
        [cursor.leaf_id if cursor else None, chatcore_selectors.message_latest_leaf(message_id=through.pk)]
    ):
        if leaf_id is None:
            continue
        path = chatcore_selectors.message_path(leaf_id=leaf_id, after_depth=through.depth - 1)
        if path and path[0].pk == through.pk:
            return path[1:]
    raise Conflict("The summarized message is no longer in this channel's tree.", code="channel_changed")


def _copy_of(message: Message, *, channel: Channel) -> NewMessage:
    metadata = {
        **metadata_repaired(role=message.role, value=message.metadata),  # an older row may hold anything
        "copied_from": {"channel": channel.pk, "message": message.pk},
    }
    return NewMessage(
        role=message.role,
        content=message.content,
        metadata=metadata,
        author=message.author if message.author_id else None,
        created_at=message.created_at,
    )


@transaction.atomic
def _branch_write(*, channel: Channel, actor: User | None, source: _Source) -> Channel:
    owner = channel.owner
    suffix = conf.BRANCH_TITLE_SUFFIX
    summary = source.summary
    branch = channel_create(
        owner=owner,
        title=channel.title[: 200 - len(suffix)] + suffix,
        persona=channel.persona,
        model=channel.model,
        type=channel.type,
        settings=channel.settings,
    )
    branch.branched_from, branch.branched_from_summary = channel, summary
    branch.save(update_fields=["branched_from", "branched_from_summary"])
    # Where the branch came from, said the same way in its opening message and in the audit row.
    origin = {"source_channel": channel.pk, "source_summary": summary.pk if summary else None}
    opening = NewMessage(
        role=Message.Role.USER,
        content=BRANCH_OPENING.format(title=channel.title, content=source.text),
        metadata={
            "kind": BRANCH_SUMMARY_KIND,
            **origin,
            "source_through_message": source.through.pk,
            "source_title": channel.title,
            "messages_covered": source.through.depth + 1,
        },
    )
    items = [opening]
    for message in source.kept:
        items.append(dataclasses.replace(_copy_of(message, channel=channel), parent=len(items) - 1))
    messages_bulk_import(channel=branch, user=owner, items=items)
    details = {**origin, "through_message": source.through.pk, "copied": len(source.kept)}
    audit_record(actor=actor, action="channel.branch", resource=f"channel:{branch.pk}", details=details)
    branch.refresh_from_db()
    return branch
