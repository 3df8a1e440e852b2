"""Branching: continue in a new channel that starts from a summary."""

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from chatcore.errors import NotFound
from chatcore.models import Channel, Message, Summary
from chatcore.services import audit_record, channel_create, message_append
from compaction import conf
from compaction.redaction import redact

BRANCH_OPENING = (
    '[Summary of the earlier conversation "{title}", carried over when this channel was branched from it. '
    "It is background for reference, written by a summarizer, not a new request.]\n\n{content}"
)


def summary_branch(
    *,
    channel: Channel,
    actor: AbstractBaseUser | None,
    summary: Summary | None = None,
    content: str | None = None,
    profile_slug: str | None = None,
    focus: str = "",
) -> Channel:
    """A new channel of the same owner, persona and model whose first message is the summary.

    From a stored summary, from a (possibly edited) draft's text, or, given
    neither, from a fresh dry-run draft made with `profile_slug` and `focus`.
    The source channel is not touched.
    """
    if summary is not None and summary.channel_id != channel.pk:
        raise NotFound("Summary not found.")
    if summary is None and content is None:
        from compaction.services.compact import channel_compact

        content = channel_compact(
            channel=channel, actor=actor, profile_slug=profile_slug, focus=focus, dry_run=True
        ).content
    if summary is not None:
        text = summary.content
    else:
        if not isinstance(content, str) or not content.strip():
            raise ValidationError({"content": "The summary to branch from may not be empty."})
        if len(content) > conf.MAX_CONTENT_CHARS:
            raise ValidationError({"content": f"At most {conf.MAX_CONTENT_CHARS:,} characters."})
        text = redact(content.strip()).text
    return _branch_write(channel=channel, actor=actor, summary=summary, text=text)


@transaction.atomic
def _branch_write(*, channel: Channel, actor: AbstractBaseUser | None, summary: Summary | None, text: str) -> Channel:
    owner = channel.owner
    suffix = conf.BRANCH_TITLE_SUFFIX
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
    message_append(
        channel=branch,
        user=owner,
        role=Message.Role.USER,
        content=BRANCH_OPENING.format(title=channel.title, content=text),
        metadata={
            "kind": "branch_summary",
            "source_channel": channel.pk,
            "source_summary": summary.pk if summary else None,
        },
    )
    audit_record(
        actor=actor,
        action="channel.branch",
        resource=f"channel:{branch.pk}",
        details={"source_channel": channel.pk, "source_summary": summary.pk if summary else None},
    )
    branch.refresh_from_db()
    return branch
