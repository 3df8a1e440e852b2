"""The model request is sent while the placing's transaction commits (`views._placed_and_asked`): the answer is
stored, and the response sent, only once the person's turn is committed; a commit that fails leaves nothing."""

import threading
import time

import openai
import pytest
from django.db import DatabaseError, connections

from chatcore.models import Channel, Message, UsageEntry
from compaction.gateway import services as gateway_services
from devtools.loopback_llm import Reply

MODEL = "loopback-chat"
COMMIT_DELAY_SECONDS = 0.5  # the placing's commit held this long: far longer than a request to the loopback model


class PlacingCommit:
    """The placing transaction's commit, slowed (and failed, if `fails`), with when it ended."""

    def __init__(self, *, fails: bool) -> None:
        self.fails = fails
        self.placing = threading.local()
        self.ended_at: float | None = None

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        place, commit = gateway_services._place, type(connections["default"]).commit
        watcher = self

        def placing(**kwargs):
            watcher.placing.on = True
            return place(**kwargs)

        def committing(wrapper) -> None:
            if not getattr(watcher.placing, "on", False):
                return commit(wrapper)
            watcher.placing.on = False
            time.sleep(COMMIT_DELAY_SECONDS)
            try:
                if watcher.fails:
                    raise DatabaseError("could not flush the write-ahead log")
                return commit(wrapper)
            finally:
                watcher.ended_at = time.monotonic()

        monkeypatch.setattr(gateway_services, "_place", placing)
        monkeypatch.setattr(type(connections["default"]), "commit", committing)


@pytest.fixture
def asked_at(llm_server) -> list[float]:
    """When each request reached the model, which answers at once."""
    times: list[float] = []

    def respond(request: dict) -> Reply:
        times.append(time.monotonic())
        return Reply(content="Tuesday suits.")

    llm_server.responder = respond
    return times


@pytest.mark.parametrize("stream", [False, True])
def test_the_model_is_asked_during_the_placing_commit_and_the_answer_stored_after_it(
    openai_client, chat_model, asked_at, monkeypatch, stream
):
    commit = PlacingCommit(fails=False)
    commit.install(monkeypatch)

    messages = [{"role": "user", "content": "Which day for the review?"}]
    if stream:
        pieces = openai_client.chat.completions.create(model=MODEL, messages=messages, stream=True)
        content = "".join(chunk.choices[0].delta.content or "" for chunk in pieces if chunk.choices)
    else:
        content = openai_client.chat.completions.create(model=MODEL, messages=messages).choices[0].message.content

    assert content == "Tuesday suits."
    assert commit.ended_at is not None and len(asked_at) == 1
    assert asked_at[0] < commit.ended_at  # asked while the commit was still under way
    question = Message.objects.get(content="Which day for the review?")
    answer = Message.objects.get(parent=question)
    assert (answer.role, answer.content) == (Message.Role.ASSISTANT, "Tuesday suits.")
    assert answer.created_at > question.created_at
    assert UsageEntry.objects.count() == 1


@pytest.mark.parametrize("stream", [False, True])
def test_a_placing_commit_that_fails_stores_nothing_and_fails_the_call(
    openai_client, chat_model, asked_at, monkeypatch, stream
):
    PlacingCommit(fails=True).install(monkeypatch)

    with pytest.raises(openai.InternalServerError) as raised:
        openai_client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Which day for the review?"}], stream=stream
        )

    assert raised.value.status_code == 500
    assert len(asked_at) == 1  # the model was asked before the commit failed; its answer was dropped
    assert not Message.objects.exists()
    assert not Channel.objects.exists()
    assert not UsageEntry.objects.exists()

    monkeypatch.undo()  # the next call, its commit unhindered, is answered and stored as usual
    reply = openai_client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Which day for the review?"}]
    )
    assert reply.choices[0].message.content == "Tuesday suits."
    assert Message.objects.count() == 2
