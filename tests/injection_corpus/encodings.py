"""The disguises of the encoding families: text in, disguised text out.

Opaque encodings (rot13, reversed, hex, base64, URL escapes) hide the words: a reader has to
decode before it can see the instruction. Visible disguises (leetspeak, spaced letters,
zero-width characters, homoglyphs) leave it readable to a person but not to a matcher that
compares characters. Each is applied only where it changes the text: rot13 and leetspeak to
Latin script, homoglyphs to scripts with look-alikes in another script. Variants (hex with or
without separators, partial or full percent-escapes, which zero-width characters, which letters
are swapped) are drawn from the case's own seeded generator.
"""

from __future__ import annotations

import base64
import codecs
import random
import unicodedata
import urllib.parse
from collections.abc import Callable

ZERO_WIDTH = ("\u200b", "\u2060", "\ufeff", "\u200d")
SPACED_WORD_SEPARATORS = ("   ", "  ")
LEET = {"a": "4", "e": "3", "i": "1", "o": "0", "s": "5", "t": "7"}
# Letters of one script that render like letters of another: the attacker's side of the swap.
HOMOGLYPHS: dict[str, dict[str, str]] = {
    "latin": {
        "a": "\u0430",
        "c": "\u0441",
        "e": "\u0435",
        "o": "\u043e",
        "p": "\u0440",
        "x": "\u0445",
        "y": "\u0443",
        "i": "\u0456",
        "s": "\u0455",
        "A": "\u0410",
        "B": "\u0412",
        "C": "\u0421",
        "E": "\u0415",
        "H": "\u041d",
        "K": "\u041a",
        "M": "\u041c",
        "O": "\u041e",
        "P": "\u0420",
        "T": "\u0422",
        "X": "\u0425",
    },
    "cyrillic": {
        "\u0430": "a",
        "\u0441": "c",
        "\u0435": "e",
        "\u043e": "o",
        "\u0440": "p",
        "\u0445": "x",
        "\u0443": "y",
        "\u0456": "i",
        "\u0410": "A",
        "\u0412": "B",
        "\u0415": "E",
        "\u041a": "K",
        "\u041c": "M",
        "\u041d": "H",
        "\u041e": "O",
        "\u0420": "P",
        "\u0421": "C",
        "\u0422": "T",
        "\u0425": "X",
    },
    "greek": {
        "\u03bf": "o",
        "\u03b1": "a",
        "\u03c1": "p",
        "\u03bd": "v",
        "\u0391": "A",
        "\u0392": "B",
        "\u0395": "E",
        "\u0396": "Z",
        "\u0397": "H",
        "\u0399": "I",
        "\u039a": "K",
        "\u039c": "M",
        "\u039d": "N",
        "\u039f": "O",
        "\u03a1": "P",
        "\u03a4": "T",
        "\u03a5": "Y",
        "\u03a7": "X",
    },
    # Arabic and Persian share letters that have two code points (Arabic yeh and kaf, Persian yeh and keheh).
    "arabic": {"\u064a": "\u06cc", "\u0643": "\u06a9", "\u06cc": "\u064a", "\u06a9": "\u0643"},
}
HOMOGLYPH_SHARE = 0.6


def clusters(text: str) -> list[str]:
    """Characters with their combining marks and joiners attached (an approximation of graphemes
    that keeps Thai, Devanagari and Bengali vowel signs on their consonant when text is reversed
    or spaced)."""
    result: list[str] = []
    for char in text:
        if result and (
            unicodedata.category(char).startswith("M") or char in "\u200c\u200d" or result[-1][-1] in "\u200d"
        ):
            result[-1] += char
        else:
            result.append(char)
    return result


def rot13(text: str, rng: random.Random) -> str:
    return codecs.encode(text, "rot_13")


def reverse(text: str, rng: random.Random) -> str:
    return "".join(reversed(clusters(text)))


def to_hex(text: str, rng: random.Random) -> str:
    data = text.encode()
    style = rng.choice(("plain", "spaced", "escaped"))
    if style == "escaped":
        return "".join(f"\\x{byte:02x}" for byte in data)
    return data.hex(" ") if style == "spaced" else data.hex()


def to_base64(text: str, rng: random.Random) -> str:
    return base64.b64encode(text.encode()).decode("ascii")


def to_url(text: str, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return urllib.parse.quote(text, safe="")
    return "".join(f"%{byte:02X}" for byte in text.encode())


def leet(text: str, rng: random.Random) -> str:
    return "".join(LEET.get(char.lower(), char) for char in text)


def spaced(text: str, rng: random.Random) -> str:
    separator = rng.choice(SPACED_WORD_SEPARATORS)
    return separator.join(" ".join(clusters(word)) for word in text.split(" "))


def zero_width(text: str, rng: random.Random) -> str:
    """A zero-width character after every second letter inside a word."""
    assert not any(char in text for char in ZERO_WIDTH)
    joiners = rng.sample(ZERO_WIDTH, 2)
    words = []
    for word in text.split(" "):
        parts = clusters(word)
        words.append(
            "".join(part + (joiners[i % 2] if i % 2 and i < len(parts) - 1 else "") for i, part in enumerate(parts))
        )
    return " ".join(words)


def homoglyph(text: str, rng: random.Random, script: str) -> str:
    table = HOMOGLYPHS[script]
    return "".join(table[char] if char in table and rng.random() < HOMOGLYPH_SHARE else char for char in text)


Encoder = Callable[[str, random.Random], str]
OPAQUE: dict[str, Encoder] = {
    "enc_rot13": rot13,
    "enc_reversed": reverse,
    "enc_hex": to_hex,
    "enc_base64": to_base64,
    "enc_url": to_url,
}
VISIBLE: dict[str, Encoder] = {"enc_leet": leet, "enc_spaced": spaced, "enc_zero_width": zero_width}
FAMILIES = (*OPAQUE, *VISIBLE, "enc_homoglyph")
LATIN_ONLY = frozenset({"enc_rot13", "enc_leet"})


def applies(family: str, script: str) -> bool:
    if family in LATIN_ONLY:
        return script == "latin"
    if family == "enc_homoglyph":
        return script in HOMOGLYPHS
    return True


def encode(family: str, text: str, rng: random.Random, script: str) -> str:
    if family == "enc_homoglyph":
        return homoglyph(text, rng, script)
    return {**OPAQUE, **VISIBLE}[family](text, rng)
