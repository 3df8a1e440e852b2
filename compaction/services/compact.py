"""Compacting a channel: the one entry point every interface calls.

The order of work follows the invariants. The lease is taken first, in the
database (4). Everything slow (loading, redaction, the model call) runs in
autocommit, with no transaction open (compaction.services.draft). The result
is written in one atomic block that first re-checks that the channel did not
change underneath and that the lease is still ours (3,
compaction.services.commit); a failure anywhere before that leaves no
summary, releases the lease and records the error.
"""

import dataclasses
import logging
import time
from collections import Counter

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from chatcore.errors import Conflict, Unprocessable, error_text
from chatcore.models import Channel, Summary
from chatcore.teams.budgets import team_budget_check
from chatcore.throttling import expensive_call
from compaction import conf, signals
from compaction.leases import lease_acquire, lease_holder_name, lease_release
from compaction.models import MAX_SUMMARY_TOKENS, MIN_SUMMARY_TOKENS, CompactionLease
from compaction.observability.metrics import Outcome as RunOutcome
from compaction.observability.metrics import compaction_observed
from compaction.services.commit import draft_commit
from compaction.services.draft import DraftRequest, draft_make, input_budget, plan_make
from compaction.services.origin import DraftOrigin, draft_origin_read, draft_token_make
from compaction.services.profiles import profile_resolve

logger = logging.getLogger(__name__)
MAX_TOKEN_CHARS = 1_000  # a signed draft token is about 150 characters


@dataclasses.dataclass
class CompactionResult:
    summary: Summary | None
    content: str
    summarized_count: int
    model: str
    used_fallback: bool
    input_tokens: int
    output_tokens: int
    tokens_before: int
    tokens_after: int
    through_message_id: int
    profile_slug: str
    extracts: dict
    dry_run: bool
    messages_before: int = 0
    messages_after: int = 0
    edited: bool = False
    truncated: bool = False
    redactions: Counter[str] = dataclasses.field(default_factory=Counter)
    # A dry run's model-written draft: the signed word of where it came from, to hand back with it (origin.py).
    draft_token: str | None = None


def _check_arguments(
    *, trigger: str, focus: str, keep_recent: int | None, content: str | None, max_summary_tokens: int | None
) -> None:
    if trigger not in Summary.Trigger.values:
        raise ValidationError({"trigger": f"Trigger must be one of: {', '.join(Summary.Trigger.values)}."})
    if not isinstance(focus, str) or len(focus) > conf.MAX_FOCUS_CHARS:
        raise ValidationError({"focus": f"Focus must be text of at most {conf.MAX_FOCUS_CHARS:,} characters."})
    if keep_recent is not None and (
        isinstance(keep_recent, bool) or not isinstance(keep_recent, int) or not 0 <= keep_recent <= 1000
    ):
        raise ValidationError({"keep_recent": "keep_recent must be a whole number from 0 to 1000."})
    if max_summary_tokens is not None and not MIN_SUMMARY_TOKENS <= max_summary_tokens <= MAX_SUMMARY_TOKENS:
        raise ValidationError(
            {"max_summary_tokens": f"max_summary_tokens must be from {MIN_SUMMARY_TOKENS} to {MAX_SUMMARY_TOKENS:,}."}
        )
    if content is not None:
        if not isinstance(content, str) or not content.strip():
            raise ValidationError({"content": "An edited summary may not be empty."})
        if len(content) > conf.MAX_CONTENT_CHARS:
            raise ValidationError(
                {"content": f"An edited summary may be at most {conf.MAX_CONTENT_CHARS:,} characters."}
            )


def _origin(
    *, channel: Channel, content: str | None, through_message_id: int | None, token: str | None
) -> DraftOrigin | None:
    """What the dry run's token vouches for, when a draft is applied with one (ValidationError otherwise)."""
    if not token:
        return None
    if content is None:
        raise ValidationError({"draft_token": "A draft token goes with the draft's content."})
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS:
        raise ValidationError({"draft_token": "This is not a draft token the server gave; preview again."})
    return draft_origin_read(token=token, channel_id=channel.pk, through_message_id=through_message_id)


