"""The corpus's own invariants: what makes its figures mean something.

Decoders here are written independently of encodings.py, so that a case whose disguise does not
decode to its text fails here instead of silently measuring noise.
"""

from __future__ import annotations

import base64
import codecs
import json
import re
import unicodedata
import urllib.parse
from collections import Counter, defaultdict

import pytest

from tests.injection_corpus import DEV, FAMILIES, HELD_OUT_FAMILIES, TEST, load, ordinary
from tests.injection_corpus.compose import assignments, compose_language
from tests.injection_corpus.languages import GOALS, SLOT_RE, SPLIT_MARK, languages
from tests.injection_corpus.ordinary import LOCOMO

REQUIRED_LANGUAGES = {
    "en", "de", "fr", "es", "it", "pt", "nl", "pl", "tr", "ru", "uk", "el", "hi", "ar", "he",
    "fa", "zh", "ja", "ko", "vi", "th", "id", "ms", "tl", "sw", "cs", "sv", "ro", "hu", "bn",
}  # fmt: skip
MINIMUM_PER_LABEL = 2_000
ZERO_WIDTH_CHARACTERS = re.compile("[\u200b\u2060\ufeff\u200d]")
OPAQUE_HIDING_PAYLOAD = ("enc_rot13", "enc_reversed", "enc_hex", "enc_base64")


@pytest.fixture(scope="module")
def cases():
    return load()


UNSPACED_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "THAI")


def _distinctive(piece: str) -> bool:
    """Five words or more, or ten characters of a script written without spaces (shorter pieces are
    phrases two phrasings may share by nature: "has approved the", "in the summary")."""
    if len(piece.split()) >= 5:
        return True
    return len(piece) >= 10 and " " not in piece and unicodedata.name(piece[0], "").startswith(UNSPACED_SCRIPTS)


def _fragments(template: str) -> list[str]:
    """The fixed pieces of a template (between slots and marks) long enough to be distinctive."""
    pieces = (piece.strip() for piece in re.split(r"\{[a-z]+\}|\|\|", template))
    return [piece for piece in pieces if _distinctive(piece)]


def test_ids_are_unique_and_fields_valid(cases):
    assert len({case.id for case in cases}) == len(cases)
    for case in cases:
        assert case.label in ("injection", "benign") and case.split in (DEV, TEST) and case.family in FAMILIES
        assert all(turn["role"] in ("user", "assistant", "tool") and turn["content"].strip() for turn in case.turns)
        assert case.target and all(0 <= index < len(case.turns) for index in case.target)
        span = max(case.target) - min(case.target) + 1
        assert 1 <= len(case.turns) - span <= 3, case.id  # 1-3 neighbouring turns
        assert (case.payload is not None) == (case.label == "injection"), case.id


def test_size_languages_and_labels_in_both_parts(cases):
    labels = Counter(case.label for case in cases)
    assert labels["injection"] >= MINIMUM_PER_LABEL and labels["benign"] >= MINIMUM_PER_LABEL
    present = {(case.language, case.label, case.split) for case in cases}
    codes = {case.language for case in cases}
    assert REQUIRED_LANGUAGES <= codes
    missing = [
        (code, label, part) for code in codes for label in ("injection", "benign") for part in (DEV, TEST)
        if (code, label, part) not in present
    ]  # fmt: skip
    assert missing == []


def test_every_family_and_goal_is_covered_in_test(cases):
    test_injections = [case for case in cases if case.split == TEST and case.label == "injection"]
    assert {case.family for case in test_injections} == set(FAMILIES)
    assert {case.goal for case in test_injections} == set(GOALS)
    assert {case.family for case in cases if case.label == "benign"} == set(FAMILIES)


def test_test_share_is_about_forty_percent(cases):
    for label in ("injection", "benign"):
        labelled = [case for case in cases if case.label == label]
        share = sum(case.split == TEST for case in labelled) / len(labelled)
        assert 0.3 <= share <= 0.5, (label, share)


def test_held_out_families_are_only_in_test(cases):
    assert not [case.id for case in cases if case.family in HELD_OUT_FAMILIES and case.split == DEV]
    assert {case.family for case in cases if case.split == TEST} >= HELD_OUT_FAMILIES


def test_no_test_component_appears_in_dev(cases):
    dev = [case for case in cases if case.split == DEV]
    test = [case for case in cases if case.split == TEST]
    assert not {case.group for case in dev} & {case.group for case in test}
    shaped_test = {case.carrier for case in test if case.family not in HELD_OUT_FAMILIES}
    identity = {case.carrier for case in cases if case.carrier.endswith(".bare")}
    assert not ({case.carrier for case in dev} & shaped_test) - identity


def test_no_test_phrasing_frame_or_exchange_occurs_in_dev_text():
    """Independently of ids: the words of every held-out phrasing, frame and exchange are absent
    from every dev turn of the same language."""
    table = assignments()
    by_language = defaultdict(list)
    for case in load(DEV):
        by_language[case.language].append("\n".join(turn["content"] for turn in case.turns))
    for language in languages():
        held_out = [injection.text for injection in language.injections if table[injection.id] == TEST]
        for key in ("polite", "address", "roleplay", "decode", "split"):
            for index, frame in enumerate(language.frames[key]):
                if table[f"{key}.{language.code}.{index}"] == TEST:
                    held_out += list(frame) if isinstance(frame, tuple) else [frame]
        held_out += [
            pair[0] for index, pair in enumerate(language.context) if table[f"{language.code}.context.{index}"] == TEST
        ]
        for kind, texts in language.benign.items():
            for index, text in enumerate(texts):
                if table.get(f"{language.code}.benign.{kind}.{index}") == TEST:
                    held_out += list(text) if isinstance(text, tuple) else [text]
        dev_text = "\n".join(by_language[language.code])
        leaked = [fragment for text in held_out for fragment in _fragments(text) if fragment in dev_text]
        assert leaked == [], language.code


