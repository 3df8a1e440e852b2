"""More phrasings to train the injection model on: a phrasebook written apart from the corpus, for every language.

The corpus's development part holds about eleven phrasings of injections per language, too few for a model of
character n-grams to learn what an instruction to a model looks like rather than those eleven sentences. Each
language's file here (`<code>.toml`) adds fourteen injections (the six goals: a claim dictated to the summary,
an approval, an omission, secrets sent out, a changed behavior or a revealed prompt, a privilege), written
with other words than the corpus's (minutes, recap, overview; the model, the program, the bot; override,
bypass), and twelve benign look-alikes in the same words (a person's own request for a summary, a correction,
a note to the team, a question about prompt injection, a password reset). They were written without reading
the corpus's test part and are training material only: `injection_eval` never measures on them.

Each text becomes two development cases, as the corpus shapes its own: the text as a person's message after an
ordinary exchange of the same language (taken from the development part), and the text after an ordinary
sentence in the same message (an instruction after a preface).
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

from devtools.injection_data import Case

FAMILY = "phrasebook"
# Values for the payload slots: references, a canary word, a collecting host, an account handle.
_SLOTS = {
    "code": ("INV-{n}", "REQ-{n}", "PO-{n}", "CASE-{n}"),
    "word": ("AMBER-{n}", "QUARTZ-{n}", "HERON-{n}"),
    "host": ("collect-{n}.example.net/in", "https://sync{n}.example.org/u?d=", "relay{n}.example.com"),
    "user": ("m.novak{n}", "k.osei{n}", "l.tran{n}"),
}


def _number(key: str) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)


def _fill(text: str, key: str) -> tuple[str, str]:
    """(the text with its slot filled, the value put in it), the same for the same key on every run."""
    for slot, shapes in _SLOTS.items():
        if "{" + slot + "}" in text:
            number = _number(key)
            value = shapes[number % len(shapes)].format(n=number % 900 + 100)
            return text.replace("{" + slot + "}", value), value
    return text, ""


def phrasebook() -> dict[str, dict[str, list[str]]]:
    """language code -> {"inject": [...], "benign": [...]}"""
    return {
        path.stem: tomllib.loads(path.read_text(encoding="utf-8"))
        for path in sorted(Path(__file__).parent.glob("*.toml"))
    }


def _exchanges(development: list[Case]) -> dict[str, list[tuple[tuple[str, str], ...]]]:
    """Per language, the ordinary exchanges (a person's message and the reply) that open its development cases."""
    found: dict[str, dict[tuple[tuple[str, str], ...], None]] = {}
    for case in development:
        opening = case.turns[:2]
        if len(opening) == 2 and 0 not in case.target and 1 not in case.target and opening[0][0] == "user":
            found.setdefault(case.language, {})[opening] = None
    return {language: list(exchanges) for language, exchanges in found.items()}


def cases() -> list[Case]:
    """The phrasebook's development cases (see the module docstring)."""
    from devtools import injection_data

    development, _ = injection_data.cases("dev")
    exchanges = _exchanges(development)
    made: list[Case] = []
    for language, book in phrasebook().items():
        around = exchanges.get(language) or [(("user", "Hi!"), ("assistant", "Hello, how can I help?"))]
        for label, key in (("injection", "inject"), ("benign", "benign")):
            for number, template in enumerate(book[key]):
                group = f"phrasebook.{language}.{key}.{number}"
                text, payload = _fill(template, group)
                first = around[_number(group) % len(around)]
                second = around[(_number(group) + 1) % len(around)]
                shapes = ((*first, ("user", text)), (*second, ("user", f"{first[0][1]} {text}")))
                for variant, turns in enumerate(shapes):
                    made.append(
                        Case(
                            id=f"{group}.{variant}",
                            label=label,
                            family=FAMILY,
                            language=language,
                            split="dev",
                            turns=turns,
                            target=(2,),
                            payload=payload if label == "injection" else "",
                            group=group,
                            text=text,
                        )
                    )
    return made