def channel_compact(
    *,
    channel: Channel,
    actor: User | None,
    trigger: str = "manual",
    profile_slug: str | None = None,
    focus: str = "",
    keep_recent: int | None = None,
    dry_run: bool = False,
    content: str | None = None,
    max_summary_tokens: int | None = None,
    through_message_id: int | None = None,
    draft_token: str | None = None,
) -> CompactionResult:
    """Summarize the older part of the owner's active path into a new boundary.

    `content` applies a draft instead of calling a model: a person's text (edited=True, model "edited"),
    unless the dry run's `draft_token` vouches that it is still the text its model wrote
    (compaction.services.origin: then that model, edited=False); `through_message_id` pins the draft's
    last message so that the edit lands exactly where the dry run placed it (the token's when not given).
    A dry run's result carries its token. Raises Conflict
    (in_progress, channel_changed, lease_lost), Unprocessable
    (nothing_to_compact), ModelCallFailed or Throttled (the person's limit on model calls,
    chatcore.throttling; not for trigger="auto"); on any of them nothing is written.
    """
    _check_arguments(
        trigger=trigger, focus=focus, keep_recent=keep_recent, content=content, max_summary_tokens=max_summary_tokens
    )
    origin = _origin(channel=channel, content=content, through_message_id=through_message_id, token=draft_token)
    if origin is not None:
        through_message_id = origin.through_message_id
    channel = Channel.objects.select_related("owner", "persona", "model").get(pk=channel.pk)
    profile = profile_resolve(channel=channel, user=channel.owner, slug=profile_slug)
    request = DraftRequest(
        channel=channel,
        profile=profile,
        trigger=trigger,
        focus=focus,
        keep=profile.keep_recent if keep_recent is None else keep_recent,
        max_tokens=max_summary_tokens or profile.max_summary_tokens,
        content=content,
        through_message_id=through_message_id,
        edited=content is not None and not (origin is not None and origin.matches(content)),
        origin=origin,
    )
    # The scanner's task records automatic attempts itself; a dry run changes nothing worth recording.
    record = trigger != Summary.Trigger.AUTO and not dry_run
    if trigger == Summary.Trigger.AUTO:  # nobody's request: the scanner's hourly budget limits it
        return _compact_with_lease(request=request, actor=actor, dry_run=dry_run, record=record)
    # Whoever asked (a command asks for the channel's owner) pays one call of their limit, before the lease.
    with expensive_call(user=actor or channel.owner):
        team_budget_check(team_id=channel.team_id)
        return _compact_with_lease(request=request, actor=actor, dry_run=dry_run, record=record)


def _compact_with_lease(*, request: DraftRequest, actor: User | None, dry_run: bool, record: bool) -> CompactionResult:
    """Take the channel's lease, compact, and give the lease back however it ends (recording why, with `record`)."""
    channel_id, holder = request.channel.pk, lease_holder_name()
    started = time.monotonic()

    def observed(outcome: str, result: CompactionResult | None = None) -> None:
        if not dry_run:  # a preview writes nothing: not a run
            figures = {"tokens_before": result.tokens_before, "tokens_after": result.tokens_after} if result else {}
            compaction_observed(trigger=request.trigger, outcome=outcome, seconds=time.monotonic() - started, **figures)

    if not lease_acquire(channel_id=channel_id, holder=holder, seconds=conf.LEASE_SECONDS):
        observed(RunOutcome.SKIPPED)
        raise Conflict(
            "A compaction of this channel is already in progress; try again when it has finished.", code="in_progress"
        )
    try:
        result = _compact_holding_lease(request=request, actor=actor, dry_run=dry_run, holder=holder, record=record)
    except (Unprocessable, ValidationError) as error:
        if isinstance(error, Unprocessable):  # the values in force, whoever chose them
            error.extra.update(profile=request.profile.slug, keep_recent=request.keep)
        outcome = CompactionLease.Outcome.NOTHING
        lease_release(channel_id=channel_id, holder=holder, outcome=outcome, record=record, error=error_text(error))
        observed(RunOutcome.SKIPPED)
        raise
    except BaseException as error:
        message = error_text(error, name_unexpected=True)
        logger.warning("compaction: channel %s failed (%s)", channel_id, message)
        outcome = CompactionLease.Outcome.FAILED
        lease_release(channel_id=channel_id, holder=holder, outcome=outcome, error=message, record=record)
        observed(RunOutcome.FAILED)
        raise
    if dry_run:
        lease_release(channel_id=channel_id, holder=holder, record=False)
    observed(RunOutcome.OK, result)
    return result


def compaction_cut(*, channel: Channel, profile_slug: str | None = None, keep_recent: int | None = None) -> int:
    """The id of the last message a compaction of `channel` would summarize now (Unprocessable when none)."""
    profile = profile_resolve(channel=channel, user=channel.owner, slug=profile_slug)
    keep = profile.keep_recent if keep_recent is None else keep_recent
    plan = plan_make(
        channel=channel,
        keep_recent=keep,
        through_message_id=None,
        input_budget=input_budget(profile, profile.max_summary_tokens, channel=channel),
    )
    return plan.to_summarize[-1].pk


def _compact_holding_lease(
    *, request: DraftRequest, actor: User | None, dry_run: bool, holder: str, record: bool
) -> CompactionResult:
    draft = draft_make(request)
    plan = draft.plan
    result = CompactionResult(
        summary=None,
        content=draft.text,
        summarized_count=len(plan.to_summarize),
        through_message_id=draft.through.pk,
        profile_slug=request.profile.slug,
        extracts=draft.extracts,
        dry_run=dry_run,
        messages_before=len(plan.path) + (1 if plan.boundary else 0),
        messages_after=len(plan.kept) + 1,
        edited=request.edited,
        truncated=draft.truncated,
        redactions=draft.redactions,
        **draft.figures(),
    )
    if dry_run:
        if request.content is None:  # a model's draft: what it is, signed, for the apply that may follow
            result.draft_token = draft_token_make(
                channel_id=request.channel.pk,
                through_message_id=draft.through.pk,
                text=draft.text,
                model=draft.summarized.model,
                used_fallback=draft.summarized.used_fallback,
            )
        return result

    def announce(channel: Channel, summary: Summary) -> None:
        result.summary = summary
        signals.compaction_done.send(
            sender=CompactionResult, channel=channel, summary=summary, result=result, trigger=request.trigger
        )

    result.summary = draft_commit(
        request=request, draft=draft, actor=actor, holder=holder, record=record, announce=announce
    )
    return result
