"""Metrics across processes: two web processes (uvicorn) and a task cluster share one PROMETHEUS_MULTIPROC_DIR,
as serve.sh sets it up. A manual compaction and a search go to one web process, a streamed API reply and a /v1
turn to the other; /metrics on either one shows them all. With automatic compaction on, /readyz waits for the
cluster, then answers ready. Runs on the suite's database (SQLite's file or PostgreSQL)."""

import functools
import http.client
import json
import secrets
import time

import pytest

from chatcore.api_tokens import api_token_create
from chatcore.models import ModelRole
from compaction.scanner.selectors import compaction_settings_get
from devtools.loopback_llm import LoopbackLLM, Reply
from devtools.processes import port_wait
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, ModelRoleFactory, UserFactory
from tests.compaction.factories import converse
from tests.compaction.observability.metrics_scrape import samples_parse
from tests.project.test_multiprocess import Processes
from tests.servers import free_port, production_env

pytestmark = [pytest.mark.slow]

METRICS_TOKEN = "scrape-" + secrets.token_hex(8)
SUMMARY = "## Goal\n- Ship the ledger service.\n## Progress\n- The checklist items were agreed."


def _request(port: int, method: str, path: str, body: dict | None = None, **headers: str) -> tuple[int, bytes, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        sent = {"Content-Type": "application/json", **headers}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=sent)
        response = conn.getresponse()
        return response.status, response.read(), dict(response.getheaders())
    finally:
        conn.close()


def _value(samples: dict, metric: str, **labels: str) -> float:
    return samples.get((metric, tuple(sorted(labels.items()))), 0.0)


def _answer(request: dict) -> Reply:
    if request.get("model") == "loopback-utility":
        return Reply(content=SUMMARY, prompt_tokens=700, completion_tokens=15)
    return Reply(content="Deploy in small steps.", prompt_tokens=120, completion_tokens=6)


def test_metrics_add_up_across_two_web_processes_and_readyz_sees_the_cluster(transactional_db, tmp_path):
    with LoopbackLLM(responder=_answer) as llm:
        chat = LLMModelFactory(name="loopback-chat", base_url=llm.url, context_window=8_000)
        ModelRoleFactory(role=ModelRole.Role.CHAT, primary=chat)
        utility = LLMModelFactory(name="loopback-utility", base_url=llm.url, context_window=8_000)
        ModelRoleFactory(role=ModelRole.Role.UTILITY, primary=utility)
        user = UserFactory()
        channel = ChannelFactory(owner=user, model=chat)
        converse(channel, 12)
        auth = {"Authorization": f"Token {api_token_create(user=user, name='metrics')[1]}"}
        metrics_dir = tmp_path / "prometheus"
        env = production_env(
            PROMETHEUS_MULTIPROC_DIR=str(metrics_dir),
            METRICS_TOKEN=METRICS_TOKEN,
            METRICS_ALLOWED_IPS="",
            Q_WORKERS="1",
        )
        env.pop("REDIS_URL", None)
        processes = Processes(tmp_path, env)
        ports = {"web-a": free_port(), "web-b": free_port()}
        try:
            for name, port in ports.items():
                processes.start(
                    name, "-m", "uvicorn", "project.asgi:application", "--port", str(port), "--no-access-log"
                )
            processes.start("q", "manage.py", "qcluster")
            for name, port in ports.items():
                port_wait(port, processes.processes[name], timeout=120)
            a, b = ports["web-a"], ports["web-b"]

            status, body, _ = _request(a, "POST", f"/api/channels/{channel.pk}/compact/", {"keep_recent": 4}, **auth)
            assert status == 201, body
            compacted = json.loads(body)
            status, body, _ = _request(a, "GET", f"/api/channels/{channel.pk}/search/?q=checklist", **auth)
            assert status == 200, body
            status, body, _ = _request(
                b, "POST", f"/api/channels/{channel.pk}/reply/", {"content": "How to deploy?", "stream": True}, **auth
            )
            assert status == 200 and b"event: done" in body, body
            turn = {"model": "loopback-chat", "messages": [{"role": "user", "content": "Capital of France?"}]}
            bearer = {"Authorization": auth["Authorization"].replace("Token", "Bearer")}
            status, body, _ = _request(b, "POST", "/v1/chat/completions", turn, **bearer)
            assert status == 200, body

            status, _, _ = _request(a, "GET", "/metrics")
            assert status == 401  # the token is set and the allowed addresses are none
            scraped = {}
            for name, port in ports.items():
                status, body, headers = _request(port, "GET", "/metrics", Authorization=f"Bearer {METRICS_TOKEN}")
                assert status == 200, body
                scraped[name] = samples_parse(body.decode())[1]

            # Automatic compaction on: ready once the cluster has reported in.
            row = compaction_settings_get()
            row.enabled = True
            row.save(update_fields=["enabled"])
            deadline, ready = time.monotonic() + 60, None
            while time.monotonic() < deadline:
                ready = _request(b, "GET", "/readyz")
                if ready[0] == 200:
                    break
                time.sleep(0.5)
        finally:
            processes.stop_all()
        logs = processes.logs()

    for name, samples in scraped.items():
        value = functools.partial(_value, samples)
        assert value("compaction_runs_total", trigger="manual", outcome="ok") == 1, (name, logs)
        assert value("compaction_duration_seconds_count", trigger="manual") == 1
        assert value("compaction_tokens_before_total") == compacted["tokens_before"]
        assert value("compaction_tokens_after_total") == compacted["tokens_after"]
        assert value("llm_calls_total", model="loopback-utility", role="utility", outcome="ok") == 1
        assert value("llm_calls_total", model="loopback-chat", role="chat", outcome="ok") == 2
        assert value("llm_call_duration_seconds_count", model="loopback-chat", role="chat") == 2
        assert value("llm_tokens_total", model="loopback-utility", direction="prompt") == 700
        assert value("llm_tokens_total", model="loopback-chat", direction="completion") == 12
        assert value("chat_replies_total", interface="api", stream="true", outcome="ok") == 1
        assert value("chat_replies_total", interface="v1", stream="false", outcome="ok") == 1
        assert value("reply_server_seconds_count", interface="api") == 1
        assert value("reply_server_seconds_count", interface="v1") == 1
        assert value("gateway_added_seconds_count") == 1
        assert value("search_queries_total") == 1
        assert value("search_duration_seconds_count") == 1
        assert value("compaction_leases_held") == 0
        assert value("compaction_budget_remaining") == 100
        assert value("process_cpu_seconds_total") > 0  # the scraped process's own collectors
    # Each process wrote its own files: the two web processes, and the cluster's.
    pids = {path.stem.rsplit("_", 1)[-1] for path in metrics_dir.glob("*.db")}
    assert len(pids) >= 3, sorted(path.name for path in metrics_dir.glob("*.db"))
    assert ready is not None and ready[0] == 200, (ready, logs)
    assert json.loads(ready[1])["checks"]["cluster"] == "ok"
