"""One limit on model calls per person, kept by the services: the pages, the /v1 gateway, the
admin's actions and the management commands count in the same bucket as the API
(tests/reliability/test_throttling.py), and a refused call writes nothing."""

import json

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from chatcore.api_tokens import api_token_create
from chatcore.errors import Throttled
from chatcore.models import Channel, Message, Summary
from chatcore.throttling import bucket_key, expensive_call_admit, expensive_calls_exempt
from compaction.services import channel_compact, summary_branch
from tests.chatcore.factories import ChannelFactory
from tests.compaction.factories import converse

HTMX = {"HTTP_HX_REQUEST": "true"}
STREAM = {"HTTP_ACCEPT": "text/event-stream"}
COMPACT_NOW = {"action": "now", "profile": "structured", "keep_recent": "4"}


@pytest.fixture
def three_a_minute(settings):
    settings.CHATCORE_THROTTLE_EXPENSIVE_RATE = "3/min"


@pytest.fixture
def one_a_minute(settings):
    settings.CHATCORE_THROTTLE_EXPENSIVE_RATE = "1/min"


def refusal(wait: int, limit: int = 3) -> str:
    unit = "second" if wait == 1 else "seconds"
    return (
        f"Too many requests that call a model: at most {limit} a minute. Nothing was done; try again in {wait} {unit}."
    )


def retry_after(response) -> int:
    wait = int(response["Retry-After"])
    assert 1 <= wait <= 60
    return wait


def send(client: Client, channel: Channel, text: str, **extra):
    return client.post(reverse("chat:send", args=[channel.pk]), {"content": text}, **extra)


def panel(channel: Channel) -> str:
    return reverse("compaction:panel", args=[channel.pk])


def test_the_fourth_web_send_in_a_minute_is_a_readable_429_that_writes_nothing(
    three_a_minute, client_user, user, chat_model
):
    channel = ChannelFactory(owner=user)
    for index in range(3):
        assert send(client_user, channel, f"question {index}").status_code == 302

    response = send(client_user, channel, "one too many")

    assert response.status_code == 429
    assert response["Content-Type"].startswith("text/html")
    body = response.content.decode()
    assert "<h1>Please wait a moment</h1>" in body
    assert f"data-throttled>{refusal(retry_after(response))}</p>" in body
    assert f'href="{reverse("chat:channel", args=[channel.pk])}"' in body
    # Three turns with their replies; the refused turn is nowhere.
    assert Message.objects.filter(channel=channel).count() == 6
    assert not Message.objects.filter(content="one too many").exists()
    # The page said it once: it is not left behind as a flash for the next page.
    assert "Too many requests" not in client_user.get(reverse("chat:channel", args=[channel.pk])).content.decode()


def test_a_refused_streamed_or_htmx_send_says_why_with_retry_after(one_a_minute, client_user, user, chat_model):
    channel = ChannelFactory(owner=user)
    assert send(client_user, channel, "first").status_code == 302

    streamed = send(client_user, channel, "second", **STREAM)  # what static/chatcore/stream.js sends
    htmx = send(client_user, channel, "third", **HTMX)

    assert streamed.status_code == 429
    assert f"data-throttled>{refusal(retry_after(streamed), 1)}</p>" in streamed.content.decode()
    assert htmx.status_code == 429
    body = htmx.content.decode()
    assert body.startswith('<div id="channel-main"')
    assert refusal(retry_after(htmx), 1) in body and 'role="alert"' in body
    assert list(channel.messages.values_list("content", flat=True).order_by("depth")) == ["first", "ok"]


