"""The labelled corpus of tests/redaction_corpus/ (generated values, never real secrets): the recall
redaction must keep, held as a regression test. `manage.py redaction_eval` prints the same figures and the speed."""

import json
from pathlib import Path

from devtools import redaction_eval as evaluation

CORPUS = Path(__file__).resolve().parents[2] / "redaction_corpus"


def test_recall_on_the_labelled_corpus():
    samples = evaluation.load_positive(sorted(CORPUS.glob("positive*.jsonl")))
    figures = evaluation.recall(samples)
    assert figures["kinds"] >= 150
    assert len(figures["families"]) >= 9
    assert figures["recall"] >= 0.99, figures["misses"][:5]
    assert {family: row["recall"] for family, row in figures["families"].items() if row["recall"] < 0.95} == {}


def test_ordinary_lines_stay():
    sources = {path.stem: evaluation.file_messages([path]) for path in sorted((CORPUS / "negative").glob("*.txt"))}
    sources["demo"] = evaluation.demo_messages()
    figures = evaluation.altered(sources)
    assert figures["lines"] > 600
    assert figures["share"] <= 0.002, figures["examples"][:5]


def test_red_team_probes_all_caught_and_their_ordinary_lines_stay():
    """The held-out probes written by a red team before it read the detectors (positive_redteam.jsonl) and
    the ordinary lines it expected to be hit falsely (negative/redteam.txt): every one right, as when landed."""
    figures = evaluation.recall(evaluation.load_positive([CORPUS / "positive_redteam.jsonl"]))
    assert figures["secrets"] >= 300
    assert [(miss["kind"], miss["out"]) for miss in figures["misses"]] == []
    ordinary = evaluation.altered({"redteam": evaluation.file_messages([CORPUS / "negative" / "redteam.txt"])})
    assert ordinary["lines"] >= 100
    assert ordinary["examples"] == []


HELDOUT = CORPUS / "heldout"


def test_heldout_corpus_is_what_its_generator_writes_and_is_split_by_kind():
    from tests.redaction_corpus.heldout import generate
    from tests.redaction_corpus.values import Values

    values = Values(generate.SEED)
    written = {
        name: rows
        for name, rows in (("secrets", generate.secrets(values)), ("lookalikes", generate.lookalikes(values)))
    }
    kinds = {}
    for name, rows in written.items():
        for part in ("dev", "test"):
            stored = (HELDOUT / f"{name}_{part}.jsonl").read_text(encoding="utf-8").splitlines()
            assert [json.loads(line) for line in stored] == [row for row in rows if generate.part(row["kind"]) == part]
            kinds.setdefault(part, set()).update(json.loads(line)["kind"] for line in stored)
    assert not kinds["dev"] & kinds["test"]
    assert len({row["kind"] for row in written["secrets"]}) >= 250
    assert len(written["lookalikes"]) >= 300


def test_heldout_development_part_holds_its_level():
    """The part the detector is tuned on; the test part's figures are read in `redaction_eval`, never its cases."""
    figures = evaluation.heldout(HELDOUT)
    assert figures is not None
    dev = figures["dev"]
    assert dev["recall"] >= 0.95, [(miss["kind"], miss["out"]) for miss in dev["misses"]][:10]
    assert dev["lookalikes_altered_share"] <= 0.02, [row["redacted"] for row in dev["altered_examples"]][:10]
    assert set(figures["test"]) >= {"recall", "lookalikes_altered_share"} and "misses" not in figures["test"]
