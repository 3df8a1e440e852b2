"""Streamed replies: the pipeline (`chatcore.streaming`) and the API's text/event-stream answer.

The model is the loopback server streaming real chunks over HTTP; the API is
driven through Django's test client (the async view runs in an event loop,
its database steps on the test's connection).
"""

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chatcore import replies
from chatcore.api.serializers import MessageSerializer
from chatcore.models import Message, ModelRole, UsageEntry
from chatcore.streaming import ReplyDelta, ReplyDone, ReplyFailed, reply_events
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, build_path

ANSWER = "Use a rolling restart: drain one node, deploy, check health, then the next."


@pytest.fixture(autouse=True)
def _no_retries(settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0


@pytest.fixture
def channel(chat_model, user):
    return ChannelFactory(owner=user)


def parse_events(body: bytes) -> list[tuple[str, dict]]:
    events = []
    for block in body.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def read_stream(response) -> bytes:
    async def collect() -> bytes:
        return b"".join([part async for part in response.streaming_content])

    return async_to_sync(collect)()


def post_stream(api, channel, payload: dict, **headers):
    url = reverse("chat_api:reply", args=[channel.pk])
    response = api.post(url, payload, format="json", **headers)
    assert response.status_code == 200, getattr(response, "content", b"")
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-cache"
    return parse_events(read_stream(response))


def test_api_streams_deltas_then_done_with_the_stored_message(
    api, channel, llm_server, stored_replies, django_capture_on_commit_callbacks
):
    llm_server.script(Reply(content=ANSWER, prompt_tokens=321, completion_tokens=17))
    with django_capture_on_commit_callbacks(execute=True):
        events = post_stream(api, channel, {"content": "How do I deploy?", "stream": True})

    names = [name for name, _ in events]
    assert names == ["delta"] * (len(names) - 1) + ["done"] and len(names) > 5
    assert "".join(data["content"] for name, data in events if name == "delta") == ANSWER
    stored = Message.objects.get(channel=channel, role="assistant")
    done = events[-1][1]
    assert done == {
        "message": json.loads(json.dumps(MessageSerializer(stored).data, default=str).replace("+00:00", "Z")),
        "usage": {"input_tokens": 321, "output_tokens": 17},
    }
    assert stored.content == ANSWER
    assert stored.metadata == {
        "model": "loopback-chat",
        "used_fallback": False,
        "usage": {"input_tokens": 321, "output_tokens": 17},
    }
    assert llm_server.requests[0]["stream"] is True
    question = stored.parent
    assert (question.role, question.content) == ("user", "How do I deploy?")
    channel.refresh_from_db()
    assert (channel.context_tokens, channel.context_messages) == (stored.path_tokens, 2)
    assert [(r["message"], r["input_tokens"], r["reported"]) for r in stored_replies] == [(stored, 321, True)]
    usage = UsageEntry.objects.get(channel=channel)
    assert (usage.success, usage.input_tokens, usage.output_tokens) == (True, 321, 17)


def test_accept_event_stream_alone_asks_for_the_stream(api, channel, llm_server):
    llm_server.script(Reply(content="Short answer here."))
    events = post_stream(api, channel, {"content": "Hi"}, HTTP_ACCEPT="text/event-stream")
    assert [name for name, _ in events] == ["delta", "delta", "delta", "done"]


def test_without_stream_the_answer_is_todays_json(api, channel, llm_server):
    llm_server.script(Reply(content="Plain answer."))
    response = api.post(reverse("chat_api:reply", args=[channel.pk]), {"content": "Hi"}, format="json")
    assert response.status_code == 201
    stored = Message.objects.get(channel=channel, role="assistant")
    assert response.json() == json.loads(json.dumps(MessageSerializer(stored).data, default=str).replace("+00:00", "Z"))
    assert "stream" not in llm_server.requests[0]


def test_streamed_and_plain_replies_do_the_same_bookkeeping(
    api, user, chat_model, llm_server, stored_replies, django_capture_on_commit_callbacks
):
    """Pressure columns, cursor, metadata and the signal: the same whichever way the reply came."""
    results = []
    for stream in (False, True):
        channel = ChannelFactory(owner=user)
        build_path(channel, 6)
        llm_server.script(Reply(content=ANSWER, prompt_tokens=900, completion_tokens=20))
        with django_capture_on_commit_callbacks(execute=True):
            response = api.post(
                reverse("chat_api:reply", args=[channel.pk]), {"content": "Next?", "stream": stream}, format="json"
            )
            if stream:
                read_stream(response)
        channel.refresh_from_db()
        reply = Message.objects.get(channel=channel, role="assistant", parent__content="Next?")
        cursor = channel.cursors.get()
        results.append(
            (
                reply.content,
                reply.metadata,
                reply.path_tokens,
                channel.context_tokens,
                channel.context_messages,
                round(channel.context_ratio, 6),
                cursor.leaf_id == reply.pk,
            )
        )
    assert results[0] == results[1]
    assert [(r["input_tokens"], r["reported"]) for r in stored_replies] == [(900, True), (900, True)]


def test_a_failure_mid_stream_stores_nothing_and_sends_an_error_event(api, channel, llm_server, stored_replies):
    llm_server.script(Reply(content=ANSWER, fault="stream_error"))
    events = post_stream(api, channel, {"content": "Go on", "stream": True})
    assert [name for name, _ in events] == ["delta", "delta", "error"]
    error = events[-1][1]
    assert set(error) == {"detail", "code", "errors"} and error["code"] == "model_failed"
    assert error["detail"].startswith("The model call failed: loopback-chat: ")
    assert list(Message.objects.filter(channel=channel).values_list("role", "content")) == [("user", "Go on")]
    assert stored_replies == []
    assert UsageEntry.objects.get(channel=channel).success is False


def test_a_failure_before_the_first_piece_falls_back_then_errors(api, channel, llm_server, chat_model):
    fallback = LLMModelFactory(name="loopback-fallback", base_url=llm_server.url)
    ModelRole.objects.filter(role="chat").update(fallback=fallback)
    llm_server.script(Reply(status=503), Reply(content="From the fallback."))
    events = post_stream(api, channel, {"content": "Hello", "stream": True})
    assert events[-1][0] == "done" and events[-1][1]["message"]["metadata"]["used_fallback"] is True
    assert "".join(d["content"] for n, d in events if n == "delta") == "From the fallback."

    llm_server.script(Reply(status=500), Reply(status=500))
    events = post_stream(api, channel, {"content": "Again", "stream": True})
    assert [name for name, _ in events] == ["error"]
    assert len(events[0][1]["errors"]) == 2
    assert Message.objects.filter(channel=channel, role="assistant").count() == 1


def test_bad_input_is_answered_before_any_stream(api, channel, user, other_user):
    url = reverse("chat_api:reply", args=[channel.pk])
    response = api.post(url, {"content": 5, "stream": "perhaps"}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid" and "stream" in response.json()["errors"]
    foreign = ChannelFactory(owner=other_user)
    response = api.post(reverse("chat_api:reply", args=[foreign.pk]), {"content": "x"}, HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"  # an error before any stream is plain JSON
    assert response.json() == {"detail": "Channel not found.", "code": "not_found"}


def test_query_count_of_a_streamed_reply_does_not_grow_with_the_channel(api, user, chat_model, llm_server):
    llm_server.default = Reply(content=ANSWER)
    # A reply first, as on a server that has answered before: both replies counted take the chat role it read.
    post_stream(api, ChannelFactory(owner=user), {"content": "Hello?", "stream": True})
    counts = []
    for length in (4, 120):
        channel = ChannelFactory(owner=user)
        build_path(channel, length)
        with CaptureQueriesContext(connection) as queries:
            events = post_stream(api, channel, {"content": "And now?", "stream": True})
        assert events[-1][0] == "done"
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def _consume(plan, *, stop_after: int, how: str) -> list:
    """Read `stop_after` pieces, then go away as a client does: close the generator or cancel the task."""

    async def run() -> list:
        seen: list = []
        events = reply_events(plan=plan)
        if how == "close":
            async for event in events:
                seen.append(event)
                if len(seen) == stop_after:
                    break
            await events.aclose()
            return seen

        async def reader() -> None:
            async for event in events:
                seen.append(event)

        task = asyncio.create_task(reader())
        while len(seen) < stop_after:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    return async_to_sync(run)()


@pytest.mark.parametrize("how", ["close", "cancel"])
def test_a_reader_that_goes_away_leaves_the_partial_reply_marked_interrupted(
    how, channel, llm_server, stored_replies, django_capture_on_commit_callbacks
):
    llm_server.script(Reply(content=ANSWER, token_delay=0.05, prompt_tokens=50))
    with django_capture_on_commit_callbacks(execute=True):
        plan = replies.reply_prepare(channel=channel, user=channel.owner, content="Tell me")
        seen = _consume(plan, stop_after=3, how=how)
    assert all(isinstance(event, ReplyDelta) for event in seen)
    partial = Message.objects.get(channel=channel, role="assistant")
    assert partial.metadata["interrupted"] is True
    assert partial.content.startswith("".join(event.content for event in seen))
    assert len(partial.content) < len(ANSWER)
    assert channel.cursors.get().leaf_id == partial.pk  # in the context like any reply, and regenerable
    assert [r["message"] for r in stored_replies] == [partial]
    usage = UsageEntry.objects.get(channel=channel)
    assert usage.success is False and usage.error.startswith("interrupted")


def test_pipeline_events_end_with_done_or_failed(channel, llm_server):
    llm_server.script(Reply(content="One two three."))
    plan = replies.reply_prepare(channel=channel, user=channel.owner, content="Count")

    async def run() -> list:
        return [event async for event in reply_events(plan=plan)]

    events = async_to_sync(run)()
    assert isinstance(events[-1], ReplyDone) and events[-1].message.content == "One two three."
    llm_server.script(Reply(status=500))
    plan = replies.reply_prepare(channel=channel, user=channel.owner, content="Again")
    events = async_to_sync(run)()
    assert len(events) == 1 and isinstance(events[0], ReplyFailed)
