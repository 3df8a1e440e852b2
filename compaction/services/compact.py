"""Compacting a channel: the one entry point every interface calls.

The order of work follows the invariants. The lease is taken first, in the
database (4). Everything slow (loading, redaction, the model call) runs in
autocommit, with no transaction open. The result is written in one atomic
block that first re-checks that the channel did not change underneath and
that the lease is still ours (3); a failure anywhere before that leaves no
summary, releases the lease and records the error.
"""

import dataclasses
import logging

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import prefetch_related_objects

from chatcore import conf as chatcore_conf
from chatcore import selectors as chatcore_selectors
from chatcore.errors import Conflict, ModelCallFailed, Unprocessable
from chatcore.llm import OfflineModel, llm_complete
from chatcore.models import Channel, LLMModel, Message, ModelRole, Summary, UsageEntry
from chatcore.services import audit_record, summary_write
from chatcore.tokens import count_tokens
from compaction import conf, signals
from compaction.extracts import extracts_collect
from compaction.facts import facts_pin
from compaction.leases import lease_acquire, lease_holder_name, lease_release
from compaction.models import CompactionProfile
from compaction.prompting import messages_build
from compaction.redaction import redact
from compaction.services.profiles import profile_resolve
from compaction.summarizers.offline import summarize_offline
from compaction.transcript import TranscriptItem, render_transcript, transcript_items

logger = logging.getLogger(__name__)

SYSTEM_ACTOR = "system:compaction"
OFFLINE_MODEL_NAME = "offline"
TRUNCATION_NOTE = "\n\n[The summary was cut at the profile's limit of {limit:,} tokens.]"


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
    redactions: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Plan:
    leaf: Message
    boundary: Summary | None
    path: list[Message]
    to_summarize: list[Message]
    kept: list[Message]


def _plan(*, channel: Channel, keep_recent: int, through_message_id: int | None, input_budget: int | None) -> _Plan:
    """Which messages this compaction covers; Unprocessable with the reason when too few."""
    cursor = chatcore_selectors.cursor_get(channel=channel, user=channel.owner)
    if cursor is None:
        raise Unprocessable(
            "Nothing to compact: the channel has no messages.",
            code="nothing_to_compact",
            extra={"reason": "empty", "new_messages": 0, "minimum": conf.MIN_NEW_MESSAGES},
        )
    boundary = cursor.summary
    after_depth = boundary.through_message.depth if boundary else -1
    path = chatcore_selectors.message_path(leaf_id=cursor.leaf_id, after_depth=after_depth)
    if path and path[0].depth == 0 and path[0].role == Message.Role.SYSTEM:
        # The branch's own system prompt: sent as it is after any summary (chatcore.context), never summarised.
        path = path[1:]

    if through_message_id is not None:
        cut = next((i + 1 for i, m in enumerate(path) if m.pk == through_message_id), None)
        if cut is None:
            raise Conflict(
                "The channel changed since the draft was made: its message is no longer on the "
                "active path after the current summary. Make a new draft.",
                code="channel_changed",
            )
    else:
        cut = max(len(path) - keep_recent, 0)
        # Never separate a tool result from the call that asked for it.
        while 0 < cut < len(path) and path[cut].role == Message.Role.TOOL:
            cut -= 1
        # Stay within what the summarizing model can read; the rest waits for the next compaction.
        if input_budget is not None:
            total = 0
            for index in range(cut):
                total += path[index].tokens
                if total > input_budget and index >= conf.MIN_NEW_MESSAGES:
                    cut = index
                    break
    to_summarize, kept = path[:cut], path[cut:]
    if len(to_summarize) < conf.MIN_NEW_MESSAGES:
        since = "the last summary" if boundary else "the start"
        raise Unprocessable(
            f"Nothing to compact: {len(path)} message(s) since {since}, of which the newest {len(kept)} are "
            f"kept as they are, leaves {len(to_summarize)} to summarise; at least {conf.MIN_NEW_MESSAGES} "
            f"are needed.",
            code="nothing_to_compact",
            extra={
                "reason": "too_few_messages",
                "new_messages": len(path),
                "keep_recent": len(kept),
                "would_summarize": len(to_summarize),
                "minimum": conf.MIN_NEW_MESSAGES,
            },
        )
    return _Plan(leaf=cursor.leaf, boundary=boundary, path=path, to_summarize=to_summarize, kept=kept)


