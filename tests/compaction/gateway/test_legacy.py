"""OpenAI's deprecated function calling on /v1 (compaction/gateway/legacy.py): `functions` and
`function_call` go upstream as tools, the answer comes back as `function_call`, and the resent call and
its `role: "function"` result continue the conversation on the same branch."""

import json

import openai
import pytest

from chatcore.models import AuditEntry, Channel, Message
from compaction.gateway.legacy import call_id
from devtools.loopback_llm import Reply
from tests.compaction.gateway.client_tools import WEATHER_CALL, WEATHER_TOOLS

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "loopback-chat"
FUNCTIONS = [WEATHER_TOOLS[0]["function"]]
QUESTION = {"role": "user", "content": "Weather in Oslo?"}
CALLED = Reply(content=None, tool_calls=[WEATHER_CALL], finish_reason="tool_calls")


def test_a_function_call_answer_and_its_result_continue_the_branch(openai_client, chat_model, llm_server):
    llm_server.script(CALLED, Reply(content="Sunny, 21°C."))
    completion = openai_client.chat.completions.create(model=MODEL, messages=[QUESTION], functions=FUNCTIONS)

    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "function_call"
    assert message.function_call.model_dump() == {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    assert message.tool_calls is None
    sent = llm_server.requests[0]
    assert (sent["tools"], sent["parallel_tool_calls"]) == (WEATHER_TOOLS, False)
    assert "functions" not in sent and "function_call" not in sent

    history = [
        QUESTION,
        message.model_dump(exclude_none=True),  # {"role", "content": None dropped, "function_call", ...}
        {"role": "function", "name": "get_weather", "content": '{"temp": 21}'},
    ]
    answer = openai_client.chat.completions.create(model=MODEL, messages=history, functions=FUNCTIONS)

    assert answer.choices[0].message.content == "Sunny, 21°C." and answer.choices[0].finish_reason == "stop"
    assert Channel.objects.count() == 1 and Message.objects.count() == 4
    assert not AuditEntry.objects.filter(action="gateway.branch").exists()
    stored = Message.objects.get(role="assistant", content="")
    assert stored.metadata["tool_calls"][0]["id"] == call_id("get_weather")
    result = Message.objects.get(role="tool")
    assert result.parent == stored and result.metadata["name"] == "get_weather"
    upstream = llm_server.requests[-1]["messages"]
    assert upstream[1]["tool_calls"][0]["id"] == upstream[2]["tool_call_id"] == call_id("get_weather")
    assert upstream[2] == {"role": "tool", "content": '{"temp": 21}', "tool_call_id": call_id("get_weather")}


@pytest.mark.parametrize(
    "function_call, tool_choice",
    [
        ("none", "none"),
        ("auto", "auto"),
        ({"name": "get_weather"}, {"type": "function", "function": {"name": "get_weather"}}),
    ],
)
def test_function_call_is_sent_as_tool_choice(openai_client, chat_model, echo_llm, function_call, tool_choice):
    openai_client.chat.completions.create(
        model=MODEL, messages=[QUESTION], functions=FUNCTIONS, function_call=function_call
    )
    assert echo_llm.requests[-1]["tool_choice"] == tool_choice


def test_a_streamed_function_call(openai_client, chat_model, llm_server):
    llm_server.script(CALLED)
    chunks = list(
        openai_client.chat.completions.create(model=MODEL, messages=[QUESTION], functions=FUNCTIONS, stream=True)
    )
    calls = [c.choices[0].delta.function_call for c in chunks if c.choices and c.choices[0].delta.function_call]
    assert calls[0].name == "get_weather"
    assert json.loads("".join(c.arguments or "" for c in calls)) == {"city": "Oslo"}
    assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices)
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["function_call"]
    assert Message.objects.get(role="assistant").metadata["tool_calls"][0]["id"] == call_id("get_weather")


@pytest.mark.parametrize(
    "message, param",
    [
        ({"role": "function", "content": "21"}, "messages[1].name"),
        ({"role": "assistant", "content": None, "function_call": "get_weather"}, "messages[1].function_call"),
    ],
)
def test_a_malformed_legacy_message_is_400_naming_the_field(openai_client, chat_model, message, param):
    with pytest.raises(openai.BadRequestError) as caught:
        openai_client.chat.completions.create(model=MODEL, messages=[QUESTION, message])
    assert caught.value.body["param"] == param
    assert not Message.objects.exists()


@pytest.mark.parametrize(
    "options, param",
    [
        ({"functions": {"name": "x"}}, "functions"),
        ({"functions": FUNCTIONS, "function_call": "always"}, "function_call"),
    ],
)
def test_malformed_legacy_options_are_400(openai_client, chat_model, options, param):
    with pytest.raises(openai.BadRequestError) as caught:
        openai_client.chat.completions.create(model=MODEL, messages=[QUESTION], extra_body=options)
    assert caught.value.body["param"] == param
