"""Receivers of chatcore's announcements (connected in CompactionConfig.ready)."""

import logging

from django.dispatch import receiver

from chatcore.signals import reply_stored, reply_stored_read_register
from compaction.models import CompactionSettings
from compaction.scanner.selectors import SETTINGS_READ_ALONG, SETTINGS_READ_ALONG_NAME
from compaction.scanner.services import reply_pressure_check

# The trigger's settings row comes with each reply's write instead of a statement after its commit.
reply_stored_read_register(name=SETTINGS_READ_ALONG_NAME, read=SETTINGS_READ_ALONG)


@receiver(reply_stored, dispatch_uid="compaction.reply_pressure_check")
def on_reply_stored(sender, channel, input_tokens=None, read_along=None, **kwargs) -> None:
    read = (read_along or {}).get(SETTINGS_READ_ALONG_NAME)
    try:
        reply_pressure_check(
            channel=channel,
            input_tokens=input_tokens,
            settings_read=read if isinstance(read, CompactionSettings) else None,
        )
    except Exception:  # the reply is stored already; a missed trigger is caught by the next scan
        logging.getLogger("compaction.scanner").exception("event: pressure check of channel %s failed", channel.pk)
