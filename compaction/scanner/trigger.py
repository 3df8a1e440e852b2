"""The event trigger: right after a reply, enqueue an automatic compaction when
the prompt the model just read was over the channel's threshold, instead of
waiting for the next tick. The task then checks and reserves the channel like
a tick would (compaction.scanner.tick.auto_compaction_reserve)."""

import logging
import time
from functools import partial

from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from chatcore.models import Channel
from compaction import conf
from compaction.models import CompactionLease
from compaction.scanner import selectors
from compaction.scanner.decide import channel_budget, channel_opted_out, channel_threshold, lease_wait_reason
from compaction.scanner.selectors import compaction_settings_get

logger = logging.getLogger("compaction.scanner")


def reply_pressure_check(*, channel: Channel, input_tokens: int | None) -> bool:
    """After a reply: enqueue an automatic compaction when the prompt the model
    just read was over the channel's threshold. Cheap; the task does the rest."""
    if not channel.is_pressure_watched or channel_opted_out(channel) or not input_tokens:
        return False
    settings = compaction_settings_get()
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
        "event: channel %s: the reply's prompt had %s tokens >= %.0f%% of %s; compaction enqueued",
        channel.pk,
        f"{input_tokens:,}",
        threshold * 100,
        f"{budget:,}",
    )
    transaction.on_commit(
        partial(
            async_task,
            conf.AUTO_COMPACT_TASK,
            channel.pk,
            None,
            task_name=f"auto-compact-{channel.pk}-event-{time.time_ns()}",
        ),
        robust=True,
    )
    return True
