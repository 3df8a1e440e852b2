"""recall_history in streamed replies (API stream:true and the pages): the same rounds as the whole
reply, the answer's pieces streamed, the calls stored, folded in the page, and in usage."""

import asyncio

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chatcore import replies
from chatcore.models import Message, UsageEntry
from chatcore.streaming import ReplyDelta, ReplyTools, reply_events
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory
from tests.chatcore.test_streaming import parse_events, post_stream, read_stream
from tests.compaction.recall_calls import PORT_FACT, recall_call, summarized_channel

ANSWER = "The kiwi deployment uses port 8443, as you said back then."


@pytest.fixture
def channel(user, chat_model, settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    return summarized_channel(user=user, model=chat_model)


def names(events: list[tuple[str, dict]]) -> list[str]:
    """Event names with runs of deltas folded into one."""
    folded: list[str] = []
    for name, _ in events:
        if not (name == "delta" and folded and folded[-1] == "delta"):
            folded.append(name)
    return folded


def test_a_streamed_reply_runs_the_recall_round_then_streams_the_answer(api, channel, llm_server):
    llm_server.script(
        Reply(content="", tool_calls=[recall_call("kiwi port")], prompt_tokens=200, completion_tokens=9),
        Reply(content=ANSWER, prompt_tokens=400, completion_tokens=15),
    )
    events = post_stream(api, channel, {"content": "Which port for kiwi?", "stream": True})

    assert names(events) == ["tool", "delta", "done"]
    assert events[0][1] == {"round": 1, "tool_calls": [recall_call("kiwi port")]}
    assert "".join(data["content"] for name, data in events if name == "delta") == ANSWER
    first, second = llm_server.requests
    assert first["stream"] is True and second["stream"] is True
    assert [tool["function"]["name"] for tool in first["tools"]] == ["recall_history"]
    assert "tools" in second  # a second round could still call it (3 rounds at most)
    sent_result = second["messages"][-1]
    assert sent_result["role"] == "tool" and sent_result["tool_call_id"] == "c1"
    assert PORT_FACT in sent_result["content"]
    assert second["messages"][-2] == {"role": "assistant", "content": "", "tool_calls": [recall_call("kiwi port")]}

    path = list(Message.objects.filter(channel=channel).order_by("depth"))[-4:]
    assert [(m.role, m.content) for m in path] == [
        ("user", "Which port for kiwi?"),
        ("assistant", ""),
        ("tool", sent_result["content"]),
        ("assistant", ANSWER),
    ]
    assert [m.parent_id for m in path[1:]] == [m.pk for m in path[:-1]]
    assert path[1].metadata == {"tool_calls": [recall_call("kiwi port")], "model": "loopback-chat"}
    assert path[2].metadata == {"tool_call_id": "c1", "name": "recall_history"}
    done = events[-1][1]
    assert done["message"]["id"] == path[3].pk and done["usage"] == {"input_tokens": 400, "output_tokens": 15}
    assert channel.cursors.get().leaf_id == path[3].pk
    usage = UsageEntry.objects.filter(channel=channel).order_by("id")
    assert [(u.role, u.model, u.success, u.input_tokens) for u in usage] == [
        ("chat", "loopback-chat", True, 200),
        ("tool", "recall_history", True, 0),
        ("chat", "loopback-chat", True, 400),
    ]


def test_text_before_the_calls_is_stored_with_them_and_the_tool_event_says_so(api, channel, llm_server):
    llm_server.script(
        Reply(content="Let me look that up.", tool_calls=[recall_call("kiwi")]),
        Reply(content=ANSWER),
    )
    events = post_stream(api, channel, {"content": "Kiwi port?", "stream": True})
    assert names(events) == ["delta", "tool", "delta", "done"]
    before = [name for name, _ in events].index("tool")
    assert "".join(data["content"] for _, data in events[:before]) == "Let me look that up."
    assert events[-1][1]["message"]["content"] == ANSWER
    call_message = Message.objects.get(channel=channel, role="assistant", metadata__has_key="tool_calls")
    assert call_message.content == "Let me look that up."


def test_rounds_are_bounded_and_the_last_streamed_request_offers_no_tools(api, channel, llm_server):
    llm_server.script(
        *[Reply(content="", tool_calls=[recall_call("rotation", call_id=f"c{i}")]) for i in range(3)],
        Reply(content="The 3rd of each month."),
    )
    events = post_stream(api, channel, {"content": "When is rotation?", "stream": True})
    assert names(events) == ["tool", "tool", "tool", "delta", "done"]
    assert [data["round"] for name, data in events if name == "tool"] == [1, 2, 3]
    assert ["tools" in request for request in llm_server.requests] == [True, True, True, False]
    assert UsageEntry.objects.filter(channel=channel, role="tool").count() == 3
    assert Message.objects.filter(channel=channel, role="tool").count() == 3


def test_a_model_that_keeps_calling_after_the_last_round_gets_its_turn_stored_as_the_answer(api, channel, llm_server):
    """The 4th request offers no tools; a model that still returns calls has that turn stored as is."""
    llm_server.default = Reply(content="Still looking.", tool_calls=[recall_call("rotation")])
    events = post_stream(api, channel, {"content": "When is rotation?", "stream": True})
    assert names(events)[-1] == "done" and len(llm_server.requests) == 4
    assert Message.objects.filter(channel=channel, role="tool").count() == 3


def test_no_tool_is_offered_without_a_summary(api, user, chat_model, llm_server):
    plain = ChannelFactory(owner=user, model=chat_model)
    llm_server.script(Reply(content="Hello there."))
    events = post_stream(api, plain, {"content": "Hi", "stream": True})
    assert names(events) == ["delta", "done"]
    assert "tools" not in llm_server.requests[-1]
    assert not UsageEntry.objects.filter(role="tool").exists()


def test_a_failure_after_a_round_keeps_the_calls_and_stores_no_answer(api, channel, llm_server):
    llm_server.script(Reply(content="", tool_calls=[recall_call("kiwi")]), Reply(status=500))
    events = post_stream(api, channel, {"content": "Kiwi port?", "stream": True})
    assert names(events) == ["tool", "error"]
    assert events[-1][1]["code"] == "model_failed"
    tail = list(Message.objects.filter(channel=channel).order_by("depth").values_list("role", flat=True))[-3:]
    assert tail == ["user", "assistant", "tool"]
    assert not Message.objects.filter(channel=channel, role="assistant", content=ANSWER).exists()


def test_a_reader_that_goes_away_during_the_answer_leaves_it_interrupted_under_the_result(
    channel, llm_server, django_capture_on_commit_callbacks
):
    llm_server.script(Reply(content="", tool_calls=[recall_call("kiwi")]), Reply(content=ANSWER, token_delay=0.05))

    async def run(plan) -> list:
        seen: list = []

        async def reader() -> None:
            async for event in reply_events(plan=plan):
                seen.append(event)

        task = asyncio.create_task(reader())
        while sum(isinstance(event, ReplyDelta) for event in seen) < 2:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen

    with django_capture_on_commit_callbacks(execute=True):
        plan = replies.reply_prepare(channel=channel, user=channel.owner, content="Kiwi port?")
        seen = async_to_sync(run)(plan)
    assert isinstance(seen[0], ReplyTools)
    partial = Message.objects.get(channel=channel, metadata__interrupted=True)
    assert partial.parent.role == "tool" and partial.parent.parent.metadata["tool_calls"]
    assert ANSWER.startswith(partial.content) and len(partial.content) < len(ANSWER)
    assert channel.cursors.get().leaf_id == partial.pk


def test_query_count_of_a_streamed_reply_with_a_recall_round_does_not_grow_with_the_channel(
    api, user, chat_model, llm_server, settings
):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    # A reply first, as on a server that has answered before: both replies counted take the chat role it read.
    llm_server.script(Reply(content=ANSWER))
    post_stream(api, ChannelFactory(owner=user), {"content": "Hello?", "stream": True})
    counts = []
    for opening in (1, 60):
        channel = summarized_channel(user=user, model=chat_model, opening=opening)
        llm_server.script(Reply(content="", tool_calls=[recall_call("kiwi port")]), Reply(content=ANSWER))
        with CaptureQueriesContext(connection) as queries:
            events = post_stream(api, channel, {"content": "Kiwi port?", "stream": True})
        assert names(events) == ["tool", "delta", "done"]
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_the_page_streams_the_round_and_shows_the_call_folded(client_user, channel, llm_server):
    llm_server.script(Reply(content="", tool_calls=[recall_call("kiwi port")]), Reply(content=ANSWER))
    response = client_user.post(
        reverse("chat:send", args=[channel.pk]), {"content": "Kiwi port?"}, HTTP_ACCEPT="text/event-stream"
    )
    events = parse_events(read_stream(response))
    assert names(events) == ["tool", "delta", "done"]
    assert events[0][1] == {"round": 1, "names": ["recall_history"]}
    page = client_user.get(reverse("chat:channel", args=[channel.pk])).content.decode()
    assert "<summary>Tool call <code>recall_history</code></summary>" in page
    assert "Result of <code>recall_history</code>" in page
    assert page.count('<details class="tool">') == 2 and ANSWER in page
