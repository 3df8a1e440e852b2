"""The database statements one reply costs, through the API and the pages, streamed and not.

Counted from the request's arrival to the stored reply (the model on the loopback server). The
person's limit on model calls is counted in the cache, which is Redis in production: here an
in-memory cache, so that only the database's own statements are counted. A reply's statements:
the channel; the user's turn (the channel's row lock with the user's cursor and the summary in
force; then the insert, the cursor and the channel's pressure); the context (the path: the cursor
is the one the user's turn placed, which the tools on offer read too); the chat role's models; the
reply (the lock with the cursor; then the model call's usage row, the insert, the cursor and the
pressure). What follows each lock is one statement (chatcore.statements): on PostgreSQL a
data-modifying WITH that also reads the path with the user's turn; on SQLite an insert into a view
whose trigger writes the rows, the path read on its own. On PostgreSQL the channel's read brings
the user's cursor with both rows' versions (chatcore.locks.RowsSeen), and each write takes the lock
itself on condition that they did not change: no lock statement of its own (and in production,
outside any transaction, no BEGIN and COMMIT either). Inside the test's transaction each service's
transaction adds a savepoint and its release. The aim is at most six statements.
"""

import pytest
from django.db import connection
from django.urls import reverse

from chatcore.models import Cursor, Message
from chatcore.services import summary_write
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, build_path
from tests.chatcore.test_streaming import parse_events, read_stream

ANSWER = "Drain one node, deploy, check its health, then the next."
# What every way a reply arrives costs after the channel is read: 6 statements (3 on PostgreSQL, where the path
# comes with the user's turn and each write takes its own lock), and two savepoints with their releases here
# (none in production, where the services' transactions are the outermost).
REPLY_STATEMENTS = 3 if connection.vendor == "postgresql" else 6
REPLY = REPLY_STATEMENTS + 4
# The page's: the session, its user (read once: the login check hands it to the view), the channel.
PAGE = REPLY + 3


@pytest.fixture(autouse=True)
def _memory_cache(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    settings.CHATCORE_LLM_MAX_RETRIES = 0


@pytest.fixture
def channel(chat_model, user, llm_server):
    llm_server.default = Reply(content=ANSWER)
    channel = ChannelFactory(owner=user)
    build_path(channel, 6)
    return channel


def test_an_api_reply_streamed(api, channel, django_assert_num_queries):
    url = reverse("chat_api:reply", args=[channel.pk])
    with django_assert_num_queries(REPLY + 1):
        response = api.post(url, {"content": "And now?", "stream": True}, format="json")
        events = parse_events(read_stream(response))
    assert events[-1][0] == "done" and events[-1][1]["message"]["content"] == ANSWER


def test_an_api_reply_after_another(api, channel, django_assert_num_queries):
    """On PostgreSQL the reply's channel read carries the versions of the chat role's rows: a reply after
    another, with the role unchanged, takes the role read before and sends one statement fewer."""
    url = reverse("chat_api:reply", args=[channel.pk])
    api.post(url, {"content": "First?"}, format="json")
    with django_assert_num_queries(REPLY + 1 - (1 if connection.vendor == "postgresql" else 0)):
        response = api.post(url, {"content": "And now?", "stream": True}, format="json")
        events = parse_events(read_stream(response))
    assert events[-1][0] == "done" and events[-1][1]["message"]["content"] == ANSWER


def test_an_api_reply_whole(api, channel, django_assert_num_queries):
    url = reverse("chat_api:reply", args=[channel.pk])
    with django_assert_num_queries(REPLY + 1):
        response = api.post(url, {"content": "And now?"}, format="json")
    assert response.status_code == 201 and response.json()["content"] == ANSWER
    reply = Message.objects.get(pk=response.json()["id"])
    channel.refresh_from_db()
    cursor = Cursor.objects.get(channel=channel)
    assert (cursor.leaf_id, cursor.summary_id, reply.depth) == (reply.pk, None, 7)
    assert (channel.context_messages, channel.context_tokens) == (8, reply.path_tokens)
    assert channel.context_ratio == reply.path_tokens / channel.context_budget


def test_an_api_reply_under_a_summary(api, channel, django_assert_num_queries):
    """A summary in force comes with each lock's cursor: the reply costs what it costs without one, and the
    read of compaction's global settings that decides whether the recall tool is offered with it."""
    through = Message.objects.filter(channel=channel).order_by("depth")[3]
    summary = summary_write(channel=channel, through_message=through, content="Earlier: a plan.", created_by=None)
    url = reverse("chat_api:reply", args=[channel.pk])
    with django_assert_num_queries(REPLY + 2):
        response = api.post(url, {"content": "And now?", "stream": True}, format="json")
        events = parse_events(read_stream(response))
    reply = Message.objects.get(pk=events[-1][1]["message"]["id"])
    channel.refresh_from_db()
    assert Cursor.objects.get(channel=channel).summary_id == summary.pk
    assert channel.context_tokens == reply.path_tokens - through.path_tokens + summary.tokens


def test_a_page_reply_streamed(client_user, channel, django_assert_num_queries):
    url = reverse("chat:send", args=[channel.pk])
    with django_assert_num_queries(PAGE):
        response = client_user.post(url, {"content": "And now?"}, HTTP_ACCEPT="text/event-stream")
        body = read_stream(response)
    assert b"event: done" in body


def test_a_page_reply_after_another(client_user, channel, django_assert_num_queries):
    """As the API's: the second reply takes the chat role the first read, on PostgreSQL."""
    url = reverse("chat:send", args=[channel.pk])
    client_user.post(url, {"content": "First?"})
    with django_assert_num_queries(PAGE - (1 if connection.vendor == "postgresql" else 0)):
        response = client_user.post(url, {"content": "And now?"}, HTTP_ACCEPT="text/event-stream")
        body = read_stream(response)
    assert b"event: done" in body


def test_a_page_reply_without_javascript(client_user, channel, django_assert_num_queries):
    url = reverse("chat:send", args=[channel.pk])
    with django_assert_num_queries(PAGE):
        response = client_user.post(url, {"content": "And now?"})
    assert response.status_code == 302
