"""The API's model-calling endpoints are throttled per user, in the shared cache (the pages, the
gateway, the admin and the commands share the bucket: test_throttling_everywhere.py)."""

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.urls import reverse
from rest_framework.test import APIClient

from chatcore.models import Message
from tests.chatcore.factories import ChannelFactory


@pytest.fixture
def low_rate(settings):
    settings.CHATCORE_THROTTLE_EXPENSIVE_RATE = "2/min"


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_reply_is_throttled_per_user_with_retry_after(low_rate, chat_model, user, other_user):
    channel = ChannelFactory(owner=user)
    other_channel = ChannelFactory(owner=other_user)
    client = _client(user)
    url = reverse("chat_api:reply", args=[channel.pk])
    for index in range(2):
        assert client.post(url, {"content": f"hello {index}"}, format="json").status_code == 201

    response = client.post(url, {"content": "one too many"}, format="json")

    assert response.status_code == 429
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= 60
    assert response.json() == {
        "detail": "Too many requests that call a model: at most 2 a minute. "
        f"Nothing was done; try again in {retry_after} seconds.",
        "code": "throttled",
        "retry_after": retry_after,
    }
    # The refused request wrote nothing: 2 user turns and 2 replies.
    assert Message.objects.filter(channel=channel).count() == 4
    # Another user has a bucket of their own.
    other = _client(other_user).post(
        reverse("chat_api:reply", args=[other_channel.pk]), {"content": "hi"}, format="json"
    )
    assert other.status_code == 201


def test_throttle_counter_lives_in_the_shared_cache(low_rate, chat_model, user):
    channel = ChannelFactory(owner=user)
    _client(user).post(reverse("chat_api:reply", args=[channel.pk]), {"content": "hello"}, format="json")

    backend = django_settings.CACHES["default"]["BACKEND"]
    assert backend in {"django.core.cache.backends.db.DatabaseCache", "django.core.cache.backends.redis.RedisCache"}
    history = cache.get(f"throttle_expensive_user:{user.pk}")
    assert isinstance(history, list) and len(history) == 1


def test_cheap_endpoints_are_not_throttled(low_rate, user):
    channel = ChannelFactory(owner=user)
    client = _client(user)
    for _ in range(5):
        assert client.get(reverse("chat_api:channel", args=[channel.pk])).status_code == 200


def test_empty_rate_turns_the_throttle_off(settings, chat_model, user):
    settings.CHATCORE_THROTTLE_EXPENSIVE_RATE = ""
    channel = ChannelFactory(owner=user)
    client = _client(user)
    for index in range(4):
        assert (
            client.post(
                reverse("chat_api:reply", args=[channel.pk]), {"content": f"m{index}"}, format="json"
            ).status_code
            == 201
        )
