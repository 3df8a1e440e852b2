"""The tokens and compaction benchmark scenarios and the chart, end to end at a tiny scale.

Only the shape of what they print and return is checked: speed goals are
benchmark figures, never test assertions.
"""

import io
import json

import pytest

from chatcore.tokens import count_tokens, estimate_tokens
from compaction.benchmarks import chart, tokens

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
            "speaker_a": "Caroline", "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t} for i, (s, t) in enumerate(TURNS)],
            "session_2_date_time": "1:14 pm on 25 May, 2023",
            "session_2": [{"speaker": "Melanie", "dia_id": "D2:1", "text": "Look at this.",
                           "img_url": ["https://example.com/p.jpg"], "blip_caption": "a photo of a lake"}],
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
        {"conversation": name, "messages": 5, "tokens": exact, "estimate": estimate,
         "error": (estimate - exact) / exact}
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
        "tokens": {"tokenizer": "o200k_base", "tokenizer_mb_per_s": 5.0, "estimate_mb_per_s": 300.0,
                   "message_error_mean": 0.14, "message_error_max": 0.5, "conversation_error_max": 0.16},
        "context": {"rows": [{"messages": 100, "ours_ms": 1.0, "baseline_ms": 2.0},
                             {"messages": 100_000, "ours_ms": 1.2, "baseline_ms": 900.0}]},
        "other": {"note": "no rows", "value": 3},
    }

    path = chart.chart_write(results=results, path=tmp_path / "out" / "chart.png")

    assert path == tmp_path / "out" / "chart.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