def test_regenerate_edit_compact_and_branch_share_the_bucket_with_the_api(settings, client_user, user, chat_model):
    settings.CHATCORE_THROTTLE_EXPENSIVE_RATE = "4/min"
    channel = ChannelFactory(owner=user, title="Ledger work")
    *_, question, last = converse(channel, 16)
    assert client_user.post(reverse("chat:regenerate", args=[channel.pk, last.pk])).status_code == 302
    edit = client_user.post(reverse("chat:edit", args=[channel.pk, question.pk]), {"content": "Edited"})
    assert edit.status_code == 302
    branched = client_user.post(panel(channel), {**COMPACT_NOW, "action": "branch"})  # a fresh draft: a model call
    assert branched.status_code == 302
    assert client_user.post(panel(channel), COMPACT_NOW).status_code == 302
    counts = (Message.objects.count(), Summary.objects.count(), Channel.objects.count())
    assert counts[1:] == (1, 2)

    compact = client_user.post(panel(channel), COMPACT_NOW, **HTMX)
    branch = client_user.post(panel(channel), {**COMPACT_NOW, "action": "branch"})
    preview = client_user.post(panel(channel), {**COMPACT_NOW, "action": "preview"})
    regenerate = client_user.post(reverse("chat:regenerate", args=[channel.pk, last.pk]))
    api = APIClient()
    api.force_authenticate(user)
    reply = api.post(reverse("chat_api:reply", args=[channel.pk]), {"content": "And now?"}, format="json")

    for response in (compact, branch, preview, regenerate):
        assert response.status_code == 429
        assert refusal(retry_after(response), 4) in response.content.decode()
    assert compact.content.decode().startswith('<div class="panel" id="panel">')  # the htmx panel, error shown in it
    assert reply.status_code == 429 and reply.json()["code"] == "throttled"
    assert (Message.objects.count(), Summary.objects.count(), Channel.objects.count()) == counts


def test_a_branch_that_drafts_its_summary_counts_once(one_a_minute, user):
    channel = ChannelFactory(owner=user)
    converse(channel, 12)

    branch = summary_branch(channel=channel, actor=user)

    assert branch.branched_from == channel
    assert len(cache.get(bucket_key(user.pk))) == 1
    with pytest.raises(Throttled):
        channel_compact(channel=channel, actor=user)
    assert Summary.objects.count() == 0


def test_the_gateway_answers_the_limit_in_openai_s_shape(one_a_minute, user, chat_model):
    token = api_token_create(user=user, name="script")[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    body = {"model": chat_model.name, "messages": [{"role": "user", "content": "Hello there"}]}

    first = client.post("/v1/chat/completions", json.dumps(body), content_type="application/json")
    second = client.post(
        "/v1/chat/completions",
        json.dumps({**body, "messages": [{"role": "user", "content": "Another one"}]}),
        content_type="application/json",
    )

    assert first.status_code == 200
    assert second.status_code == 429
    wait = retry_after(second)
    assert second.json() == {
        "error": {"message": refusal(wait, 1), "type": "requests", "param": None, "code": "rate_limit_exceeded"}
    }
    assert not Message.objects.filter(content="Another one").exists()
    assert Channel.objects.filter(owner=user).count() == 1


def test_the_admin_compact_action_counts_against_the_staff_member(one_a_minute, client, staff_user):
    busy, second = ChannelFactory(title="Busy"), ChannelFactory(title="Second")
    converse(busy, 12)
    converse(second, 12)
    client.force_login(staff_user)

    response = client.post(
        "/admin/chatcore/channel/",
        {"action": "compact_now", "_selected_action": [str(busy.pk), str(second.pk)]},
        follow=True,
    )

    page = response.content.decode()
    compacted = Summary.objects.get().channel
    refused = second if compacted == busy else busy
    assert f"{compacted.title}: messages 12 → 7" in page
    assert f"{refused.title}: Too many requests that call a model: at most 1 a minute. Nothing was done" in page


def test_the_compact_command_counts_against_the_channel_owner(one_a_minute, user):
    channel = ChannelFactory(owner=user)
    converse(channel, 12)
    expensive_call_admit(user=user)  # the owner's one call this minute, spent in the pages

    with pytest.raises(CommandError, match=r"Too many requests that call a model.*\(throttled\)"):
        call_command("compact", str(channel.pk))

    assert Summary.objects.count() == 0


def test_automatic_and_exempt_compactions_are_not_counted(one_a_minute, user):
    channel = ChannelFactory(owner=user)
    converse(channel, 24)
    expensive_call_admit(user=user)

    auto = channel_compact(channel=channel, actor=user, trigger="auto", keep_recent=12)
    with expensive_calls_exempt():
        measured = channel_compact(channel=channel, actor=user, keep_recent=4)

    assert auto.summary is not None and measured.summary is not None
    assert Summary.objects.filter(channel=channel).count() == 2
    assert len(cache.get(bucket_key(user.pk))) == 1
