"""One attempt mechanism for the sync, awaited and streamed model calls (chatcore.llm_attempt): a
change of its policy reaches all three, against real HTTP on loopback."""

import pytest
from asgiref.sync import async_to_sync

from chatcore import llm_attempt
from chatcore.errors import ModelCallFailed
from chatcore.llm import llm_complete
from chatcore.llm_attempt import CAUSE_MAX_CHARS, AttemptPolicy
from chatcore.llm_chat import allm_chat
from chatcore.llm_stream import ChatStream
from chatcore.models import ModelRole, UsageEntry
from devtools.loopback_llm import LoopbackLLM, Reply
from tests.chatcore.factories import LLMModelFactory

MESSAGES = [{"role": "user", "content": "Hello?"}]


def sync_call(user) -> tuple[str, str]:
    answer = llm_complete(role="chat", messages=MESSAGES, user=user, channel=None)
    return answer.content, answer.model


def awaited_call(user) -> tuple[str, str]:
    turn = async_to_sync(allm_chat)(messages=MESSAGES, user=user, channel=None)
    return turn.content, turn.model


def streamed_call(user) -> tuple[str, str]:
    async def read() -> tuple[str, str]:
        stream = ChatStream(messages=MESSAGES, user=user, channel=None)
        await stream.start()
        async for _ in stream.deltas():
            pass
        assert stream.turn is not None
        return stream.turn.content, stream.turn.model

    return async_to_sync(read)()


CALLS = {"sync": sync_call, "awaited": awaited_call, "streamed": streamed_call}


class NoFallback(AttemptPolicy):
    def falls_back(self, error: BaseException) -> bool:
        return False


class OneRetry(AttemptPolicy):
    def max_retries(self) -> int:
        return 1


@pytest.fixture(autouse=True)
def _no_retries(settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    settings.CHATCORE_LLM_TIMEOUT_SECONDS = 5


@pytest.fixture
def fallback_server():
    with LoopbackLLM() as server:
        yield server


@pytest.fixture
def with_fallback(chat_model, fallback_server):
    model = LLMModelFactory(name="loopback-fallback", base_url=fallback_server.url)
    ModelRole.objects.filter(role="chat").update(fallback=model)


def rows() -> list[tuple[str, bool]]:
    return list(UsageEntry.objects.order_by("id").values_list("model", "success"))


@pytest.mark.parametrize("path", CALLS)
def test_every_path_falls_back_by_the_policy(path, with_fallback, llm_server, fallback_server, user):
    llm_server.script(Reply(status=503))
    fallback_server.script(Reply(content="From the fallback."))
    assert CALLS[path](user) == ("From the fallback.", "loopback-fallback")
    assert rows() == [("loopback-chat", False), ("loopback-fallback", True)]


@pytest.mark.parametrize("path", CALLS)
def test_a_policy_without_fallback_is_followed_by_every_path(
    path, with_fallback, llm_server, fallback_server, user, monkeypatch
):
    monkeypatch.setattr(llm_attempt, "policy", NoFallback())
    llm_server.script(Reply(status=503))
    fallback_server.script(Reply(content="never asked"))
    with pytest.raises(ModelCallFailed) as failed:
        CALLS[path](user)
    assert failed.value.extra == {"errors": ["loopback-chat: HTTP 503: Error code: 503 - injected error 503"]}
    assert failed.value.upstream_status == 503
    assert fallback_server.requests == []
    assert rows() == [("loopback-chat", False)]


@pytest.mark.parametrize("path", CALLS)
def test_a_policy_with_a_retry_is_followed_by_every_path(path, chat_model, llm_server, user, monkeypatch):
    llm_server.script(Reply(status=500))
    with pytest.raises(ModelCallFailed):
        CALLS[path](user)
    monkeypatch.setattr(llm_attempt, "policy", OneRetry())
    llm_server.script(Reply(status=500), Reply(content="Second time lucky."))
    assert CALLS[path](user) == ("Second time lucky.", "loopback-chat")
    assert len(llm_server.requests) == 3  # one refused without the retry, then two with it
    assert rows() == [("loopback-chat", False), ("loopback-chat", True)]


@pytest.mark.parametrize("path", CALLS)
def test_every_path_records_a_long_cause_cut_and_raises_it_whole(path, chat_model, llm_server, user):
    message = "x" * (CAUSE_MAX_CHARS * 2)
    llm_server.script(Reply(status=500, body={"error": {"message": message}}))
    with pytest.raises(ModelCallFailed) as failed:
        CALLS[path](user)
    (cause,) = failed.value.extra["errors"]
    assert cause == f"loopback-chat: HTTP 500: Error code: 500 - {message}"
    (entry,) = UsageEntry.objects.all()
    assert entry.error == cause.removeprefix("loopback-chat: ")[:CAUSE_MAX_CHARS]
    assert len(entry.error) == CAUSE_MAX_CHARS
