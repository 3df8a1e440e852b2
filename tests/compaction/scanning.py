"""Helpers shared by the scanner's tests: channels under pressure, the queued tasks."""

import datetime
import itertools

from django.contrib.auth import get_user_model
from django.utils import timezone
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from chatcore.models import Channel
from compaction.scanner.selectors import compaction_settings_get
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, build_path

# Messages of 40 words count 171 tokens each: 12 of them fill 0.855 of this window.
WINDOW = 2_400
MESSAGE_TOKENS = 171


def auto_settings(**values):
    """Switch auto-compaction on with filters that let fresh test channels through."""
    settings = compaction_settings_get()
    defaults = {
        "enabled": True,
        "idle_minutes": 0,
        "cooldown_minutes": 30,
        "concurrency": 10,
        "hourly_budget": 100,
        "min_messages": 10,
        "min_new_messages": 8,
        "threshold": 0.70,
    }
    for name, value in (defaults | values).items():
        setattr(settings, name, value)
    settings.save()
    return settings


_owners = itertools.count()


def owner_create():
    """A user without a password: hashing one costs most of a test's time."""
    return get_user_model().objects.create(username=f"owner-{next(_owners)}-{timezone.now().timestamp()}")


def pressured_channel(*, messages: int = 12, window: int = WINDOW, words: int = 40, model=None, **kwargs) -> Channel:
    """A direct channel whose owner's path holds `messages` messages of MESSAGE_TOKENS tokens
    (at 40 words) under a model of `window` tokens."""
    model = model or LLMModelFactory(context_window=window)
    kwargs.setdefault("owner", owner_create())
    channel = ChannelFactory(model=model, **kwargs)
    build_path(channel, messages, words=words)
    channel.refresh_from_db()
    return channel


def age(channel: Channel, **delta) -> None:
    """Move the channel's last activity into the past."""
    Channel.objects.filter(pk=channel.pk).update(last_activity_at=timezone.now() - datetime.timedelta(**delta))


def queued_tasks() -> list[tuple[str, tuple]]:
    """(function, args) of every task waiting in the ORM broker, oldest first."""
    tasks = []
    for row in OrmQ.objects.order_by("id"):
        package = SignedPackage.loads(row.payload)
        tasks.append((package["func"], tuple(package["args"])))
    return tasks
