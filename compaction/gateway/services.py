"""Use cases of the gateway: place a resent history on the tree, make our
context for its leaf fit the model's window (compacting inline if it must),
and store the model's answer.

They speak no HTTP: failures are domain errors (`chatcore.errors`, with the
field they are about and any retry hint as data), which the views answer in
the protocol's terms (`errors.protocol_error`).
"""

import dataclasses
import functools
import logging
import time
from collections.abc import Callable

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q, QuerySet, Subquery
from django.utils import timezone

from chatcore import conf as chatcore_conf
from chatcore import selectors as chatcore_selectors
from chatcore import services as chatcore_services
from chatcore.bulk import NewMessage, messages_bulk_import, new_message_check
from chatcore.chain import canonical_json, chain_hash, chain_hashes
from chatcore.collector import collector_paused
from chatcore.compiled import FixedQuery
from chatcore.context import AssembledContext, context_assemble
from chatcore.errors import Conflict, ModelCallFailed, NotFound, Unprocessable
from chatcore.llm_attempt import UsagePending, role_models
from chatcore.llm_chat import ChatTurn
from chatcore.locks import channel_lock, channel_lock_with_cursor
from chatcore.models import Channel, Cursor, LLMModel, Message, ModelRole, Summary, Team
from chatcore.replies import reply_store
from chatcore.teams.budgets import team_budget_check
from chatcore.throttling import expensive_call
from chatcore.timing import Timings
from chatcore.tokens import count_tokens
from chatcore.tools import CURSOR_UNREAD, ReplyTool, tools_offered, tools_registered
from compaction.gateway import conf
from compaction.gateway.incoming import CompletionRequest, StoredForm
from compaction.gateway.lookup import deepest_channel, deepest_channel_locked, deepest_in_locked
from compaction.services import channel_compact

logger = logging.getLogger(__name__)

TITLE_CHARS = 60  # a new channel's title: the opening of its first question, as much as a channel list shows
KEEP_STEPS = (None, 2, 1)  # the profile's keep_recent, then fewer; never 0: the newest turn is the question
# Compactions that succeed but leave the context too long may run this many times the failures allowed
# (COMPACTION_GATEWAY_COMPACT_ATTEMPTS): each pass summarizes what the summarizing model can read, so a long stretch
# takes several, but a history that never gets under the window must end.
COMPACTIONS_PER_ATTEMPT = 20
LEASE_POLL_SECONDS = 0.25  # a call waiting for another process's compaction (seconds of work) looks this often
DEFINITIONS_REMEMBERED = 64  # tools' definitions whose token counts a process keeps: a few per client kind
DEFINITIONS_REMEMBERED_CHARS = 65_536  # and how long each may be (a long one is counted on each call)
COMPACTION_RETRY_AFTER_SECONDS = 5  # told to a call whose wait ran out: a compaction takes seconds, not minutes


@dataclasses.dataclass(kw_only=True)
class Turn:
    """A call placed on the tree: the leaf to answer and the context that will be sent for it."""

    channel: Channel
    leaf: Message
    model: LLMModel
    assembled: AssembledContext
    params: dict
    prompt_tokens: int  # our count of what goes upstream: the context plus the tools' definitions
    created: bool
    appended: int
    tools: tuple[ReplyTool, ...] = ()  # the server's own (recall_history), run here, never shown to the client
    room: int = 0  # tokens the server's tool rounds may add to the context without passing the window
    # The models to try (`role_models`), read with the rest in the preparation's thread, so that the model call
    # does not hop to a thread for them (empty: read as the call starts).
    candidates: tuple[LLMModel, ...] = ()

    @property
    def summary_id(self) -> int | None:
        return self.assembled.summary.pk if self.assembled.summary else None


def _model_named(using: str, name: str) -> QuerySet[LLMModel]:
    # The active model of that (unique) name, and the site's chat fallback (any, active or not, as the role
    # reads it), each row with the fallback's id to tell them apart: `role_models`' read of the site's role, in
    # the same statement.
    site_fallback = ModelRole.objects.using(using).filter(role=ModelRole.Role.CHAT).values("fallback_id")[:1]
    return (
        LLMModel.objects.using(using)
        .filter(Q(name=name, is_active=True) | Q(pk=Subquery(site_fallback)))
        .annotate(site_fallback_id=Subquery(site_fallback))
    )


_MODEL_NAMED = FixedQuery(LLMModel, _model_named, name=str)  # built once per database (chatcore.compiled)


def model_for_request(*, name: str) -> LLMModel:
    return _model_and_site_fallback(name=name)[0]


