"""The draft of a compaction: which messages it covers, and the summary that
would stand for them, computed while the lease is held and nothing is written
(a dry run returns it as it is; compaction.services.commit writes it)."""

import dataclasses
from collections import Counter
from typing import Any

from django.core.exceptions import ValidationError

from chatcore import conf as chatcore_conf
from chatcore import selectors as chatcore_selectors
from chatcore.collector import collector_paused
from chatcore.errors import Conflict, Unprocessable
from chatcore.llm import Completion
from chatcore.models import Channel, LLMModel, Message, ModelRole, Summary
from chatcore.tokens import count_tokens
from compaction import conf
from compaction.extracts import extracts_collect, extracts_from_text
from compaction.facts import facts_pin
from compaction.models import MIN_SUMMARY_TOKENS, CompactionProfile
from compaction.observability.metrics import redactions_observed
from compaction.redaction import redact
from compaction.services.anchor import cut_anchor, cut_check
from compaction.services.opening import EXTRACTS_KEY, opening_messages, opening_section, without_opening
from compaction.services.origin import DraftOrigin
from compaction.services.summarize import (
    OFFLINE_MODEL_NAME,
    SummaryRequest,
    offline_limit,
    summary_generate,
    summary_truncate,
    summary_validate,
)
from compaction.transcript import TranscriptItem, items_judge, transcript_items


@dataclasses.dataclass(frozen=True)
class DraftRequest:
    """What to compact and how: the arguments of `channel_compact`, checked and resolved."""

    channel: Channel
    profile: CompactionProfile
    trigger: str
    focus: str
    keep: int
    max_tokens: int
    content: str | None
    through_message_id: int | None
    edited: bool
    origin: DraftOrigin | None = None  # where an applied draft came from, as a dry run's token vouches


@dataclasses.dataclass(frozen=True)
class Plan:
    leaf: Message
    boundary: Summary | None
    path: list[Message]
    to_summarize: list[Message]
    kept: list[Message]


@dataclasses.dataclass
class Draft:
    """A summary ready to be written: its text, how it was made, and the pressure it would leave."""

    plan: Plan
    text: str
    summarized: Completion
    truncated: bool
    redactions: Counter[str]
    extracts: dict
    tokens_before: int
    tokens_after: int

    @property
    def through(self) -> Message:
        return self.plan.to_summarize[-1]

    @property
    def previous(self) -> Summary | None:
        return self.plan.boundary

    def figures(self) -> dict[str, Any]:
        """What the summary and the result both record: the model, its usage, the pressure before and after."""
        return {
            "model": self.summarized.model,
            "used_fallback": self.summarized.used_fallback,
            "input_tokens": self.summarized.input_tokens,
            "output_tokens": self.summarized.output_tokens,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
        }


@dataclasses.dataclass
class _Sources:
    """The redacted material the summary is made from, and the redactions counted on the way."""

    items: list[TranscriptItem]
    previous_text: str | None
    focus_text: str
    text: str
    redactions: Counter[str]


def plan_make(*, channel: Channel, keep_recent: int, through_message_id: int | None, input_budget: int | None) -> Plan:
    """Which messages this compaction covers; Unprocessable with the reason when too few."""
    cursor = chatcore_selectors.cursor_get(channel=channel, user=channel.owner)
    if cursor is None:
        raise Unprocessable(
            "Nothing to compact: the channel has no messages.",
            code="nothing_to_compact",
            extra={"reason": "empty", "new_messages": 0, "minimum": conf.MIN_NEW_MESSAGES},
        )
    boundary = cursor.summary
    path = _path_after(leaf_id=cursor.leaf_id, boundary=boundary)
    if through_message_id is not None:
        cut = _pinned_cut(path, through_message_id)
    else:
        cut = _planned_cut(path, keep_recent=keep_recent, input_budget=input_budget)
    to_summarize, kept = path[:cut], path[cut:]
    if len(to_summarize) < conf.MIN_NEW_MESSAGES:
        raise _too_few(path=path, kept=kept, keep_recent=keep_recent, after_summary=boundary is not None)
    return Plan(leaf=cursor.leaf, boundary=boundary, path=path, to_summarize=to_summarize, kept=kept)


