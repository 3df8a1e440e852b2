"""The model gateway against a real OpenAI-compatible HTTP server on loopback."""

from decimal import Decimal

import pytest

from chatcore.errors import ModelCallFailed
from chatcore.llm import OFFLINE_REPLY, Completion, OfflineModel, llm_complete
from chatcore.models import LLMModel, ModelRole, UsageEntry
from devtools.loopback_llm import LoopbackLLM, Reply
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, ModelRoleFactory

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello?"}]


def chat_call_error(user, model: LLMModel | None = None, messages: list[dict] = MESSAGES, **options) -> ModelCallFailed:
    """One chat call that must fail (with `model` made the chat role first, when given): its error."""
    if model is not None:
        ModelRoleFactory(role=ModelRole.Role.CHAT, primary=model)
    with pytest.raises(ModelCallFailed) as error:
        llm_complete(role="chat", messages=messages, user=user, channel=None, **options)
    return error.value


@pytest.fixture(autouse=True)
def _no_retries(settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    settings.CHATCORE_LLM_TIMEOUT_SECONDS = 5


@pytest.fixture
def fallback_server():
    with LoopbackLLM() as server:
        yield server


@pytest.fixture
def fallback_model(db, chat_model, fallback_server):
    model = LLMModelFactory(name="loopback-fallback", base_url=fallback_server.url)
    ModelRole.objects.filter(role="chat").update(fallback=model)
    return model


def usage_rows():
    return list(
        UsageEntry.objects.order_by("id").values(
            "model", "role", "success", "error", "input_tokens", "output_tokens", "trigger", "user", "channel"
        )
    )


def test_scripted_reply_with_usage_and_cost(chat_model, llm_server, user):
    LLMModel.objects.filter(pk=chat_model.pk).update(
        price_in_per_million=Decimal("2.5"), price_out_per_million=Decimal("10"), max_output_tokens=50
    )
    channel = ChannelFactory(owner=user)
    llm_server.script(Reply(content="  Hi there.  ", prompt_tokens=1200, completion_tokens=30))
    result = llm_complete(
        role="chat", messages=MESSAGES, user=user, channel=channel, trigger="manual", max_tokens=500, temperature=0.3
    )
    assert result == Completion("Hi there.", "loopback-chat", False, 1200, 30)
    (request,) = llm_server.requests
    assert request == {"model": "loopback-chat", "messages": MESSAGES, "max_tokens": 50, "temperature": 0.3}
    (entry,) = UsageEntry.objects.all()
    assert (entry.user, entry.channel, entry.role, entry.model, entry.trigger, entry.success, entry.error) == (
        user,
        channel,
        "chat",
        "loopback-chat",
        "manual",
        True,
        "",
    )
    assert (entry.input_tokens, entry.output_tokens) == (1200, 30)
    assert entry.cost == Decimal("0.003300")  # 1200 × 2.5 / 1e6 + 30 × 10 / 1e6


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (Reply(status=500), "HTTP 500: Error code: 500 - injected error 500"),
        (
            Reply(status=429, headers={"Retry-After": "0"}, body={"error": {"message": "slow down"}}),
            "rate limited (429): Error code: 429 - slow down",
        ),
        (Reply(status=401, body={"error": {"message": "bad key"}}), "HTTP 401: Error code: 401 - bad key"),
        (Reply(content=""), "ValueError: the model returned empty content"),
        (Reply(fault="no_choices"), "ValueError: the response had no choices"),
        (Reply(fault="reset"), "connection: "),
        (Reply(fault="malformed"), "invalid response: the body is not JSON (Expecting property name"),
        (Reply(fault="truncated"), "connection: peer closed connection without sending complete message body"),
    ],
    ids=["500", "429", "401", "empty", "no-choices", "reset", "malformed", "truncated"],
)
def test_failures_are_recorded_with_their_cause(chat_model, llm_server, user, reply, cause):
    llm_server.script(reply)
    error = chat_call_error(user, trigger="auto")
    (entry,) = UsageEntry.objects.all()
    assert (entry.success, entry.model, entry.trigger, entry.input_tokens) == (False, "loopback-chat", "auto", 0)
    assert entry.error.startswith(cause)
    assert error.status_code == 502 and error.code == "model_failed"
    assert error.extra == {"errors": [f"loopback-chat: {entry.error}"]}
    assert error.message == f"The model call failed: loopback-chat: {entry.error}"


def test_timeout_is_a_clear_failure(chat_model, llm_server, user, settings):
    settings.CHATCORE_LLM_TIMEOUT_SECONDS = 0.3
    llm_server.script(Reply(content="too late", delay=1.5))
    error = chat_call_error(user)
    assert error.extra == {"errors": ["loopback-chat: timeout: the model did not answer in time"]}
    (entry,) = UsageEntry.objects.all()
    assert (entry.success, entry.error) == (False, "timeout: the model did not answer in time")
    assert 250 <= entry.duration_ms < 1500


