"""The load of the serving benchmark, in a process of its own: c conversations
that each ask for streamed replies one after another for a fixed time.

    python -m devtools.serving_client PLAN.json   # prints the measurements as JSON

PLAN: {"host", "port", "conversations": [[channel_id, token], ...],
"warmup": s, "duration": s}. Each conversation keeps one HTTP/1.1 connection
(opening another when the server closes it, as runserver does after a stream
and a full worker after its 503)
and posts `{"content": ..., "stream": true}` to /api/channels/{id}/reply/;
for each reply it notes when the request went, when the first `delta` event
arrived and when the `done` event did. Written on asyncio (uvloop when
present) and reading the response without parsing every event, so that the
client costs little CPU beside the server it measures; its own CPU time is
part of the output.
"""

import asyncio
import json
import sys
import time


class Conversation:
    def __init__(self, host: str, port: int, channel_id: int, token: str):
        self.host, self.port = host, port
        body = json.dumps({"content": "What is the next step of the rollout?", "stream": True}).encode()
        self.request = (
            f"POST /api/channels/{channel_id}/reply/ HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Token {token}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"X-Forwarded-Proto: https\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def ask(self) -> tuple[float, float | None, float | None, int, str]:
        """(sent, first delta, done, status, error) of one reply, on the loop's clock."""
        loop = asyncio.get_running_loop()
        if self.writer is None or self.writer.is_closing():
            await self._connect()
        sent = loop.time()
        self.writer.write(self.request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        lowered = head.lower()
        chunked = b"transfer-encoding: chunked" in lowered
        closes = not chunked and b"content-length:" not in lowered
        if b"content-length:" in lowered and not chunked:
            length = int(lowered.split(b"content-length:")[1].split(b"\r\n")[0])
            await self.reader.readexactly(length)
            if b"connection: close" in lowered:  # a full worker's refusal: the next try may reach another
                self.writer.close()
                self.writer = None
            return sent, None, None, status, f"HTTP {status} without a stream"
        first = done = None
        tail = b""
        outcome = ""
        while True:
            data = await self.reader.read(65536)
            if not data:
                break
            window = tail + data
            now = loop.time()
            if first is None and b"event: delta" in window:
                first = now
            if done is None and b"event: done" in window:
                done = now
            if b"event: error" in window:
                outcome = "error event"
            if chunked and window.endswith(b"0\r\n\r\n"):
                break
            tail = window[-64:]
        if closes or not chunked:
            self.writer.close()
            self.writer = None
        if done is None and not outcome:
            outcome = "stream ended without done"
        return sent, first, done, status, outcome


# A full server's refusal, and how long a client waits before asking again (the server's Retry-After).
REFUSED = 503
RETRY_AFTER_SECONDS = 1.0


async def run(plan: dict) -> dict:
    loop = asyncio.get_running_loop()
    started = loop.time()
    measure_from = started + plan["warmup"]
    stop_at = measure_from + plan["duration"]
    records: list[list] = []
    errors: list[str] = []

    async def converse(channel_id: int, token: str) -> None:
        conversation = Conversation(plan["host"], plan["port"], channel_id, token)
        while loop.time() < stop_at:
            try:
                sent, first, done, status, outcome = await conversation.ask()
            except (OSError, asyncio.IncompleteReadError, ValueError) as error:
                errors.append(f"{type(error).__name__}: {error}")
                conversation.writer = None
                await asyncio.sleep(0.05)
                continue
            if status == REFUSED:
                pass  # a full server's answer, counted apart from errors; the pause below is its Retry-After
            elif outcome or status >= 400:
                errors.append(outcome or f"HTTP {status}")
            records.append(
                [
                    sent - started,
                    None if first is None else first - started,
                    None if done is None else done - started,
                    status,
                ]
            )
            if status == REFUSED:
                await asyncio.sleep(RETRY_AFTER_SECONDS)

    cpu = time.process_time()
    await asyncio.gather(*(converse(channel_id, token) for channel_id, token in plan["conversations"]))
    return {
        "window": [plan["warmup"], plan["warmup"] + plan["duration"]],
        "records": records,
        "errors": errors[:20],
        "error_count": len(errors),
        "client_cpu_seconds": time.process_time() - cpu,
    }


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as handle:
        plan = json.load(handle)
    try:
        import uvloop

        result = uvloop.run(run(plan))
    except ImportError:
        result = asyncio.run(run(plan))
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
