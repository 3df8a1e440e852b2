"""A reply against each provider fault: fails cleanly with its cause, uses
the fallback where there is one, writes no assistant message, and succeeds
once the server recovers."""

import logging

import pytest
from django.urls import reverse

from chatcore.models import Message, ModelRole, Summary, UsageEntry
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, LLMModelFactory
from tests.reliability.faults import FAULTS


@pytest.mark.parametrize("name", FAULTS)
def test_reply_fails_cleanly_with_its_cause_then_recovers(name, fast_faults, llm_server, chat_model, user, api, caplog):
    fault, cause = FAULTS[name]
    channel = ChannelFactory(owner=user)
    url = reverse("chat_api:reply", args=[channel.pk])
    llm_server.script(fault)

    with caplog.at_level(logging.WARNING, logger="chatcore"):
        response = api.post(url, {"content": "hello"}, format="json")

    assert response.status_code == 502
    body = response.json()
    assert set(body) == {"detail", "code", "errors"} and body["code"] == "model_failed"
    assert body["detail"].startswith("The model call failed: loopback-chat: ")
    assert cause in body["detail"]
    assert len(body["errors"]) == 1 and cause in body["errors"][0]
    # The user's turn is kept (it is theirs); no assistant message, no summary.
    assert list(Message.objects.filter(channel=channel).values_list("role", "content")) == [("user", "hello")]
    assert not Summary.objects.filter(channel=channel).exists()
    channel.refresh_from_db()
    assert channel.context_messages == 1
    usage = UsageEntry.objects.get(channel=channel)
    assert (usage.success, usage.model, usage.role) == (False, "loopback-chat", "chat")
    assert cause in usage.error
    assert any(cause in record.getMessage() for record in caplog.records)

    llm_server.script(Reply(content="Back again."))
    retry = api.post(url, {}, format="json")

    assert retry.status_code == 201
    assert retry.json()["content"] == "Back again."
    assert list(Message.objects.filter(channel=channel).values_list("role", "content")) == [
        ("user", "hello"),
        ("assistant", "Back again."),
    ]
    assert list(UsageEntry.objects.filter(channel=channel).order_by("id").values_list("success", flat=True)) == [
        False,
        True,
    ]


@pytest.mark.parametrize("name", FAULTS)
def test_reply_falls_back_to_the_fallback_model(name, fast_faults, llm_server, chat_model, user, api):
    fault, cause = FAULTS[name]
    fallback = LLMModelFactory(name="loopback-fallback", base_url=llm_server.url)
    ModelRole.objects.filter(role=ModelRole.Role.CHAT).update(fallback=fallback)
    channel = ChannelFactory(owner=user)
    llm_server.script(fault, Reply(content="From the fallback."))

    response = api.post(reverse("chat_api:reply", args=[channel.pk]), {"content": "hello"}, format="json")

    assert response.status_code == 201
    reply = response.json()
    assert reply["content"] == "From the fallback."
    assert reply["metadata"]["model"] == "loopback-fallback" and reply["metadata"]["used_fallback"] is True
    attempts = list(UsageEntry.objects.filter(channel=channel).order_by("id"))
    assert [(u.model, u.success) for u in attempts] == [("loopback-chat", False), ("loopback-fallback", True)]
    assert cause in attempts[0].error and attempts[1].error == ""
    assert [r["model"] for r in llm_server.requests[-2:]] == ["loopback-chat", "loopback-fallback"]


def test_429_with_retry_after_is_honoured_by_the_client_retry(settings, llm_server, chat_model, user, api):
    settings.CHATCORE_LLM_MAX_RETRIES = 1
    channel = ChannelFactory(owner=user)
    llm_server.script(Reply(status=429, headers={"Retry-After": "1"}), Reply(content="After waiting."))

    response = api.post(reverse("chat_api:reply", args=[channel.pk]), {"content": "hello"}, format="json")

    assert response.status_code == 201 and response.json()["content"] == "After waiting."
    assert len(llm_server.requests) == 2
    assert list(UsageEntry.objects.filter(channel=channel).values_list("success", flat=True)) == [True]


def test_a_slow_but_steady_body_is_read_whole(fast_faults, llm_server, chat_model, user, api):
    channel = ChannelFactory(owner=user)
    llm_server.script(Reply(content="Slowly but surely.", fault="slow_body", chunk_delay=0.01))
    response = api.post(reverse("chat_api:reply", args=[channel.pk]), {"content": "hello"}, format="json")
    assert response.status_code == 201 and response.json()["content"] == "Slowly but surely."
