"""The gateway's use cases (compaction.gateway.services): a history too long for the model's window is
compacted inline first, and when that cannot be done the protocol's answer says why. The services raise
domain errors and speak no HTTP; the views answer them."""

import ast
import json
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from chatcore.api_tokens import api_token_create
from chatcore.models import Cursor, Message, ModelRole, Summary, UsageEntry
from compaction.leases import lease_acquire
from compaction.scanner import selectors
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, ModelRoleFactory

MODEL = "loopback-chat"
WINDOW = 2_000  # tokens: the answer's reserve is an eighth of it
# Statements of a call that adds one turn to a conversation (the token, the model with the chat role's fallback,
# the placing transaction, the reply's): what the gateway adds to a model call, whatever the history's length.
TURN_STATEMENTS = {"postgresql": 17, "sqlite": 23}


@pytest.fixture(autouse=True)
def _no_retries(settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0


@pytest.fixture
def small_model(chat_model):
    chat_model.context_window = WINDOW
    chat_model.save(update_fields=["context_window"])
    return chat_model


def history(turns: int, words: int = 40) -> list[dict]:
    return [
        {"role": "user" if index % 2 == 0 else "assistant", "content": f"Turn {index}: " + "word " * words}
        for index in range(turns)
    ]


def post(token: str, messages: list[dict], **headers: str):
    body = json.dumps({"model": MODEL, "messages": messages})
    return Client().post(
        "/v1/chat/completions",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        **{f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()},
    )


def server_error(message: str, code: str) -> dict:
    return {"error": {"message": message, "type": "server_error", "param": None, "code": code}}


def test_a_turn_s_statements_do_not_grow_with_the_history(chat_model, echo_llm, token):
    """Each call of a growing conversation reads and writes the same rows, however long its history."""
    messages = [{"role": "system", "content": "Be brief."}]
    counts = []
    for turn in range(12):
        messages.append({"role": "user", "content": f"Turn {turn}: the plan"})
        with CaptureQueriesContext(connection) as captured:
            response = post(token, messages)
        assert response.status_code == 200, response.content
        messages.append({"role": "assistant", "content": response.json()["choices"][0]["message"]["content"]})
        counts.append(len(captured))

    assert Message.objects.count() == len(messages)
    assert len(set(counts[2:])) == 1, counts  # after the call that starts the channel and the one that adds to it
    assert counts[-1] <= TURN_STATEMENTS[connection.vendor], counts


def test_a_turn_s_one_new_message_is_stored_as_the_import_stores_it(chat_model, echo_llm, user, other_user, token):
    """The usual call adds one message, written in one INSERT rather than by the bulk import: its row is the
    one the import writes for the same history (tree fields, author, segment), the channel's activity and the
    cursor follow it."""
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "The venue first."}]
    response = post(token, messages)
    assert response.status_code == 200, response.content
    messages += [
        {"role": "assistant", "content": response.json()["choices"][0]["message"]["content"]},
        {"role": "user", "content": "Then the budget."},
    ]
    response = post(token, messages)
    assert response.status_code == 200, response.content
    appended = Message.objects.get(channel__owner=user, content="Then the budget.")
    whole = post(api_token_create(user=other_user, name="whole")[1], messages)  # one import of the four
    assert whole.status_code == 200, whole.content
    imported = Message.objects.get(channel__owner=other_user, content="Then the budget.")

    fields = ("role", "metadata", "depth", "tokens", "chars", "path_tokens", "path_chars")
    assert [getattr(appended, name) for name in fields] == [getattr(imported, name) for name in fields]
    assert (appended.author, imported.author) == (user, other_user)
    assert appended.root_id == appended.segment == Message.objects.get(channel__owner=user, depth=0).pk
    assert imported.root_id == imported.segment
    channel = appended.channel
    assert Cursor.objects.get(channel=channel, user=user).leaf.parent_id == appended.pk  # the answer's
    assert channel.last_activity_at >= appended.created_at