def compaction_cut(*, channel: Channel, profile_slug: str | None = None, keep_recent: int | None = None) -> int:
    """The id of the last message a compaction of `channel` would summarise now (Unprocessable when none)."""
    profile = profile_resolve(channel=channel, user=channel.owner, slug=profile_slug)
    keep = profile.keep_recent if keep_recent is None else keep_recent
    plan = _plan(
        channel=channel,
        keep_recent=keep,
        through_message_id=None,
        input_budget=_input_budget(profile, profile.max_summary_tokens),
    )
    return plan.to_summarize[-1].pk


def _input_budget(profile: CompactionProfile, max_tokens: int) -> int | None:
    """Tokens of conversation one request may carry, from the summarizing model's window.

    None when the summary is written by the offline summarizer: it reads the
    messages themselves, not a prompt, so no window limits it. The offline
    model's `context_window` is the *chat* window its channels are measured
    against (the demo sets it small on purpose); applying it here would
    silently leave most of a long stretch unsummarised.
    """
    model = profile.model
    if model is None:
        role = chatcore_selectors.model_role_get(role=ModelRole.Role.UTILITY)
        model = role.primary if role else None
    if model is None or model.provider == LLMModel.Provider.OFFLINE:
        return None
    window = (
        model.context_window if model is not None and model.context_window else chatcore_conf.DEFAULT_CONTEXT_BUDGET
    )
    return max(int(window * conf.INPUT_SHARE) - max_tokens - 1_000, 1_000)


def _truncate(text: str, limit: int) -> tuple[str, bool]:
    """Cut at a line boundary under `limit` tokens, saying so in the text."""
    if count_tokens(text) <= limit:
        return text, False
    note_tokens = count_tokens(TRUNCATION_NOTE.format(limit=limit))
    lines, kept, used = text.splitlines(), [], 0
    for line in lines:
        cost = count_tokens(line + "\n")
        if used + cost > limit - note_tokens:
            break
        kept.append(line)
        used += cost
    if not kept:  # one enormous line: cut by characters
        kept = [text[: max((limit - note_tokens) * 3, 1)]]
    return "\n".join(kept).rstrip() + TRUNCATION_NOTE.format(limit=limit), True


def _merge_extracts(previous: dict | None, new: dict) -> dict:
    """Extracts describe everything the summary stands for, so carry the earlier ones forward."""
    if not previous:
        return new
    merged: dict = {}
    for key in set(previous) | set(new):
        old, fresh = previous.get(key), new.get(key)
        if isinstance(old, dict) or isinstance(fresh, dict):
            combined = dict(old or {})
            for name, count in (fresh or {}).items():
                combined[name] = combined.get(name, 0) + count
            merged[key] = combined
        elif isinstance(old, list) or isinstance(fresh, list):
            merged[key] = list(dict.fromkeys([*(old or []), *(fresh or [])]))
        else:
            merged[key] = fresh if fresh is not None else old
    return merged


def offline_limit(*, max_tokens: int, input_tokens: int) -> int:
    """The offline summary's limit, references included: extractive output has a fixed frame, so it is kept
    inside what it replaces even for short stretches."""
    return max(50, min(max_tokens, int(input_tokens * 0.8)))


