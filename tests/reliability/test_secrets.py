"""No secret from the shared table reaches the summarizer's request, a summary,
a log line or an audit row, whichever summarizer runs."""

import json
import logging

import pytest

from chatcore import services
from chatcore.models import AuditEntry, Summary, UsageEntry
from compaction.models import CompactionLease
from compaction.services import channel_compact
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory
from tests.compaction.factories import converse
from tests.compaction.redaction.secrets_table import SECRETS, secret_of

CASES = [(kind, text, secret_of(text, secret)) for kind, text, secret in SECRETS]
IDS = [f"{kind}-{index}" for index, (kind, _, _) in enumerate(SECRETS)]


def test_the_table_has_at_least_forty_kinds():
    assert len({kind for kind, _, _ in SECRETS}) >= 40


def _channel_with(user, text: str):
    channel = ChannelFactory(owner=user)
    converse(channel, 4)
    services.message_append(channel=channel, user=user, role="user", content=f"Here is the config: {text}")
    services.message_append(channel=channel, user=user, role="assistant", content=f"Noted, I saw: {text}")
    converse(channel, 6, start=6)
    return channel


def _everywhere(channel, caplog) -> str:
    rows = [s.content + json.dumps(s.extracts) for s in Summary.objects.filter(channel=channel)]
    rows += [json.dumps(a.details) + a.resource for a in AuditEntry.objects.all()]
    rows += [u.error for u in UsageEntry.objects.all()]
    rows += [lease.last_error for lease in CompactionLease.objects.all()]
    rows += [record.getMessage() for record in caplog.records]
    return "\n".join(rows)


@pytest.mark.parametrize(("kind", "text", "secret"), CASES, ids=IDS)
def test_no_secret_reaches_the_model_or_the_records(kind, text, secret, user, utility_model, llm_server, caplog):
    channel = _channel_with(user, text)

    # A model that echoes the lines it was sent about the secret: the summary shows what it saw.
    def echo(request):
        lines = [
            line
            for m in request["messages"]
            for line in m["content"].splitlines()
            if "config" in line or "I saw" in line
        ]
        return Reply(content="Echo: " + " | ".join(lines)[:600])

    llm_server.responder = echo

    with caplog.at_level(logging.DEBUG):
        result = channel_compact(channel=channel, actor=user)

    sent = json.dumps(llm_server.requests)
    assert secret not in sent
    assert "[REDACTED:" in sent
    assert result.summary is not None
    assert secret not in _everywhere(channel, caplog)


@pytest.mark.parametrize(("kind", "text", "secret"), CASES[::4], ids=IDS[::4])
def test_no_secret_reaches_an_offline_summary(kind, text, secret, user, caplog):
    channel = _channel_with(user, text)
    with caplog.at_level(logging.DEBUG):
        result = channel_compact(channel=channel, actor=user)
    assert result.model == "offline"
    assert secret not in _everywhere(channel, caplog)
