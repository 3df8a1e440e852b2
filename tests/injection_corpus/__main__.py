"""Sizes of the corpus per language, family and part, or every case as JSON lines.

.venv/bin/python -m tests.injection_corpus [--jsonl] [--split dev|test]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter

from tests.injection_corpus import FAMILIES, load

COLUMNS = (("injection", "dev"), ("injection", "test"), ("benign", "dev"), ("benign", "test"))


def _table(title: str, keys, counts: Counter, out) -> None:
    out.write(f"\n{title:<16}" + "".join(f"{label[:3]}/{part:<6}" for label, part in COLUMNS) + "\n")
    for key in keys:
        out.write(f"{key:<16}" + "".join(f"{counts[key, label, part]:>10}" for label, part in COLUMNS) + "\n")
    totals: Counter[tuple[str, str]] = Counter()
    for (_key, label, part), count in counts.items():
        totals[label, part] += count
    out.write(f"{'total':<16}" + "".join(f"{totals[column]:>10}" for column in COLUMNS) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.injection_corpus", description=__doc__.splitlines()[0])
    parser.add_argument("--jsonl", action="store_true", help="print every case as one JSON object a line")
    parser.add_argument("--split", choices=("dev", "test"), help="only this part")
    options = parser.parse_args(argv)
    cases = load(options.split)
    out = sys.stdout
    if options.jsonl:
        for case in cases:
            out.write(json.dumps(dataclasses.asdict(case), ensure_ascii=False) + "\n")
        return
    languages = sorted({case.language for case in cases})
    _table("language", languages, Counter((case.language, case.label, case.split) for case in cases), out)
    _table("family", FAMILIES, Counter((case.family, case.label, case.split) for case in cases), out)
    goals = sorted({case.goal for case in cases if case.label == "injection"})
    _table(
        "goal", goals, Counter((case.goal, case.label, case.split) for case in cases if case.label == "injection"), out
    )


if __name__ == "__main__":
    main()