# What a compaction reads of each message on the path (with the id, channel, parent and depth that the path's
# statement always reads): the transcript's role, content, metadata and date, the cut's token counts, and the
# summary's channel check. The rest (hashes, deletion dates, the author, the segment) is left unread: deferred, as
# `QuerySet.only` leaves it.
PATH_FIELDS = ("channel_id", "role", "content", "metadata", "created_at", "tokens", "path_tokens")


def _path_after(*, leaf_id: int, boundary: Summary | None) -> list[Message]:
    """The active path after the summary in force, without the branch's own system prompt: that is sent as it
    is after any summary (chatcore.context), never summarized. Only PATH_FIELDS are read: a path is thousands of
    messages, and the columns nothing reads (three dates a row to convert on SQLite) cost a share of the load."""
    after_depth = boundary.through_message.depth if boundary else -1
    path = chatcore_selectors.message_path(leaf_id=leaf_id, after_depth=after_depth, only=PATH_FIELDS)
    if path and path[0].depth == 0 and path[0].role == Message.Role.SYSTEM:
        path = path[1:]
    return path


def _pinned_cut(path: list[Message], through_message_id: int) -> int:
    """Where a draft made earlier ends: its last message must still be on the path."""
    cut = next((i + 1 for i, m in enumerate(path) if m.pk == through_message_id), None)
    if cut is None:
        raise Conflict(
            "The channel changed since the draft was made: its message is no longer on the "
            "active path after the current summary. Make a new draft.",
            code="channel_changed",
        )
    cut_check(path, cut)
    return cut


def _planned_cut(path: list[Message], *, keep_recent: int, input_budget: int | None) -> int:
    """Where this compaction ends: before the newest `keep_recent`, within what the summarizing model can read,
    at a place the anchor rules allow."""
    cut = max(len(path) - keep_recent, 0)
    # Never separate a tool result from the call that asked for it.
    while 0 < cut < len(path) and path[cut].role == Message.Role.TOOL:
        cut -= 1
    if input_budget is not None:
        cut = _budget_cut(path, cut, input_budget)
    return cut_anchor(path, cut)


def _budget_cut(path: list[Message], cut: int, input_budget: int) -> int:
    """The end of the stretch before `cut` that fits one request (never fewer than the minimum to compact);
    the rest waits for the next compaction."""
    total = 0
    for index in range(cut):
        total += path[index].tokens
        if total > input_budget and index >= conf.MIN_NEW_MESSAGES:
            return index
    return cut


def _too_few(*, path: list[Message], kept: list[Message], keep_recent: int, after_summary: bool) -> Unprocessable:
    """The refusal when what would be summarized is less than the minimum, with the figures that explain it."""
    would_summarize = len(path) - len(kept)
    since = "the last summary" if after_summary else "the start"
    return Unprocessable(
        f"Nothing to compact: {len(path)} message(s) since {since}, of which the newest {len(kept)} are "
        f"kept as they are (keep_recent {keep_recent}), leaves {would_summarize} to summarize; at least "
        f"{conf.MIN_NEW_MESSAGES} are needed.",
        code="nothing_to_compact",
        extra={
            "reason": "too_few_messages",
            "new_messages": len(path),
            "keep_recent": keep_recent,
            "kept": len(kept),
            "would_summarize": would_summarize,
            "minimum": conf.MIN_NEW_MESSAGES,
        },
    )


# What a request to the summarizing model carries beside the conversation: the profile's system prompt and
# instructions, the transcript's role labels and fences.
PROMPT_FRAME_TOKENS = 1_000
# The least conversation one request may carry, however small the model's window: less is not worth a call.
MIN_INPUT_TOKENS = 1_000


