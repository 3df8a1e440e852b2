"""Use cases of the conversation substrate.

Every interface (API, pages, admin, commands, tasks) calls these. Writes are
atomic; signals go out on commit. The channel's pressure columns are updated
in the same transaction as the change that moves them.
"""

import contextlib
import copy
import dataclasses
import json
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.utils import timezone

from chatcore import conf, selectors, statements
from chatcore.chain import chain_hash, chain_seed
from chatcore.channel_settings import channel_settings_validate
from chatcore.characters import text_problem
from chatcore.errors import Conflict
from chatcore.locks import RowsSeen, channel_lock, channel_lock_with_cursor, rows_seen_usable, summary_lock
from chatcore.metadata.validation import metadata_validate
from chatcore.models import AuditEntry, Channel, Cursor, LLMModel, Message, Persona, Summary, Team
from chatcore.provenance import client_metadata_check
from chatcore.teams.access import channel_team_check, model_allowed_check
from chatcore.tokens import count_tokens


def audit_record(
    *, actor: User | None, action: str, resource: str, details: dict | None = None, actor_label: str = ""
) -> AuditEntry:
    label = actor_label or (f"user:{actor.pk}" if actor is not None else "system")
    return AuditEntry.objects.create(
        actor=actor, actor_label=label, action=action, resource=resource, details=details or {}
    )


def message_size(*, content: str, metadata: dict | None) -> tuple[int, int]:
    """Tokens and characters a message occupies in a model's context."""
    text = content
    if metadata and metadata.get("tool_calls"):
        text += json.dumps(metadata["tool_calls"], ensure_ascii=False)
    # Images, audio and files sent as content parts: a flat estimate each (their text is in `content`).
    attachments = sum(
        1
        for part in (metadata or {}).get("content_parts") or []
        if isinstance(part, dict) and part.get("type") != "text"
    )
    return count_tokens(text) + conf.MESSAGE_OVERHEAD_TOKENS + attachments * conf.ATTACHMENT_TOKENS, len(text)


def message_tree_fields(*, parent: Message | None, tokens: int, chars: int) -> dict[str, Any]:
    """A new message's place under `parent` and its running totals from the root (docs/design.md, invariant 5),
    as model fields. Worked out here once for every writer (`message_append`, the bulk import, the
    benchmarks' own builders): messages are immutable, so whatever is stored at insert stays."""
    if parent is None:
        return {"depth": 0, "tokens": tokens, "chars": chars, "path_tokens": tokens, "path_chars": chars}
    return {
        "depth": parent.depth + 1,
        "tokens": tokens,
        "chars": chars,
        "path_tokens": parent.path_tokens + tokens,
        "path_chars": parent.path_chars + chars,
        "root_id": parent.root_id or parent.pk,
    }


@transaction.atomic
def channel_create(
    *,
    owner: User,
    title: str,
    persona: Persona | None = None,
    model: LLMModel | None = None,
    type: str = Channel.Type.DIRECT,
    settings: dict | None = None,
    ephemeral: bool = False,
    team: Team | None = None,
) -> Channel:
    """A channel of `owner`'s, in one of their teams or none (its models then limited to the team's)."""
    title = (title or "").strip()
    if not title:
        raise ValidationError({"title": "Give the channel a title."})
    if type not in Channel.Type.values:
        raise ValidationError({"type": f"Type must be one of: {', '.join(Channel.Type.values)}."})
    channel_team_check(owner=owner, team=team)
    model_allowed_check(team=team, model=model)
    channel = Channel(
        owner=owner,
        title=title[:200],
        persona=persona,
        model=model,
        team=team,
        type=type,
        settings=channel_settings_validate(settings),
        ephemeral=ephemeral,
    )
    channel.context_budget = selectors.channel_context_budget(channel=channel)
    channel.save()
    audit_record(actor=owner, action="channel.create", resource=f"channel:{channel.pk}")
    return channel


