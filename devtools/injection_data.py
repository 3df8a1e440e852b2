"""Where the injection detector's labelled cases and ordinary chat come from, for training and evaluation.

The labelled cases are the injection corpus (`tests.injection_corpus`): injections and benign look-alikes in many
languages and disguises, each a short exchange (`turns`) whose `target` turns carry the case, split by family
and language into a development part (`dev`, the only part the detector is trained or tuned on) and a test part
(`test`, read only by `injection_eval` for its aggregate figures). Ordinary chat is what people write with no
intent to instruct anyone: LoCoMo's conversations and the demo data.

Until the corpus is in the tree, a handful of cases written in its format (`FALLBACK_CASES`) stand in for the
development part, so that the commands and their tests run; they say so in their output.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable

SPLITS = ("dev", "test")


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    label: str  # "injection" or "benign"
    family: str
    language: str
    split: str
    turns: tuple[tuple[str, str], ...]  # (role, content)
    target: tuple[int, ...]  # the turns that carry it
    payload: str = ""  # a phrase whose appearance in a summary means the instruction got through
    group: str = ""  # the phrasing it was made from: cases of one group fall in the same fold when training
    text: str = ""  # the instruction (or benign text) before any disguise or frame

    @property
    def injection(self) -> bool:
        return self.label == "injection"

    @property
    def texts(self) -> list[str]:
        return [content for _, content in self.turns]


def _case(raw) -> Case:
    get = raw.get if isinstance(raw, dict) else lambda key, default=None: getattr(raw, key, default)
    turns = tuple(
        (turn["role"], turn["content"]) if isinstance(turn, dict) else (turn.role, turn.content)
        for turn in get("turns")
    )
    return Case(
        id=str(get("id")),
        label=str(get("label")),
        family=str(get("family")),
        language=str(get("language")),
        split=str(get("split")),
        turns=turns,
        target=tuple(int(index) for index in get("target") or ()),
        payload=str(get("payload") or ""),
        group=str(get("group") or get("id")),
        text=str(get("text") or ""),
    )


def corpus():
    """The corpus package, or None when it is not in the tree yet."""
    try:
        return importlib.import_module("tests.injection_corpus")
    except ImportError:
        return None


def cases(split: str) -> tuple[list[Case], str]:
    """(the cases of `split`, where they came from)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    package = corpus()
    if package is not None:
        return [_case(raw) for raw in package.load(split=split)], "tests.injection_corpus"
    if split == "test":
        return [], "no test part: tests.injection_corpus is not in the tree"
    from devtools.injection_samples import FALLBACK_CASES

    return [_case(raw) for raw in FALLBACK_CASES], "devtools.injection_samples (the corpus is not in the tree)"


Turn = tuple[str, str]  # (role, content)


def _turn(turn, index: int) -> Turn:
    if isinstance(turn, str):
        return ("user" if index % 2 == 0 else "assistant", turn)
    return (str(turn.get("role") or "user"), str(turn.get("content") or ""))


def _conversations(raw: Iterable) -> list[list[Turn]]:
    """The corpus's ordinary chat in whatever shape it comes: texts, conversations of texts, or of turns."""
    conversations: list[list[Turn]] = []
    loose: list[Turn] = []
    for item in raw:
        if isinstance(item, str):
            loose.append(_turn(item, len(loose)))
        elif isinstance(item, dict) and "turns" in item:
            conversations.append([_turn(turn, i) for i, turn in enumerate(item["turns"])])
        elif isinstance(item, dict):
            loose.append(_turn(item, len(loose)))
        elif hasattr(item, "turns"):
            conversations.append([_turn(turn, i) for i, turn in enumerate(item.turns)])
        else:
            conversations.append([_turn(turn, i) for i, turn in enumerate(item)])
    if loose:
        conversations.append(loose)
    return [[turn for turn in conversation if turn[1].strip()] for conversation in conversations]


def ordinary() -> tuple[list[list[Turn]], str]:
    """Ordinary chat as conversations of (role, content) turns in order (LoCoMo and the demo data), and where it
    came from."""
    package = corpus()
    if package is not None and hasattr(package, "ordinary"):
        return _conversations(package.ordinary()), "tests.injection_corpus.ordinary()"
    from devtools import redaction_eval

    conversations = [redaction_eval.locomo_messages([path]) for path in redaction_eval.default_locomo()]
    conversations.append(redaction_eval.demo_messages())
    return _conversations(conversations), "LoCoMo and the demo data (devtools.redaction_eval)"


def probe_cases() -> list[Case]:
    """The project's own red-team injection probes (tests/compaction/safety), as development cases: written
    before the corpus, by us, so never part of its test part."""
    from tests.compaction.safety import injection_cases, red_team_probes

    texts = list(injection_cases.CASES) + list(red_team_probes.INJECTIONS.values())
    ordinary = list(injection_cases.ORDINARY) + list(red_team_probes.ORDINARY)
    made = [
        Case(f"probe-{n}", "injection", "probe", "mixed", "dev", (("user", text),), (0,))
        for n, text in enumerate(texts)
    ]
    made += [
        Case(f"probe-ordinary-{n}", "benign", "probe", "mixed", "dev", (("user", text),), (0,))
        for n, text in enumerate(ordinary)
    ]
    return made
