"""Serving: the production server under c concurrent streaming conversations.

A database of its own (PostgreSQL when the project runs on it, else an SQLite
file) gets c users, each with a channel and an API token; the chat model is
`devtools.serving_model` (first token after 200 ms, then 50 tokens/s, 41 in
all: L = 1.0 s per reply). For each server — the production one
(`project/scripts/serve.sh`: uvicorn, WEB_CONCURRENCY workers, DEBUG off, no
qcluster) and Django's `runserver` for comparison — and each c, the client
process (`devtools.serving_client`) runs c conversations that ask for
streamed replies one after another; after a warm-up, replies are counted for
a fixed time. Figures per round:

- requests/s against the limit c ÷ L (a conversation cannot do better than
  one reply per model latency) and their ratio;
- the time the server adds to the model's first token (first `delta` at the
  client − request sent − 200 ms) and to its last (`done` − sent − 1.0 s),
  p50/p95/p99 in ms;
- CPU per request: the server's processes (user + system, from /proc),
  PostgreSQL's backends serving the benchmark's database (`db_cpu_ms_per_request`,
  from their /proc entries; None on SQLite, which runs inside the server),
  and, for context, the model's and the client's;
- the machine's load average before the round.

Below scale 1 the concurrencies shrink with the scale (at least two
conversations) and the rounds are shorter: a small run to profile, or the
suite's check that the scenario still runs; the goals are read at scale 1.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.db import connections

from chatcore.models import ApiToken, Channel, LLMModel, ModelRole
from chatcore.token_keys import key_make
from devtools.benchmarks.databases import database_close, database_open
from devtools.processes import database_url, port_wait

ALIAS = "compaction_bench_serving"
ROOT = Path(__file__).resolve().parents[2]
FIRST_TOKEN, TOKENS, RATE = 0.2, 41, 50.0
LATENCY = FIRST_TOKEN + (TOKENS - 1) / RATE  # 1.0 s
CONCURRENCIES = (50, 200, 500)
TICK = os.sysconf("SC_CLK_TCK")
# The least concurrency of a round at a small scale: two conversations still overlap.
MIN_CONCURRENCY = 2


def concurrencies_for(scale: float) -> list[int]:
    """The rounds' concurrencies: 50, 200 and 500 at scale 1 (the goals are read there), fewer below."""
    return sorted({max(MIN_CONCURRENCY, round(c * min(scale, 1.0))) for c in CONCURRENCIES})


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _group_cpu(pgid: int) -> float:
    """CPU seconds (user + system, children reaped included) of every process in a process group."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state ppid pgrp ...
            total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total / TICK


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of one process; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(value) for value in fields[11:13]) / TICK


def _db_backends() -> dict[int, float]:
    """PostgreSQL's server processes serving the benchmark's database, and their CPU seconds so far
    (none on SQLite, nor when the server runs elsewhere and its processes are not in this /proc; a backend
    a web process opens during the round is counted whole at its end)."""
    connection = connections[ALIAS]
    if connection.vendor != "postgresql":
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return {pid: _process_cpu(pid) for (pid,) in cursor.fetchall() if os.path.exists(f"/proc/{pid}")}


def _db_cpu_since(before: dict[int, float]) -> float:
    """CPU seconds the database's backends spent since `before` (a backend that appeared since counts whole;
    the pooled connections live through a round, so few leave unseen)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in _db_backends().items())


