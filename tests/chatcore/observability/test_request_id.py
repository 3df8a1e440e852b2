"""The request id: made or taken from a trusted proxy, returned in X-Request-ID, in the request's JSON log
lines, carried into the tasks it enqueues and sent upstream with the model calls it makes."""

import io
import json
import logging
import os
import subprocess
import sys

import pytest
from django.urls import reverse
from django_q.signals import pre_enqueue, pre_execute

from chatcore.observability.context import current_request_id, work_begin, work_end
from chatcore.observability.logs import JsonFormatter, RequestContextFilter
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory
from tests.chatcore.test_streaming import post_stream
from tests.servers import ROOT


@pytest.fixture
def json_lines():
    """What the chatcore and compaction loggers write through the JSON formatter, as parsed objects."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestContextFilter())
    loggers = [logging.getLogger(name) for name in ("chatcore", "compaction")]
    for logger in loggers:
        logger.addHandler(handler)
    yield lambda: [json.loads(line) for line in buffer.getvalue().splitlines()]
    for logger in loggers:
        logger.removeHandler(handler)


@pytest.mark.django_db
def test_one_id_in_the_response_header_the_json_log_line_and_the_upstream_request(
    api, user, chat_model, llm_server, json_lines
):
    channel = ChannelFactory(owner=user, model=chat_model)
    llm_server.script(Reply(content="Use a rolling restart.", prompt_tokens=40, completion_tokens=5))
    response = api.post(reverse("chat_api:reply", args=[channel.pk]), {"content": "How to deploy?"}, format="json")
    assert response.status_code == 201, response.json()
    request_id = response["X-Request-ID"]
    assert len(request_id) == 32 and int(request_id, 16) >= 0  # made here: a UUID's hex
    assert llm_server.request_ids == [request_id]
    [line] = [entry for entry in json_lines() if entry["logger"] == "chatcore.requests"]
    assert set(line) == {"time", "level", "logger", "message", "request_id", "user_id", "channel_id", "duration_ms"}
    assert (line["level"], line["message"], line["request_id"]) == (
        "INFO",
        f"POST /api/channels/{channel.pk}/reply/ 201",
        request_id,
    )
    assert (line["user_id"], line["channel_id"]) == (user.pk, channel.pk)
    assert line["duration_ms"] > 0 and line["time"].endswith("+00:00")


@pytest.mark.django_db
def test_a_streamed_reply_sends_the_id_upstream_as_a_header(api, user, chat_model, llm_server):
    channel = ChannelFactory(owner=user, model=chat_model)
    events = post_stream(api, channel, {"content": "How to deploy?", "stream": True})
    assert events[-1][0] == "done"
    assert len(llm_server.request_ids) == 1 and len(llm_server.request_ids[0]) == 32
    assert "extra_headers" not in llm_server.requests[0]  # a header, not a field of the body


@pytest.mark.django_db
def test_a_trusted_proxy_s_id_is_kept_and_reaches_the_model(api, user, chat_model, llm_server, settings):
    settings.CHATCORE_REQUEST_ID_TRUSTED_PROXIES = ["10.0.0.0/8"]
    channel = ChannelFactory(owner=user, model=chat_model)
    url = reverse("chat_api:reply", args=[channel.pk])
    response = api.post(url, {"content": "Hi"}, format="json", REMOTE_ADDR="10.1.2.3", HTTP_X_REQUEST_ID="edge-7f3a.42")
    assert (response.status_code, response["X-Request-ID"]) == (201, "edge-7f3a.42")
    assert llm_server.request_ids == ["edge-7f3a.42"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("remote", "sent"),
    [
        ("192.168.1.9", "forged-by-a-client"),  # not a listed proxy
        ("10.1.2.3", "spaces are not allowed"),
        ("10.1.2.3", "x" * 129),  # too long for a log field
    ],
)
def test_an_id_from_elsewhere_or_unusable_is_replaced(client, settings, remote, sent):
    settings.CHATCORE_REQUEST_ID_TRUSTED_PROXIES = ["10.0.0.0/8"]
    response = client.get("/healthz", REMOTE_ADDR=remote, HTTP_X_REQUEST_ID=sent)
    assert response.status_code == 200
    assert response["X-Request-ID"] != sent and len(response["X-Request-ID"]) == 32


def test_a_task_runs_under_the_id_of_the_request_that_enqueued_it():
    """django-q2's own signals around `async_task` and the worker: the package carries the id."""
    work_begin(request_id="req-123")
    task = {"id": "t1", "func": "compaction.tasks.scan", "args": (), "kwargs": {}}
    pre_enqueue.send(sender="django_q", task=task)
    assert task["request_id"] == "req-123"
    work_end()
    pre_execute.send(sender="django_q", func=None, task=task)  # in the worker process
    assert current_request_id() == "req-123"
    pre_execute.send(sender="django_q", func=None, task={"id": "t2"})  # a scheduled task: an id of its own
    assert current_request_id() not in ("", "req-123")
    work_end()


def test_log_format_json_writes_one_object_per_line():
    """The setting as an operator uses it: LOG_FORMAT=json in the environment of a process."""
    code = (
        "import django, logging; django.setup(); "
        "from chatcore.observability.context import work_begin; work_begin(request_id='abc-1'); "
        "logging.getLogger('compaction.scanner').warning('tick: %d candidates', 3)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings", "LOG_FORMAT": "json"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    [line] = done.stderr.strip().splitlines()
    entry = json.loads(line)
    assert {key: entry[key] for key in ("level", "logger", "message", "request_id")} == {
        "level": "WARNING",
        "logger": "compaction.scanner",
        "message": "tick: 3 candidates",
        "request_id": "abc-1",
    }
    text = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**env, "LOG_FORMAT": "text"}, capture_output=True, text=True
    )
    assert text.stderr.strip().endswith("WARNING compaction.scanner [abc-1] tick: 3 candidates")


@pytest.mark.django_db
def test_probes_are_logged_at_debug_and_other_requests_at_info(client, caplog):
    caplog.set_level(logging.DEBUG, logger="chatcore.requests")
    for path in ("/healthz", "/readyz", "/metrics", "/login/"):
        client.get(path)
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "chatcore.requests"] == [
        ("DEBUG", "GET /healthz 200"),
        ("DEBUG", "GET /readyz 200"),
        ("DEBUG", "GET /metrics 200"),
        ("INFO", "GET /login/ 200"),
    ]
