"""Receivers of chatcore's announcements (connected in CompactionConfig.ready)."""

import logging

from django.dispatch import receiver

from chatcore.signals import reply_stored
from compaction.scanner.services import reply_pressure_check


@receiver(reply_stored, dispatch_uid="compaction.reply_pressure_check")
def on_reply_stored(sender, channel, input_tokens=None, **kwargs) -> None:
    try:
        reply_pressure_check(channel=channel, input_tokens=input_tokens)
    except Exception:  # the reply is stored already; a missed trigger is caught by the next scan
        logging.getLogger("compaction.scanner").exception("event: pressure check of channel %s failed", channel.pk)