def test_a_long_history_is_compacted_and_answered(small_model, llm_server, token):
    llm_server.script(Reply(content="Answered."))
    response = post(token, history(61))
    assert response.status_code == 200, response.content
    assert response.json()["choices"][0]["message"]["content"] == "Answered."
    summary = Summary.objects.get()
    assert (summary.trigger, response["X-Compaction-Summary-Id"]) == ("gateway", str(summary.pk))
    assert int(response["X-Context-Tokens"]) <= WINDOW
    steps = [entry.split(";dur=")[0] for entry in response["Server-Timing"].split(", ")]
    assert steps == ["parse", "place", "fit", "prepare_cpu", "prepare", "upstream", "store", "total", "cpu"]


def test_a_streamed_answer_s_timing_header_has_the_steps_before_it(chat_model, llm_server, token):
    llm_server.script(Reply(content="Streamed."))
    body = json.dumps({"model": MODEL, "messages": history(1), "stream": True})
    response = Client().post(
        "/v1/chat/completions", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200
    steps = [entry.split(";dur=")[0] for entry in response["Server-Timing"].split(", ")]
    assert steps == ["parse", "place", "fit", "prepare_cpu", "prepare"]
    assert b"Streamed." in b"".join(response.streaming_content)


def test_a_compaction_held_elsewhere_is_503_with_a_retry_hint(small_model, llm_server, token, user, settings):
    settings.COMPACTION_GATEWAY_LEASE_WAIT_SECONDS = 0
    channel = ChannelFactory(owner=user, model=small_model)
    assert lease_acquire(channel_id=channel.pk, holder="another process", seconds=60)
    response = post(token, history(61), **{"X-Channel-Id": str(channel.pk)})
    assert (response.status_code, response["Retry-After"]) == (503, "5")
    message = "A compaction of this conversation is running; try again in a moment."
    assert response.json() == server_error(message, "compaction_in_progress")
    assert llm_server.requests == [] and not Summary.objects.exists()


def test_a_failing_summarizer_is_502_saying_the_compaction_failed(small_model, llm_server, token):
    utility = LLMModelFactory(name="loopback-utility", base_url=llm_server.url, context_window=8_000)
    ModelRoleFactory(role=ModelRole.Role.UTILITY, primary=utility)
    llm_server.script(Reply(status=500))
    response = post(token, history(61))
    assert response.status_code == 502
    cause = UsageEntry.objects.get(model="loopback-utility").error
    message = (
        "The conversation had to be compacted to fit the model's window, and that failed: "
        f"The model call failed: loopback-utility: {cause}"
    )
    assert response.json() == server_error(message, "compaction_failed")
    assert "Retry-After" not in response
    assert [request["model"] for request in llm_server.requests] == ["loopback-utility"]
    assert not Summary.objects.exists() and Message.objects.count() == 61


def test_newest_turns_too_long_alone_are_400_naming_the_messages(small_model, llm_server, token):
    response = post(token, [{"role": "user", "content": "word " * 3_000}])
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["type"], error["param"], error["code"]) == (
        "invalid_request_error",
        "messages",
        "context_length_exceeded",
    )
    assert error["message"].startswith("This conversation's context needs ")
    assert error["message"].endswith(
        "(its window minus the answer's reserve and the tools); the newest turns alone are too long."
    )
    assert llm_server.requests == []


# What belongs to the HTTP side: Django's request and response layer, DRF, and the gateway's own protocol
# modules (the error objects, the body parser, the views and the event stream).
HTTP_MODULES = (
    "django.http",
    "django.views",
    "django.core.handlers",
    "rest_framework",
    "compaction.gateway.errors",
    "compaction.gateway.protocol",
    "compaction.gateway.views",
    "compaction.gateway.streaming",
    "compaction.gateway.auth",
)


