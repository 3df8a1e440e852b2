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

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, QuerySet

from chatcore.models import Channel, Message
from compaction.gateway import conf


def _deepest(channels: QuerySet[Channel], hashes: list[str], children: bool) -> Message | None:
    """The deepest message with one of `hashes` in one of `channels` (with `children`, annotated
    `has_children`), its path's root loaded (what is appended under it shares that root, which the
    context reads when a summary is in force).

    The channels are an EXISTS test on each hit, never a join: joined, SQLite's planner (which has no
    statistics) walks the owner's channels and every message in them (the channel index) and tests
    each hash, a cost that grew with the user's whole history on every call (`compaction_bench
    --scenario gateway`); as a test it must find the messages by the chain hash index.
    """
    found = (
        Message.objects.filter(chain_hash__in=hashes)
        .filter(Exists(channels.filter(pk=OuterRef("channel_id"))))
        .select_related("channel", "channel__model", "channel__persona", "root")
        .order_by("-depth", "-id")
    )
    if children:
        found = found.annotate(has_children=Exists(Message.objects.filter(parent_id=OuterRef("pk"))))
    return found.first()


def deepest_match(
    *, user: User, hashes: list[str], channel_id: int | None = None, children: bool = False
) -> Message | None:
    """The user's deepest stored message on the incoming chain (in `channel_id` when pinned), or None.

    Among equal matches (the same opening in two channels) the newest wins: the conversation the client
    most likely continues. Deleted channels are never matched. With `children`, the match says whether
    it has children already (`has_children`: what is appended under it then starts a branch), in the
    same query.
    """
    if not hashes:
        return None
    queryset = Channel.objects.filter(owner=user, deleted_at__isnull=True)
    if channel_id is not None:
        queryset = queryset.filter(pk=channel_id)
    tail = hashes[-conf.TAIL_PROBE :]
    found = _deepest(queryset, tail, children)
    if found is not None or len(hashes) <= len(tail):
        return found
    rest = hashes[: -len(tail)]
    for end in range(len(rest), 0, -conf.LOOKUP_CHUNK):
        found = _deepest(queryset, rest[max(0, end - conf.LOOKUP_CHUNK) : end], children)
        if found is not None:
            return found
    return None