def _model_and_site_fallback(*, name: str) -> tuple[LLMModel, LLMModel | None]:
    """The active model named `name`, and the site's chat fallback (None: none set)."""
    found = _MODEL_NAMED.fetch(name=name)
    model = next((row for row in found if row.name == name and row.is_active), None)
    fallback = next((row for row in found if row.pk == row.site_fallback_id), None)  # type: ignore[attr-defined]
    if model is None:
        raise NotFound(
            f"The model `{name}` does not exist or is not active: GET /v1/models lists the models you can use.",
            code="model_not_found",
            extra={"field": "model"},
        )
    return model, fallback


def _candidates(*, model: LLMModel, site_fallback: LLMModel | None, channel: Channel) -> tuple[LLMModel, ...]:
    """The models to try, as `role_models(role="chat", override=model, channel=channel)` gives them: the
    requested model, then the chat role's fallback unless it is that model. A team's channel asks the team's
    assignment first (`role_models`); any other takes the site's fallback read with the model."""
    if channel.team_id is not None:
        return tuple(role_models(role="chat", override=model, channel=channel))
    fallback = site_fallback if site_fallback is not None and site_fallback.pk != model.pk else None
    return (model,) if fallback is None else (model, fallback)


def _title(messages: list[StoredForm]) -> str:
    text = next((m.content for m in messages if m.role == Message.Role.USER), "") or messages[0].content
    text = " ".join(text.split())
    return (text[:TITLE_CHARS] + "…" if len(text) > TITLE_CHARS else text) or "API conversation"


def _position(hashes: list[str], wanted: str) -> int:
    """Index of `wanted` in `hashes`, looked for from the end (where a continued history meets the tree)."""
    for index in range(len(hashes) - 1, -1, -1):
        if hashes[index] == wanted:
            return index
    raise ValueError("the match is not on the incoming chain")


def _append(
    *,
    user: User,
    channel: Channel,
    match: Message | None,
    incoming: list[StoredForm],
    hashes: list[str],
    cursor: Cursor | None,
) -> tuple[Message, int, Cursor, list[Message] | None]:
    """Append what is new under the match (roots of a new branch when None); the cursor goes to the leaf,
    and is returned as it is then (with the leaf's root and the summary in force loaded, as the context
    reads them), with the path since its boundary when the write read it (else None). `cursor`: the user's
    cursor as read with the lock, if it was.

    The match's place in the incoming history is found by its hash, not its depth: server-side tool
    rounds before an answer are stored in the tree but were never in the client's history. The caller
    holds the channel's lock and found the match under it (with `has_children`).
    """
    start = _position(hashes, match.chain_hash) + 1 if match is not None else 0
    new = incoming[start:]
    if not new:
        assert match is not None, "an empty history was refused by the protocol"
        cursor = chatcore_services.cursor_move(channel=channel, user=user, message_id=match.pk, exact=True)
        return match, 0, cursor, None
    items = [
        NewMessage(
            role=m.role,
            content=m.content,
            metadata=m.metadata,
            parent=index - 1 if index else None,
            chain_hash=hashes[start + index],
        )
        for index, m in enumerate(new)
    ]
    if match is not None and len(items) == 1 and cursor is not None:
        placed = _append_placed(user=user, channel=channel, under=match, item=items[0], cursor=cursor)
        if placed is not None:  # PostgreSQL: the message, the cursor's move and the path in one statement
            leaf, cursor, path = placed
            _branch_audit(user=user, channel=channel, match=match, built=[leaf])
            return leaf, 1, cursor, path
    if match is not None and len(items) == 1:
        built = [_append_one(user=user, channel=channel, under=match, item=items[0])]
    else:
        built = messages_bulk_import(channel=channel, user=user, items=items, under=match, move_cursor=False)
        channel.last_activity_at = built[-1].created_at  # what the import wrote
    if match is not None:
        built[-1].root = match.root or match  # the path's root, as the lookup loaded it
    # The cursor follows without walking the tree: the boundary in force is the match's.
    cursor = chatcore_services.cursor_follow(channel=channel, user=user, leaf=built[-1], under=match, cursor=cursor)
    _branch_audit(user=user, channel=channel, match=match, built=built)
    return built[-1], len(built), cursor, None


def _branch_audit(*, user: User, channel: Channel, match: Message | None, built: list[Message]) -> None:
    if match is not None and match.has_children:  # type: ignore[attr-defined]  # deepest_in_locked
        chatcore_services.audit_record(
            actor=user,
            action="gateway.branch",
            resource=f"channel:{channel.pk}",
            details={"parent": match.pk, "first_message": built[0].pk, "messages": len(built)},
        )


