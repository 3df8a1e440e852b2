"""An OpenAI-compatible chat completions server on loopback.

Used by the tests, the benchmarks and the soak command to stand in for a
real provider over real HTTP: it answers `POST /v1/chat/completions` (and
`GET /v1/models`) with scripted replies, records every request, and can
inject the faults providers show in practice (error statuses with
Retry-After, delays, reset connections, truncated or malformed JSON, empty
content, slow streams).

    with LoopbackLLM() as server:
        server.script(Reply(content="hello"), Reply(status=500))
        ...  # point an LLMModel's base_url at server.url
"""

import dataclasses
import json
import random
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from chatcore.conf import MODEL_KEY_VARIABLES

LOOPBACK_HOST = "127.0.0.1"
# The key variable the test suite's loopback models name (the server takes any key, or none).
LOOPBACK_KEY_VARIABLE = "LOOPBACK_TEST_API_KEY"


def _listed(environ: dict[str, str], name: str, default: list[str], item: str) -> str:
    listed = [value.strip() for value in environ.get(name, "").split(",") if value.strip()] or default
    return ",".join(listed if item in listed else [*listed, item])


def loopback_env(environ: dict[str, str]) -> dict[str, str]:
    """The variables a child process needs to call a loopback model with DEBUG off: this host
    added to the hosts a model may reach over plain http (chatcore.endpoints), and the test models'
    key variable to the variables a model may name, beside any the environment lists already."""
    return {
        "LLM_HTTP_HOSTS": _listed(environ, "LLM_HTTP_HOSTS", [], LOOPBACK_HOST),
        "LLM_KEY_VARIABLES": _listed(environ, "LLM_KEY_VARIABLES", MODEL_KEY_VARIABLES, LOOPBACK_KEY_VARIABLE),
    }


@dataclasses.dataclass
class Reply:
    content: str | None = "ok"
    status: int = 200
    delay: float = 0.0
    headers: dict = dataclasses.field(default_factory=dict)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    fault: str = ""  # "reset", "truncated", "malformed", "no_choices", "slow_body", "hang"
    body: dict | None = None  # an exact JSON body for error statuses
    finish_reason: str = "stop"
    chunk_delay: float = 0.05  # pause between 16-byte chunks of a "slow_body"
    tool_calls: list[dict] | None = None  # [{"id", "type", "function": {"name", "arguments"}}]
    # Streamed answers (requests with "stream": true): wait before the first chunk, then between pieces.
    # Faults for streams: "stream_cut" (the connection drops after two pieces), "stream_error" (an error
    # event after two pieces).
    first_token_delay: float = 0.0
    token_delay: float = 0.0


