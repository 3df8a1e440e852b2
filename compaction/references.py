"""Files, URLs, commands and identifiers — only when they are what they say.

A summary's reference list is useless when it lists `req/s` as a file or a
bare "10" as a number. Here a path must look like one (a known extension,
or directories that read as directories), a command is what was run (a tool
call's command, or code written as a command line), and an identifier has
the shape of code (snake_case, CamelCase, a ticket id, a version, a commit
next to the word commit). Used by the offline summarizer's references
section and by fact pinning for every summarizer.
"""

from __future__ import annotations

import re

from compaction import lexicon

_KNOWN_DIRS = frozenset(
    """src lib app apps docs doc tests test spec config configs deploy scripts bin etc var tmp home usr opt srv
build dist static templates migrations k8s charts infra tools cmd pkg internal api web public assets data
loadtest .github""".split()
)
_EXTENSION_RE = re.compile(
    r"\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|c|h|cc|cpp|hpp|cs|php|sh|sql|md|rst|txt|json|ya?ml|toml|ini|cfg|conf|"
    r"env|html|css|scss|lock|xml|csv|ipynb|dockerfile|tf|proto|log|png|jpe?g|gif|svg|pdf|zip|gz|tar|whl)$",
    re.IGNORECASE,
)
_COMMANDS = frozenset(
    """git make pip pip3 python python3 pytest kubectl docker curl wget npm npx yarn pnpm ruff mypy k6 helm terraform
bash sh zsh psql redis-cli cargo go uv poetry node deno java mvn gradle ssh scp rsync ls cat head tail grep find
sed awk jq systemctl journalctl promtool reuse pip-audit pip-compile time export cd mkdir rm cp mv tar gzip
./manage.py manage.py django-admin alembic flask uvicorn gunicorn celery aws gcloud az""".split()
)
_CODE_SPAN_RE = re.compile(r"`([^`\n]{2,200})`")
_HEX_RE = re.compile(r"^[0-9a-f]{7,40}$")


MIN_PATH_CHARS = 3  # "a/b": anything shorter is a fraction or a unit
MIN_SEGMENT_CHARS = 2  # a one-letter segment reads as "w/o", "n/a" or "and/or", not a directory
ROOTED_SEGMENTS = 2  # "/etc/hosts", "./run.sh": a path from a root needs this many segments
BARE_SEGMENTS = 3  # "api/v2/users": a path from nowhere needs this many, unless its words look like files
MIN_IDENTIFIER_CHARS = 3  # shorter code-shaped words ("id", "db") are ordinary words


def is_path(value: str) -> bool:
    """Whether `value` reads as a file or directory path rather than a fraction, a unit or 'and/or'."""
    value = value.rstrip(".,;:")
    if "://" in value or len(value) < MIN_PATH_CHARS:
        return False
    if _EXTENSION_RE.search(value):
        return True
    segments = [s for s in value.split("/") if s not in ("", ".", "..", "~")]
    if not segments or any(len(s) < MIN_SEGMENT_CHARS for s in segments) or "/" not in value:
        return False
    if value.startswith(("/", "./", "../", "~/")) and len(segments) >= ROOTED_SEGMENTS:
        return True
    if value.endswith("/") or segments[0] in _KNOWN_DIRS:
        return True
    return len(segments) >= BARE_SEGMENTS or any("_" in s or "-" in s or "." in s for s in segments)


def find_files(text: str) -> list[str]:
    return [path.rstrip(".,;:") for path in lexicon.find_paths(text) if is_path(path)]


def is_command(value: str) -> bool:
    """Whether a code span or a tool argument is a command line: a known program, or a script, then arguments."""
    words = value.strip().lstrip("$ ").split()
    if not words:
        return False
    program = words[0]
    return program in _COMMANDS or program.startswith(("./", "scripts/", "bin/"))


def find_commands(text: str) -> list[str]:
    return [span.strip().lstrip("$ ") for span in _CODE_SPAN_RE.findall(text) if is_command(span)]


def is_identifier(value: str) -> bool:
    """An identifier with the shape of code (lexicon finds a hex string only next to 'commit', 'sha' or 'hash')."""
    if is_path(value) or len(value) < MIN_IDENTIFIER_CHARS:
        return False
    return not (_HEX_RE.match(value) and value.isdigit())


def find_identifiers(text: str) -> list[str]:
    found = []
    for value in lexicon.find_identifiers(text):
        value = value.strip("`")
        if value and is_identifier(value) and not is_command(value):
            found.append(value)
    return found
