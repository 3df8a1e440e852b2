"""The serving benchmark's model server (its timeline and OpenAI-compatible chunks) and chart panel."""

import subprocess
import sys
import time

import openai
import pytest

from devtools.benchmarks.chart import chart_write


@pytest.fixture
def model_port():
    process = subprocess.Popen(
        [sys.executable, "-m", "devtools.serving_model", "--first-token", "0.2", "--tokens", "11", "--rate", "50"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield int(process.stdout.readline().split()[-1])
    finally:
        process.kill()
        process.wait()


def test_the_model_streams_on_its_timeline(model_port):
    client = openai.OpenAI(api_key="x", base_url=f"http://127.0.0.1:{model_port}/v1")
    started = time.monotonic()
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True, stream_options={"include_usage": True}
    )
    pieces, arrivals, usage = [], [], None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
            arrivals.append(time.monotonic() - started)
        if chunk.usage:
            usage = chunk.usage
    assert "".join(pieces) == "word " * 11
    assert arrivals[0] >= 0.2 and arrivals[-1] >= 0.2 + 10 / 50
    assert usage.completion_tokens == 11
    whole = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert whole.choices[0].message.content == "word " * 11


def test_the_chart_has_a_serving_panel(tmp_path):
    row = {"concurrency": 50, "per_second": 45.0, "added_first_ms": {"p50": 5, "p95": 9, "p99": 12}, "load_before": 1}
    rows = [{**row, "server": server} for server in ("uvicorn", "runserver")]
    path = chart_write(results={"serving": {"latency": 1.0, "rows": rows}}, path=tmp_path / "serving.png")
    assert path.stat().st_size > 10_000