def _start(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    with open(log, "wb") as handle:
        return subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _model_server(log: Path) -> tuple[subprocess.Popen, int]:
    process = _start([sys.executable, "-m", "devtools.serving_model"], dict(os.environ), log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "listening on" in text:
            return process, int(text.split("listening on")[1].split()[0])
        time.sleep(0.1)
    raise RuntimeError(f"the model server did not start: {log.read_text(errors='replace')}")


def _fill(*, conversations: int, model_url: str) -> list[list]:
    db = ALIAS
    model, _ = LLMModel.objects.using(db).update_or_create(
        name="serving-model", defaults={"base_url": model_url, "context_window": 1_000_000, "api_key_env": ""}
    )
    ModelRole.objects.using(db).update_or_create(role=ModelRole.Role.CHAT, defaults={"primary": model})
    users = (
        get_user_model()
        .objects.using(db)
        .bulk_create(get_user_model()(username=f"bench-serving-{index}") for index in range(conversations))
    )
    channels = Channel.objects.using(db).bulk_create(
        Channel(owner=user, title=f"Load {index}", context_budget=1_000_000) for index, user in enumerate(users)
    )
    # Personal tokens (hashed, as the API stores them); the keys go to the clients.
    made = [key_make() for _ in users]
    ApiToken.objects.using(db).bulk_create(
        ApiToken(user=user, name="serving bench", digest=digest, token_key=lookup)
        for user, (_key, lookup, digest) in zip(users, made, strict=True)
    )
    return [[channel.pk, key] for channel, (key, _lookup, _digest) in zip(channels, made, strict=True)]


def _server(kind: str, *, port: int, config: dict, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(config),
        "THROTTLE_EXPENSIVE_RATE": "",
        "LOG_LEVEL": "WARNING",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "ALLOWED_HOSTS": "127.0.0.1",
        "LLM_HTTP_HOSTS": "127.0.0.1",  # the loopback model, over plain http with DEBUG off
        "VAR_DIR": str(Path(django_settings.VAR_DIR) / "bench" / "serving-var"),
    }
    if kind == "uvicorn":
        env |= {"QCLUSTER": "false", "WEB_CONCURRENCY": os.environ.get("WEB_CONCURRENCY", str(os.cpu_count() or 2))}
        return _start(["bash", "project/scripts/serve.sh"], env, log)
    env |= {"DEBUG": "true"}
    return _start([sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"], env, log)


def _percentiles(values: list[float]) -> dict:
    if not values:
        return {"p50": None, "p95": None, "p99": None}
    ordered = sorted(values)

    def at(share: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000, 1)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99)}


def _round(*, kind: str, concurrency: int, plan: dict, server: subprocess.Popen, model: subprocess.Popen) -> dict:
    load = os.getloadavg()[0]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump({**plan, "conversations": plan["conversations"][:concurrency]}, handle)
    server_cpu, model_cpu, db_before = _group_cpu(server.pid), _group_cpu(model.pid), _db_backends()
    result = subprocess.run(
        [sys.executable, "-m", "devtools.serving_client", handle.name], cwd=ROOT, capture_output=True, check=True
    )
    os.unlink(handle.name)
    server_cpu, model_cpu = _group_cpu(server.pid) - server_cpu, _group_cpu(model.pid) - model_cpu
    db_cpu = _db_cpu_since(db_before)
    measured = json.loads(result.stdout)
    start, end = measured["window"]
    done = [r for r in measured["records"] if r[2] is not None and start <= r[2] < end and r[3] == 200]
    finished = [r for r in measured["records"] if r[2] is not None]
    rate = len(done) / (end - start)
    limit = concurrency / LATENCY
    requests = max(1, len(finished))
    return {
        "server": kind,
        "concurrency": concurrency,
        "requests": len(done),
        "per_second": round(rate, 1),
        "limit_per_second": round(limit, 1),
        "share_of_limit": round(rate / limit, 3),
        "added_first_ms": _percentiles([r[1] - r[0] - FIRST_TOKEN for r in done if r[1] is not None]),
        "added_last_ms": _percentiles([r[2] - r[0] - LATENCY for r in done]),
        "server_cpu_ms_per_request": round(server_cpu * 1000 / requests, 2),
        # PostgreSQL's own CPU for the replies (its backends' /proc entries); None on SQLite, which runs inside
        # the server's processes and is counted there.
        "db_cpu_ms_per_request": round(db_cpu * 1000 / requests, 2)
        if connections[ALIAS].vendor == "postgresql"
        else None,
        "model_cpu_ms_per_request": round(model_cpu * 1000 / requests, 2),
        "client_cpu_ms_per_request": round(measured["client_cpu_seconds"] * 1000 / requests, 2),
        "errors": measured["error_count"],
        # Refusals of a full server (503, Retry-After) apart from failures; a 500 is always a failure.
        "refused_503": sum(1 for r in measured["records"] if r[3] == 503),
        "http_500": sum(1 for r in measured["records"] if r[3] >= 500 and r[3] != 503),
        "error_examples": measured["errors"][:3],
        "load_before": round(load, 2),
    }


def run(*, scale: float, stdout) -> dict:
    duration = max(3.0, 20.0 * scale)
    warmup = max(1.0, 4.0 * min(scale, 1.0))
    concurrencies = concurrencies_for(scale)
    logs = Path(django_settings.VAR_DIR) / "bench"
    logs.mkdir(parents=True, exist_ok=True)
    stdout.write(
        f"serving: streamed replies, model first token {FIRST_TOKEN * 1000:.0f} ms then {RATE:g} tokens/s "
        f"(L = {LATENCY:g} s); {duration:g} s per round after {warmup:g} s of warm-up; "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at start\n"
    )
    config = database_open(ALIAS)
    model, model_port = _model_server(logs / "serving-model.log")
    rows = []
    try:
        plan = {
            "host": "127.0.0.1",
            "warmup": warmup,
            "duration": duration,
            "conversations": _fill(conversations=max(concurrencies), model_url=f"http://127.0.0.1:{model_port}/v1"),
        }
        for kind in ("uvicorn", "runserver"):
            port = _free_port()
            log = logs / f"serving-{kind}.log"
            server = _server(kind, port=port, config=config, log=log)
            try:
                port_wait(port, server, timeout=180, log=log)
                for concurrency in concurrencies:
                    row = _round(
                        kind=kind, concurrency=concurrency, plan={**plan, "port": port}, server=server, model=model
                    )
                    rows.append(row)
                    stdout.write(
                        f"  {kind} c={concurrency}: {row['per_second']}/s ({row['share_of_limit']:.1%} of c/L), "
                        f"first +{row['added_first_ms']['p99']} ms p99, {row['errors']} errors, "
                        f"{row['http_500']} HTTP 5xx, {row['refused_503']} refused (503)"
                        + (f" (e.g. {row['error_examples'][0]})" if row["error_examples"] else "")
                        + "\n"
                    )
            finally:
                _stop(server)
    finally:
        _stop(model)
        database_close(ALIAS, config)
    _table(rows, stdout)
    goal = next((r for r in rows if r["server"] == "uvicorn" and r["concurrency"] == 200), None)
    return {
        "latency": LATENCY,
        "rows": rows,
        "goals": {
            "share_at_c200_at_least_90": bool(goal and goal["share_of_limit"] >= 0.9),
            "first_token_p99_at_c200_at_most_50ms": bool(
                goal and goal["added_first_ms"]["p99"] is not None and goal["added_first_ms"]["p99"] <= 50
            ),
        },
    }


def _table(rows: list[dict], stdout) -> None:
    stdout.write(
        f"\n  {'server':>9} {'c':>4} {'req/s':>7} {'c/L':>6} {'share':>6}  {'+first p50/p95/p99 ms':>23}  "
        f"{'+last p50/p95/p99 ms':>23}  {'CPU ms/req':>10} {'DB':>6} {'model':>6} {'client':>6} {'errors':>6} "
        f"{'503':>5} {'load':>5}\n"
    )
    for r in rows:
        first = "/".join(f"{v:.0f}" if v is not None else "-" for v in r["added_first_ms"].values())
        last = "/".join(f"{v:.0f}" if v is not None else "-" for v in r["added_last_ms"].values())
        database = "-" if r["db_cpu_ms_per_request"] is None else f"{r['db_cpu_ms_per_request']:.2f}"
        stdout.write(
            f"  {r['server']:>9} {r['concurrency']:>4} {r['per_second']:>7.1f} {r['limit_per_second']:>6.0f} "
            f"{r['share_of_limit']:>6.1%}  {first:>23}  {last:>23}  {r['server_cpu_ms_per_request']:>10.2f} "
            f"{database:>6} {r['model_cpu_ms_per_request']:>6.2f} {r['client_cpu_ms_per_request']:>6.2f} "
            f"{r['errors']:>6} {r['refused_503']:>5} {r['load_before']:>5.2f}\n"
        )
    stdout.write(
        "  (+first: time the server adds to the model's first token; +last: to its last; CPU: server "
        "processes per finished reply; DB: PostgreSQL's backends per finished reply; 503: refusals of a full "
        "server; goal at c=200: share >= 90%, +first p99 <= 50 ms)\n"
    )
