"""Gateway: the official `openai` client resends a growing conversation to
/v1/chat/completions, as OpenAI clients do, until it holds 10,000 messages
(about 2 MB of JSON per request at the end).

The production ASGI server (uvicorn, one process; on PostgreSQL with the
connection pool that project/scripts/serve.sh turns on) runs on a throwaway
database of its own in front of the loopback model server, with a model
whose window is 8,000 tokens, so the gateway compacts inline (with the
offline summarizer) whenever a call would not fit. For each request the
time from the moment the body leaves the client to the moment the answer's
head is back is taken (httpx event hooks: the `openai` client's own work
before sending, which transforms every message in Python, is the client's
and printed apart), and the server reports in its Server-Timing header how
long the upstream call took; the difference is the time the server adds.
Near each checkpoint of the history's length, the floor is measured in the
same run: parsing the very request body that was sent and hashing its
messages into their chain (what any server that identifies a resent
history must do at least; the best of five, after a garbage collection, as
this process holds the whole conversation). The upstream prompt's tokens are counted
as the model received them.

COMPACTION_BENCH_GATEWAY_STRIDE=N (default 1) makes a long run affordable:
away from the checkpoints, each call adds N turns at once (the earlier N-1
with answers shaped like the model's), so the history grows N times faster;
the calls measured before each checkpoint still add one turn each, as a
client does, on a tree grown by the same gateway (inline compactions
included).
"""

import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.contrib.auth import get_user_model

from chatcore import conf as chatcore_conf
from chatcore.chain import chain_hashes
from chatcore.models import ApiToken, LLMModel, Summary
from chatcore.token_keys import key_make
from chatcore.tokens import count_tokens
from compaction.gateway.protocol import completion_request
from devtools.benchmarks.databases import database_close, database_open, database_url
from devtools.loopback_llm import LoopbackLLM, Reply

ALIAS = "compaction_bench_gw"
ROOT = Path(__file__).resolve().parents[2]
WINDOW = 8_000
MESSAGES = 10_000
CHECKPOINTS = (100, 1_000, 2_000, 5_000, 10_000)
SAMPLE = 25  # calls measured just before each checkpoint
STRIDE_ENV = "COMPACTION_BENCH_GATEWAY_STRIDE"
# The goal: at the last checkpoint the time the server adds is at most this many times the floor.
GOAL_FLOOR_RATIO = 1.5
MODEL = "bench-gateway"
WORDS = "the quarterly plan covers budgets staffing the venue a backup date and the supplier contracts".split()


def _user_text(turn: int) -> str:
    """About 170 characters, so that 10,000 messages make about 2 MB of JSON."""
    words = " ".join(WORDS[(turn + i) % len(WORDS)] for i in range(22))
    return f"Turn {turn}: {words} item {turn * 7}."


