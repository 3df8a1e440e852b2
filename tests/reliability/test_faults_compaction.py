"""A compaction against each provider fault: no summary, messages untouched,
the lease given back with the cause, the fallback used where there is one,
and a later attempt succeeds once the server recovers."""

import hashlib
import logging

import pytest
from django.urls import reverse

from chatcore.models import AuditEntry, Channel, Message, ModelRole, Summary, UsageEntry
from compaction.models import CompactionLease
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, LLMModelFactory
from tests.compaction.factories import converse
from tests.reliability.faults import FAULTS

GOOD_SUMMARY = "The team chose PostgreSQL 16 for the ledger and is tracking the deploy error E1042."


def _state(channel: Channel) -> tuple:
    """Everything a failed compaction must leave as it was."""
    channel.refresh_from_db()
    messages = [
        hashlib.sha256(f"{m.pk}|{m.parent_id}|{m.role}|{m.content}|{m.path_tokens}".encode()).hexdigest()
        for m in Message.objects.filter(channel=channel).order_by("pk")
    ]
    return (
        messages,
        Summary.objects.filter(channel=channel).count(),
        channel.context_tokens,
        channel.context_messages,
        channel.context_ratio,
    )


@pytest.fixture
def long_channel(user, utility_model):
    channel = ChannelFactory(owner=user)
    converse(channel, 14)
    return channel


@pytest.mark.parametrize("name", FAULTS)
def test_compaction_fails_cleanly_with_its_cause_then_recovers(
    name, fast_faults, llm_server, long_channel, api, caplog
):
    fault, cause = FAULTS[name]
    url = reverse("chat_api:compact", args=[long_channel.pk])
    before = _state(long_channel)
    llm_server.script(fault)

    with caplog.at_level(logging.WARNING):
        response = api.post(url, {}, format="json")

    assert response.status_code == 502
    body = response.json()
    assert body["code"] == "model_failed" and cause in body["detail"]
    assert _state(long_channel) == before
    lease = CompactionLease.objects.get(channel=long_channel)
    assert (lease.holder, lease.expires_at, lease.last_outcome, lease.failure_count) == ("", None, "failed", 1)
    assert cause in lease.last_error
    usage = UsageEntry.objects.get(channel=long_channel)
    assert (usage.role, usage.success) == ("utility", False) and cause in usage.error
    assert not AuditEntry.objects.filter(action="summary.compact").exists()
    assert any(cause in record.getMessage() for record in caplog.records)

    llm_server.script(Reply(content=GOOD_SUMMARY))
    retry = api.post(url, {}, format="json")

    assert retry.status_code == 201, retry.json()
    summary = Summary.objects.get(channel=long_channel)
    assert summary.content.startswith(GOOD_SUMMARY) and summary.used_fallback is False
    lease.refresh_from_db()
    assert (lease.holder, lease.expires_at, lease.last_outcome, lease.failure_count, lease.last_error) == (
        "",
        None,
        "done",
        0,
        "",
    )
    assert AuditEntry.objects.filter(action="summary.compact", resource=f"summary:{summary.pk}").count() == 1


@pytest.mark.parametrize("name", FAULTS)
def test_compaction_falls_back_to_the_fallback_model(name, fast_faults, llm_server, long_channel, api):
    fault, cause = FAULTS[name]
    fallback = LLMModelFactory(name="loopback-utility-fallback", base_url=llm_server.url, context_window=8_000)
    ModelRole.objects.filter(role=ModelRole.Role.UTILITY).update(fallback=fallback)
    llm_server.script(fault, Reply(content=GOOD_SUMMARY))

    response = api.post(reverse("chat_api:compact", args=[long_channel.pk]), {}, format="json")

    assert response.status_code == 201, response.json()
    summary = Summary.objects.get(channel=long_channel)
    assert (summary.model, summary.used_fallback) == ("loopback-utility-fallback", True)
    attempts = list(UsageEntry.objects.filter(channel=long_channel).order_by("id"))
    assert [(u.model, u.success) for u in attempts] == [
        ("loopback-utility", False),
        ("loopback-utility-fallback", True),
    ]
    assert cause in attempts[0].error


def test_a_summary_longer_than_what_it_replaces_is_refused(llm_server, long_channel, api):
    before = _state(long_channel)
    llm_server.script(Reply(content="padding " * 4_000))
    response = api.post(reverse("chat_api:compact", args=[long_channel.pk]), {}, format="json")
    assert response.status_code == 502
    assert response.json()["code"] == "unusable_summary"
    assert _state(long_channel) == before
    lease = CompactionLease.objects.get(channel=long_channel)
    assert (lease.holder, lease.last_outcome) == ("", "failed")
    assert "must be shorter than what it replaces" in lease.last_error