def _append_placed(
    *, user: User, channel: Channel, under: Message, item: NewMessage, cursor: Cursor
) -> tuple[Message, Cursor, list[Message]] | None:
    """`_append_one` and the cursor's move after it as one statement on PostgreSQL, which also reads the path
    since the boundary in force for the context (`services.message_placed_in_one`); None elsewhere."""
    message = _one_built(user=user, channel=channel, under=under, item=item)
    message.root = under.root or under  # the path's root, as the lookup loaded it (the context reads it)
    return chatcore_services.message_placed_in_one(channel=channel, user=user, cursor=cursor, message=message)


def _one_built(*, user: User, channel: Channel, under: Message, item: NewMessage) -> Message:
    """The usual turn's one new message under the match, unsaved, as `messages_bulk_import` would write it; the
    channel's `last_activity_at` set to its time."""
    new_message_check(0, item)
    tokens, chars = chatcore_services.message_size(content=item.content, metadata=item.metadata)
    message = Message(
        channel=channel,
        parent=under,
        role=item.role,
        content=item.content,
        metadata=item.metadata,
        author=user if item.role == Message.Role.USER else None,
        created_at=timezone.now(),
        chain_hash=item.chain_hash,
        **chatcore_services.message_tree_fields(parent=under, tokens=tokens, chars=chars),
    )
    channel.last_activity_at = message.created_at
    return message


def _append_one(*, user: User, channel: Channel, under: Message, item: NewMessage) -> Message:
    """The usual turn's one new message under the match, as `messages_bulk_import` would write it, in one
    INSERT: the import's id reservation, segment lookup, COPY, channel update and savepoint are statements
    of a tree, and the cursor's move that follows writes the channel's `last_activity_at` (set here) for its
    owner. The search index's trigger works out its segment, as for any message appended."""
    message = _one_built(user=user, channel=channel, under=under, item=item)
    message.save(force_insert=True)
    if user.pk != channel.owner_id:  # only the owner's cursor move saves the channel
        channel.save(update_fields=["last_activity_at"])
    return message


def _place(
    *, user: User, request: CompletionRequest, model: LLMModel, pinned: Channel | None, team: Team | None
) -> tuple[Channel, Message, bool, int, AssembledContext, Cursor]:
    """The history on the tree, our context for its leaf, assembled under the channel's lock that placed
    the cursor there (no compaction can come between), and the cursor as placed. In the caller's
    transaction (`_turn_prepare`)."""
    hashes = request.hashes if request.hashes is not None and request.hashed_for == user.pk else None
    if hashes is None:
        hashes = chain_hashes(owner_id=user.pk, messages=[(m.role, m.content, m.metadata) for m in request.messages])
    # The channel to lock: the one pinned, or the deepest match's (looked for again under the lock: a
    # concurrent identical call may have appended meanwhile), or a new one. One writer per channel from
    # there: a concurrent identical call finds what this one appends. The user's cursor comes with the lock
    # (None when it must be read under it: none yet, or moved while waiting). The usual call's channel is
    # found and locked in one statement.
    locked = deepest_channel_locked(user=user, hashes=hashes) if pinned is None else None
    if locked is not None:
        (channel, cursor), created = locked, False
    else:
        found = pinned.pk if pinned is not None else deepest_channel(user=user, hashes=hashes)
        created = found is None
        if found is None:
            new = chatcore_services.channel_create(owner=user, title=_title(request.messages), model=model, team=team)
            channel, cursor = channel_lock(channel_id=new.pk), None
        else:
            channel, cursor = channel_lock_with_cursor(channel_id=found, user_id=user.pk)
    # A spent budget of the channel's team refuses the turn; the transaction takes back a channel made for it.
    team_budget_check(team_id=channel.team_id)
    match = None if created else deepest_in_locked(user=user, channel=channel, hashes=hashes)
    if channel.model_id != model.pk:
        channel = chatcore_services.channel_update(channel=channel, actor=user, model=model)
    leaf, appended, cursor, path = _append(
        user=user, channel=channel, match=match, incoming=request.messages, hashes=hashes, cursor=cursor
    )
    assembled = context_assemble(channel=channel, user=user, cursor=cursor, path=path)  # the cursor is on the leaf
    return channel, leaf, created, appended, assembled, cursor


def client_tool_names(params: dict) -> frozenset[str]:
    """The names of the tools the client defines (ours of the same name are then not offered)."""
    names = set()
    for tool in params.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return frozenset(names)