def _words(text: str) -> int:
    return max(1, len(text) // 4)


LISTEN_BACKLOG = 512


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: with Nagle's algorithm on, the body waits for the
    # client's delayed ACK of the headers (40 ms on Linux) on every kept-alive request.
    disable_nagle_algorithm = True

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _send_json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "loopback", "object": "model"}]})
        else:
            self._send_json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "invalid JSON"}})
            return
        owner = self.server.owner
        reply = owner._next(request)
        with owner._lock:
            owner.requests.append(request)
            owner.request_ids.append(self.headers.get("X-Request-ID", ""))
        if reply.delay:
            time.sleep(reply.delay)
        if reply.fault == "hang":
            time.sleep(3600)
        if reply.fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.connection.close()
            self.close_connection = True
            return
        if reply.status != 200:
            payload = reply.body or {"error": {"message": f"injected error {reply.status}", "type": "server_error"}}
            self._send_json(reply.status, payload, reply.headers)
            return
        if request.get("stream"):
            self._stream(request, reply)
            return
        content = reply.content
        prompt_text = json.dumps(request.get("messages", []))
        message: dict = {"role": "assistant", "content": content}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        payload = {
            "id": f"chatcmpl-{random.randrange(10**9)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "loopback"),
            "choices": [{"index": 0, "finish_reason": reply.finish_reason, "message": message}],
            "usage": {
                "prompt_tokens": reply.prompt_tokens if reply.prompt_tokens is not None else _words(prompt_text),
                "completion_tokens": (
                    reply.completion_tokens if reply.completion_tokens is not None else _words(content or "")
                ),
            },
        }
        payload["usage"]["total_tokens"] = payload["usage"]["prompt_tokens"] + payload["usage"]["completion_tokens"]
        if reply.fault == "no_choices":
            payload["choices"] = []
        body = json.dumps(payload).encode()
        if reply.fault == "malformed":
            body = b"{this is not json"
        if reply.fault == "truncated":
            body = body[: len(body) // 2]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        # A truncated body still announces the full length, as a dropped connection does.
        announced = len(json.dumps(payload).encode()) if reply.fault == "truncated" else len(body)
        self.send_header("Content-Length", str(announced))
        self.end_headers()
        if reply.fault == "slow_body":
            for index in range(0, len(body), 16):
                self.wfile.write(body[index : index + 16])
                self.wfile.flush()
                time.sleep(reply.chunk_delay)
            return
        self.wfile.write(body)
        if reply.fault == "truncated":
            self.close_connection = True

    def _stream(self, request: dict, reply: Reply) -> None:
        """Server-sent events as OpenAI streams them: role, text pieces, tool-call fragments, finish, usage."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        base = {"id": f"chatcmpl-{random.randrange(10**9)}", "object": "chat.completion.chunk"}
        base |= {"created": int(time.time()), "model": request.get("model", "loopback")}

        def send(delta: dict | None, finish: str | None = None, **extra) -> None:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
            self.wfile.write(f"data: {json.dumps({**base, 'choices': choices, **extra})}\n\n".encode())
            self.wfile.flush()

        time.sleep(reply.first_token_delay)
        send({"role": "assistant", "content": ""})
        pieces = [piece for piece in re.split(r"(?<=\s)(?=\S)", reply.content or "") if piece]
        for index, piece in enumerate(pieces):
            if index == 2 and reply.fault in ("stream_cut", "stream_error"):
                if reply.fault == "stream_error":
                    self.wfile.write(
                        b'data: {"error": {"message": "injected mid-stream error", "type": "server_error"}}\n\n'
                    )
                return
            send({"content": piece})
            time.sleep(reply.token_delay)
        for index, call in enumerate(reply.tool_calls or []):
            function = call.get("function") or {}
            arguments = function.get("arguments") or ""
            head = {"index": index, "id": call.get("id"), "type": "function"}
            send({"tool_calls": [{**head, "function": {"name": function.get("name"), "arguments": ""}}]})
            for part in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                send({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
        send({}, reply.finish_reason)
        if (request.get("stream_options") or {}).get("include_usage"):
            prompt = reply.prompt_tokens if reply.prompt_tokens is not None else _words(json.dumps(request["messages"]))
            completion = reply.completion_tokens if reply.completion_tokens is not None else _words(reply.content or "")
            usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
            send(None, usage=usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's default backlog is 5: dozens of clients connecting at once while the accepting
    # thread waits for the GIL overflow it, and the kernel then resets or drops their connections.
    request_queue_size = LISTEN_BACKLOG
    owner: "LoopbackLLM"

    def handle_error(self, request, client_address) -> None:
        """A client that gave up (timeout, reset) is part of the game, not news."""
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError, TimeoutError)):
            super().handle_error(request, client_address)


class LoopbackLLM:
    """Scripted replies are used in order; then `responder` (if set); then `default`."""

    def __init__(
        self,
        *,
        host: str = LOOPBACK_HOST,
        port: int = 0,
        default: Reply | None = None,
        responder: Callable[[dict], Reply] | None = None,
    ):
        self.default = default or Reply()
        self.responder = responder
        self.requests: list[dict] = []
        self.request_ids: list[str] = []  # each request's X-Request-ID header ("" when none), in order
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = _Server((host, port), _Handler)
        self._server.owner = self
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def _next(self, request: dict) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(request)
        return self.default

    def start(self) -> "LoopbackLLM":
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="loopback-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "LoopbackLLM":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
