"""The request's options on /v1 (compaction/gateway/params.py), through uvicorn with the `openai` client:
what is forwarded, what is ignored, and the 400 that names a wrong one before anything is stored."""

import openai
import pytest

from chatcore.models import Message
from tests.compaction.gateway.client_tools import WEATHER_TOOLS

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "loopback-chat"
HELLO = [{"role": "user", "content": "Hello"}]


def test_sampling_and_format_options_are_forwarded_as_given(openai_client, chat_model, echo_llm):
    schema = {"name": "answer", "schema": {"type": "object"}, "strict": True}
    openai_client.chat.completions.create(
        model=MODEL,
        messages=HELLO,
        temperature=0,
        top_p=0.9,
        n=1,
        seed=7,
        user="u-1",
        stop=["END", "STOP"],
        presence_penalty=0.5,
        logit_bias={"50": 1},
        logprobs=True,
        top_logprobs=2,
        max_completion_tokens=60,
        response_format={"type": "json_schema", "json_schema": schema},
    )
    sent = echo_llm.requests[-1]
    assert {name: sent[name] for name in ("temperature", "top_p", "seed", "user", "stop", "presence_penalty")} == {
        "temperature": 0,
        "top_p": 0.9,
        "seed": 7,
        "user": "u-1",
        "stop": ["END", "STOP"],
        "presence_penalty": 0.5,
    }
    assert (sent["logit_bias"], sent["logprobs"], sent["top_logprobs"]) == ({"50": 1}, True, 2)
    assert sent["max_completion_tokens"] == 60
    assert sent["response_format"] == {"type": "json_schema", "json_schema": schema}
    assert "n" not in sent


def test_unknown_fields_metadata_and_store_are_accepted_and_not_forwarded(openai_client, chat_model, echo_llm):
    reply = openai_client.chat.completions.create(
        model=MODEL,
        messages=HELLO,
        metadata={"app": "notes"},
        store=True,
        stream_options={"include_usage": True},
        extra_body={"prompt_cache_key": "k", "web_search_options": {}, "something_new": [1]},
    )
    assert reply.choices[0].message.content == "Noted: Hello"
    assert set(echo_llm.requests[-1]) == {"model", "messages"}


def test_tool_options_without_tools_are_dropped(openai_client, chat_model, echo_llm):
    """An empty tool list, or tool_choice auto/none and parallel_tool_calls alone, which providers refuse."""
    openai_client.chat.completions.create(model=MODEL, messages=HELLO, tools=[], tool_choice="auto")
    openai_client.chat.completions.create(model=MODEL, messages=HELLO, tool_choice="none", parallel_tool_calls=True)
    assert [set(sent) for sent in echo_llm.requests] == [{"model", "messages"}] * 2
    openai_client.chat.completions.create(
        model=MODEL, messages=HELLO, tools=WEATHER_TOOLS, tool_choice="required", parallel_tool_calls=False
    )
    sent = echo_llm.requests[-1]
    assert (sent["tools"], sent["tool_choice"], sent["parallel_tool_calls"]) == (WEATHER_TOOLS, "required", False)


@pytest.mark.parametrize(
    "options, param, code",
    [
        ({"temperature": 5}, "temperature", "invalid_value"),
        ({"temperature": "hot"}, "temperature", "invalid_type"),
        ({"top_p": 1.5}, "top_p", "invalid_value"),
        ({"presence_penalty": -3}, "presence_penalty", "invalid_value"),
        ({"max_tokens": "many"}, "max_tokens", "invalid_type"),
        ({"max_tokens": 0}, "max_tokens", "invalid_value"),
        ({"max_completion_tokens": True}, "max_completion_tokens", "invalid_type"),
        ({"n": 2}, "n", "invalid_value"),
        ({"n": 0}, "n", "invalid_value"),
        ({"seed": 1.5}, "seed", "invalid_type"),
        ({"stop": 5}, "stop", "invalid_type"),
        ({"logprobs": "yes"}, "logprobs", "invalid_type"),
        ({"top_logprobs": 21}, "top_logprobs", "invalid_value"),
        ({"user": 5}, "user", "invalid_type"),
        ({"stream_options": "yes"}, "stream_options", "invalid_type"),
        ({"tools": {"a": 1}}, "tools", "invalid_type"),
        ({"tools": [{"type": "function"}]}, "tools[0].function", "invalid_type"),
        ({"tools": WEATHER_TOOLS, "tool_choice": "sometimes"}, "tool_choice", "invalid_value"),
        ({"tools": WEATHER_TOOLS, "parallel_tool_calls": "no"}, "parallel_tool_calls", "invalid_type"),
        ({"tool_choice": "required"}, "tool_choice", "invalid_value"),
        ({"response_format": "json"}, "response_format", "invalid_type"),
        ({"response_format": {"type": "xml"}}, "response_format.type", "invalid_value"),
        ({"response_format": {"type": "json_schema"}}, "response_format.json_schema", "invalid_type"),
    ],
)
def test_a_wrong_option_is_400_naming_it_and_stores_nothing(openai_client, chat_model, echo_llm, options, param, code):
    with pytest.raises(openai.BadRequestError) as caught:
        openai_client.chat.completions.create(model=MODEL, messages=HELLO, extra_body=options)
    assert caught.value.status_code == 400
    assert (caught.value.body["param"], caught.value.body["code"]) == (param, code)
    assert caught.value.body["type"] == "invalid_request_error" and caught.value.body["message"]
    assert not Message.objects.exists() and not echo_llm.requests