def _limit(*, model: LLMModel, params: dict) -> tuple[int, int, int]:
    """(tokens the context may take, tokens of the client's tools' definitions, of the server's).

    Room for the server's tools (recall_history) is kept whether or not this call will offer them: a
    compaction made to fit this very call may be what puts a summary in force, and with it the tool.
    """
    window = model.context_window or chatcore_conf.DEFAULT_CONTEXT_BUDGET
    asked = params.get("max_completion_tokens") or params.get("max_tokens")
    ceiling = model.max_output_tokens or window
    reserve = min(int(asked), ceiling) if isinstance(asked, int) and asked > 0 else None
    if reserve is None:
        reserve = min(int(window * conf.OUTPUT_RESERVE_SHARE), ceiling)
    tools = _definitions_tokens(canonical_json(params["tools"])) if params.get("tools") else 0
    ours = tools_registered(besides=client_tool_names(params))
    server = _definitions_tokens(canonical_json([tool.schema() for tool in ours])) if ours else 0
    return window - reserve - tools - server, tools, server


def _definitions_tokens(text: str) -> int:
    """The tokens of tools' definitions: the same few texts on every call of a client (and the server's own),
    counted once per process (a pure function of the text) unless too long to keep."""
    return _remembered_tokens(text) if len(text) <= DEFINITIONS_REMEMBERED_CHARS else count_tokens(text)


@functools.lru_cache(maxsize=DEFINITIONS_REMEMBERED)
def _remembered_tokens(text: str) -> int:
    return count_tokens(text)


def _too_long(tokens: int, limit: int, why: str) -> Unprocessable:
    return Unprocessable(
        f"This conversation's context needs {tokens:,} tokens and the model leaves {max(limit, 0):,} for it "
        f"(its window minus the answer's reserve and the tools); {why}",
        code="context_length_exceeded",
        extra={"field": "messages", "tokens": tokens, "limit": max(limit, 0)},
    )


def _fit(*, channel: Channel, user: User, leaf: Message, limit: int, assembled: AssembledContext) -> AssembledContext:
    """Our context for `leaf` (`assembled` when it was placed), compacted inline (with the lease) until it fits
    under `limit`.

    Compaction works on the owner's active path, so the cursor is put back on the leaf before each one
    (another call of the same user may have moved it to another branch meanwhile).
    """
    steps, failures, compactions = list(KEEP_STEPS), 0, 0
    deadline = time.monotonic() + conf.LEASE_WAIT_SECONDS
    while True:
        if assembled.tokens <= limit:
            return assembled
        if failures >= conf.COMPACT_ATTEMPTS or compactions >= conf.COMPACT_ATTEMPTS * COMPACTIONS_PER_ATTEMPT:
            raise _too_long(assembled.tokens, limit, "compacting it did not bring it under that.")
        chatcore_services.cursor_move(channel=channel, user=user, message_id=leaf.pk, exact=True)
        try:
            channel_compact(channel=channel, actor=user, trigger=Summary.Trigger.GATEWAY, keep_recent=steps[0])
            compactions += 1
        except Unprocessable:
            failures += 1
            if len(steps) == 1:
                raise _too_long(assembled.tokens, limit, "the newest turns alone are too long.") from None
            steps.pop(0)
        except Conflict as error:
            if error.code != "in_progress":  # the channel moved underneath: look again
                failures += 1
            elif time.monotonic() < deadline:
                time.sleep(LEASE_POLL_SECONDS)
            else:
                raise Conflict(
                    "A compaction of this conversation is running; try again in a moment.",
                    code="compaction_in_progress",
                    retry_after=COMPACTION_RETRY_AFTER_SECONDS,
                ) from None
        except ModelCallFailed as error:
            raise ModelCallFailed(
                f"The conversation had to be compacted to fit the model's window, and that failed: {error.message}",
                code="compaction_failed",
            ) from None
        assembled = context_assemble(channel=channel, user=user, leaf=leaf)


def turn_prepare(
    *,
    user: User,
    request: CompletionRequest,
    timings: Timings | None = None,
    team: Team | None = None,
    placed: Callable[[Turn], None] | None = None,
) -> Turn:
    """Place the request's history on the tree and make our context for its leaf fit the model; how long
    each took goes into `timings` ("place", "fit"). A conversation that starts a channel starts it in
    `team` (the API token's, when it is bound to one).

    `placed`: called with the turn when it is known before the placing's transaction commits (the usual
    call, whose context fits without compacting), so that the caller may send the model its request while
    the commit waits for the disk (`views._placed_and_asked`). The commit may still fail after it: the
    caller must not store anything of the turn before this function has returned.

    One call of the user's limit on model calls (chatcore.throttling), the inline compactions included;
    a refused turn (Throttled) writes nothing.
    """
    with expensive_call(user=user):
        return _turn_prepare(user=user, request=request, timings=timings or Timings(), team=team, placed=placed)


