"""recall_history on /v1: offered beside the client's tools when a summary is in force, run on the server
(streamed or not) and never shown to the client; the client's own tool calls still passed back."""

import pytest

from chatcore import services
from chatcore.chain import chain_hash
from chatcore.models import Channel, Cursor, Message, UsageEntry
from chatcore.tokens import count_tokens
from compaction.models import CompactionSettings
from devtools.loopback_llm import Reply
from tests.compaction.gateway.client_tools import WEATHER_CALL, WEATHER_TOOLS
from tests.compaction.recall_calls import PORT_FACT, recall_call, summarized_channel

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "loopback-chat"
ANSWER = "The kiwi deployment uses port 8443."


@pytest.fixture
def channel(user, chat_model, settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    return summarized_channel(user=user, model=chat_model)


def history_of(channel: Channel) -> list[dict]:
    """The channel's active path as the client holds it (the gateway finds it by its chain hashes)."""
    leaf = Cursor.objects.get(channel=channel, user=channel.owner).leaf
    path = []
    while leaf is not None:
        path.append({"role": leaf.role, "content": leaf.content})
        leaf = leaf.parent
    return path[::-1]


def tool_names(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools") or []]


def stored_turn(channel: Channel) -> list[Message]:
    """The newest user turn and everything stored under it on the active path."""
    leaf = Cursor.objects.get(channel=channel, user=channel.owner).leaf
    path = [leaf]
    while path[-1].role != "user":
        path.append(path[-1].parent)
    return path[::-1]


def assert_next_call_continues(openai_client, history: list[dict], channel: Channel, llm_server) -> None:
    """The client's next history (its turn, then the answer it got) meets the stored answer: no branch."""
    llm_server.script(Reply(content="You are welcome."))
    answer = stored_turn(channel)[-1]
    count = Message.objects.filter(channel=channel).count()
    openai_client.chat.completions.create(model=MODEL, messages=[*history, {"role": "user", "content": "Thanks!"}])
    thanks = Message.objects.get(channel=channel, content="Thanks!")
    assert thanks.parent_id == answer.pk
    assert Message.objects.filter(channel=channel).count() == count + 2
    assert Channel.objects.count() == 1


def test_offered_only_with_a_summary_in_force(openai_client, channel, llm_server):
    llm_server.script(Reply(content="Hello."), Reply(content="Fine."))
    openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "A new talk"}])
    openai_client.chat.completions.create(
        model=MODEL, messages=[*history_of(channel), {"role": "user", "content": "How are you?"}]
    )

    fresh, summarized = llm_server.requests
    assert "tools" not in fresh
    assert tool_names(summarized) == ["recall_history"]
    assert "recall_history tool is offered" in summarized["messages"][0]["content"]
    assert Channel.objects.count() == 2  # the resent history continued the summarized channel


def test_a_recall_round_runs_on_the_server_and_the_client_gets_the_answer(openai_client, channel, llm_server):
    llm_server.script(
        Reply(content="", tool_calls=[recall_call("kiwi port")], prompt_tokens=200, completion_tokens=9),
        Reply(content=ANSWER, prompt_tokens=400, completion_tokens=15),
    )
    history = [*history_of(channel), {"role": "user", "content": "Which port for kiwi?"}]
    completion = openai_client.chat.completions.create(model=MODEL, messages=history)

    message = completion.choices[0].message
    assert (message.content, message.tool_calls, completion.choices[0].finish_reason) == (ANSWER, None, "stop")
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (600, 24)
    first, second = llm_server.requests
    assert tool_names(first) == ["recall_history"]
    assert second["messages"][-2] == {"role": "assistant", "content": "", "tool_calls": [recall_call("kiwi port")]}
    assert second["messages"][-1]["role"] == "tool" and PORT_FACT in second["messages"][-1]["content"]
    turn = stored_turn(channel)
    assert [(m.role, m.content) for m in turn] == [
        ("user", "Which port for kiwi?"),
        ("assistant", ""),
        ("tool", second["messages"][-1]["content"]),
        ("assistant", ANSWER),
    ]
    assert turn[1].metadata["tool_calls"] == [recall_call("kiwi port")]
    assert turn[2].metadata == {"tool_call_id": "c1", "name": "recall_history"}
    assert turn[3].chain_hash == chain_hash(
        parent_hash=turn[0].chain_hash, role="assistant", content=ANSWER, metadata=None
    )
    usage = UsageEntry.objects.filter(channel=channel).order_by("id")
    assert [(u.role, u.model, u.success, u.trigger, u.input_tokens) for u in usage] == [
        ("chat", MODEL, True, "gateway", 200),
        ("tool", "recall_history", True, "", 0),
        ("chat", MODEL, True, "gateway", 400),
    ]
    assert_next_call_continues(openai_client, [*history, {"role": "assistant", "content": ANSWER}], channel, llm_server)


