"""Row locks on a channel: how every writer that changes a channel's tree, cursors or summaries waits
for the others, in every process (invariant 4 rests on the lease; these keep each write whole).

The order is fixed here so that two writers never wait on each other: the channel's row first,
then rows that belong to it (its summaries, in id order), never the other way round. Nothing else in the apps
takes these locks (`tests/chatcore/test_locks.py` checks the source), so the order lives in code,
not in a comment repeated at each writer. A lock lasts until the caller's transaction ends; outside
one, Django refuses `select_for_update`. On SQLite a write transaction holds the whole database
(IMMEDIATE, project settings), which serialises the same writers.
"""

from chatcore.models import Channel, Summary


def channel_lock(*, channel_id: int) -> Channel:
    """Lock the channel's row and return it as it is now, its model and persona loaded (writers read
    them for the context budget that the pressure columns divide by). Channel.DoesNotExist when gone."""
    return Channel.objects.select_for_update(of=("self",)).select_related("model", "persona").get(pk=channel_id)


def summary_lock(*, summary: Summary) -> tuple[Channel, Summary]:
    """Lock the summary's channel, then the summary; both as they are now."""
    channel = channel_lock(channel_id=summary.channel_id)
    return channel, Summary.objects.select_for_update().get(pk=summary.pk)


def summaries_lock(*, channel: Channel, through_message_ids: list[int]) -> list[Summary]:
    """Lock the summaries of `channel` through any of these messages, in id order, and return them. The
    channel is what `channel_lock` or `summary_lock` returned: its row is locked first."""
    rows = Summary.objects.filter(channel_id=channel.pk, through_message_id__in=through_message_ids)
    return list(rows.order_by("pk").select_for_update())
