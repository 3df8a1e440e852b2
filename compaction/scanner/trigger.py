"""The event trigger: right after a reply, enqueue an automatic compaction when
the prompt the model just read was over the channel's threshold, instead of
waiting for the next tick. The task then checks and reserves the channel like
a tick would (compaction.scanner.tick.auto_compaction_reserve).

At most one event task per channel waits in the broker: a mark in the cache,
taken when the task is enqueued and dropped when it starts. Without it, every
reply of a channel waiting for a concurrency slot queued one more task (the
channel carries no reservation until a task makes one), and under load the
queue grew faster than the workers emptied it, so the compaction that would
free a slot waited behind hundreds of tasks that had nothing to do. A mark
whose task was lost (its cluster killed) runs out after the lease time, like
the abandoned attempt it stands for.
"""

import logging
import time
from functools import partial

from django.core.cache import caches
from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from chatcore.models import Channel
from compaction import conf
from compaction.models import CompactionLease, CompactionSettings
from compaction.scanner import selectors
from compaction.scanner.decide import channel_budget, channel_opted_out, channel_threshold, lease_wait_reason
from compaction.scanner.selectors import compaction_settings_get

logger = logging.getLogger("compaction.scanner")

# The cache the pending marks live in: shared by the web processes when it is Redis or the database.
CACHE_ALIAS = "default"


def reply_pressure_check(
    *, channel: Channel, input_tokens: int | None, settings_read: CompactionSettings | None = None
) -> bool:
    """After a reply: enqueue an automatic compaction when the prompt the model
    just read was over the channel's threshold. Cheap; the task does the rest.
    `settings_read`: the settings row as the reply's write read it (None: read here)."""
    if not channel.is_pressure_watched or channel_opted_out(channel) or not input_tokens:
        return False
    settings = compaction_settings_get(read=settings_read)
    if not settings.enabled:
        return False
    declared = channel.model is not None and channel.model.context_window
    budget = channel_budget(
        channel=channel, settings=settings, utility_window=0 if declared else selectors.utility_context_window()
    )
    threshold = channel_threshold(channel=channel, settings=settings)
    if input_tokens < threshold * budget:
        return False
    lease = CompactionLease.objects.filter(pk=channel.pk).first()
    waiting = lease and lease_wait_reason(lease=lease, settings=settings, now=timezone.now())
    if waiting:
        logger.debug("event: channel %s over its threshold, not enqueued (%s)", channel.pk, waiting)
        return False
    logger.info(
        "event: channel %s: the reply's prompt had %s tokens >= %.0f%% of %s; compaction asked for",
        channel.pk,
        f"{input_tokens:,}",
        threshold * 100,
        f"{budget:,}",
    )
    transaction.on_commit(partial(_event_enqueue, channel_id=channel.pk), robust=True)
    return True


def _pending_key(channel_id: int) -> str:
    return f"compaction:event-pending:{channel_id}"


def _event_enqueue(*, channel_id: int) -> None:
    """Enqueue the channel's event task unless one is already waiting for a worker.

    A cache that cannot be reached does not stop the task: one task too many
    is harmless, a compaction never asked for is not."""
    cache, key = caches[CACHE_ALIAS], _pending_key(channel_id)
    try:
        marked = cache.add(key, True, timeout=conf.LEASE_SECONDS)
    except Exception:
        logger.warning(
            "event: channel %s: the cache did not answer; enqueued without a mark", channel_id, exc_info=True
        )
        marked = None
    if marked is False:
        logger.debug("event: channel %s: a task is already waiting; not enqueued again", channel_id)
        return
    try:
        async_task(
            conf.AUTO_COMPACT_TASK, channel_id, None, task_name=f"auto-compact-{channel_id}-event-{time.time_ns()}"
        )
    except Exception:
        if marked:
            cache.delete(key)
        raise


def event_pending_clear(*, channel_id: int) -> None:
    """The channel's event task has started: the next reply over the threshold may enqueue another (the
    reservation the task makes, not this mark, then keeps the replies from piling tasks up)."""
    try:
        caches[CACHE_ALIAS].delete(_pending_key(channel_id))
    except Exception:
        logger.warning("event: channel %s: the cache did not answer; its mark runs out by itself", channel_id)