def test_fallback_model_answers_when_the_primary_fails(fallback_model, llm_server, fallback_server, user):
    llm_server.script(Reply(status=503))
    fallback_server.script(Reply(content="From the fallback.", prompt_tokens=10, completion_tokens=4))
    result = llm_complete(role="chat", messages=MESSAGES, user=user, channel=None)
    assert result == Completion("From the fallback.", "loopback-fallback", True, 10, 4)
    assert fallback_server.requests[0]["model"] == "loopback-fallback"
    rows = usage_rows()
    assert [(r["model"], r["success"]) for r in rows] == [("loopback-chat", False), ("loopback-fallback", True)]
    assert rows[0]["error"].startswith("HTTP 503")


def test_both_failing_raises_with_both_causes(fallback_model, llm_server, fallback_server, user, settings):
    settings.CHATCORE_LLM_TIMEOUT_SECONDS = 0.3
    llm_server.script(Reply(status=500))
    fallback_server.script(Reply(delay=1.0))
    error = chat_call_error(user)
    errors = [f"{r['model']}: {r['error']}" for r in usage_rows()]
    assert errors[1] == "loopback-fallback: timeout: the model did not answer in time"
    assert error.extra == {"errors": errors}
    assert [r["success"] for r in usage_rows()] == [False, False]


def test_bounded_retries_recover_from_a_transient_error(chat_model, llm_server, user, settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 1
    llm_server.script(Reply(status=500), Reply(content="Second time lucky."))
    assert llm_complete(role="chat", messages=MESSAGES, user=user, channel=None).content == "Second time lucky."
    assert len(llm_server.requests) == 2
    assert [r["success"] for r in usage_rows()] == [True]


def test_retries_are_bounded(chat_model, llm_server, user, settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 1
    llm_server.script(Reply(status=500), Reply(status=500), Reply(content="never reached"))
    with pytest.raises(ModelCallFailed):
        llm_complete(role="chat", messages=MESSAGES, user=user, channel=None)
    assert len(llm_server.requests) == 2


def test_channel_model_overrides_the_role_and_keeps_the_roles_fallback(fallback_model, llm_server, user):
    special = LLMModelFactory(name="special", base_url=llm_server.url)
    llm_server.script(Reply(content="special answer"))
    result = llm_complete(role="chat", messages=MESSAGES, user=user, channel=None, override=special)
    assert (result.model, result.used_fallback) == ("special", False)
    assert llm_server.requests[0]["model"] == "special"


def test_offline_provider_answers_chat_plainly(db, user):
    result = llm_complete(role="chat", messages=MESSAGES, user=user, channel=None)
    assert result == Completion(OFFLINE_REPLY, "offline", False, 0, 0, offline=True)
    assert "No language model is configured" in OFFLINE_REPLY and "OPENAI_API_KEY" in OFFLINE_REPLY
    assert [(r["model"], r["success"]) for r in usage_rows()] == [("offline", True)]


def test_offline_provider_in_the_catalogue_is_used_for_chat(db, user):
    offline = LLMModelFactory(name="offline-catalogue", provider=LLMModel.Provider.OFFLINE)
    ModelRoleFactory(role=ModelRole.Role.CHAT, primary=offline)
    assert llm_complete(role="chat", messages=MESSAGES, user=user, channel=None).offline


def test_offline_utility_role_tells_the_caller(db, user):
    with pytest.raises(OfflineModel):
        llm_complete(role="utility", messages=MESSAGES, user=user, channel=None)
    with pytest.raises(OfflineModel):
        llm_complete(role="chat", messages=MESSAGES, user=user, channel=None, allow_offline=False)
    assert not UsageEntry.objects.exists()


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", ""])
def test_missing_key_for_openai_itself_is_named_before_any_call(db, user, settings, monkeypatch, variable):
    """No base URL anywhere means OpenAI's API: an unset key variable is the error, not a DNS failure."""
    settings.CHATCORE_OPENAI_BASE_URL = ""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = LLMModelFactory(name="gpt-x", base_url="", api_key_env=variable)
    error = chat_call_error(user, model)
    cause = (
        "OPENAI_API_KEY is not set (model gpt-x calls OpenAI's API, which needs a key: set OPENAI_API_KEY, "
        "or give the model a base URL)"
    )
    assert error.message == f"The model call failed: gpt-x: {cause}"
    assert list(UsageEntry.objects.values_list("success", "error")) == [(False, cause)]


def test_refused_key_names_the_unset_variable(chat_model, llm_server, user, monkeypatch):
    monkeypatch.delenv("LOOPBACK_TEST_API_KEY", raising=False)
    llm_server.script(Reply(status=401, body={"error": {"message": "bad key"}}))
    error = chat_call_error(user)
    assert error.message.endswith("HTTP 401: Error code: 401 - bad key (LOOPBACK_TEST_API_KEY is not set)")
