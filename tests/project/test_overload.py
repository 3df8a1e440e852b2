"""A full web process refuses at once with 503 and Retry-After (chatcore.overload, project/asgi.py), through
the production server: one uvicorn worker whose limit is a few requests in flight, held by streamed replies."""

import http.client
import json
import threading
import time

import pytest

from chatcore.api_tokens import api_token_create
from chatcore.models import Message
from chatcore.overload import OVERLOADED_DETAIL
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, UserFactory
from tests.servers import Served

pytestmark = [pytest.mark.slow]

LIMIT = 3
REFUSED = 4
ANSWER = " ".join(f"word{index}" for index in range(30))
PROXY = {"X-Forwarded-Proto": "https"}


@pytest.fixture
def served(transactional_db, tmp_path):
    env = {"WEB_CONCURRENCY": "1", "QCLUSTER": "false", "MAX_REQUESTS_IN_FLIGHT": str(LIMIT)}
    with Served(tmp_path=tmp_path, THROTTLE_EXPENSIVE_RATE="", **env) as server:
        yield server


def _client() -> tuple:
    user = UserFactory()
    return ChannelFactory(owner=user), api_token_create(user=user, name="test")[1]


def _post(served, path: str, body: dict, authorization: str) -> tuple[http.client.HTTPConnection, object]:
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    headers = {**PROXY, "Authorization": authorization, "Content-Type": "application/json"}
    connection.request("POST", path, body=json.dumps(body), headers=headers)
    return connection, connection.getresponse()


def _reply(served, channel, token):
    return _post(served, f"/api/channels/{channel.pk}/reply/", {"content": "Tell me", "stream": True}, f"Token {token}")


def test_past_its_limit_a_worker_answers_503_and_every_accepted_reply_is_stored_once(served, chat_model, llm_server):
    llm_server.default = Reply(content=ANSWER, token_delay=0.1)  # each stream holds its place for 3 s
    accepted = [_client() for _ in range(LIMIT)]
    streams = [_reply(served, channel, token) for channel, token in accepted]
    for _connection, response in streams:
        assert response.status == 200
        assert response.readline().startswith(b"event: delta")  # streaming: in flight

    refused = [_client() for _ in range(REFUSED)]
    for channel, token in refused:
        connection, response = _reply(served, channel, token)
        assert response.status == 503 and response.headers["Retry-After"] == "1"
        assert response.headers["Content-Type"] == "application/json"
        # Closed: the next try opens a new connection, which a less busy worker may take.
        assert response.headers["Connection"] == "close"
        assert json.loads(response.read()) == {"detail": OVERLOADED_DETAIL, "code": "overloaded"}
        connection.close()
    # Full, it still says it is alive and lets its metrics be read; it is not ready for more.
    for path, status in (("/healthz", 200), ("/metrics", 200), ("/readyz", 503)):
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
        connection.request("GET", path)
        assert connection.getresponse().status == status, path
        connection.close()
    channel, token = refused[0]
    request = {"model": chat_model.name, "messages": [{"role": "user", "content": "Hi"}], "stream": True}
    connection, response = _post(served, "/v1/chat/completions", request, f"Bearer {token}")
    assert response.status == 503 and response.headers["Retry-After"] == "1"
    assert json.loads(response.read()) == {
        "error": {"message": OVERLOADED_DETAIL, "type": "server_error", "param": None, "code": "overloaded"}
    }
    connection.close()

    def finish(connection, response):
        response.read()
        connection.close()

    readers = [threading.Thread(target=finish, args=stream) for stream in streams]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(timeout=30)
    for channel, _token in accepted:
        stored = list(Message.objects.filter(channel=channel).order_by("id").values_list("role", "content"))
        assert stored == [("user", "Tell me"), ("assistant", ANSWER)]
    for channel, _token in refused:
        assert not Message.objects.filter(channel=channel).exists()

    # The places are free again once the streams ended.
    deadline = time.monotonic() + 10
    channel, token = refused[1]
    connection, response = _reply(served, channel, token)
    while response.status == 503 and time.monotonic() < deadline:
        connection.close()
        time.sleep(0.2)
        connection, response = _reply(served, channel, token)
    assert response.status == 200
    response.read()
    connection.close()
    assert Message.objects.filter(channel=channel, role="assistant").count() == 1
