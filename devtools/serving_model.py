"""A streaming OpenAI-compatible model for load tests, in a process of its own.

    python -m devtools.serving_model [--first-token 0.2] [--tokens 41] [--rate 50]

Every `POST …/chat/completions` is answered on a fixed timeline measured from
the moment its request arrived: the first token after `--first-token`
seconds, then `--rate` tokens per second, `--tokens` in all (defaults: first
after 200 ms, then 40 more at 50/s: the last at 1.0 s), then the usage chunk
and `[DONE]`. A request without `"stream": true` gets the whole answer as
JSON at the same final time. Written on asyncio with pre-built chunks so
that hundreds of concurrent streams cost it little CPU (the threaded
`devtools.loopback_llm` is for tests and faults, not load). It prints
`listening on PORT` when ready and runs until killed.
"""

import argparse
import asyncio
import json
import sys

STREAM_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
CHUNK_ID = {"id": "chatcmpl-serving", "object": "chat.completion.chunk", "created": 0, "model": "serving"}


def _event(payload: dict) -> bytes:
    data = b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


def _chunks(tokens: int) -> tuple[bytes, bytes, bytes]:
    first = _event({**CHUNK_ID, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "word "}}]})
    token = _event({**CHUNK_ID, "choices": [{"index": 0, "delta": {"content": "word "}, "finish_reason": None}]})
    usage = {"prompt_tokens": 100, "completion_tokens": tokens, "total_tokens": 100 + tokens}
    end = (
        _event({**CHUNK_ID, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        + _event({**CHUNK_ID, "choices": [], "usage": usage})
        + b"%x\r\n%s\r\n" % (len(b"data: [DONE]\n\n"), b"data: [DONE]\n\n")
        + b"0\r\n\r\n"
    )
    return first, token, end


class Model:
    def __init__(self, *, first_token: float, tokens: int, rate: float):
        self.first_token, self.tokens, self.interval = first_token, tokens, 1.0 / rate
        self.first, self.token, self.end = _chunks(tokens)
        content = "word " * tokens
        usage = {"prompt_tokens": 100, "completion_tokens": tokens, "total_tokens": 100 + tokens}
        message = {"role": "assistant", "content": content}
        whole = {**CHUNK_ID, "object": "chat.completion", "usage": usage}
        whole["choices"] = [{"index": 0, "message": message, "finish_reason": "stop"}]
        body = json.dumps(whole).encode()
        self.json_answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
            len(body),
            body,
        )

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                arrived = loop.time()
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = await reader.readexactly(length) if length else b""
                streamed = b'"stream":true' in body.replace(b" ", b"")
                if not streamed:
                    finish = arrived + self.first_token + (self.tokens - 1) * self.interval
                    await asyncio.sleep(max(0.0, finish - loop.time()))
                    writer.write(self.json_answer)
                    continue
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                )
                await asyncio.sleep(max(0.0, arrived + self.first_token - loop.time()))
                writer.write(self.first)
                for index in range(1, self.tokens):
                    await asyncio.sleep(max(0.0, arrived + self.first_token + index * self.interval - loop.time()))
                    writer.write(self.token)
                writer.write(self.end)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()


async def serve(port: int, model: Model) -> None:
    server = await asyncio.start_server(model.handle, "127.0.0.1", port, backlog=4096)
    print(f"listening on {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--first-token", type=float, default=0.2)
    parser.add_argument("--tokens", type=int, default=41)
    parser.add_argument("--rate", type=float, default=50.0)
    options = parser.parse_args(argv)
    model = Model(first_token=options.first_token, tokens=options.tokens, rate=options.rate)
    try:
        import uvloop

        uvloop.run(serve(options.port, model))
    except ImportError:  # uvloop comes with uvicorn[standard]; plain asyncio works too
        asyncio.run(serve(options.port, model))


if __name__ == "__main__":
    sys.exit(main())
