"""`manage.py redaction_eval` on a small corpus: the figures' shape, a known miss and a known false alarm."""

import json
from io import StringIO

from django.core.management import call_command

POSITIVE = [
    {
        "family": "provider_token",
        "kind": "aws",
        "text": "key AKIAIOSFODNN7EXAMPLE here",
        "secrets": ["AKIAIOSFODNN7EXAMPLE"],
    },
    {"family": "env_file", "kind": "db", "text": "DB_PASSWORD=p@ss;w0rd!x", "secrets": ["p@ss;w0rd!x"]},
    # Nothing marks this as a secret: it is the miss the figures must show.
    {"family": "keyword_prose", "kind": "bare", "text": "remember: tulip", "secrets": ["tulip"]},
]
NEGATIVE = "an ordinary line\n%%\nanother one, with a password=hunter22 that is not ordinary\nand a third\n"


def _run(tmp_path, *extra):
    (tmp_path / "positive.jsonl").write_text("\n".join(json.dumps(s) for s in POSITIVE) + "\n")
    (tmp_path / "negative").mkdir(exist_ok=True)
    (tmp_path / "negative" / "chat.txt").write_text(NEGATIVE)
    out = StringIO()
    call_command(
        "redaction_eval",
        "--corpus",
        str(tmp_path),
        "--locomo",
        "--no-code",
        "--speed-bytes",
        "20000",
        *extra,
        stdout=out,
    )
    return out.getvalue()


def test_json_figures(tmp_path):
    figures = json.loads(_run(tmp_path, "--json"))
    recall = figures["recall"]
    assert (recall["kinds"], recall["samples"], recall["secrets"]) == (3, 3, 3)
    assert recall["recall"] == 2 / 3
    assert recall["families"] == {
        "provider_token": {"kinds": 1, "secrets": 1, "recall": 1.0},
        "keyword_prose": {"kinds": 1, "secrets": 1, "recall": 0.0},
        "env_file": {"kinds": 1, "secrets": 1, "recall": 1.0},
    }
    assert [m["kind"] for m in recall["misses"]] == ["bare"]
    chat = figures["ordinary"]["sources"]["corpus:chat"]
    assert chat == {"messages": 2, "lines": 3, "altered": 1}
    assert figures["ordinary"]["sources"]["demo"]["altered"] == 0
    assert figures["sources"]["locomo"] == [] and figures["sources"]["project_source_files"] == 0
    for speed in (figures["speed"], figures["speed_technical"]):
        assert speed["messages"] > 0 and speed["batch_ms_per_mb"] > 0 and speed["single_text_ms_per_mb"] > 0
        assert speed["batch_ms_per_mb_cal"] == round(speed["batch_ms_per_mb"] / figures["calibration_ms"], 5)
    assert figures["calibration_ms"] > 0 and figures["load_average"] >= 0


def test_table(tmp_path):
    text = _run(tmp_path)
    assert "recall: 0.6667 overall — 3 secrets, 3 kinds" in text
    assert "LoCoMo: not found" in text
    assert "missed keyword_prose/bare: 'remember: tulip'" in text
    assert "speed (chat):" in text and "speed (developers' chat):" in text
    assert "cal per MB as a compaction redacts" in text and "calibration: " in text


def _heldout(tmp_path, *, test_kind="unseen"):
    folder = tmp_path / "heldout"
    folder.mkdir()
    secret = {"family": "f", "kind": "seen", "text": "DB_PASSWORD=p@ss;w0rd!x", "secrets": ["p@ss;w0rd!x"]}
    unseen = {"family": "f", "kind": test_kind, "text": "remember: tulip", "secrets": ["tulip"]}
    (folder / "secrets_dev.jsonl").write_text(json.dumps(secret) + "\n")
    (folder / "secrets_test.jsonl").write_text(json.dumps(unseen) + "\n")
    lookalike = {"family": "p", "kind": "pk", "text": "NEXT_PUBLIC_STRIPE_KEY=pk_test_TYooMQauvdEDq54NiTphI7jx"}
    altered = {"family": "p", "kind": "odd", "text": "password=hunter22x"}
    (folder / "lookalikes_dev.jsonl").write_text(json.dumps(lookalike) + "\n")
    (folder / "lookalikes_test.jsonl").write_text(json.dumps(altered) + "\n")


def test_heldout_parts_reported_separately_test_part_without_cases(tmp_path):
    _heldout(tmp_path)
    figures = json.loads(_run(tmp_path, "--json"))["heldout"]
    assert (figures["dev"]["recall"], figures["dev"]["lookalikes_altered_share"]) == (1.0, 0.0)
    assert (figures["test"]["recall"], figures["test"]["lookalikes_altered"]) == (0.0, 1)
    assert "misses" not in figures["test"] and "altered_examples" not in figures["test"]
    assert figures["goals"]["recall_unseen_kinds"] == {"goal": 0.98, "figure": 0.0, "met": False}
    assert figures["goals"]["ordinary_chat_altered"]["met"] is True
    text = _run(tmp_path)
    assert "test  recall 0.0000 (1 secrets, 1 kinds); look-alikes altered 1 of 1 (100.00%, 1 kinds)" in text
    assert "goal recall_unseen_kinds: 0.0000 against 0.98 — NOT met" in text
    assert "tulip" not in text.split("held-out corpus")[1]


def test_heldout_kinds_must_not_cross_parts(tmp_path):
    import pytest

    _heldout(tmp_path, test_kind="seen")
    with pytest.raises(ValueError, match="in both parts"):
        _run(tmp_path, "--json")


def test_without_heldout_corpus_the_section_says_so(tmp_path):
    assert json.loads(_run(tmp_path, "--json"))["heldout"] is None
    assert "held-out corpus: not found" in _run(tmp_path)