def imported(path: Path) -> set[str]:
    """Every module the file imports, anywhere in it, and each name it takes from one."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def test_the_service_module_imports_nothing_from_http():
    import compaction.gateway.services

    path = Path(compaction.gateway.services.__file__)
    wrong = sorted(
        name for name in imported(path) if any(name == http or name.startswith(http + ".") for http in HTTP_MODULES)
    )
    assert wrong == []
    assert "compaction.gateway.incoming.CompletionRequest" in imported(path)  # the check reads this module


@pytest.mark.django_db(transaction=True)  # the trigger runs as the answer's store commits
def test_a_call_in_a_compacted_channel_reads_the_compaction_settings_once(small_model, llm_server, token):
    """The tools offered (recall_history, with a summary in force) and the trigger after the answer's store
    both look at the compaction settings: one read serves the call."""
    llm_server.script(Reply(content="Answered."), Reply(content="Again."))
    messages = history(61)
    response = post(token, messages)
    assert response.status_code == 200, response.content
    messages += [{"role": "assistant", "content": "Answered."}, {"role": "user", "content": "And the venue?"}]
    with CaptureQueriesContext(connection) as captured:
        response = post(token, messages)
    assert response.status_code == 200, response.content
    assert "recall_history" in str(llm_server.requests[-1].get("tools"))  # the settings were looked at
    # Read on its own once; the answer's write reads the row along too (chatcore.signals.ReadAlong), a statement
    # the call sends anyway, but the trigger takes the row the call holds.
    reads = [
        query["sql"]
        for query in captured
        if "compaction_compactionsettings" in query["sql"] and query["sql"].lstrip().upper().startswith("SELECT")
    ]
    assert len(reads) == 1, reads


def test_a_streamed_call_in_a_compacted_channel_reads_the_compaction_settings_once(
    small_model, llm_server, openai_client, monkeypatch
):
    """A streamed answer is stored after the view has returned (through the ASGI server, as the stream is sent):
    the trigger after its store still takes the row the call read while it prepared."""
    llm_server.script(Reply(content="Answered."), Reply(content="Again."))
    messages = history(61)
    first = openai_client.chat.completions.create(model=MODEL, messages=messages)
    assert first.choices[0].message.content == "Answered."
    reads: list[bool] = []
    read = selectors._settings_read

    def counted(*, lock: bool):
        reads.append(lock)
        return read(lock=lock)

    monkeypatch.setattr(selectors, "_settings_read", counted)
    messages += [{"role": "assistant", "content": "Answered."}, {"role": "user", "content": "And the venue?"}]
    stream = openai_client.chat.completions.create(model=MODEL, messages=messages, stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices) == "Again."
    assert "recall_history" in str(llm_server.requests[-1].get("tools"))  # the settings were looked at
    assert Message.objects.filter(content="Again.").count() == 1  # stored, so the trigger has run
    assert reads == [False]


@pytest.mark.parametrize("fallback_is_the_model", [False, True])
def test_a_failed_call_falls_back_to_the_chat_role_s_fallback(chat_model, llm_server, token, fallback_is_the_model):
    """The models a call tries, read with the requested model: it, then the site's chat fallback unless that
    is the same model (`role_models`)."""
    fallback = (
        chat_model if fallback_is_the_model else LLMModelFactory(name="loopback-fallback", base_url=llm_server.url)
    )
    ModelRole.objects.filter(role=ModelRole.Role.CHAT).update(fallback=fallback)
    llm_server.script(Reply(status=500), Reply(content="From the fallback."))
    response = post(token, history(1))
    if fallback_is_the_model:
        assert response.status_code == 502, response.content
        assert [request["model"] for request in llm_server.requests] == [MODEL]
    else:
        assert response.status_code == 200, response.content
        assert response.json()["choices"][0]["message"]["content"] == "From the fallback."
        assert [request["model"] for request in llm_server.requests] == [MODEL, "loopback-fallback"]
