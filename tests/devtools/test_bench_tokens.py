"""The tokens and compaction benchmark scenarios and the chart, end to end at a tiny scale.

Only the shape of what they print and return is checked: speed goals are
benchmark figures, never test assertions.
"""

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from chatcore.models import AuditEntry, Channel, LLMModel, Message, ModelRole, Summary, UsageEntry
from chatcore.tokens import count_tokens, estimate_tokens
from devtools.benchmarks import chart, tokens

TURNS = [
    ("Caroline", "I went to the LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "Wow, that's cool, Caroline! What happened that was so awesome?"),
    ("Caroline", "The transgender stories were so inspiring! I was so happy and thankful."),
    ("Melanie", "Sounds like a great experience. I painted a sunrise last year, on 8 May 2023."),
]


@pytest.fixture
def locomo(tmp_path, monkeypatch):
    """Two conversations in LoCoMo's own format, found through the environment variable."""
    for name in ("1", "2"):
        data = {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t} for i, (s, t) in enumerate(TURNS)],
            "session_2_date_time": "1:14 pm on 25 May, 2023",
            "session_2": [
                {
                    "speaker": "Melanie",
                    "dia_id": "D2:1",
                    "text": "Look at this.",
                    "img_url": ["https://example.com/p.jpg"],
                    "blip_caption": "a photo of a lake",
                }
            ],
            "qa": [],
        }
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    monkeypatch.setenv(tokens.ENV_VAR, str(tmp_path))
    return tmp_path


def test_tokens_scenario_reports_speed_and_error_against_the_tokenizer(locomo):
    out = io.StringIO()

    figures = tokens.run(scale=0.01, stdout=out)

    expected_messages = [t for _, t in TURNS] + ["Look at this. [shares a photo: a photo of a lake]"]
    exact = sum(count_tokens(m) for m in expected_messages)
    estimate = sum(estimate_tokens(m) for m in expected_messages)
    assert figures["tokenizer"] == "o200k_base"
    assert figures["messages"] == 10
    assert figures["tokenizer_mb_per_s"] > 0 and figures["estimate_mb_per_s"] > 0
    assert figures["conversations"] == [
        {
            "conversation": name,
            "messages": 5,
            "tokens": exact,
            "estimate": estimate,
            "error": (estimate - exact) / exact,
        }
        for name in ("1", "2")
    ]
    assert figures["conversation_error_max"] == pytest.approx(abs(estimate - exact) / exact)
    assert 0 <= figures["message_error_mean"] <= figures["message_error_max"]
    text = out.getvalue()
    assert "tokenizer (o200k_base)" in text and "estimate (4 bytes/token)" in text
    assert "whole conversations" in text


def test_tokens_scenario_says_where_to_find_missing_data(tmp_path, monkeypatch):
    from django.core.management.base import CommandError

    monkeypatch.setenv(tokens.ENV_VAR, str(tmp_path))
    with pytest.raises(CommandError, match="No LoCoMo files"):
        tokens.run(scale=0.01, stdout=io.StringIO())


def test_chart_draws_a_png_with_a_panel_per_scenario(tmp_path):
    results = {
        "tokens": {
            "tokenizer": "o200k_base",
            "tokenizer_mb_per_s": 5.0,
            "estimate_mb_per_s": 300.0,
            "message_error_mean": 0.14,
            "message_error_max": 0.5,
            "conversation_error_max": 0.16,
        },
        "context": {
            "rows": [
                {"messages": 100, "ours_ms": 1.0, "baseline_ms": 2.0},
                {"messages": 100_000, "ours_ms": 1.2, "baseline_ms": 900.0},
            ]
        },
        "other": {"note": "no rows", "value": 3},
    }

    path = chart.chart_write(results=results, path=tmp_path / "out" / "chart.png")

    assert path == tmp_path / "out" / "chart.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def run_bench(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("compaction_bench", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_command_draws_the_chart_under_var_bench_by_default(locomo, db, settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"

    out, _ = run_bench("--scenario", "tokens", "--scale", "0.01")

    chart_path = tmp_path / "var" / "bench" / "compaction_bench.png"
    assert f"chart: {chart_path}" in out
    assert chart_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_command_runs_the_tokens_scenario_as_json(locomo, db):
    out, err = run_bench("--scenario", "tokens", "--scale", "0.01", "--json", "--no-chart")

    figures = json.loads(out)
    assert figures["scale"] == 0.01 and list(figures["scenarios"]) == ["tokens"]
    tokens_figures = figures["scenarios"]["tokens"]
    assert tokens_figures["messages"] == 10
    assert [c["conversation"] for c in tokens_figures["conversations"]] == ["1", "2"]
    assert {
        "tokenizer_mb_per_s",
        "estimate_mb_per_s",
        "message_error_mean",
        "message_error_max",
        "conversation_error_mean",
        "conversation_error_max",
    } <= set(tokens_figures)
    assert "tokens: LoCoMo text, 10 messages" in err


def test_command_data_option_points_at_the_locomo_directory(locomo, db, monkeypatch):
    monkeypatch.delenv(tokens.ENV_VAR)

    out, _ = run_bench("--scenario", "tokens", "--scale", "0.01", "--json", "--no-chart", "--data", str(locomo))

    assert json.loads(out)["scenarios"]["tokens"]["messages"] == 10


def _row_counts() -> tuple[int, ...]:
    """How many rows each table a benchmark might write to holds (a benchmark must leave them as they were)."""
    models = (get_user_model(), Channel, Message, Summary, UsageEntry, AuditEntry, LLMModel)
    return tuple(model.objects.count() for model in models)


def test_command_runs_the_compaction_scenario_and_leaves_nothing_behind(db, tmp_path):
    offline = LLMModel.objects.create(name="site-offline", provider=LLMModel.Provider.OFFLINE, api_key_env="")
    ModelRole.objects.create(role=ModelRole.Role.UTILITY, primary=offline)
    before = _row_counts()

    out, err = run_bench(
        "--scenario", "compaction", "--scale", "0.01", "--json", "--chart", str(tmp_path / "bench.png")
    )

    result = json.loads(out)["scenarios"]["compaction"]
    assert [row["messages"] for row in result["rows"]] == [6, 50]
    timings = {
        "offline_total_ms",
        "offline_summarizer_ms",
        "offline_overhead_ms",
        "offline_cpu_ms",
        "loopback_total_ms",
        "loopback_call_ms",
        "loopback_overhead_ms",
        "loopback_cpu_ms",
    }
    for row in result["rows"]:
        assert set(row) == {f"{name}_cal" for name in timings} | {
            "messages",
            "offline_total_ms",
            "offline_summarizer_ms",
            "offline_overhead_ms",
            "offline_queries",
            "offline_cpu_ms",
            "loopback_total_ms",
            "loopback_call_ms",
            "loopback_overhead_ms",
            "loopback_queries",
            "loopback_cpu_ms",
            "summary_tokens",
        }
        assert row["offline_queries"] == row["loopback_queries"] == result["queries_min"]
    assert result["queries_flat"] is True and result["queries_min"] > 5
    assert "query count flat across sizes" in err
    assert (tmp_path / "bench.png").read_bytes()[:4] == b"\x89PNG"
    assert _row_counts() == before
    role = ModelRole.objects.get(role=ModelRole.Role.UTILITY)
    assert (role.primary, role.fallback) == (offline, None)
