"""Writing the summary text: the model (or the offline summarizer), then the
checks that make it usable (not empty, shorter than what it replaces, within
the profile's limit)."""

import dataclasses

from chatcore import selectors as chatcore_selectors
from chatcore.collector import collector_paused
from chatcore.errors import ModelCallFailed
from chatcore.llm import Completion, OfflineModel, llm_complete
from chatcore.llm_attempt import role_models
from chatcore.models import Channel, LLMModel, ModelRole, UsageEntry
from chatcore.tokens import count_tokens
from compaction.facts import facts_pin
from compaction.instructions import verbatim_instructions
from compaction.models import MIN_SUMMARY_TOKENS, CompactionProfile
from compaction.prompting import messages_build
from compaction.summarizers.offline import summarize_offline
from compaction.summarizers.offline.profiles import offline_layout
from compaction.transcript import TranscriptItem, render_transcript

OFFLINE_MODEL_NAME = "offline"
TRUNCATION_NOTE = "\n\n[The summary was cut at the profile's limit of {limit:,} tokens.]"


@dataclasses.dataclass(frozen=True)
class SummaryRequest:
    """What the summarizer is given: the redacted transcript items, the
    previous summary (fed back for an iterative update) and the focus."""

    channel: Channel
    profile: CompactionProfile
    items: list[TranscriptItem]
    previous_summary: str | None
    focus: str
    max_tokens: int
    trigger: str
    source_text: str
    source_tokens: int


# The most of what it replaces an offline summary may take: its headings and attributions are a fixed frame that
# would otherwise make the summary of a short stretch as long as the stretch.
OFFLINE_MAX_SHARE = 0.8


def offline_limit(*, max_tokens: int, input_tokens: int) -> int:
    """The offline summary's limit, references included: extractive output has a fixed frame, so it is kept
    inside what it replaces even for short stretches."""
    return max(MIN_SUMMARY_TOKENS, min(max_tokens, int(input_tokens * OFFLINE_MAX_SHARE)))


# The user's instructions handed to a model word for word take at most this part of the summary's limit (a quarter).
VERBATIM_PART = 4


def summary_generate(request: SummaryRequest) -> Completion:
    """The summary from the profile's model, or from the offline method when the utility role is offline:
    its text, the model that wrote it and what it cost, as any model call reports them."""
    channel, profile = request.channel, request.profile
    # Resolved once, before the prompt is built: the offline method needs no prompt.
    candidates = role_models(role=ModelRole.Role.UTILITY, override=profile.model, channel=channel)
    if candidates and candidates[0].provider == LLMModel.Provider.OFFLINE:
        return _summarize_offline(request)
    with collector_paused():  # the prompt of thousands of turns, read sentence by sentence: see chatcore.collector
        keep = []
        if profile.keep_instructions_verbatim:
            keep = verbatim_instructions(request.items, budget=request.max_tokens // VERBATIM_PART)
        messages = messages_build(
            system_prompt=profile.system_prompt,
            instructions=profile.instructions,
            transcript=render_transcript(request.items),
            previous_summary=request.previous_summary,
            focus=request.focus,
            persona=channel.persona,
            keep_verbatim=keep,
        )
    try:
        return llm_complete(
            role=ModelRole.Role.UTILITY,
            messages=messages,
            user=channel.owner,
            channel=channel,
            trigger=request.trigger,
            max_tokens=request.max_tokens,
            temperature=profile.temperature,
            override=profile.model,
            candidates=candidates,
        )
    except OfflineModel:
        return _summarize_offline(request)


def summarizer_is_offline(profile: CompactionProfile, *, channel: Channel | None = None) -> bool:
    """Whether the summary would come from the offline method: then no prompt is built for a model.
    The utility role is the channel's team's when it has one."""
    model = profile.model
    if model is None:
        team_id = channel.team_id if channel is not None else None
        role = chatcore_selectors.model_role_get(role=ModelRole.Role.UTILITY, team_id=team_id)
        model = role.primary if role else None
    return model is None or model.provider == LLMModel.Provider.OFFLINE  # no role set: the offline provider


# When the pinned references would not fit, the second offline summary gives up at most this part of its limit
# (a fifth) to them: the summary stays the larger part.
REFERENCES_PART = 5


def _summarize_offline(request: SummaryRequest) -> Completion:
    limit = offline_limit(max_tokens=request.max_tokens, input_tokens=request.source_tokens)
    layout = offline_layout(request.profile)

    def offline(max_tokens: int) -> str:
        return summarize_offline(
            items=request.items,
            previous_summary=request.previous_summary,
            focus=request.focus,
            max_tokens=max_tokens,
            layout=layout,
        )

    with collector_paused():  # tens of thousands of pieces read and valued: see chatcore.collector
        text = offline(limit)
        # It fills its budget, which would leave no room for the pinned references that the limit also
        # covers: when they would not fit, summarize again in less room (at most a fifth less: REFERENCES_PART).
        overflow = count_tokens(facts_pin(source_text=request.source_text, summary=text, redacted=True)) - limit
        if overflow > 0:
            text = offline(max(MIN_SUMMARY_TOKENS, limit - min(overflow, limit // REFERENCES_PART)))
    output_tokens = count_tokens(text)
    UsageEntry.objects.create(
        user=request.channel.owner,
        channel=request.channel,
        team_id=request.channel.team_id,
        role=ModelRole.Role.UTILITY,
        model=OFFLINE_MODEL_NAME,
        trigger=request.trigger,
        input_tokens=request.source_tokens,
        output_tokens=output_tokens,
    )
    return Completion(text, OFFLINE_MODEL_NAME, False, request.source_tokens, output_tokens)


# Characters kept per token when one enormous line must be cut by characters: fewer than a token holds, so the
# cut errs short of the limit.
CUT_CHARS_PER_TOKEN = 3


def summary_truncate(text: str, limit: int) -> tuple[str, bool]:
    """Cut at a line boundary under `limit` tokens, saying so in the text; (text, whether it was cut)."""
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
        kept = [text[: max((limit - note_tokens) * CUT_CHARS_PER_TOKEN, 1)]]
    return "\n".join(kept).rstrip() + TRUNCATION_NOTE.format(limit=limit), True


def summary_validate(text: str, *, input_tokens: int, max_tokens: int, model: str) -> tuple[str, bool]:
    """The model's text, usable as a summary, within the limit; ModelCallFailed when it is not usable."""
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
    return summary_truncate(text, max_tokens)
