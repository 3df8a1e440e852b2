"""Several machines: 2 web processes (uvicorn) and 2 qclusters on one PostgreSQL,
with Redis as django-q2's broker and Django's cache, under 40 API clients that
chat (half streamed) until automatic compaction fires; one qcluster and one web
process are SIGKILLed midway.

Asserted: no 5xx anywhere (the killed web process's own connections fail, as a
dead machine's do, and those clients move to the other one), every channel
compacted exactly once for its one threshold crossing, no message lost or
duplicated, no lease left held.

It needs PostgreSQL (the suite's database) and Redis (REDIS_URL_TEST, default
db 6 on 127.0.0.1): on a workstation it skips without them; with CI=true a
missing Redis or PostgreSQL fails it. On the SQLite pass it skips (the
PostgreSQL pass runs it).
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection

from chatcore.api_tokens import api_token_create
from chatcore.models import Channel, Message, ModelRole, Summary
from compaction.models import CompactionLease
from devtools.loopback_llm import LoopbackLLM, Reply
from devtools.processes import port_wait
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, ModelRoleFactory, UserFactory
from tests.compaction.scanning import auto_settings
from tests.project.turns import Fate, newest_messages, turn_fate
from tests.servers import ROOT, free_port, production_env

pytestmark = [pytest.mark.slow]

CLIENTS = 40
# A client chats until its channel's summary appears, for up to this long: a channel whose compaction
# the killed cluster held waits for its lease to expire and a retry, however fast the turns run.
MAX_SECONDS = 150
# A stop for a runaway client only: the web processes answer turns fast enough that a cap near the turns
# a channel needs before its compaction lands ended clients early.
MAX_TURNS = 2_000
WINDOW = 1_400
SUMMARY = "## Goal\n- Keep the plan of this conversation.\n## Progress\n- Many turns about the deployment."
# Nested short timeouts, so that work the killed cluster held is retried within the test:
# model call 3 s x 2 < task 8 s < broker retry 10 s < lease 12 s.
SHORT = {
    "COMPACTION_LEASE_SECONDS": "12",
    "Q_RETRY_SECONDS": "10",
    "Q_TASK_TIMEOUT_SECONDS": "8",
    "LLM_TIMEOUT_SECONDS": "3",
    "LLM_MAX_RETRIES": "0",
}


def _required(what: str) -> None:
    message = f"the multi-process test needs {what}"
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def redis_url():
    if connection.vendor != "postgresql":
        pytest.skip("runs on PostgreSQL (the suite's PostgreSQL pass); this pass uses " + connection.vendor)
    url = os.environ.get("REDIS_URL_TEST", "redis://127.0.0.1:6379/6")
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError:
        _required(f"Redis at {url}")
    client.flushdb()  # this test's own database number only
    yield url
    client.flushdb()


class Processes:
    """Named server processes, each in its own process group (a kill takes all of it)."""

    def __init__(self, log_dir: Path, env: dict):
        self.log_dir, self.env = log_dir, env
        self.processes: dict[str, subprocess.Popen] = {}

    def start(self, name: str, *args: str, **env: str) -> subprocess.Popen:
        with open(self.log_dir / f"{name}.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, *args], cwd=ROOT, env=self.env | env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        self.processes[name] = process
        return process

    def kill(self, name: str) -> None:
        process = self.processes[name]
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for name, process in self.processes.items():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill(name)

    def logs(self) -> str:
        paths = sorted(self.log_dir.glob("*.log"))
        return "\n".join(f"--- {path.name}\n" + path.read_text(errors="replace")[-4000:] for path in paths)


class ChatClient(threading.Thread):
    """One API client: chats in its channel until it sees the channel's summary, then two turns more.

    It talks to its own web process; when a request fails on the connection (the process died),
    it moves to the other process, looks at the channel to learn what became of that turn, and
    answers or resends only what is missing, so that nothing is sent twice.
    """

    def __init__(self, index: int, channel_id: int, token: str, ports: list[int], stream: bool):
        super().__init__(daemon=True, name=f"client-{index}")
        self.index, self.channel_id, self.token, self.stream = index, channel_id, token, stream
        self.ports, self.port = ports, ports[index % len(ports)]
        self.statuses: list[tuple[int, int]] = []  # (port, HTTP status)
        self.failures: list[tuple[int, str]] = []  # (port, exception) on the connection
        self.sent: list[str] = []
        self.replies: dict[int, str] = {}  # id -> content, as the client received them
        self.error: str = ""

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.failures.append((self.port, repr(error)))
            self.port = next(port for port in self.ports if port != self.port)  # the other machine
            raise
        finally:
            conn.close()
        self.statuses.append((self.port, response.status))
        return response.status, data

    def reply(self, body: dict) -> dict:
        status, data = self.request("POST", f"/api/channels/{self.channel_id}/reply/", {**body, "stream": self.stream})
        if not self.stream:
            assert status == 201, (status, data[:300])
            return json.loads(data)
        assert status == 200, (status, data[:300])
        events = [block for block in data.decode().split("\n\n") if block.strip()]
        name, payload = (line.split(": ", 1)[1] for line in events[-1].split("\n"))
        assert name == "done", events[-1]
        return json.loads(payload)["message"]

    def get(self, path: str) -> tuple[int, bytes]:
        """A read, sent again to the other machine if its connection fails."""
        try:
            return self.request("GET", path)
        except (OSError, http.client.HTTPException):
            return self.request("GET", path)

    def turn(self, text: str) -> None:
        try:
            message = self.reply({"content": text})
        except (OSError, http.client.HTTPException):
            fate, stored = turn_fate(newest_messages(self.get, self.channel_id), text)
            if stored is not None:
                message = stored  # stored; only the answer was lost on the way
            elif fate is Fate.UNANSWERED:
                message = self.reply({})  # the turn is stored: ask for its answer
            else:
                message = self.reply({"content": text})
        self.sent.append(text)
        self.replies[message["id"]] = message["content"]

    def summarized(self) -> bool:
        status, data = self.get(f"/api/channels/{self.channel_id}/summaries/")
        return status == 200 and json.loads(data)["count"] > 0

    def run(self) -> None:
        started = time.monotonic()
        try:
            extra = None
            for number in range(MAX_TURNS):
                if time.monotonic() - started > MAX_SECONDS:
                    break
                self.turn(f"Client {self.index}, turn {number}: how should the ledger service be deployed next?")
                if extra is None and self.summarized():
                    extra = 2
                elif extra is not None:
                    extra -= 1
                if extra == 0:
                    return
            self.error = f"no summary after {len(self.sent)} turns ({time.monotonic() - started:.0f} s)"
        except Exception as error:  # reported by the test with the client's index
            self.error = repr(error)


def _answer(request: dict) -> Reply:
    if request.get("model") == "loopback-utility":
        return Reply(content=SUMMARY, delay=0.3)
    words = " ".join(f"step{index}" for index in range(30))
    return Reply(content=f"Deploy in small steps: {words}.", token_delay=0.005)


# How many of the clusters' log lines about a failed client's channel its report shows, newest last.
REPORT_LOG_LINES = 25


def _channel_report(channel_ids: list[int], log_dir: Path) -> str:
    """What the database and the clusters say of the failed clients' channels, first in the failure (a long
    assertion message is cut): the pressure, the lease row's attempt and outcome, the scanner's last words."""
    fields = ("last_outcome", "last_error", "holder", "attempt_leaf_id", "last_auto_at", "last_finished_at")
    leases = {row["channel_id"]: row for row in CompactionLease.objects.filter(channel_id__in=channel_ids).values()}
    cluster_lines = [
        line for path in sorted(log_dir.glob("q-*.log")) for line in path.read_text(errors="replace").splitlines()
    ]
    report = []
    for pk, tokens, messages in Channel.objects.filter(pk__in=channel_ids).values_list(
        "pk", "context_tokens", "context_messages"
    ):
        lease = leases.get(pk) or {}
        report.append(
            f"channel {pk}: {tokens} tokens, {messages} messages; lease " + repr({f: lease.get(f) for f in fields})
        )
        mentions = [line for line in cluster_lines if f"channel {pk} " in line or f"channel {pk}:" in line]
        report.extend("    " + line[:300] for line in sorted(mentions)[-REPORT_LOG_LINES:])
    return "\n".join(report)


def test_two_web_processes_and_two_clusters_survive_a_killed_machine(transactional_db, redis_url, tmp_path):
    auto_settings(concurrency=4, cooldown_minutes=30, idle_minutes=0, min_messages=10, min_new_messages=8)
    with LoopbackLLM(responder=_answer) as llm:
        chat = LLMModelFactory(name="loopback-chat", base_url=llm.url, context_window=WINDOW)
        ModelRoleFactory(role=ModelRole.Role.CHAT, primary=chat)
        utility = LLMModelFactory(name="loopback-utility", base_url=llm.url, context_window=8_000)
        ModelRoleFactory(role=ModelRole.Role.UTILITY, primary=utility)
        channels, tokens = [], []
        for index in range(CLIENTS):
            user = UserFactory(username=f"client-{index}")
            channels.append(ChannelFactory(owner=user, model=chat, title=f"Client {index}"))
            tokens.append(api_token_create(user=user, name="test")[1])

        env = production_env(
            **SHORT,
            DB_POOL="true",
            DB_POOL_MAX_SIZE="8",
            REDIS_URL=redis_url,
            Q_CLUSTER_NAME=f"mp-{uuid.uuid4().hex[:8]}",
            Q_WORKERS="2",
            THROTTLE_EXPENSIVE_RATE="",
        )
        processes = Processes(tmp_path, env)
        ports = [free_port(), free_port()]
        try:
            for name, port in zip(("web-a", "web-b"), ports, strict=True):
                processes.start(
                    name, "-m", "uvicorn", "project.asgi:application", "--port", str(port), "--no-access-log"
                )
            # The clusters log the scanner's decisions and outcomes: a failure then shows what became of a channel.
            processes.start("q-a", "manage.py", "qcluster", LOG_LEVEL="INFO")
            processes.start("q-b", "manage.py", "qcluster", LOG_LEVEL="INFO")
            for name, port in zip(("web-a", "web-b"), ports, strict=True):
                port_wait(port, processes.processes[name], timeout=120)

            clients = [
                ChatClient(index, channel.pk, token, ports, stream=index % 2 == 0)
                for index, (channel, token) in enumerate(zip(channels, tokens, strict=True))
            ]
            for client in clients:
                client.start()
            # Midway: a third of the channels compacted, others compacting or about to.
            deadline = time.monotonic() + 240
            while Summary.objects.count() < CLIENTS // 3 and time.monotonic() < deadline:
                time.sleep(0.2)
            running_at_kill = sum(client.is_alive() for client in clients)
            processes.kill("q-b")
            processes.kill("web-b")
            killed_at = time.monotonic()
            for client in clients:
                client.join(timeout=max(1, deadline + 240 - time.monotonic()))
            # Leases the killed cluster held expire; the clients' last turns trigger the retries.
            while time.monotonic() < killed_at + 20 and CompactionLease.objects.exclude(holder="").exists():
                time.sleep(0.5)
        finally:
            processes.stop_all()
        logs = processes.logs()

    failed = [c for c in clients if c.error or c.is_alive()]
    assert [(c.index, c.error) for c in failed] == [], (
        _channel_report([c.channel_id for c in failed], tmp_path) + "\n" + logs
    )
    assert running_at_kill >= CLIENTS // 2  # the kill came midway, with the load running
    # No 5xx, from either process; connection failures only towards the killed one.
    assert [s for c in clients for s in c.statuses if s[1] >= 500] == [], logs
    assert {port for c in clients for port, _ in c.failures} <= {ports[1]}, logs
    # Every channel compacted exactly once (one threshold crossing each; the cooldown holds after).
    per_channel = Counter(Summary.objects.filter(reverted_at__isnull=True).values_list("channel_id", flat=True))
    assert per_channel == {channel.pk: 1 for channel in channels}, (per_channel, logs)
    assert set(Summary.objects.values_list("trigger", flat=True)) == {"auto"}
    # No message lost or duplicated: each turn once, answered once, as the client saw it.
    for client in clients:
        rows = list(Message.objects.filter(channel_id=client.channel_id).order_by("id").values("id", "role", "content"))
        users = [row["content"] for row in rows if row["role"] == "user"]
        assert users == client.sent, client.index
        assistants = {row["id"]: row["content"] for row in rows if row["role"] == "assistant"}
        assert assistants == client.replies, client.index
        assert len(rows) == 2 * len(client.sent)
    # No lease left held.
    assert list(CompactionLease.objects.exclude(holder="").values_list("channel_id", "holder")) == [], logs
