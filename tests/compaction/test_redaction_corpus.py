"""The labelled corpus of tests/redaction_corpus/ (generated values, never real secrets): the bar of
issue 11, held as a regression test. `manage.py redaction_eval` prints the same figures and the speed."""

from pathlib import Path

from devtools import redaction_eval as evaluation

CORPUS = Path(__file__).resolve().parents[1] / "redaction_corpus"


def test_recall_on_the_labelled_corpus():
    samples = evaluation.load_positive([CORPUS / "positive.jsonl"])
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