@transaction.atomic
def channel_update(*, channel: Channel, actor: User, **changes: Any) -> Channel:
    allowed = {"title", "persona", "model", "settings", "archived", "team"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValidationError(f"Cannot change: {', '.join(sorted(unknown))}.")
    if "team" in changes:
        channel_team_check(owner=channel.owner, team=changes["team"])
    team = changes["team"] if "team" in changes else channel.team
    model_allowed_check(team=team, model=changes["model"] if "model" in changes else channel.model)
    fields = []
    if "title" in changes:
        title = (changes["title"] or "").strip()
        if not title:
            raise ValidationError({"title": "Give the channel a title."})
        channel.title = title[:200]
        fields.append("title")
    if "settings" in changes:
        incoming = changes["settings"] if changes["settings"] is not None else {}
        if not isinstance(incoming, dict):
            raise ValidationError({"settings": "Settings must be an object."})
        merged = {**channel.settings, **incoming}
        channel.settings = channel_settings_validate({k: v for k, v in merged.items() if v is not None})
        fields.append("settings")
    for name in ("persona", "model", "archived", "team"):
        if name in changes:
            setattr(channel, name, changes[name])
            fields.append(name)
    if "model" in changes:
        channel.context_budget = selectors.channel_context_budget(channel=channel)
        channel.context_ratio = channel.context_tokens / channel.context_budget
        fields += ["context_budget", "context_ratio"]
    if fields:
        channel.save(update_fields=fields)
        audit_record(
            actor=actor,
            action="channel.update",
            resource=f"channel:{channel.pk}",
            details={"fields": sorted(set(fields) - {"context_budget", "context_ratio"}), "settings": channel.settings},
        )
    return channel


@transaction.atomic
def channel_delete(*, channel: Channel, actor: User) -> None:
    """Hides the channel; its messages stay until purged."""
    channel.deleted_at = timezone.now()
    channel.save(update_fields=["deleted_at"])
    audit_record(actor=actor, action="channel.delete", resource=f"channel:{channel.pk}")


PRESSURE_FIELDS = ("context_tokens", "context_messages", "context_budget", "context_ratio", "last_activity_at")


def _pressure_set(*, channel: Channel, leaf: Message | None, summary: Summary | None) -> None:
    """Recompute the pressure columns from a leaf and its boundary: O(1)."""
    if leaf is None:
        tokens, messages = 0, 0
    elif summary is None:
        tokens, messages = leaf.path_tokens, leaf.depth + 1
    else:
        boundary = summary.through_message
        tokens = leaf.path_tokens - boundary.path_tokens + summary.tokens
        messages = leaf.depth - boundary.depth
    channel.context_budget = channel.context_budget or selectors.channel_context_budget(channel=channel)
    channel.context_tokens = tokens
    channel.context_messages = messages
    channel.context_ratio = tokens / channel.context_budget


def _pressure_apply(*, channel: Channel, leaf: Message | None, summary: Summary | None) -> None:
    _pressure_set(channel=channel, leaf=leaf, summary=summary)
    channel.save(update_fields=list(PRESSURE_FIELDS))


def _fields(model: type[models.Model], names: tuple[str, ...]) -> list[models.Field]:
    found = [model._meta.get_field(name) for name in names]
    return [field for field in found if isinstance(field, models.Field)]


def _cursor_and_pressure_save(*, cursor: Cursor, channel: Channel) -> None:
    """PostgreSQL: what `cursor.save` and `_pressure_apply`'s save write, in one statement (an UPDATE inside
    a data-modifying WITH). The caller holds the channel's lock, as every writer of a cursor does."""
    cursor.updated_at = timezone.now()
    quote = connection.ops.quote_name
    moved = _fields(Cursor, ("leaf", "summary", "updated_at"))
    pressure = _fields(Channel, PRESSURE_FIELDS)
    sql = (
        f"WITH moved AS (UPDATE {quote(Cursor._meta.db_table)} SET "
        + ", ".join(f"{quote(str(field.column))} = %s" for field in moved)
        + f" WHERE id = %s) UPDATE {quote(Channel._meta.db_table)} SET "
        + ", ".join(f"{quote(str(field.column))} = %s" for field in pressure)
        + " WHERE id = %s"
    )
    params = [field.get_db_prep_save(getattr(cursor, field.attname), connection) for field in moved]
    params.append(cursor.pk)
    params += [field.get_db_prep_save(getattr(channel, field.attname), connection) for field in pressure]
    params.append(channel.pk)
    with connection.cursor() as db:
        db.execute(sql, params)


def _cursor_place(
    *, channel: Channel, user: User, leaf: Message, summary: Summary | None, cursor: Cursor | None
) -> Cursor:
    owner = user.pk == channel.owner_id
    if cursor is None:
        cursor = Cursor.objects.create(channel=channel, user=user, leaf=leaf, summary=summary)
    else:
        cursor.leaf, cursor.summary = leaf, summary
        if owner and connection.vendor == "postgresql":
            _pressure_set(channel=channel, leaf=leaf, summary=summary)
            _cursor_and_pressure_save(cursor=cursor, channel=channel)
            return cursor
        cursor.save(update_fields=["leaf", "summary", "updated_at"])
    if owner:
        _pressure_apply(channel=channel, leaf=leaf, summary=summary)
    return cursor


def _message_check(*, role: str, content: object, metadata: object) -> None:
    """ValidationError naming the field unless the message can be stored as it is."""
    if role not in Message.Role.values:
        raise ValidationError({"role": f"Role must be one of: {', '.join(Message.Role.values)}."})
    if not isinstance(content, str):
        raise ValidationError({"content": "Content must be text."})
    if (problem := text_problem(content)) is not None:  # a NUL or a lone surrogate (chatcore.characters)
        raise ValidationError({"content": problem})
    if len(content) > conf.MAX_MESSAGE_CHARS:
        raise ValidationError({"content": f"Content is longer than {conf.MAX_MESSAGE_CHARS:,} characters."})
    checked = metadata_validate(role=role, metadata=metadata)
    if not content.strip() and not checked.get("tool_calls"):
        raise ValidationError({"content": "Content may not be empty."})


def message_append(
    *,
    channel: Channel,
    user: User,
    role: str,
    content: str,
    parent_id: int | None = None,
    metadata: dict | None = None,
    author: User | None = None,
    created_at=None,
    move_cursor: bool = True,
    root: bool = False,
    chain_hash_as: str = "",
    parent: Message | None = None,
    companions: tuple[models.Model, ...] = (),
    read_along: statements.RowsAlong | None = None,
    seen: RowsSeen | None = None,
) -> Message:
    """Append under the active leaf, or under `parent_id` (a new sibling branch).

    `root=True` starts a new root (an edit of the first message). `chain_hash_as`: the path's hash as
    a client saw it, when not the stored path (the gateway's answer after server-side tool rounds).
    `parent`: the message `parent_id` names, when the caller holds it already (a reply answers the
    message its context ended with): what is read of it (depth, totals, chain hash) never changes.
    `read_along`: rows to read with the write when it is one statement (`chatcore.statements.RowsAlong`).
    `seen`: see `message_append_at`.
    """
    appended = message_append_at(
        channel=channel,
        user=user,
        role=role,
        content=content,
        parent_id=parent_id,
        metadata=metadata,
        author=author,
        created_at=created_at,
        move_cursor=move_cursor,
        root=root,
        chain_hash_as=chain_hash_as,
        parent=parent,
        companions=companions,
        read_along=read_along,
        seen=seen,
    )
    return appended.message


@dataclasses.dataclass(frozen=True)
class Appended:
    """What `message_append_at` did: the message; the user's cursor as it is once the message is in (None
    when it did not move and the user had none); the path since the boundary in force, root first, ending
    with the new message, when asked for and it came with the write (else None); and, when the writes were
    one statement on PostgreSQL, the channel and the cursor as they left them with their rows' versions
    (`locks.RowsSeen`: a next writer of the same user may go by them), else None."""

    message: Message
    cursor: Cursor | None
    path: list[Message] | None
    placed: RowsSeen | None


def message_append_at(
    *,
    channel: Channel,
    user: User,
    role: str,
    content: str,
    parent_id: int | None = None,
    metadata: dict | None = None,
    author: User | None = None,
    created_at=None,
    move_cursor: bool = True,
    root: bool = False,
    chain_hash_as: str = "",
    parent: Message | None = None,
    companions: tuple[models.Model, ...] = (),
    read_path: bool = False,
    read_along: statements.RowsAlong | None = None,
    seen: RowsSeen | None = None,
) -> Appended:
    """`message_append`, and the user's cursor as it is once the message is in: a reply's preparation
    assembles the context and picks the tools from it instead of reading it again.

    `companions`: unsaved rows of other tables written with the message (a reply's usage row).
    `read_path`: also return the stored messages since the boundary in force, root first, ending with
    the new one, when they come with the write at no cost of their own (PostgreSQL), else None: the
    context then needs no statement for them. `read_along` (not with `read_path`): rows read by that one
    statement, when the writes are one (`chatcore.statements.RowsAlong`; its `rows` stay empty otherwise).

    `seen`: the channel and this user's cursor as a read saw them, with their rows' versions
    (`locks.RowsSeen`: `selectors.channel_rows_seen`, or what an earlier append `placed`). When the message
    continues the cursor's leaf, it is built from them and written in one statement that takes the
    channel's lock itself, on condition that neither row changed since (no statement to lock, nor, outside
    a transaction, to begin and end one); if one did, nothing was written and the append goes on as without
    `seen`, under the lock. `channel` as the caller holds it is left as it is either way."""
    _message_check(role=role, content=content, metadata=metadata)
    if seen is not None:
        appended = _append_unless_changed(
            seen=seen,
            channel=channel,
            user=user,
            role=role,
            content=content,
            parent_id=parent_id,
            metadata=metadata,
            author=author,
            created_at=created_at,
            move_cursor=move_cursor,
            root=root,
            chain_hash_as=chain_hash_as,
            parent=parent,
            companions=companions,
            read_path=read_path,
            read_along=read_along,
        )
        if appended is not None:
            return appended
    return _append_locked(
        channel=channel,
        user=user,
        role=role,
        content=content,
        parent_id=parent_id,
        metadata=metadata,
        author=author,
        created_at=created_at,
        move_cursor=move_cursor,
        root=root,
        chain_hash_as=chain_hash_as,
        parent=parent,
        companions=companions,
        read_path=read_path,
        read_along=read_along,
    )


@transaction.atomic
def _append_locked(
    *,
    channel: Channel,
    user: User,
    role: str,
    content: str,
    parent_id: int | None,
    metadata: dict | None,
    author: User | None,
    created_at,
    move_cursor: bool,
    root: bool,
    chain_hash_as: str,
    parent: Message | None,
    companions: tuple[models.Model, ...],
    read_path: bool,
    read_along: statements.RowsAlong | None,
) -> Appended:
    """`message_append_at` under the channel's lock, taken here."""
    channel, cursor = channel_lock_with_cursor(channel_id=channel.pk, user_id=user.pk)
    if cursor is None:
        cursor = selectors.cursor_get(channel=channel, user=user)
    if parent is not None and (parent.pk != parent_id or parent.channel_id != channel.pk):
        raise ValidationError({"parent_id": "No such message in this channel."})
    if root:
        parent = None
    elif parent is not None:
        pass
    elif parent_id is not None:
        parent = Message.objects.filter(channel=channel, pk=parent_id).first()
        if parent is None:
            raise ValidationError({"parent_id": "No such message in this channel."})
    else:
        parent = cursor.leaf if cursor else None

    message = _message_built(
        channel=channel,
        user=user,
        role=role,
        content=content,
        metadata=metadata,
        author=author,
        created_at=created_at,
        chain_hash_as=chain_hash_as,
        parent=parent,
    )
    if move_cursor and cursor is not None and statements.placeable_in_one(message=message, companions=companions):
        appended = _append_in_one(
            channel=channel,
            user=user,
            cursor=cursor,
            message=message,
            companions=companions,
            read_path=read_path,
            read_along=read_along,
        )
        assert appended is not None  # written whatever the rows' versions: the lock is held
        return appended
    for companion in companions:
        companion.save(force_insert=True)
    message.save(force_insert=True)
    if move_cursor:
        cursor = _cursor_follow(channel=channel, user=user, cursor=cursor, message=message)
    if not move_cursor or user.pk != channel.owner_id:
        channel.save(update_fields=["last_activity_at"])
    return Appended(message=message, cursor=cursor, path=None, placed=None)


def _message_built(
    *,
    channel: Channel,
    user: User,
    role: str,
    content: str,
    metadata: dict | None,
    author: User | None,
    created_at,
    chain_hash_as: str,
    parent: Message | None,
) -> Message:
    """The new message under `parent` (unsaved), its place in the tree, size and chain hash worked out, and
    the channel's last activity set to now."""
    tokens, chars = message_size(content=content, metadata=metadata)
    message = Message(
        channel=channel,
        parent=parent,
        role=role,
        content=content,
        metadata=metadata or {},
        author=author if author is not None else (user if role == Message.Role.USER else None),
        created_at=created_at or timezone.now(),
        chain_hash=chain_hash_as
        or chain_hash(
            parent_hash=parent.chain_hash if parent else chain_seed(channel.owner_id),
            role=role,
            content=content,
            metadata=metadata,
        ),
        **message_tree_fields(parent=parent, tokens=tokens, chars=chars),
    )
    if parent is not None and (parent.root_id is None or Message.root.is_cached(parent)):
        message.root = parent.root or parent  # the path's root as the parent holds it, read by the context
    channel.last_activity_at = timezone.now()
    return message


def _append_unless_changed(
    *,
    seen: RowsSeen,
    channel: Channel,
    user: User,
    role: str,
    content: str,
    parent_id: int | None,
    metadata: dict | None,
    author: User | None,
    created_at,
    move_cursor: bool,
    root: bool,
    chain_hash_as: str,
    parent: Message | None,
    companions: tuple[models.Model, ...],
    read_path: bool,
    read_along: statements.RowsAlong | None,
) -> Appended | None:
    """`message_append_at` from the rows `seen`, in one statement that takes the channel's lock on condition
    that they did not change (`statements.append_and_place`'s `unless_changed`); None when it wrote nothing:
    they changed, or this append is not one it makes (another parent than the cursor's leaf, a new root, a
    cursor that stays, another user's cursor, values only the compiler can place)."""
    leaf_id = seen.cursor.leaf_id
    if root or not move_cursor or seen.channel.pk != channel.pk or seen.cursor.user_id != user.pk:
        return None
    if (parent_id is not None and parent_id != leaf_id) or (parent is not None and parent.pk != parent_id):
        return None  # another parent, or one the locked append refuses
    # The caller's channel stays as it is (a locked append reads a row of its own), also when this one writes
    # nothing and the append goes on under the lock: a copy when the rows seen are its own.
    cursor = seen.cursor
    channel = copy.copy(channel) if seen.channel is channel else seen.channel
    cursor.channel = channel
    if parent is None:
        parent = cursor.leaf
    elif parent.channel_id != channel.pk:
        return None
    message = _message_built(
        channel=channel,
        user=user,
        role=role,
        content=content,
        metadata=metadata,
        author=author,
        created_at=created_at,
        chain_hash_as=chain_hash_as,
        parent=parent,
    )
    if not statements.placeable_unless_changed(message=message, companions=companions):
        return None
    # One statement: outside a transaction it is one of its own; inside one, a savepoint keeps a failure as
    # the locked append's own transaction would.
    with transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext():
        return _append_in_one(
            channel=channel,
            user=user,
            cursor=cursor,
            message=message,
            companions=companions,
            read_path=read_path,
            read_along=read_along,
            unless_changed=seen,
        )


def message_placed_in_one(
    *, channel: Channel, user: User, cursor: Cursor, message: Message
) -> tuple[Message, Cursor, list[Message]] | None:
    """For a writer that holds the channel's lock with the user's `cursor` (`locks.channel_lock_with_cursor`) and
    has built `message` unsaved under its parent (tree fields, chain hash, `channel.last_activity_at` set): on
    PostgreSQL, the message inserted, the cursor moved onto it and the pressure saved in one statement that also
    reads the path since the boundary in force (`message_append_at(read_path=True)`'s). None elsewhere: the
    caller writes them as SQLite does."""
    if connection.vendor != "postgresql":
        return None
    appended = _append_in_one(channel=channel, user=user, cursor=cursor, message=message, companions=(), read_path=True)
    assert appended is not None and appended.cursor is not None and appended.path is not None
    return appended.message, appended.cursor, appended.path


def _append_in_one(
    *,
    channel: Channel,
    user: User,
    cursor: Cursor,
    message: Message,
    companions: tuple[models.Model, ...],
    read_path: bool,
    read_along: statements.RowsAlong | None = None,
    unless_changed: RowsSeen | None = None,
) -> Appended | None:
    """`message_append_at`'s writes as one statement (chatcore.statements), the lock held or, with
    `unless_changed`, taken by the statement if those rows did not change (None when they did: nothing
    written): the boundary and the pressure are worked out before the insert, as `_cursor_follow` and
    `_cursor_place` do after it (the new message is on no summary of its own, so its boundary is its
    parent's). On SQLite the path is not read with them (None): the context reads it."""
    parent = message.parent
    summary = None
    if parent is not None and parent.pk == cursor.leaf_id:
        summary = cursor.summary
    elif parent is not None:
        summary = selectors.summary_boundary_for(leaf_id=parent.pk)
    cursor.leaf, cursor.summary = message, summary
    cursor.updated_at = timezone.now()
    channel_fields: tuple[str, ...] = ("last_activity_at",)
    if user.pk == channel.owner_id:
        _pressure_set(channel=channel, leaf=message, summary=summary)
        channel_fields = PRESSURE_FIELDS
    after_depth = summary.through_message.depth if summary is not None else -1
    if connection.vendor != "postgresql":
        statements.sqlite_append_and_place(
            message=message,
            companions=companions,
            cursor=cursor,
            channel=channel,
            channel_fields=channel_fields,
            read_along=read_along,
        )
        cursor.leaf = message  # its id is set now
        return Appended(message=message, cursor=cursor, path=None, placed=None)  # the path: the context's read
    placement = statements.append_and_place(
        message=message,
        companions=companions,
        cursor=cursor,
        cursor_fields=("summary", "updated_at"),
        channel=channel,
        channel_fields=channel_fields,
        path_from=parent.pk if read_path and parent is not None else None,
        path_after_depth=after_depth,
        read_along=read_along,
        unless_changed=unless_changed,
    )
    if not placement.placed:
        return None
    cursor.leaf = message  # its id is set now
    path = [*(placement.path or []), message] if read_path else None
    placed = None
    if rows_seen_usable(channel_version=placement.channel_version, cursor_version=placement.cursor_version):
        assert placement.channel_version is not None and placement.cursor_version is not None
        placed = RowsSeen(
            channel=channel,
            cursor=cursor,
            channel_version=placement.channel_version,
            cursor_version=placement.cursor_version,
        )
    return Appended(message=message, cursor=cursor, path=path, placed=placed)


def message_post(
    *,
    channel: Channel,
    user: User,
    role: str,
    content: str,
    parent_id: int | None = None,
    metadata: dict | None = None,
) -> Message:
    """A client's message (the API's append): `message_append`, once its metadata holds none of the keys
    only the server writes (chatcore.provenance; ValidationError naming the key otherwise)."""
    client_metadata_check(metadata)
    return message_append(
        channel=channel, user=user, role=role, content=content, parent_id=parent_id, metadata=metadata
    )


def _cursor_follow(*, channel: Channel, user: User, cursor: Cursor | None, message: Message) -> Cursor:
    """The user's cursor moves to the new message; the boundary in force stays when it
    continues the active path, else it is the summary in force on the new message's path.
    (The owner's move saves the channel with its pressure columns.)"""
    parent = message.parent
    summary = None
    if cursor is not None and parent is not None and parent.pk == cursor.leaf_id:
        summary = cursor.summary
    elif parent is not None:
        summary = selectors.summary_boundary_for(leaf_id=message.pk)
    return _cursor_place(channel=channel, user=user, leaf=message, summary=summary, cursor=cursor)


def cursor_follow(
    *, channel: Channel, user: User, leaf: Message, under: Message | None, cursor: Cursor | None = None
) -> Cursor:
    """The user's cursor onto `leaf`, appended (with any messages between them) under `under` by a caller that
    holds the channel's lock and has saved nothing of the channel's since (its `last_activity_at` is written
    as the caller holds it). The boundary in force is `under`'s: the cursor's own when it was there, as
    `message_append` keeps it, else the one found on `under`'s path. `cursor`: the user's cursor as the
    caller read it under that lock (`locks.channel_lock_with_cursor`), else it is read here."""
    if cursor is None:
        cursor = selectors.cursor_get(channel=channel, user=user)
    if under is None:
        summary = None
    elif cursor is not None and cursor.leaf_id == under.pk:
        summary = cursor.summary
    else:
        summary = selectors.summary_boundary_for(leaf_id=under.pk)
    return _cursor_place(channel=channel, user=user, leaf=leaf, summary=summary, cursor=cursor)


@transaction.atomic
def cursor_move(*, channel: Channel, user: User, message_id: int, exact: bool = False) -> Cursor:
    """Switch to the branch through `message_id`: its most recent leaf (with `exact`, that message itself)."""
    channel = channel_lock(channel_id=channel.pk)
    if not Message.objects.filter(channel=channel, pk=message_id).exists():
        raise ValidationError({"message_id": "No such message in this channel."})
    leaf = Message.objects.get(pk=message_id if exact else selectors.message_latest_leaf(message_id=message_id))
    summary = selectors.summary_boundary_for(leaf_id=leaf.pk)
    cursor = _cursor_place(
        channel=channel, user=user, leaf=leaf, summary=summary, cursor=selectors.cursor_get(channel=channel, user=user)
    )
    return cursor


def cursors_refresh(*, channel: Channel) -> None:
    """After a summary appears, goes or changes size (its quotes of purged messages blanked), re-find each
    cursor's boundary and the owner's pressure.

    A channel has one cursor per participant: a handful at most.
    """
    for cursor in Cursor.objects.filter(channel=channel).select_related("user", "leaf"):
        summary = selectors.summary_boundary_for(leaf_id=cursor.leaf_id)
        _cursor_place(channel=channel, user=cursor.user, leaf=cursor.leaf, summary=summary, cursor=cursor)


@transaction.atomic
def summary_write(
    *,
    channel: Channel,
    through_message: Message,
    content: str,
    created_by: User | None,
    trigger: str = Summary.Trigger.MANUAL,
    **meta: Any,
) -> Summary:
    """Store a summary as the new boundary of every path through its message."""
    content = (content or "").strip()
    if not content:
        raise ValidationError({"content": "A summary may not be empty."})
    if through_message.channel_id != channel.pk:
        raise ValidationError({"through_message": "The message is not in this channel."})
    channel = channel_lock(channel_id=channel.pk)
    previous = selectors.summary_boundary_for(leaf_id=through_message.pk)
    summary = Summary.objects.create(
        channel=channel,
        through_message=through_message,
        previous=previous,
        content=content,
        tokens=count_tokens(content) + conf.MESSAGE_OVERHEAD_TOKENS,
        trigger=trigger,
        created_by=created_by,
        **meta,
    )
    cursors_refresh(channel=channel)
    return summary


@transaction.atomic
def summary_revert(*, summary: Summary, actor: User | None) -> Summary:
    """Undo: the originals are back in the context at once."""
    channel, summary = summary_lock(summary=summary)
    if summary.reverted_at is not None:
        raise ValidationError("This summary was already reverted.")
    if Message.objects.filter(pk=summary.through_message_id, purged_at__isnull=False).exists():
        raise Conflict(
            "The messages this summary covers were purged, so it cannot be reverted.", code="originals_purged"
        )
    summary.reverted_at = timezone.now()
    summary.save(update_fields=["reverted_at"])
    cursors_refresh(channel=channel)
    audit_record(
        actor=actor, action="summary.revert", resource=f"summary:{summary.pk}", details={"channel": channel.pk}
    )
    return summary
