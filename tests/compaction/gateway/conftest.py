"""The gateway under test: the production ASGI server (uvicorn, in a thread of the test process, so it
shares the test database) in front of the loopback model server, and a user's API token."""

import threading
import time

import pytest

from chatcore.api_tokens import api_token_create
from devtools.loopback_llm import Reply


class AsgiServer:
    """uvicorn serving project.asgi on an ephemeral port until stopped."""

    def __init__(self) -> None:
        import uvicorn

        # serve.sh's keep-alive (KEEP_ALIVE_SECONDS, 75 s), not uvicorn's 5 s: see docs/deploy.md.
        config = uvicorn.Config(
            "project.asgi:application",
            host="127.0.0.1",
            port=0,
            log_level="warning",
            lifespan="off",
            timeout_keep_alive=75,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="asgi-server", daemon=True)

    def start(self) -> "AsgiServer":
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    @property
    def url(self) -> str:
        host, port = self.server.servers[0].sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def asgi_server(transactional_db):
    server = AsgiServer().start()
    yield server
    server.stop()


@pytest.fixture
def token(user) -> str:
    return api_token_create(user=user, name="gateway tests")[1]


@pytest.fixture
def echo_llm(llm_server):
    """Answers each call with a short sentence naming the last message it was sent."""

    def respond(request: dict) -> Reply:
        last = request["messages"][-1]
        text = last["content"] if isinstance(last["content"], str) else "parts"
        return Reply(content=f"Noted: {text[:40]}")

    llm_server.responder = respond
    return llm_server


@pytest.fixture
def openai_client(asgi_server, token):
    import openai

    return openai.OpenAI(base_url=f"{asgi_server.url}/v1", api_key=token, max_retries=0, timeout=60)


@pytest.fixture
def async_openai_client(asgi_server, token):
    import openai

    return openai.AsyncOpenAI(base_url=f"{asgi_server.url}/v1", api_key=token, max_retries=0, timeout=60)
