"""One spelling throughout: US English ("Summarize", as in the button name
"Summarize & Continue", which is a contract) in the pages, the messages and
the docs. Word lists that must match what people type (the injection phrases in
compaction/lexicon.py and compaction/safety, the redaction patterns) and
conversation data are exempt."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXEMPT = ("compaction/lexicon.py", "compaction/safety", "compaction/redaction", "chatcore/demo.py")
BRITISH = re.compile(r"\b(?:[Ss]ummaris(?:e|ed|es|ing|er|ers|ation)|[Bb]ehaviour|[Rr]ecognis(?:e|ed|es|ing))\b")


def _files():
    yield ROOT / "README.md"
    yield from ROOT.glob("docs/**/*.md")
    for pattern in (
        "templates/**/*.html",
        "chatcore/templates/**/*.html",
        "compaction/templates/**/*.html",
        "chatcore/**/*.py",
        "compaction/**/*.py",
        "devtools/**/*.py",
        "project/**/*.py",
    ):
        for path in ROOT.glob(pattern):
            relative = path.relative_to(ROOT).as_posix()
            if not relative.startswith(EXEMPT) and "/migrations/" not in relative:
                yield path


def test_us_spelling_in_pages_messages_and_docs():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
        for path in _files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for match in BRITISH.finditer(line)
    ]
    assert not found, "Use US spelling (Summarize, summarized, behavior, recognize):\n" + "\n".join(found)