def _summarize(
    *,
    channel: Channel,
    profile: CompactionProfile,
    items: list[TranscriptItem],
    previous_summary: str | None,
    focus: str,
    max_tokens: int,
    trigger: str,
    input_tokens_estimate: int,
    source_text: str,
) -> tuple[str, str, bool, int, int]:
    """(text, model name, used_fallback, input tokens, output tokens) from the model or the offline method."""
    messages = messages_build(
        system_prompt=profile.system_prompt,
        instructions=profile.instructions,
        transcript=render_transcript(items),
        previous_summary=previous_summary,
        focus=focus,
        persona=channel.persona,
    )
    try:
        completion = llm_complete(
            role=ModelRole.Role.UTILITY,
            messages=messages,
            user=channel.owner,
            channel=channel,
            trigger=trigger,
            max_tokens=max_tokens,
            temperature=profile.temperature,
            override=profile.model,
        )
    except OfflineModel:
        limit = offline_limit(max_tokens=max_tokens, input_tokens=input_tokens_estimate)
        text = summarize_offline(items=items, previous_summary=previous_summary, focus=focus, max_tokens=limit)
        # It fills its budget, which would leave no room for the pinned references that the limit also
        # covers: when they would not fit, summarise again in less room (at most a fifth less).
        overflow = count_tokens(facts_pin(source_text=source_text, summary=text)) - limit
        if overflow > 0:
            text = summarize_offline(
                items=items,
                previous_summary=previous_summary,
                focus=focus,
                max_tokens=max(50, limit - min(overflow, limit // 5)),
            )
        output_tokens = count_tokens(text)
        UsageEntry.objects.create(
            user=channel.owner,
            channel=channel,
            role=ModelRole.Role.UTILITY,
            model=OFFLINE_MODEL_NAME,
            trigger=trigger,
            input_tokens=input_tokens_estimate,
            output_tokens=output_tokens,
        )
        return text, OFFLINE_MODEL_NAME, False, input_tokens_estimate, output_tokens
    return (
        completion.content,
        completion.model,
        completion.used_fallback,
        completion.input_tokens,
        completion.output_tokens,
    )


def _validated(text: str, *, input_tokens: int, max_tokens: int, model: str) -> tuple[str, bool]:
    text = (text or "").strip()
    if not text:
        raise ModelCallFailed(
            f"The summarizer ({model}) returned an empty summary; nothing was written.",
            code="unusable_summary",
            extra={"reason": "empty"},
        )
    tokens = count_tokens(text)
    if tokens >= input_tokens:
        raise ModelCallFailed(
            f"The summarizer ({model}) returned {tokens:,} tokens for {input_tokens:,} tokens of conversation: "
            f"a summary must be shorter than what it replaces; nothing was written.",
            code="unusable_summary",
            extra={"reason": "longer_than_input"},
        )
    return _truncate(text, max_tokens)


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
    if max_summary_tokens is not None and not 50 <= max_summary_tokens <= 32_000:
        raise ValidationError({"max_summary_tokens": "max_summary_tokens must be from 50 to 32,000."})
    if content is not None:
        if not isinstance(content, str) or not content.strip():
            raise ValidationError({"content": "An edited summary may not be empty."})
        if len(content) > conf.MAX_CONTENT_CHARS:
            raise ValidationError(
                {"content": f"An edited summary may be at most {conf.MAX_CONTENT_CHARS:,} characters."}
            )


def channel_compact(
    *,
    channel: Channel,
    actor: AbstractBaseUser | None,
    trigger: str = "manual",
    profile_slug: str | None = None,
    focus: str = "",
    keep_recent: int | None = None,
    dry_run: bool = False,
    content: str | None = None,
    max_summary_tokens: int | None = None,
    through_message_id: int | None = None,
    edited: bool | None = None,
) -> CompactionResult:
    """Summarise the older part of the owner's active path into a new boundary.

    `content` applies an edited draft instead of calling a model (stored with
    edited=True, unless the caller says `edited=False`: the previewed draft
    applied unchanged); `through_message_id` pins the draft's last message so that
    the edit lands exactly where the dry run placed it. Raises Conflict
    (in_progress, channel_changed, lease_lost), Unprocessable
    (nothing_to_compact) or ModelCallFailed; on any of them nothing is written.
    """
    _check_arguments(
        trigger=trigger, focus=focus, keep_recent=keep_recent, content=content, max_summary_tokens=max_summary_tokens
    )
    channel = Channel.objects.select_related("owner", "persona", "model").get(pk=channel.pk)
    profile = profile_resolve(channel=channel, user=channel.owner, slug=profile_slug)
    max_tokens = max_summary_tokens or profile.max_summary_tokens
    keep = profile.keep_recent if keep_recent is None else keep_recent

    holder = lease_holder_name()
    # The scanner's task records automatic attempts itself; a dry run changes nothing worth recording.
    record = trigger != Summary.Trigger.AUTO and not dry_run
    if not lease_acquire(channel_id=channel.pk, holder=holder, seconds=conf.LEASE_SECONDS):
        raise Conflict(
            "A compaction of this channel is already in progress; try again when it has finished.", code="in_progress"
        )
    try:
        result = _compact_holding_lease(
            channel=channel,
            actor=actor,
            trigger=trigger,
            profile=profile,
            focus=focus,
            keep=keep,
            dry_run=dry_run,
            content=content,
            max_tokens=max_tokens,
            through_message_id=through_message_id,
            holder=holder,
            record=record,
            edited=content is not None if edited is None else bool(edited and content is not None),
        )
    except (Unprocessable, ValidationError) as error:
        lease_release(
            channel_id=channel.pk,
            holder=holder,
            outcome="nothing",
            record=record,
            error=getattr(error, "message", None) or "; ".join(error.messages),
        )
        raise
    except BaseException as error:
        message = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
        logger.warning("compaction: channel %s failed (%s)", channel.pk, message)
        lease_release(channel_id=channel.pk, holder=holder, outcome="failed", error=message, record=record)
        raise
    if dry_run:
        lease_release(channel_id=channel.pk, holder=holder, outcome="dry_run", record=False)
    return result


def _compact_holding_lease(
    *,
    channel: Channel,
    actor: AbstractBaseUser | None,
    trigger: str,
    profile: CompactionProfile,
    focus: str,
    keep: int,
    dry_run: bool,
    content: str | None,
    max_tokens: int,
    through_message_id: int | None,
    holder: str,
    record: bool,
    edited: bool,
) -> CompactionResult:
    plan = _plan(
        channel=channel,
        keep_recent=keep,
        through_message_id=through_message_id,
        input_budget=_input_budget(profile, max_tokens),
    )
    prefetch_related_objects(plan.to_summarize, "author")
    items = transcript_items(plan.to_summarize)
    previous = plan.boundary
    previous_text = redact(previous.content) if previous else None
    focus_text = redact(focus) if focus else None
    redactions: dict[str, int] = {}
    for redacted in (previous_text, focus_text):
        for kind, count in (redacted.counts if redacted else {}).items():
            redactions[kind] = redactions.get(kind, 0) + count

    covered_tokens = sum(m.tokens for m in plan.to_summarize)
    input_tokens_total = covered_tokens + (previous.tokens if previous else 0)
    source_text = "\n".join(item.content for item in items)
    if previous_text:
        source_text = previous_text.text + "\n" + source_text
    truncated = False
    if content is not None:
        applied = redact(content.strip())
        for kind, count in applied.counts.items():
            redactions[kind] = redactions.get(kind, 0) + count
        text = applied.text
        if count_tokens(text) >= input_tokens_total:
            raise ValidationError(
                {"content": "The edited summary is as long as the messages it would replace; shorten it."}
            )
        model, used_fallback, tokens_in, tokens_out = "", False, 0, 0
    else:
        source_tokens = count_tokens(source_text)
        raw, model, used_fallback, tokens_in, tokens_out = _summarize(
            channel=channel,
            profile=profile,
            items=items,
            previous_summary=previous_text.text if previous_text else None,
            focus=focus_text.text if focus_text else "",
            max_tokens=max_tokens,
            trigger=trigger,
            input_tokens_estimate=source_tokens,
            source_text=source_text,
        )
        text, truncated = _validated(raw, input_tokens=input_tokens_total, max_tokens=max_tokens, model=model)
        # The summarizer never saw a secret, but nothing it writes may carry one either.
        final = redact(text)
        for kind, count in final.counts.items():
            redactions[kind] = redactions.get(kind, 0) + count
        # A placeholder can be longer than the secret it replaced: the limit is checked again after it.
        text, cut = _truncate(final.text.strip(), max_tokens)
        truncated = truncated or cut
        # References are part of the summary and share its limit (they come from redacted text); with them
        # the summary must still be shorter than what it replaces, and the offline one within its own limit.
        pin_limit = min(max_tokens, input_tokens_total - 1)
        if model == OFFLINE_MODEL_NAME:
            pin_limit = min(pin_limit, offline_limit(max_tokens=max_tokens, input_tokens=source_tokens))
        text = facts_pin(source_text=source_text, summary=text, max_tokens=pin_limit).strip()

    extracts = _merge_extracts(previous.extracts if previous else None, extracts_collect(items))
    through = plan.to_summarize[-1]
    summary_tokens = count_tokens(text) + chatcore_conf.MESSAGE_OVERHEAD_TOKENS
    boundary_offset = (previous.through_message.path_tokens - previous.tokens) if previous else 0
    tokens_before = plan.leaf.path_tokens - boundary_offset
    tokens_after = plan.leaf.path_tokens - through.path_tokens + summary_tokens
    result = CompactionResult(
        summary=None,
        content=text,
        summarized_count=len(plan.to_summarize),
        model=model,
        used_fallback=used_fallback,
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        through_message_id=through.pk,
        profile_slug=profile.slug,
        extracts=extracts,
        dry_run=dry_run,
        messages_before=len(plan.path) + (1 if previous else 0),
        messages_after=len(plan.kept) + 1,
        edited=edited,
        truncated=truncated,
        redactions=redactions,
    )
    if dry_run:
        return result

    with transaction.atomic():
        locked = Channel.objects.select_for_update(of=("self",)).get(pk=channel.pk)
        cursor = chatcore_selectors.cursor_get(channel=locked, user=channel.owner)
        if cursor is None or cursor.summary_id != (previous.pk if previous else None):
            raise Conflict(
                "The channel changed during the compaction (its summary in force is not the same); "
                "nothing was written.",
                code="channel_changed",
            )
        if cursor.leaf_id != plan.leaf.pk:
            on_path = chatcore_selectors.message_path(leaf_id=cursor.leaf_id, after_depth=through.depth - 1)
            if not on_path or on_path[0].pk != through.pk:
                raise Conflict(
                    "The channel changed during the compaction (the active branch no longer contains "
                    "the summarised messages); nothing was written.",
                    code="channel_changed",
                )
        if not lease_release(channel_id=channel.pk, holder=holder, outcome="done", record=record):
            raise Conflict(
                "This compaction's lease expired and was taken over; nothing was written.", code="lease_lost"
            )
        summary = summary_write(
            channel=locked,
            through_message=through,
            content=text,
            created_by=actor,
            trigger=trigger,
            profile_slug=profile.slug,
            model=model,
            used_fallback=used_fallback,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            messages_covered=through.depth + 1,
            extracts=extracts,
            edited=edited,
        )
        audit_record(
            actor=actor,
            actor_label=SYSTEM_ACTOR if trigger == Summary.Trigger.AUTO else "",
            action="summary.compact",
            resource=f"summary:{summary.pk}",
            details={
                "channel": channel.pk,
                "trigger": trigger,
                "profile": profile.slug,
                "model": model,
                "used_fallback": used_fallback,
                "summarized": len(plan.to_summarize),
                "tokens_before": tokens_before,
                "tokens_after": tokens_after,
                "edited": edited,
                "redactions": redactions,
            },
        )
        result.summary = summary
        transaction.on_commit(
            lambda: signals.compaction_done.send(
                sender=CompactionResult, channel=locked, summary=summary, result=result, trigger=trigger
            )
        )
    return result
