"""The per-language components, read from languages/<code>.toml.

Each file holds what must be written by hand in that language: the injected instructions, the
frames that carry them (polite openers, addresses to the summarizer, role-play set-ups, decode
requests, two-turn splits), the pieces of documents, the ordinary exchanges placed around a case,
and the benign look-alikes. What is the same in every language (JSON, YAML, HTML, tool results)
lives in carriers.py.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import tomllib
from pathlib import Path

DIRECTORY = Path(__file__).with_name("languages")
SPLIT_MARK = "||"
SLOTS = ("code", "word", "host", "user")
SLOT_RE = re.compile(r"\{(" + "|".join(SLOTS) + r")\}")
GOALS = ("insert_claim", "approve", "omit", "exfiltrate", "behaviour", "privilege")
# Scripts whose letters have look-alikes in another script (encodings.HOMOGLYPHS) and where
# letter-substitution disguises (rot13, leetspeak) change the text.
LATIN = "latin"
LABEL_KEYS = (
    "summary_so_far",
    "user_instructions",
    "tool_output",
    "function_returned",
    "subject_label",
    "source",
    "ack",
    "lookup",
    "log_question",
    "code_question",
    "dataset_question",
)
FRAME_KEYS = ("polite", "address", "roleplay", "decode", "split", "urgent")
DOC_KEYS = ("intro", "subject", "greeting", "body", "closing", "title")
BENIGN_KEYS = (
    "request",
    "correction",
    "about",
    "discussion",
    "manual",
    "translation",
    "roleplay",
    "polite_tail",
    "addressed",
    "recap",
    "split",
    "notes",
    "data",
    "decode",
)


@dataclasses.dataclass(frozen=True)
class Injection:
    """One phrasing of an instruction; `text` holds SPLIT_MARK where a two-turn split cuts it."""

    id: str
    goal: str
    text: str

    @property
    def slot(self) -> str:
        match = SLOT_RE.search(self.text)
        if match is None:
            raise ValueError(f"{self.id} has no payload slot")
        return match.group(1)


@dataclasses.dataclass(frozen=True)
class Language:
    code: str
    name: str
    script: str
    labels: dict[str, str]
    context: tuple[tuple[str, str], ...]
    injections: tuple[Injection, ...]
    frames: dict[str, tuple]
    doc: dict[str, tuple[str, ...]]
    benign: dict[str, tuple]

    @property
    def latin(self) -> bool:
        return self.script == LATIN


def _tuple(value):
    return tuple(_tuple(item) for item in value) if isinstance(value, list) else value


def parse(path: Path) -> Language:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    code = data["code"]
    if path.stem != code:
        raise ValueError(f"{path.name} declares code {code!r}")
    missing = [
        f"{section}.{key}"
        for section, keys in (
            ("labels", LABEL_KEYS),
            ("frames", FRAME_KEYS),
            ("doc", DOC_KEYS),
            ("benign", BENIGN_KEYS),
        )
        for key in keys
        if key not in data.get(section, {})
    ]
    if missing:
        raise ValueError(f"{path.name} lacks {', '.join(missing)}")
    injections = tuple(
        Injection(id=f"{code}.inject.{index:02d}", goal=entry["goal"], text=entry["text"])
        for index, entry in enumerate(data["inject"])
    )
    return Language(
        code=code,
        name=data["name"],
        script=data["script"],
        labels={key: data["labels"][key] for key in LABEL_KEYS},
        context=tuple((entry["user"], entry["assistant"]) for entry in data["context"]),
        injections=injections,
        frames={key: _tuple(data["frames"][key]) for key in FRAME_KEYS},
        doc={key: _tuple(data["doc"][key]) for key in DOC_KEYS},
        benign={key: _tuple(value) for key, value in data["benign"].items()},
    )


@functools.cache
def languages() -> tuple[Language, ...]:
    """Every language of the corpus, by code."""
    return tuple(parse(path) for path in sorted(DIRECTORY.glob("*.toml")))