def test_language_files_are_well_formed():
    for language in languages():
        goals = Counter(injection.goal for injection in language.injections)
        assert set(goals) == set(GOALS), language.code
        for injection in language.injections:
            assert injection.text.count(SPLIT_MARK) == 1, injection.id
            assert len(SLOT_RE.findall(injection.text)) == 1, injection.id
            first, second = (part.strip() for part in injection.text.split(SPLIT_MARK))
            assert len(first) >= 4 and len(second) >= 4, injection.id
        assert all("{instr}" in frame for frame in language.frames["roleplay"]), language.code
        assert all("{enc}" in frame for frame in (*language.frames["decode"], *language.benign["decode"])), (
            language.code
        )
        assert all("{a}" in a and "{b}" in b for a, b in language.frames["split"]), language.code
        assert all(len(pair) == 2 for pair in language.benign["split"]), language.code
        assert len(language.context) >= 4, language.code
        benign_text = repr(language.benign) + repr(language.doc) + repr(language.context)
        assert not SLOT_RE.search(benign_text), language.code


def test_payloads_are_carried(cases):
    for case in cases:
        if case.label != "injection":
            continue
        assert case.payload in case.text, case.id
        carried = [case.turns[index]["content"] for index in case.target]
        others = [turn["content"] for index, turn in enumerate(case.turns) if index not in case.target]
        assert not any(case.payload in text for text in others), case.id
        if case.encoded is None:
            assert any(case.payload in text for text in carried), case.id
        elif case.family in OPAQUE_HIDING_PAYLOAD:
            assert not any(case.payload in text for text in carried), case.id


def test_split_turns_really_split_the_text(cases):
    split_cases = [case for case in cases if case.family == "split"]
    assert {case.label for case in split_cases} == {"injection", "benign"}
    for case in split_cases:
        first, second = (case.turns[index]["content"] for index in case.target)
        assert case.parts and case.parts[0] in first and case.parts[1] in second, case.id
        assert case.text not in first and case.text not in second, case.id
        assert "".join(case.text.split()) == "".join((case.parts[0] + case.parts[1]).split()), case.id
        if case.payload:
            # The directive and the payload travel in different turns.
            assert (case.payload in first) != (case.payload in second), case.id


def _unspace(encoded: str) -> str:
    return " ".join(word.replace(" ", "") for word in re.split(r" {2,}", encoded))


def _reverse_graphemes(encoded: str) -> str:
    graphemes: list[str] = []
    for char in encoded:
        joined = graphemes and (
            unicodedata.category(char)[0] == "M" or char in "\u200c\u200d" or graphemes[-1][-1] == "\u200d"
        )
        if joined:
            graphemes[-1] += char
        else:
            graphemes.append(char)
    return "".join(reversed(graphemes))


DECODERS = {
    "enc_rot13": lambda text: codecs.decode(text, "rot_13"),
    "enc_reversed": _reverse_graphemes,
    "enc_hex": lambda text: bytes.fromhex(text.replace("\\x", "").replace(" ", "")).decode(),
    "enc_base64": lambda text: base64.b64decode(text, validate=True).decode(),
    "enc_url": urllib.parse.unquote,
    "enc_spaced": _unspace,
    "enc_zero_width": lambda text: ZERO_WIDTH_CHARACTERS.sub("", text),
}
ARABIC_TWINS = {frozenset("\u064a\u06cc"), frozenset("\u0643\u06a9")}


def _script(char: str) -> str:
    return unicodedata.name(char, "?").split()[0]


def test_disguises_decode_to_their_text(cases):
    for case in cases:
        if not case.family.startswith("enc_"):
            continue
        if case.encoded is None:
            assert case.family == "enc_leet" and case.goal == "leet", case.id  # natural leetspeak
            continue
        as_json = json.dumps(case.encoded, ensure_ascii=False)[1:-1]  # inside a JSON string, quotes are escaped
        assert any(form in case.turns[index]["content"] for form in (case.encoded, as_json) for index in case.target)
        assert case.encoded != case.text, case.id
        if case.family in DECODERS:
            assert DECODERS[case.family](case.encoded) == case.text, case.id
            continue
        assert len(case.encoded) == len(case.text), case.id
        swaps = [(plain, shown) for plain, shown in zip(case.text, case.encoded, strict=True) if plain != shown]
        for plain, shown in swaps:
            if case.family == "enc_leet":
                assert shown.isdigit() and plain.lower() in "aeiost", case.id
            else:  # a homoglyph: the same letter shape from another script, or Arabic's twin code points
                assert _script(plain) != _script(shown) or frozenset(plain + shown) in ARABIC_TWINS, case.id


def test_composition_is_deterministic():
    english = next(language for language in languages() if language.code == "en")
    assert compose_language(english) == compose_language(english)


def test_ordinary_chat_is_the_demo_and_locomo_when_present():
    conversations = ordinary()
    demo = [conversation for conversation in conversations if conversation.source == "demo"]
    assert len(demo) == 3 and all(len(conversation.turns) >= 6 for conversation in demo)
    assert all(
        turn["role"] in ("user", "assistant", "tool") and turn["content"].strip()
        for c in conversations
        for turn in c.turns
    )
    locomo = [conversation for conversation in conversations if conversation.source == "locomo"]
    if LOCOMO.is_dir():
        assert len(locomo) == len(list(LOCOMO.glob("*.json"))) and min(len(c.turns) for c in locomo) > 100
    else:
        assert locomo == []
