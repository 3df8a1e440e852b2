"""Replies: `reply_prepare` (the user's turn, the context) before the model
call, and `reply_store` after it, the steps that touch the database. Every
way a reply arrives goes through both, so the bookkeeping is one code path:
`reply_generate` here (sync: commands, tasks, tests), `chatcore.streaming`
(async, streamed or not) and the OpenAI-compatible gateway.

Storing an assistant turn that a caller obtained itself (the OpenAI-compatible
gateway calls the model with the client's tools and options, possibly
streamed), with the same bookkeeping as `reply_generate`: the
message appended under its parent with the model's usage, the cursor moved
there, and `reply_stored` announced after commit so that the automatic
compaction trigger sees the prompt's size.
"""

import dataclasses

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from chatcore import signals, statements
from chatcore.context import context_assemble
from chatcore.llm import Completion, llm_complete
from chatcore.llm_attempt import UsagePending, record, record_written, role_models
from chatcore.llm_chat import ChatTurn
from chatcore.locks import RowsSeen
from chatcore.models import Channel, LLMModel, Message
from chatcore.selectors import channel_rows_seen, cursor_get
from chatcore.services import message_append, message_append_at
from chatcore.teams.budgets import team_budget_check
from chatcore.throttling import expensive_call
from chatcore.tools import ReplyTool, tools_offered


@dataclasses.dataclass(frozen=True)
class ReplyPlan:
    """A reply ready to ask for: the user's turn is stored, the context assembled.

    `parent` is the message the reply answers; `model` the channel's own model
    (None: the chat role's), resolved here so that async callers touch no lazy
    relation; `prompt_tokens` our count of what is sent, which the compaction
    trigger reads when the provider reports no usage; `tools` the server-side
    tools this reply may use (chatcore.tools; run by chatcore.tool_rounds.ToolLoop);
    `candidates` the models to try (`role_models`), read with the rest in the preparation's thread so
    that the event loop does not hop to a thread for them (empty: read as the call starts); `placed` the
    channel and the user's cursor as the user's turn left them, with their rows' versions
    (`services.Appended.placed`), from which `reply_store` writes the reply in one statement if nothing
    changed them meanwhile (None: it takes the channel's lock first).
    """

    channel: Channel
    user: User
    parent: Message
    messages: list[dict]
    prompt_tokens: int
    model: LLMModel | None
    tools: tuple[ReplyTool, ...] = ()
    candidates: tuple[LLMModel, ...] = ()
    placed: RowsSeen | None = None


def reply_prepare(
    *, channel: Channel, user: User, content: str | None = None, parent_id: int | None = None
) -> ReplyPlan:
    """Append `content` as the user's turn (under `parent_id` if given: an edit), or take
    `parent_id` as the message to answer again (a regeneration), and assemble the context.

    The user's message is committed here, before any model call: it is kept whatever the model does.
    Counted against the user's limit first (chatcore.throttling): a refused request writes nothing.
    """
    with expensive_call(user=user):
        team_budget_check(team_id=channel.team_id)
        return _reply_plan(channel=channel, user=user, content=content, parent_id=parent_id)


def _reply_plan(*, channel: Channel, user: User, content: str | None, parent_id: int | None) -> ReplyPlan:
    """The user's cursor is read once: the user's turn places it, the context and the tools read it. On
    PostgreSQL the channel's read brought it (`selectors.channel_rows_seen`): the turn is written from it in
    one statement unless it changed meanwhile."""
    placed = None
    if content is not None:
        appended = message_append_at(
            channel=channel,
            user=user,
            role=Message.Role.USER,
            content=content,
            parent_id=parent_id,
            read_path=True,
            seen=channel_rows_seen(channel),
        )
        cursor, placed = appended.cursor, appended.placed
        assembled = context_assemble(channel=channel, user=user, cursor=cursor, path=appended.path)
    elif parent_id is not None:
        leaf = Message.objects.filter(channel=channel, pk=parent_id).first()
        if leaf is None:
            raise ValidationError({"parent_id": "No such message in this channel."})
        assembled = context_assemble(channel=channel, user=user, leaf=leaf)
        cursor = cursor_get(channel=channel, user=user)
    else:
        cursor = cursor_get(channel=channel, user=user)
        assembled = context_assemble(channel=channel, user=user, cursor=cursor)
    if assembled.leaf is None:
        raise ValidationError({"content": "The channel is empty: send a message first."})
    return ReplyPlan(
        channel=channel,
        user=user,
        parent=assembled.leaf,
        messages=assembled.messages,
        prompt_tokens=assembled.tokens,
        model=channel.model,
        tools=tuple(tools_offered(channel=channel, user=user, cursor=cursor)),
        candidates=tuple(role_models(role="chat", override=channel.model, channel=channel)),
        placed=placed,
    )


