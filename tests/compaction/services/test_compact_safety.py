"""Invariant 7 end to end (no secret reaches the model or a summary) and the
cost of one compaction, which must not grow with the number of messages."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatcore import services as chat_services
from chatcore.models import Message
from compaction.services import channel_compact, summary_branch
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory
from tests.compaction.factories import converse
from tests.compaction.redaction.secrets_table import SECRETS
from tests.compaction.redaction.secrets_table import secret_of as _secret_of

SECRET_VALUES = [(kind, text, _secret_of(text, secret)) for kind, text, secret in SECRETS]


def _secret_channel():
    channel = ChannelFactory()
    for index, (kind, text, _) in enumerate(SECRET_VALUES):
        role = "user" if index % 2 == 0 else "assistant"
        chat_services.message_append(
            channel=channel,
            user=channel.owner,
            role=role,
            content=f"Note {index}, {kind.replace('_', ' ')}. {text}\nWe will rotate it tomorrow.",
        )
    converse(channel, 4, start=len(SECRET_VALUES))
    return channel


def test_the_table_is_large_enough():
    assert len({kind for kind, _, _ in SECRET_VALUES}) >= 20


def test_no_secret_reaches_the_model_request_or_the_summary(utility_model, llm_server):
    channel = _secret_channel()
    leaked = [value for _, _, value in SECRET_VALUES[:5]]
    # A misbehaving model that writes secrets anyway: the service redacts its output too.
    llm_server.script(Reply(content="## Goal\n- Rotate keys: " + ", ".join(leaked)))
    focus_secret = SECRET_VALUES[0][2]
    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, focus=f"keys like {focus_secret}")
    request = json.dumps(llm_server.requests[-1], ensure_ascii=False)
    for kind, _, value in SECRET_VALUES:
        assert value not in request, kind
        assert value not in result.summary.content, kind
        assert value not in json.dumps(result.summary.extracts, ensure_ascii=False), kind
    assert request.count("[REDACTED:") >= len(SECRET_VALUES)
    assert result.redactions  # the leaked ones were counted
    assert "Note 0, openai api key." in request  # the surrounding text is still summarized


def test_no_secret_in_an_offline_summary_or_its_pinned_facts(db):
    channel = _secret_channel()
    result = channel_compact(channel=channel, actor=channel.owner, keep_recent=2, max_summary_tokens=4000)
    stored = result.summary.content + json.dumps(result.summary.extracts, ensure_ascii=False)
    for kind, _, value in SECRET_VALUES:
        assert value not in stored, kind


def test_a_secret_in_an_earlier_summary_is_not_fed_back(utility_model, llm_server):
    channel = ChannelFactory()
    messages = converse(channel, 14)
    secret = SECRET_VALUES[5][2]
    # A summary stored before redaction existed (written directly, bypassing the service).
    chat_services.summary_write(
        channel=channel, through_message=messages[3], content=f"Old notes: {secret}", created_by=channel.owner
    )
    llm_server.script(Reply(content="## Goal\n- Updated."))
    channel_compact(channel=channel, actor=channel.owner, keep_recent=2)
    request = json.dumps(llm_server.requests[-1])
    assert "Old notes:" in request and secret not in request


def test_edited_content_and_branch_content_are_redacted(db):
    channel = ChannelFactory()
    converse(channel, 12)
    secret = SECRET_VALUES[8][2]
    result = channel_compact(channel=channel, actor=channel.owner, content=f"Edited; the token is {secret}.")
    assert secret not in result.summary.content and "[REDACTED:" in result.summary.content
    branch = summary_branch(channel=channel, actor=channel.owner, content=f"Carry on with {secret}")
    opening = Message.objects.get(channel=branch, depth=0)
    assert secret not in opening.content and "[REDACTED:" in opening.content


@pytest.mark.parametrize("size", [20, 200])
def test_one_compaction_costs_the_same_number_of_queries_whatever_the_length(db, size, django_assert_num_queries):
    small, large = ChannelFactory(), ChannelFactory()
    converse(small, 20)
    converse(large, size)
    with CaptureQueriesContext(connection) as baseline:
        channel_compact(channel=small, actor=small.owner, keep_recent=4)
    assert len(baseline.captured_queries) < 40
    with django_assert_num_queries(len(baseline.captured_queries)):
        result = channel_compact(channel=large, actor=large.owner, keep_recent=4)
    assert result.summarized_count == size - 4


def test_a_compaction_reads_the_owners_cursor_with_the_lock_and_no_field_it_left_unread(db):
    """The commit locks the channel and reads the owner's cursor in one statement (the owner is the one the
    compaction loaded, not read again); the path's messages are read with the fields a compaction uses, and
    none of the others is read later, one statement a message."""
    channel = ChannelFactory()
    converse(channel, 30)
    statements: list[str] = []

    def sent(execute, sql, params, many, context):  # the text as sent (a prepared statement's log holds none)
        statements.append(" ".join(sql.split()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(sent):
        result = channel_compact(channel=channel, actor=channel.owner, keep_recent=4)
    assert result.summary is not None
    assert not [sql for sql in statements if 'FROM "auth_user"' in sql]
    assert not [sql for sql in statements if 'FROM "chatcore_message"' in sql and "RECURSIVE" not in sql]
    # The plan's, the lock's (the channel joined) and the write's (the cursors it moves); no other read of either.
    cursors = [sql for sql in statements if sql.startswith('SELECT "chatcore_cursor"')]
    assert len(cursors) == 3 and 'INNER JOIN "chatcore_channel"' in cursors[1]
    assert len([sql for sql in statements if sql.startswith('SELECT "chatcore_channel"')]) == 2
