"""`stream: true` through uvicorn: chunks as they come, [DONE], the reply stored once; tools passed through."""

import asyncio
import json

import httpx
import openai
import pytest

from chatcore.models import Channel, Cursor, Message, UsageEntry
from devtools.loopback_llm import Reply
from tests.compaction.gateway.client_tools import WEATHER_CALL, WEATHER_TOOLS

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "loopback-chat"


def test_a_streamed_answer_arrives_in_chunks_and_is_stored_once(openai_client, chat_model, llm_server):
    llm_server.script(Reply(content="The answer is forty two.", prompt_tokens=12, completion_tokens=6))
    with openai_client.chat.completions.with_streaming_response.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Question?"}],
        stream=True,
        stream_options={"include_usage": True},
    ) as response:
        channel_id = response.headers["X-Channel-Id"]
        assert response.headers["Content-Type"].startswith("text/event-stream")
        chunks = list(response.parse())

    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert pieces == ["The ", "answer ", "is ", "forty ", "two."]
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
    assert chunks[-1].choices == [] and (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (12, 6)
    assert all(c.usage is None and "usage" in c.model_fields_set for c in chunks[:-1])  # null, as OpenAI sends it
    reply = Message.objects.get(role="assistant")
    assert str(reply.channel_id) == channel_id
    assert reply.content == "The answer is forty two."
    assert reply.metadata["usage"] == {"input_tokens": 12, "output_tokens": 6}
    assert Cursor.objects.get(channel_id=channel_id).leaf == reply
    assert UsageEntry.objects.get().input_tokens == 12


def test_the_event_stream_ends_with_done(asgi_server, token, chat_model, llm_server):
    llm_server.script(Reply(content="Hi there"))
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    with httpx.stream(
        "POST", f"{asgi_server.url}/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {token}"}
    ) as response:
        lines = [line for line in response.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in lines[:-1]]
    assert "usage" not in events[-1]  # only when asked for
    assert "".join(e["choices"][0]["delta"].get("content", "") for e in events) == "Hi there"


def test_the_async_client_streams_and_awaits(async_openai_client, chat_model, echo_llm):
    async def talk() -> tuple[str, str]:
        history = [{"role": "user", "content": "First"}]
        whole = await async_openai_client.chat.completions.create(model=MODEL, messages=history)
        history += [{"role": "assistant", "content": whole.choices[0].message.content}]
        history += [{"role": "user", "content": "Second"}]
        stream = await async_openai_client.chat.completions.create(model=MODEL, messages=history, stream=True)
        streamed = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        return whole.choices[0].message.content, streamed

    first, second = asyncio.run(talk())
    assert (first, second) == ("Noted: First", "Noted: Second")
    assert Channel.objects.count() == 1 and Message.objects.count() == 4


def test_a_failure_mid_stream_sends_an_error_event_and_stores_nothing(openai_client, chat_model, llm_server):
    llm_server.script(Reply(content="one two three four", fault="stream_error"))
    stream = openai_client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Go"}], stream=True
    )
    with pytest.raises(openai.APIError) as caught:
        for _ in stream:
            pass
    assert "injected mid-stream error" in str(caught.value)
    assert list(Message.objects.values_list("role", flat=True)) == ["user"]
    assert UsageEntry.objects.get().success is False


def test_a_model_failing_before_its_first_token_is_an_http_error(openai_client, chat_model, llm_server, settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    llm_server.script(Reply(status=503))
    with pytest.raises(openai.InternalServerError) as caught:
        openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Go"}], stream=True)
    assert caught.value.status_code == 502
    assert list(Message.objects.values_list("role", flat=True)) == ["user"]


@pytest.mark.parametrize("stream", [False, True])
def test_tool_calls_pass_through_and_the_tool_turn_continues_the_branch(openai_client, chat_model, llm_server, stream):
    llm_server.script(
        Reply(content=None, tool_calls=[WEATHER_CALL], finish_reason="tool_calls"), Reply(content="Sunny, 21°C.")
    )
    history = [{"role": "user", "content": "Weather in Oslo?"}]
    if stream:
        chunks = list(
            openai_client.chat.completions.create(model=MODEL, messages=history, tools=WEATHER_TOOLS, stream=True)
        )
        fragments = [c.choices[0].delta.tool_calls for c in chunks if c.choices and c.choices[0].delta.tool_calls]
        arguments = "".join(f[0].function.arguments or "" for f in fragments)
        call = {
            "id": fragments[0][0].id,
            "type": "function",
            "function": {"name": "get_weather", "arguments": arguments},
        }
        finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        assistant = {"role": "assistant", "content": None, "tool_calls": [call]}
    else:
        completion = openai_client.chat.completions.create(model=MODEL, messages=history, tools=WEATHER_TOOLS)
        finish = [completion.choices[0].finish_reason]
        assistant = completion.choices[0].message  # the SDK's own object, resent as SDK users do
        call = assistant.tool_calls[0].model_dump()
    assert finish == ["tool_calls"] and call == WEATHER_CALL
    history += [assistant, {"role": "tool", "tool_call_id": "call_7", "content": '{"temp": 21, "sky": "sunny"}'}]

    answer = openai_client.chat.completions.create(model=MODEL, messages=history, tools=WEATHER_TOOLS)

    assert answer.choices[0].message.content == "Sunny, 21°C."
    assert Message.objects.count() == 4 and Channel.objects.count() == 1
    stored_call = Message.objects.get(role="assistant", content="")
    assert stored_call.metadata["tool_calls"] == [WEATHER_CALL]
    tool = Message.objects.get(role="tool")
    assert (tool.parent, tool.metadata["tool_call_id"]) == (stored_call, "call_7")
    sent = llm_server.requests[-1]
    assert sent["tools"] == WEATHER_TOOLS
    assert sent["messages"][1] == {"role": "assistant", "content": "", "tool_calls": [WEATHER_CALL]}
    assert sent["messages"][2] == {"role": "tool", "content": '{"temp": 21, "sky": "sunny"}', "tool_call_id": "call_7"}


def test_images_go_upstream_as_parts_and_stay_readable_as_text(openai_client, chat_model, llm_server):
    parts = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]
    llm_server.script(Reply(content="A cat."), Reply(content="Yes."))
    openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": parts}])
    openai_client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "user", "content": parts},
            {"role": "assistant", "content": "A cat."},
            {"role": "user", "content": "Sure?"},
        ],
    )
    question = Message.objects.get(role="user", parent=None)
    assert question.content == "What is in this picture?\n[image]"
    assert question.metadata["content_parts"] == parts
    assert Message.objects.count() == 4
    assert llm_server.requests[-1]["messages"][0] == {"role": "user", "content": parts}