def _upstream_tokens(request: dict) -> int:
    total = 0
    for message in request["messages"]:
        content = message.get("content") or ""
        total += count_tokens(content if isinstance(content, str) else json.dumps(content))
        total += chatcore_conf.MESSAGE_OVERHEAD_TOKENS
    return total


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _server(config: dict, port: int, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(config),
        "THROTTLE_EXPENSIVE_RATE": "",
        "DEBUG": "false",
        "SECRET_KEY": "gateway-benchmark",
        "SECURE_SSL_REDIRECT": "false",
        "LOG_LEVEL": "WARNING",
        "LLM_HTTP_HOSTS": "127.0.0.1",  # the loopback model, over plain http with DEBUG off
    }
    if not config["ENGINE"].endswith("sqlite3"):
        env.setdefault("DB_POOL", "true")  # as project/scripts/serve.sh runs the server on PostgreSQL
    command = [sys.executable, "-m", "uvicorn", "project.asgi:application", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--log-level", "warning", "--lifespan", "off", "--timeout-keep-alive", "75"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"uvicorn exited: {log.read_text(errors='replace')[-2000:]}") from None
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("uvicorn did not start in 30 s")


def _timings(header: str) -> dict[str, float]:
    result = {}
    for item in header.split(","):
        name, _, duration = item.strip().partition(";dur=")
        if duration:
            result[name] = float(duration)
    return result


def _floor_ms(body: bytes, owner_id: int) -> float:
    """Parse the request body and hash its messages: the best of five."""
    runs = []
    for _ in range(5):
        gc.collect()
        started = time.perf_counter()
        request = completion_request(json.loads(body))
        chain_hashes(owner_id=owner_id, messages=[(m.role, m.content, m.metadata) for m in request.messages])
        runs.append((time.perf_counter() - started) * 1000)
    return min(runs)


def _setup(llm_url: str) -> tuple[str, int]:
    user = get_user_model().objects.db_manager(ALIAS).create(username="gateway-bench")
    LLMModel.objects.using(ALIAS).create(
        name=MODEL, base_url=llm_url, api_key_env="", context_window=WINDOW, max_output_tokens=1_000
    )
    key, lookup, digest = key_make()
    ApiToken.objects.using(ALIAS).create(
        user=user, token_key=lookup, digest=digest, expiry=None, name="gateway benchmark"
    )
    return key, user.pk


def _catch_up(history: list[dict], turn: int, checkpoints: list[int], stride: int) -> int:
    """With a stride, the turns before the new one that this call adds at once (none near a checkpoint)."""
    added = 0
    while added < stride - 1 and checkpoints and len(history) + 2 * SAMPLE + 4 < checkpoints[0]:
        text = _user_text(turn + added)
        history += [{"role": "user", "content": text}, {"role": "assistant", "content": f"Noted: {text[:40]}"}]
        added += 1
    return added


class _Wire:
    """When the request left the client and when the response's head came back (httpx event hooks):
    the time on the wire and in the server, without the client's own work before sending (the
    `openai` client transforms every message of the body in Python, seconds at 5,000 messages)."""

    def __init__(self) -> None:
        self.sent = self.answered = 0.0

    def request(self, request) -> None:
        self.sent = time.perf_counter()

    def response(self, response) -> None:
        self.answered = time.perf_counter()

    @property
    def ms(self) -> float:
        return (self.answered - self.sent) * 1000


def _converse(client, llm: LoopbackLLM, owner_id: int, total: int, checkpoints: list[int], wire: _Wire) -> list[dict]:
    history: list[dict] = [{"role": "system", "content": "You are the planning assistant of a small team."}]
    # per call: (added = on the wire - upstream, the view's own time, the server's CPU time, the client's)
    samples: dict[int, list[tuple[float, float, float, float]]] = {c: [] for c in checkpoints}
    rows, turn = [], 0
    max_tokens = 0
    stride = max(1, int(os.environ.get(STRIDE_ENV) or 1))
    while len(history) < total:
        turn += _catch_up(history, turn, checkpoints, stride)
        history.append({"role": "user", "content": _user_text(turn)})
        started = time.perf_counter()
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=history)
        wall = (time.perf_counter() - started) * 1000
        completion = raw.parse()
        timings = _timings(raw.headers.get("server-timing", ""))
        history.append({"role": "assistant", "content": completion.choices[0].message.content})
        max_tokens = max(max_tokens, _upstream_tokens(llm.requests[-1]))
        llm.requests.clear()
        size = len(history) - 1  # messages sent in this request
        for checkpoint in checkpoints:
            if checkpoint - 2 * SAMPLE < size <= checkpoint:
                upstream = timings.get("upstream", 0.0)
                own = timings.get("total", 0.0) - upstream
                samples[checkpoint].append((wire.ms - upstream, own, timings.get("cpu", 0.0), wall - wire.ms))
        if checkpoints and size >= checkpoints[0] - 1:
            checkpoint = checkpoints.pop(0)
            body = json.dumps({"model": MODEL, "messages": history[:-1]}).encode()
            added = [s[0] for s in samples[checkpoint]]
            server = [s[1] for s in samples[checkpoint]]
            cpu = [s[2] for s in samples[checkpoint]]
            own = [s[3] for s in samples[checkpoint]]
            floor = _floor_ms(body, owner_id)
            rows.append(
                {
                    "messages": size,
                    "request_kb": round(len(body) / 1024),
                    "added_p50_ms": round(statistics.median(added), 1),
                    "added_p95_ms": round(sorted(added)[int(len(added) * 0.95) - 1], 1),
                    "server_p50_ms": round(statistics.median(server), 1),
                    "server_cpu_p50_ms": round(statistics.median(cpu), 1),
                    "client_p50_ms": round(statistics.median(own), 1),
                    "floor_ms": round(floor, 1),
                    "ratio": round(statistics.median(added) / floor, 2),
                    "upstream_tokens_max": max_tokens,
                }
            )
            max_tokens = 0
        turn += 1
    return rows


