"""Where a resent history meets the stored tree (invariant 12).

Chain hashes have the prefix property: a stored message with the hash of
the incoming history's k-th message has exactly the incoming messages 0..k
as its path. So the deepest stored match is the deepest incoming hash that
exists, and existence is monotone along the incoming list (if message k is
stored, so are 0..k-1).

The usual call resends what it was answered plus one new turn, so the first
query tries only the newest few hashes: one indexed lookup. When none of
them is stored (the client edited or dropped a turn further back, or this
is a new conversation), one more query takes every hash (in chunks from the
newest, which the monotone property allows to stop at the first hit).
"""

from collections.abc import Iterator

from django.contrib.auth.models import User
from django.db import router
from django.db.models import Exists, OuterRef, QuerySet, Value

from chatcore.chain import ChainKey
from chatcore.compiled import FixedQuery
from chatcore.locks import channel_lock_with_cursor_found, lock_with_cursor_query
from chatcore.models import Channel, Cursor, Message
from compaction.gateway import conf


def _found(channels: QuerySet[Channel], hashes: list[str]) -> QuerySet[Message]:
    """The messages with one of `hashes` in one of `channels`, deepest first (newest among equals).

    The channels are an EXISTS test on each hit, never a join: joined, SQLite's planner (which has no
    statistics) walks the owner's channels and every message in them (the channel index) and tests
    each hash, a cost that grew with the user's whole history on every call (`compaction_bench
    --scenario gateway`); as a test it must find the messages by the chain hash index. That index holds
    each hash's prefix (`ChainKey`): the messages are found by the prefixes, then held to the whole hashes.
    """
    return (
        Message.objects.alias(chain_key=ChainKey("chain_hash"))
        .filter(chain_key__in=[ChainKey(Value(value)) for value in hashes], chain_hash__in=hashes)
        .filter(Exists(channels.filter(pk=OuterRef("channel_id"))))
        .order_by("-depth", "-id")
    )


def _deepest(channels: QuerySet[Channel], hashes: list[str], children: bool) -> Message | None:
    """The deepest message with one of `hashes` in one of `channels` (with `children`, annotated
    `has_children`), its path's root loaded (what is appended under it shares that root, which the
    context reads when a summary is in force)."""
    found = _found(channels, hashes).select_related("channel", "channel__model", "channel__persona", "root")
    if children:
        found = found.annotate(has_children=Exists(Message.objects.filter(parent_id=OuterRef("pk"))))
    return found.first()


def _probes(hashes: list[str]) -> Iterator[list[str]]:
    """The hashes in the order they are tried: the newest few, then the rest in chunks from the newest
    (the monotone property lets the search stop at the first chunk with a hit)."""
    if not hashes:
        return
    tail = hashes[-conf.TAIL_PROBE :]
    yield tail
    rest = hashes[: len(hashes) - len(tail)]
    for end in range(len(rest), 0, -conf.LOOKUP_CHUNK):
        yield rest[max(0, end - conf.LOOKUP_CHUNK) : end]


def _user_channels(user: User) -> QuerySet[Channel]:
    return Channel.objects.filter(owner=user, deleted_at__isnull=True)


def deepest_match(
    *, user: User, hashes: list[str], channel_id: int | None = None, children: bool = False
) -> Message | None:
    """The user's deepest stored message on the incoming chain (in `channel_id` when pinned), or None.

    Among equal matches (the same opening in two channels) the newest wins: the conversation the client
    most likely continues. Deleted channels are never matched. With `children`, the match says whether
    it has children already (`has_children`: what is appended under it then starts a branch), in the
    same query.
    """
    queryset = _user_channels(user)
    if channel_id is not None:
        queryset = queryset.filter(pk=channel_id)
    for probe in _probes(hashes):
        found = _deepest(queryset, probe, children)
        if found is not None:
            return found
    return None


def _channel_found(using: str, owner_id: int, hashes: list[str]) -> QuerySet[Message, int]:
    channels = Channel.objects.using(using).filter(owner_id=owner_id, deleted_at__isnull=True)
    return _found(channels, hashes).using(using).values_list("channel_id", flat=True)[:1]


def _match_in(using: str, channel_id: int, hashes: list[str]) -> QuerySet[Message]:
    children = Exists(Message.objects.filter(parent_id=OuterRef("pk")))
    rows = _found(Channel.objects.using(using).filter(pk=channel_id), hashes).using(using).select_related("root")
    return rows.annotate(has_children=children)[:1]


# The usual call's lookups (its newest hashes, at most TAIL_PROBE of them) are built once per database and
# length (chatcore.compiled); the longer lookups of an edited history are built as they come.
_CHANNEL_FOUND = FixedQuery(Message, _channel_found, owner_id=int, hashes=list)
_MATCH_IN = FixedQuery(Message, _match_in, channel_id=int, hashes=list)
_CHANNEL_FOUND_LOCKED = lock_with_cursor_query(_channel_found, owner_id=int, hashes=list)


def deepest_channel(*, user: User, hashes: list[str]) -> int | None:
    """The channel of `deepest_match(user=user, hashes=hashes)`: what a call locks before it looks for the
    match again under the lock, so it reads only the id (no row, no join)."""
    for index, probe in enumerate(_probes(hashes)):
        if index == 0:
            found = [row[0] for row in _CHANNEL_FOUND.rows(owner_id=user.pk, hashes=probe)]
        else:
            found = list(_channel_found(router.db_for_read(Message), user.pk, probe))
        if found:
            return found[0]
    return None


def deepest_channel_locked(*, user: User, hashes: list[str]) -> tuple[Channel, Cursor] | None:
    """The usual call's `deepest_channel`, found among the newest hashes, and its lock with the user's cursor
    (`chatcore.locks.channel_lock_with_cursor`) in the same statement. None when the newest hashes are not
    stored, or the user has no cursor there, or it moved while the lock was awaited: the caller then looks
    with `deepest_channel` and locks what it finds."""
    probe = next(_probes(hashes), None)
    if probe is None:
        return None
    return channel_lock_with_cursor_found(query=_CHANNEL_FOUND_LOCKED, user_id=user.pk, owner_id=user.pk, hashes=probe)


def deepest_in_locked(*, user: User, channel: Channel, hashes: list[str]) -> Message | None:
    """`deepest_match(user=user, hashes=hashes, channel_id=channel.pk, children=True)` for a channel the caller
    has locked and holds as it is now (`chatcore.locks.channel_lock`): whether the channel is the user's and
    live is read from that row, and the match carries it instead of reading it again."""
    if channel.owner_id != user.pk or channel.deleted_at is not None:
        return None
    for index, probe in enumerate(_probes(hashes)):
        if index == 0:
            found = _MATCH_IN.fetch(channel_id=channel.pk, hashes=probe)
        else:
            found = list(_match_in(router.db_for_read(Message), channel.pk, probe))
        if found:
            found[0].channel = channel
            return found[0]
    return None