def input_budget(profile: CompactionProfile, max_tokens: int, *, channel: Channel | None = None) -> int | None:
    """Tokens of conversation one request may carry, from the summarizing model's window.

    None when the summary is written by the offline summarizer: it reads the
    messages themselves, not a prompt, so no window limits it. The offline
    model's `context_window` is the *chat* window its channels are measured
    against (the demo sets it small on purpose); applying it here would
    silently leave most of a long stretch unsummarized.
    """
    model = profile.model
    if model is None:
        team_id = channel.team_id if channel is not None else None
        role = chatcore_selectors.model_role_get(role=ModelRole.Role.UTILITY, team_id=team_id)
        model = role.primary if role else None
    if model is None or model.provider == LLMModel.Provider.OFFLINE:
        return None
    window = (
        model.context_window if model is not None and model.context_window else chatcore_conf.DEFAULT_CONTEXT_BUDGET
    )
    return max(int(window * conf.INPUT_SHARE) - max_tokens - PROMPT_FRAME_TOKENS, MIN_INPUT_TOKENS)


def extracts_merge(previous: dict | None, new: dict) -> dict:
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


# The blank line that joins the opening section to the summary, and a token for a merge the tokenizer may make
# across it.
OPENING_JOIN_TOKENS = 2
# The `model` of a summary whose text a person wrote or edited: no model wrote it as it stands.
EDITED_MODEL_NAME = "edited"


def _applied_completion(request: DraftRequest, text: str) -> Completion:
    """An applied draft as a completion: the model that wrote it when the dry run's token vouches the text is
    still its own, else a person's (edited)."""
    origin = request.origin
    if request.edited or origin is None:
        return Completion(text, EDITED_MODEL_NAME, used_fallback=False, input_tokens=0, output_tokens=0)
    return Completion(text, origin.model, used_fallback=origin.used_fallback, input_tokens=0, output_tokens=0)


def draft_make(request: DraftRequest) -> Draft:
    """The summary that would be written, computed with no transaction open; raises
    Unprocessable (too few messages), ValidationError (an edit as long as what it
    replaces) or ModelCallFailed."""
    with collector_paused():  # loading and reading thousands of messages: see chatcore.collector
        plan = plan_make(
            channel=request.channel,
            keep_recent=request.keep,
            through_message_id=request.through_message_id,
            input_budget=input_budget(request.profile, request.max_tokens, channel=request.channel),
        )
        sources = _sources(plan=plan, focus=request.focus)
    previous = plan.boundary
    input_tokens = sum(m.tokens for m in plan.to_summarize) + (previous.tokens if previous else 0)
    opening = opening_messages(count=request.profile.protect_first_n, path=plan.path, boundary=previous)
    section = opening_section(opening)
    if section and request.content is None:
        # The opening exchange is carried word for word; the summarizer works on the rest, in the room left.
        _set_opening_aside(sources, {m.pk for m in opening})
        room = max(MIN_SUMMARY_TOKENS, request.max_tokens - count_tokens(section) - OPENING_JOIN_TOKENS)
        request = dataclasses.replace(request, max_tokens=room)
    if request.content is not None:
        applied = redact(request.content.strip())
        sources.redactions.update(applied.counts)
        if count_tokens(applied.text) >= input_tokens:
            raise ValidationError(
                {"content": "The edited summary is as long as the messages it would replace; shorten it."}
            )
        text, truncated = applied.text, False
        summarized = _applied_completion(request, text)
    else:
        summarized, text, truncated = _summary(request=request, sources=sources, input_tokens=input_tokens)
        if section:
            text = section + "\n\n" + text
    through = plan.to_summarize[-1]
    summary_tokens = count_tokens(text) + chatcore_conf.MESSAGE_OVERHEAD_TOKENS
    boundary_offset = (previous.through_message.path_tokens - previous.tokens) if previous else 0
    extracts = extracts_merge(previous.extracts if previous else None, extracts_collect(sources.items))
    if request.edited:
        # A person's text: its own decisions, files and questions (tools used stay the transcript's facts).
        extracts = extracts_from_text(text, tools=extracts.get("tools", {}))
    if opening:
        extracts[EXTRACTS_KEY] = [m.pk for m in opening]
    redactions_observed(sources.redactions)
    return Draft(
        plan=plan,
        text=text,
        summarized=summarized,
        truncated=truncated,
        redactions=sources.redactions,
        extracts=extracts,
        tokens_before=plan.leaf.path_tokens - boundary_offset,
        tokens_after=plan.leaf.path_tokens - through.path_tokens + summary_tokens,
    )