def run(*, scale: float, stdout) -> dict:
    import httpx
    import openai

    total = max(200, int(MESSAGES * scale))
    checkpoints = sorted({min(total, max(100, int(c * scale))) for c in CHECKPOINTS})
    config = database_open(ALIAS)
    port = _free_port()
    # The server's log beside its database: a run of its own (concurrent runs never share or remove it).
    log = Path(config["NAME"] if config["ENGINE"].endswith("sqlite3") else Path(tempfile.gettempdir()) / config["NAME"])
    log = log.with_suffix(".uvicorn.log")
    try:
        with LoopbackLLM(
            responder=lambda request: Reply(content=f"Noted: {request['messages'][-1]['content'][:40]}")
        ) as llm:
            token, owner_id = _setup(llm.url)
            server = _server(config, port, log)
            try:
                wire = _Wire()
                hooks = {"request": [wire.request], "response": [wire.response]}
                client = openai.OpenAI(
                    base_url=f"http://127.0.0.1:{port}/v1",
                    api_key=token,
                    max_retries=0,
                    http_client=httpx.Client(timeout=600, event_hooks=hooks),
                )
                started = time.monotonic()
                rows = _converse(client, llm, owner_id, total, list(checkpoints), wire)
                elapsed = time.monotonic() - started
            finally:
                server.terminate()
                server.wait(timeout=30)
            summaries = Summary.objects.using(ALIAS).count()
    finally:
        database_close(ALIAS, config)
        log.unlink(missing_ok=True)  # read into the error above when the server failed; nothing is left behind
    load = os.getloadavg()
    stdout.write(f"Gateway: the openai client resends a growing conversation (model window {WINDOW:,} tokens)\n")
    stdout.write(f"  load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {elapsed:.0f} s; {summaries} summaries\n")
    stdout.write(
        f"  {'messages':>9} {'request':>9} {'added p50':>10} {'added p95':>10} {'server p50':>11} {'server CPU':>11} "
        f"{'floor':>8} {'ratio':>6} {'upstream tokens (max)':>22} {'client p50':>11}\n"
    )
    for row in rows:
        stdout.write(
            f"  {row['messages']:>9,} {row['request_kb']:>6,} KB {row['added_p50_ms']:>7.1f} ms "
            f"{row['added_p95_ms']:>7.1f} ms {row['server_p50_ms']:>8.1f} ms {row['server_cpu_p50_ms']:>8.1f} ms "
            f"{row['floor_ms']:>5.1f} ms "
            f"{row['ratio']:>6.2f} {row['upstream_tokens_max']:>22,} {row['client_p50_ms']:>8.1f} ms\n"
        )
    last = rows[-1]
    verdict = "met" if last["added_p50_ms"] <= GOAL_FLOOR_RATIO * last["floor_ms"] else "MISSED"
    window = "met" if max(r["upstream_tokens_max"] for r in rows) <= WINDOW else "MISSED"
    stdout.write(
        f"  goal: added time at {last['messages']:,} messages <= {GOAL_FLOOR_RATIO:g} x the floor p50 "
        f"({last['added_p50_ms']:.1f} ms against {last['floor_ms']:.1f} ms): {verdict}; "
        f"upstream prompt never above the window: {window}\n"
    )
    return {"window": WINDOW, "rows": rows, "summaries": summaries, "seconds": round(elapsed, 1)}