def test_a_streamed_recall_round_sends_no_chunks(openai_client, channel, llm_server):
    llm_server.script(
        Reply(content="", tool_calls=[recall_call("kiwi port")], prompt_tokens=200, completion_tokens=9),
        Reply(content=ANSWER, prompt_tokens=400, completion_tokens=15),
    )
    history = [*history_of(channel), {"role": "user", "content": "Which port for kiwi?"}]
    chunks = list(
        openai_client.chat.completions.create(
            model=MODEL, messages=history, stream=True, stream_options={"include_usage": True}
        )
    )

    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join(d.content or "" for d in deltas) == ANSWER
    assert all(not d.tool_calls for d in deltas)
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (600, 24)
    assert [r["stream"] for r in llm_server.requests] == [True, True]
    turn = stored_turn(channel)
    assert [(m.role, m.content) for m in turn][::3] == [("user", "Which port for kiwi?"), ("assistant", ANSWER)]
    assert [m.role for m in turn] == ["user", "assistant", "tool", "assistant"]
    assert [(u.role, u.success) for u in UsageEntry.objects.filter(channel=channel).order_by("id")] == [
        ("chat", True),
        ("tool", True),
        ("chat", True),
    ]
    assert_next_call_continues(openai_client, [*history, {"role": "assistant", "content": ANSWER}], channel, llm_server)


