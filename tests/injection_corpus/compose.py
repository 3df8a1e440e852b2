"""Composition: every (language, family, label, carrier, content) that the split allows becomes
a case, with its slot filled, its disguise applied and ordinary turns around it."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import random

from tests.injection_corpus import carriers as c
from tests.injection_corpus import encodings, split, values
from tests.injection_corpus.languages import SLOT_RE, SPLIT_MARK, Language, languages
from tests.injection_corpus.neutral import NEUTRAL_TEXTS

FAMILIES = (
    "plain",
    "split",
    "polite",
    "addressed",
    "block",
    "role_play",
    "markup",
    "tool_output",
    "document",
    *encodings.FAMILIES,
)
NEUTRAL_CARRIERS = (
    *c.PLAIN,
    *c.SPLIT,
    *c.BLOCK,
    *c.BLOCK_BENIGN,
    *c.MARKUP,
    *c.TOOL,
    *c.DOCUMENT,
    *c.ENCODED,
    *c.VISIBLE,
    *c.SPOKEN,
)
LABEL_ENDS = (":", "：")
FRAME_FAMILIES = {"split": "split", "polite": "polite", "addressed": "address", "role_play": "roleplay"}


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    label: str
    family: str
    language: str
    split: str
    turns: list[dict[str, str]]
    target: tuple[int, ...]
    payload: str | None
    goal: str
    group: str
    carrier: str
    text: str
    encoded: str | None = None
    parts: tuple[str, str] | None = None


def seeded(key: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))


def _frame(identifier: str, family: str, pool: str, labels: frozenset[str], template, kinds=()) -> c.Carrier:
    if isinstance(template, tuple):
        first, second = template

        def render(content: c.Content, env: c.Env) -> c.Placed | None:
            a, b = content.parts or ("", "")
            return c.Placed([("user", first.replace("{a}", a)), ("user", second.replace("{b}", b))], [0, 1])

    else:
        slot = "{enc}" if "{enc}" in template else "{instr}" if "{instr}" in template else None

        def render(content: c.Content, env: c.Env) -> c.Placed | None:
            if family == "addressed" and content.parts and content.parts[0].endswith(LABEL_ENDS):
                return None  # the instruction opens with an address of its own ("Note for the system:")
            return c.one(template.replace(slot, content.shown) if slot else f"{template} {content.shown}")

    return c.Carrier(identifier, family, render, labels, pool, kinds)


def frame_carriers(language: Language, family: str) -> list[c.Carrier]:
    """The carriers made of one language's own sentences."""
    code = language.code
    found: list[c.Carrier] = []
    if family in FRAME_FAMILIES:
        key = FRAME_FAMILIES[family]
        # A polite opener or a two-turn frame around a benign request is still the user talking to the assistant.
        labels = c.BOTH if key in ("polite", "split") else c.ONLY_INJECTION
        kinds = {"polite": ("polite_tail", "request", "correction"), "split": ("split",)}.get(key, ())
        for index, template in enumerate(language.frames[key]):
            found.append(_frame(f"{key}.{code}.{index}", family, f"frames.{key}.{code}", labels, template, kinds))
    if family in encodings.OPAQUE:
        for index, template in enumerate(language.frames["decode"]):
            found.append(_frame(f"decode.{code}.{index}", family, f"frames.decode.{code}", c.ONLY_INJECTION, template))
        for index, template in enumerate(language.benign["decode"]):
            pool = f"frames.ask_decode.{code}"
            found.append(_frame(f"ask_decode.{code}.{index}", family, pool, c.ONLY_BENIGN, template, c.OPAQUE_KINDS))
    return found


def carriers_for(language: Language, family: str) -> list[c.Carrier]:
    if family in encodings.OPAQUE:
        neutral = [carrier for carrier in c.ENCODED if carrier.family in ("", family)]
    elif family in encodings.VISIBLE or family == "enc_homoglyph":
        neutral = list(c.VISIBLE)
    elif family in c.SPOKEN_KINDS:
        neutral = [dataclasses.replace(carrier, benign_kinds=c.SPOKEN_KINDS[family]) for carrier in c.SPOKEN]
    else:
        neutral = [carrier for carrier in NEUTRAL_CARRIERS if carrier.family == family]
    return neutral + frame_carriers(language, family)


@functools.cache
def assignments() -> dict[str, str]:
    """Every split component's id -> dev or test (split.py)."""
    pools: dict[str, list[str]] = {}
    for carrier in NEUTRAL_CARRIERS:
        if carrier.pool:
            pools.setdefault(carrier.pool, []).append(carrier.id)
    for kind, texts in NEUTRAL_TEXTS.items():
        pools[kind] = [f"{kind}.{index}" for index in range(len(texts))]
    for language in languages():
        code = language.code
        pools[f"inject.{code}"] = [injection.id for injection in language.injections]
        pools[f"context.{code}"] = [f"{code}.context.{index}" for index in range(len(language.context))]
        for kind, texts in language.benign.items():
            if kind != "decode":
                pools[f"benign.{kind}.{code}"] = [f"{code}.benign.{kind}.{index}" for index in range(len(texts))]
        for family in FAMILIES:
            for carrier in frame_carriers(language, family):
                if carrier.pool and carrier.id not in pools.get(carrier.pool, []):
                    pools.setdefault(carrier.pool, []).append(carrier.id)
    result: dict[str, str] = {}
    for name, pool in pools.items():
        result.update(split.assign(name, pool))
    return result