def _pinned_channel(*, user: User, channel_id: int | None) -> Channel | None:
    if channel_id is None:
        return None
    try:
        return chatcore_selectors.channel_get(user=user, channel_id=channel_id)
    except NotFound:
        raise NotFound(
            f"No channel {channel_id} of yours.", code="channel_not_found", extra={"field": "channel_id"}
        ) from None


def _turn_prepare(
    *,
    user: User,
    request: CompletionRequest,
    timings: Timings,
    team: Team | None,
    placed: Callable[[Turn], None] | None,
) -> Turn:
    model, site_fallback = _model_and_site_fallback(name=request.model)
    pinned = _pinned_channel(user=user, channel_id=request.channel_id)
    with transaction.atomic():
        # Hashing and appending the history: CPU and a few short queries (the channel's row lock is held only by
        # another call placing its history), never a model call.
        with timings.timed("place"), collector_paused():
            channel, leaf, created, appended, assembled, cursor = _place(
                user=user, request=request, model=model, pinned=pinned, team=team
            )
        with timings.timed("fit"):
            limit, tools_tokens, server_tokens = _limit(model=model, params=request.params)
            made = functools.partial(
                _turn_made,
                user=user,
                request=request,
                model=model,
                site_fallback=site_fallback,
                channel=channel,
                leaf=leaf,
                created=created,
                appended=appended,
                limits=(limit, tools_tokens, server_tokens),
            )
            if assembled.tokens <= limit:  # the usual call: the turn is whole before the commit, handed on
                turn = made(assembled=assembled, offered_for=cursor)  # the summary in force is the placed cursor's
                if placed is not None:
                    placed(turn)
                return turn
    # Too long: compacted inline, after the commit (a compaction calls a model: no lock is held across it).
    with timings.timed("fit"):
        assembled = _fit(channel=channel, user=user, leaf=leaf, limit=limit, assembled=assembled)
        # A compaction moved the summary in force since the placing.
        return made(assembled=assembled, offered_for=CURSOR_UNREAD)


def _turn_made(
    *,
    user: User,
    request: CompletionRequest,
    model: LLMModel,
    site_fallback: LLMModel | None,
    channel: Channel,
    leaf: Message,
    created: bool,
    appended: int,
    assembled: AssembledContext,
    offered_for: Cursor | None | object,
    limits: tuple[int, int, int],
) -> Turn:
    """The turn for a context that fits: the tools offered with the summary in force (`offered_for`: the cursor
    that names it, or CURSOR_UNREAD) and the models to try. `limits`: `_limit`'s."""
    limit, tools_tokens, server_tokens = limits
    ours = tuple(
        tools_offered(channel=channel, user=user, besides=client_tool_names(request.params), cursor=offered_for)
    )
    return Turn(
        channel=channel,
        leaf=leaf,
        model=model,
        assembled=assembled,
        params=request.params,
        prompt_tokens=assembled.tokens + tools_tokens + (server_tokens if ours else 0),
        created=created,
        appended=appended,
        tools=ours,
        room=max(0, limit - assembled.tokens),
        candidates=_candidates(model=model, site_fallback=site_fallback, channel=channel),
    )


def turn_reply_store(
    *,
    user: User,
    turn: Turn,
    result: ChatTurn,
    parent: Message | None = None,
    interrupted: bool = False,
    usage: UsagePending | None = None,
) -> Message:
    """The model's answer under `parent` (the last result of the server's tool rounds; by default the
    turn's leaf), announced like any reply. Its chain hash is taken under the leaf: the client's next
    history goes from its turn straight to this answer (chatcore.chain). `usage`: the model call's usage
    row, unwritten, written with the answer (`replies.reply_store`)."""
    parent = parent or turn.leaf
    hashed_as = ""
    if parent.pk != turn.leaf.pk:
        metadata = {"tool_calls": result.tool_calls} if result.tool_calls else None
        hashed_as = chain_hash(
            parent_hash=turn.leaf.chain_hash, role=Message.Role.ASSISTANT, content=result.content, metadata=metadata
        )
    extra: dict = {"finish_reason": result.finish_reason, "source": "gateway"}
    if result.tool_calls:
        extra["tool_calls"] = result.tool_calls
    return reply_store(
        channel=turn.channel,
        user=user,
        parent=parent,
        answer=result,
        prompt_tokens_estimate=turn.prompt_tokens,
        interrupted=interrupted,
        extra=extra,
        chain_hash_as=hashed_as,
        usage=usage,
    )