def _set_opening_aside(sources: _Sources, ids: set[int]) -> None:
    """The protected messages leave what the summarizer reads; a previous summary's copy of them goes too."""
    sources.items = [item for item in sources.items if item.message_id not in ids]
    sources.previous_text = without_opening(sources.previous_text)
    sources.text = _source_text(sources.items, sources.previous_text)


def _sources(*, plan: Plan, focus: str) -> _Sources:
    """The transcript, the previous summary and the focus, redacted: no secret reaches the summarizer. The
    messages' authors are not loaded: the transcript names a speaker from the message's own metadata."""
    items = transcript_items(plan.to_summarize)
    redactions: Counter[str] = Counter()
    for item in items:  # every message's secrets count, not only those of the summary and the focus
        if item.redactions:  # most have none: no update of nothing
            redactions.update(item.redactions)
    previous_text = None
    if plan.boundary is not None:
        redacted = redact(plan.boundary.content)
        previous_text = redacted.text
        redactions.update(redacted.counts)
    focus_text = ""
    if focus:
        redacted = redact(focus)
        focus_text = redacted.text
        redactions.update(redacted.counts)
    text = _source_text(items, previous_text)
    return _Sources(items=items, previous_text=previous_text, focus_text=focus_text, text=text, redactions=redactions)


def _source_text(items: list[TranscriptItem], previous_text: str | None) -> str:
    """What fact pinning reads: the previous summary and every message the detector did not flag (one batch,
    each message with its neighbours); a flagged message's paths and figures are its payload."""
    items_judge(items)
    text = "\n".join(item.content for item in items if not item.addressed)
    return text if previous_text is None else previous_text + "\n" + text


def _summary(*, request: DraftRequest, sources: _Sources, input_tokens: int) -> tuple[Completion, str, bool]:
    """The model's summary, checked, redacted, cut to the limit and with its pinned references:
    (what the model returned, the final text, whether it was cut)."""
    # The stored counts of the messages (made once, at insert): counting a megabyte again would cost more than
    # the rest of the compaction.
    source_tokens = input_tokens
    summarized = summary_generate(
        SummaryRequest(
            channel=request.channel,
            profile=request.profile,
            items=sources.items,
            previous_summary=sources.previous_text,
            focus=sources.focus_text,
            max_tokens=request.max_tokens,
            trigger=request.trigger,
            source_text=sources.text,
            source_tokens=source_tokens,
        )
    )
    max_tokens = request.max_tokens
    text, truncated = summary_validate(
        summarized.content, input_tokens=input_tokens, max_tokens=max_tokens, model=summarized.model
    )
    # The summarizer never saw a secret, but nothing it writes may carry one either.
    final = redact(text)
    sources.redactions.update(final.counts)
    # A placeholder can be longer than the secret it replaced: the limit is checked again after it.
    text, cut = summary_truncate(final.text.strip(), max_tokens)
    # References are part of the summary and share its limit (they come from redacted text); with them
    # the summary must still be shorter than what it replaces, and the offline one within its own limit.
    pin_limit = min(max_tokens, input_tokens - 1)
    if summarized.model == OFFLINE_MODEL_NAME:
        pin_limit = min(pin_limit, offline_limit(max_tokens=max_tokens, input_tokens=source_tokens))
    text = facts_pin(source_text=sources.text, summary=text, max_tokens=pin_limit, redacted=True).strip()
    return summarized, text, truncated or cut