def benign_contents(language: Language, kinds: tuple[str, ...]) -> list[tuple[str, str, str | tuple[str, str]]]:
    """(group id, kind, text or pair) of the benign texts of the given kinds."""
    found: list[tuple[str, str, str | tuple[str, str]]] = []
    for kind in kinds:
        if kind in NEUTRAL_TEXTS:
            found += [(f"{kind}.{index}", kind, text) for index, text in enumerate(NEUTRAL_TEXTS[kind])]
        else:
            found += [
                (f"{language.code}.benign.{kind}.{index}", kind, text)
                for index, text in enumerate(language.benign.get(kind, ()))
            ]
    return found


def case_split(family: str, carrier: c.Carrier, group: str, table: dict[str, str]) -> str | None:
    """The part a combination belongs to, or None when its components are in different parts."""
    part = table[group]
    if family in split.HELD_OUT_FAMILIES:
        return split.TEST if part == split.TEST else None
    if carrier.pool is None or table[carrier.id] == part:
        return part
    return None


def contexts_of(language: Language, part: str, table: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(
        pair for index, pair in enumerate(language.context) if table[f"{language.code}.context.{index}"] == part
    )


def _shown(family: str, text: str, rng: random.Random, language: Language) -> str | None:
    """The disguised form of `text` in an encoding family (None elsewhere)."""
    if family not in encodings.FAMILIES:
        return None
    return encodings.encode(family, text, rng, language.script)


def _injection(injection, family: str, rng: random.Random, language: Language) -> c.Content:
    value = values.fill(injection.slot, rng)
    marked = SLOT_RE.sub(lambda match: value, injection.text)
    first, second = (part.strip() for part in marked.split(SPLIT_MARK))
    text = marked.replace(SPLIT_MARK, "")
    shown = _shown(family, text, rng, language)
    return c.Content(injection.id, injection.goal, text, shown or text, (first, second), value)


def _benign(
    group: str, kind: str, item: str | tuple[str, str], family: str, rng: random.Random, language: Language
) -> c.Content:
    parts = item if isinstance(item, tuple) else None
    text = " ".join(item) if isinstance(item, tuple) else item
    # Natural leetspeak is already what it looks like: nothing to encode.
    shown = None if kind == "leet" else _shown(family, text, rng, language)
    return c.Content(group, kind, text, shown or text, parts)


def _surround(placed: c.Placed, env: c.Env) -> tuple[list[dict[str, str]], tuple[int, ...]]:
    """One ordinary exchange before the case; after it nothing, an acknowledgement or the next question."""
    question, answer = env.neighbour
    # A carrier that leads up to its case itself (a tool result after its question) needs no exchange before.
    before = [] if placed.target[0] > 0 else [("user", question), ("assistant", answer)]
    layout = 0 if placed.turns[-1][0] == "tool" else env.rng.randrange(3)
    after: list[tuple[str, str]] = [[], [("assistant", env.language.labels["ack"])], []][layout]
    if layout == 2 and (following := env.fresh_question("\n".join(text for _, text in before + placed.turns))):
        after = [("user", following)]
    turns = [{"role": role, "content": text} for role, text in before + placed.turns + after]
    return turns, tuple(len(before) + index for index in placed.target)


def _contents(language: Language, family: str, label: str, carrier: c.Carrier):
    if label == c.INJECTION:
        for injection in language.injections:
            yield injection.id, lambda rng, injection=injection: _injection(injection, family, rng, language)
        return
    kinds = carrier.benign_kinds
    if family == "enc_leet" and carrier.id == "visible.bare" and "leet" in language.benign:
        kinds = (*kinds, "leet")
    for group, kind, item in benign_contents(language, kinds):
        yield group, lambda rng, group=group, kind=kind, item=item: _benign(group, kind, item, family, rng, language)


def compose_language(language: Language) -> list[Case]:
    table = assignments()
    cases: list[Case] = []
    recaps = {
        part: tuple(
            line
            for index, line in enumerate(language.benign["recap"])
            if table[f"{language.code}.benign.recap.{index}"] == part
        )
        for part in (split.DEV, split.TEST)
    }
    for family in FAMILIES:
        if family in encodings.FAMILIES and not encodings.applies(family, language.script):
            continue
        for label in (c.INJECTION, c.BENIGN):
            serial = 0
            for carrier in carriers_for(language, family):
                if label not in carrier.labels:
                    continue
                for group, make in _contents(language, family, label, carrier):
                    part = case_split(family, carrier, group, table)
                    if part is None:
                        continue
                    rng = seeded(f"{label}/{language.code}/{family}/{carrier.id}/{group}")
                    content = make(rng)
                    if family in encodings.FAMILIES and content.goal != "leet" and content.shown == content.text:
                        continue  # the disguise changed nothing in this text
                    env = c.Env(language, contexts_of(language, part, table), rng, recaps[part])
                    placed = carrier.render(content, env)
                    if placed is None:
                        continue
                    turns, target = _surround(placed, env)
                    serial += 1
                    cases.append(
                        Case(
                            id=f"{label[:3]}-{language.code}-{family}-{serial:04d}",
                            label=label,
                            family=family,
                            language=language.code,
                            split=part,
                            turns=turns,
                            target=target,
                            payload=content.payload,
                            goal=content.goal,
                            group=group,
                            carrier=carrier.id,
                            text=content.text,
                            encoded=content.shown if content.shown != content.text else None,
                            parts=content.parts if family == "split" else None,
                        )
                    )
    return cases


@functools.cache
def build() -> tuple[Case, ...]:
    return tuple(case for language in languages() for case in compose_language(language))