def reply_store(
    *,
    channel: Channel,
    user: User,
    parent: Message,
    answer: Completion | ChatTurn,
    prompt_tokens_estimate: int,
    interrupted: bool = False,
    extra: dict | None = None,
    chain_hash_as: str = "",
    usage: UsagePending | None = None,
    placed: RowsSeen | None = None,
) -> Message:
    """The model's `answer` under `parent`, with its model and usage in the metadata (marked offline or
    interrupted where it was). The provider's reported input tokens (0 if none) are what the trigger reads,
    else `prompt_tokens_estimate`, our own count of what was sent. `chain_hash_as`: see `message_append`.

    Every way a reply arrives (sync, streamed, the gateway) hands over the answer object it got, so what
    is stored of it is decided here once. One transaction, `message_append`'s (the announcement waits for
    the caller's commit when there is an outer one); `parent` as the caller holds it is not read again.
    `usage`: the model call's usage row, unwritten (`llm_attempt.UsagePending`), written with the reply
    (in the same statement on PostgreSQL); if the reply cannot be stored, it is written alone. The rows the
    announcement's receivers registered (`signals.REPLY_STORED_READS`) are read by the reply's own write
    statement when it is one, so that the receivers send none of their own after the commit. `placed`: the
    channel and the user's cursor as the user's turn left them (`ReplyPlan.placed`): the reply is written in
    one statement that takes the lock itself if they did not change since (`services.message_append_at`'s
    `seen`)."""
    metadata = {
        "model": answer.model,
        "used_fallback": answer.used_fallback,
        "usage": {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens},
        **(extra or {}),
    }
    if answer.offline:
        metadata["offline"] = True
    if interrupted:
        metadata["interrupted"] = True
    read_along = statements.RowsAlong(wanted=signals.REPLY_STORED_READS) if signals.REPLY_STORED_READS else None
    try:
        reply = message_append(
            channel=channel,
            user=user,
            role=Message.Role.ASSISTANT,
            content=answer.content,
            parent_id=parent.pk,
            parent=parent,
            metadata=metadata,
            chain_hash_as=chain_hash_as,
            companions=(usage.entry(),) if usage is not None else (),
            read_along=read_along,
            seen=placed,
        )
    except Exception:
        if usage is not None:  # the model was called whatever became of its answer: its row is kept
            record(usage.attempt, usage.row)
        raise
    if usage is not None:
        record_written(usage.attempt, usage.row)
    reported = answer.input_tokens
    prompt_tokens = reported or prompt_tokens_estimate
    rows = read_along.rows if read_along is not None else {}
    transaction.on_commit(
        lambda: signals.reply_stored.send(
            sender=Channel,
            channel=channel,
            message=reply,
            input_tokens=prompt_tokens,
            reported=bool(reported),
            read_along=rows,
        )
    )
    return reply


def reply_generate(
    *,
    channel: Channel,
    user: User,
    content: str | None = None,
    parent_id: int | None = None,
    trigger: str = "manual",
) -> Message:
    """Answer the active leaf (after appending `content` as the user's turn),
    or re-answer `parent_id` as a new sibling reply, in this thread (commands,
    tasks, sync callers; the web tier uses `chatcore.streaming`).

    The user's message is kept even when the model fails; no assistant
    message is stored then, and ModelCallFailed says why.
    """
    plan = reply_prepare(channel=channel, user=user, content=content, parent_id=parent_id)
    completion = llm_complete(
        role="chat", messages=plan.messages, user=user, channel=channel, trigger=trigger, override=plan.model
    )
    return reply_store(
        channel=channel,
        user=user,
        parent=plan.parent,
        answer=completion,
        prompt_tokens_estimate=plan.prompt_tokens,
        placed=plan.placed,
    )
