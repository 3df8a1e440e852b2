"""The docs stay true to the code: every module path and dotted name the Architecture and Design pages
name exists, and the README stays an introduction (short, with no issue numbers)."""

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("docs/architecture.md", "docs/design.md")
# The README fits on a screen or two; the documentation is the docs site.
README_MAX_LINES = 200
TOP_LEVEL = ("chatcore", "compaction", "devtools", "project", "tests", "templates", "docs")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^[\w./-]+(?:\.py|\.sh|\.toml|\.txt|\.md|/)$")
DOTTED = re.compile(r"^(?:chatcore|compaction|devtools|project)(?:\.\w+)+")
REPOSITORY_FILES = [path.relative_to(ROOT).as_posix() for path in ROOT.rglob("*") if ".venv" not in path.parts]


def _spans(page: str) -> list[str]:
    return CODE_SPAN.findall((ROOT / page).read_text())


def _path_exists(name: str) -> bool:
    """A path from the repository's root, or the tail of one (`scanner/tick.py` inside compaction/)."""
    name = name.rstrip("/")
    if name.split("/")[0] in TOP_LEVEL:
        return (ROOT / name).exists()
    return any(path == name or path.endswith("/" + name) for path in REPOSITORY_FILES)


def _dotted_exists(name: str) -> bool:
    """The longest importable module prefix, then each remaining part an attribute of what came before."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


@pytest.mark.parametrize("page", PAGES)
def test_every_module_path_a_page_names_exists(page):
    # A span that starts with a slash is a URL path (`/api/`); var/ holds what runs write (ignored by git).
    paths = [span for span in _spans(page) if PATH.match(span) and "/" in span and not span.startswith(("/", "var/"))]
    assert paths, f"{page} names no module path: the test would prove nothing"
    assert [name for name in paths if not _path_exists(name)] == []


@pytest.mark.parametrize("page", PAGES)
def test_every_dotted_name_a_page_names_exists(page):
    names = [match.group(0) for span in _spans(page) if (match := DOTTED.match(span))]
    missing = [name for name in names if not _dotted_exists(name)]
    assert missing == []


def test_the_readme_is_short_and_names_no_issue():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES
    assert [line for line in lines if re.search(r"issue [0-9]", line, re.IGNORECASE)] == []


def test_no_page_of_the_docs_names_an_issue():
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "docs").rglob("*.md"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"issue [0-9]", line, re.IGNORECASE)
    ]
    assert found == []