def test_text_streamed_before_a_recall_call_opens_the_answer(openai_client, channel, llm_server):
    """The client saw it (the turn was not yet known to call the tool): it is kept as the answer's start."""
    llm_server.script(Reply(content="Let me look that up. ", tool_calls=[recall_call("kiwi")]), Reply(content=ANSWER))
    history = [*history_of(channel), {"role": "user", "content": "Which port for kiwi?"}]
    chunks = openai_client.chat.completions.create(model=MODEL, messages=history, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    assert text == "Let me look that up. " + ANSWER
    turn = stored_turn(channel)
    assert [(m.role, m.content) for m in turn][1::2] == [("assistant", "Let me look that up. "), ("assistant", text)]
    assert_next_call_continues(openai_client, [*history, {"role": "assistant", "content": text}], channel, llm_server)


@pytest.mark.parametrize("stream", [False, True])
def test_the_client_s_tool_calls_are_passed_back_without_ours(openai_client, channel, llm_server, stream):
    """A turn calling a client tool is the client's, even beside a recall call (which is left out)."""
    llm_server.script(Reply(content="", tool_calls=[recall_call("weather"), WEATHER_CALL], finish_reason="tool_calls"))
    history = [*history_of(channel), {"role": "user", "content": "Weather in Oslo?"}]
    response = openai_client.chat.completions.create(model=MODEL, messages=history, tools=WEATHER_TOOLS, stream=stream)
    if stream:
        calls: dict[int, dict] = {}
        for chunk in response:
            for fragment in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                call = calls.setdefault(fragment.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += fragment.id or ""
                call["name"] += fragment.function.name or ""
                call["arguments"] += fragment.function.arguments or ""
        assert list(calls.values()) == [{"id": "call_7", "name": "get_weather", "arguments": '{"city": "Oslo"}'}]
    else:
        message = response.choices[0].message
        assert [call.model_dump() for call in message.tool_calls] == [WEATHER_CALL]
        assert response.choices[0].finish_reason == "tool_calls"

    (request,) = llm_server.requests
    assert tool_names(request) == ["get_weather", "recall_history"]
    turn = stored_turn(channel)
    assert [m.role for m in turn] == ["user", "assistant"]  # no server round
    assert turn[1].metadata["tool_calls"] == [WEATHER_CALL]
    assert not UsageEntry.objects.filter(role="tool").exists()
    # the client runs its tool and sends the result: it lands under the stored call
    llm_server.script(Reply(content="Sunny."))
    follow = [*history, {"role": "assistant", "content": None, "tool_calls": [WEATHER_CALL]}]
    follow.append({"role": "tool", "tool_call_id": "call_7", "content": "12 °C, sunny"})
    assert openai_client.chat.completions.create(model=MODEL, messages=follow).choices[0].message.content == "Sunny."
    assert Message.objects.get(channel=channel, role="tool", content="12 °C, sunny").parent_id == turn[1].pk


def test_a_client_tool_named_recall_history_is_the_client_s(openai_client, channel, llm_server):
    theirs = {**WEATHER_TOOLS[0], "function": {**WEATHER_TOOLS[0]["function"], "name": "recall_history"}}
    llm_server.script(Reply(content="", tool_calls=[recall_call("kiwi")], finish_reason="tool_calls"))
    history = [*history_of(channel), {"role": "user", "content": "Which port?"}]
    completion = openai_client.chat.completions.create(model=MODEL, messages=history, tools=[theirs])

    (request,) = llm_server.requests
    assert request["tools"] == [theirs]
    assert [call.function.name for call in completion.choices[0].message.tool_calls] == ["recall_history"]
    assert not UsageEntry.objects.filter(role="tool").exists()


def test_turned_off_globally_or_for_the_channel(openai_client, user, channel, llm_server):
    history = history_of(channel)
    CompactionSettings.objects.update_or_create(pk=1, defaults={"recall_tool": False})
    llm_server.script(Reply(content="One."), Reply(content="Two."), Reply(content="Three."))
    history += [{"role": "user", "content": "First?"}]
    history += [{"role": "assistant", "content": openai_client.chat.completions.create(model=MODEL, messages=history)
                 .choices[0].message.content}]  # fmt: skip
    CompactionSettings.objects.filter(pk=1).update(recall_tool=True)
    services.channel_update(channel=channel, actor=user, settings={"recall_tool": False})
    history += [{"role": "user", "content": "Second?"}]
    history += [{"role": "assistant", "content": openai_client.chat.completions.create(model=MODEL, messages=history)
                 .choices[0].message.content}]  # fmt: skip
    services.channel_update(channel=channel, actor=user, settings={"recall_tool": None})
    openai_client.chat.completions.create(model=MODEL, messages=[*history, {"role": "user", "content": "Third?"}])

    assert [tool_names(r) for r in llm_server.requests] == [[], [], ["recall_history"]]
    assert Channel.objects.count() == 1


def test_rounds_are_bounded_by_the_window(openai_client, user, chat_model, llm_server, settings):
    """Results are cut to what the window leaves, and no round offers the tool once that is spent."""
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    chat_model.context_window = 900
    chat_model.save(update_fields=["context_window"])
    channel = summarized_channel(user=user, model=chat_model, opening=40)

    def respond(request: dict) -> Reply:
        if "tools" in request:
            return Reply(content="", tool_calls=[recall_call("weather Lisbon filler", limit=8, call_id="c")])
        return Reply(content="Done.")

    llm_server.responder = respond
    history = [*history_of(channel), {"role": "user", "content": "Tell me everything about Lisbon."}]
    completion = openai_client.chat.completions.create(model=MODEL, messages=history)

    assert completion.choices[0].message.content == "Done."
    assert [bool(tool_names(r)) for r in llm_server.requests] == [True, False]  # 1 round, not 3
    results = [m["content"] for m in llm_server.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 1 and results[0].endswith("left out: the tool's output limit]")
    sent = sum(count_tokens(m["content"] or "") + 4 for m in llm_server.requests[-1]["messages"])
    assert sent <= 900 - 112  # the answer's reserve kept free
    assert UsageEntry.objects.filter(channel=channel, role="tool").count() == 1
