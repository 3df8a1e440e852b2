"""Where a value after a secret-ish word starts and ends, and whether it can be a secret.

A quoted value is everything inside the quotes (any quote style, escapes
kept). An unquoted one is a shell word (`KEY=value`, symbols included), or,
after `key: ` / `key = ` with a STRONG word, the rest of the line (`password:
correct horse battery staple`), up to a comment or a clause break. Values
that only point at a secret (`${DB_PASSWORD}`, `os.environ[...]`,
`settings.SECRET_KEY`), code (`forms.CharField(...)`), types (`str`),
placeholders (`changeme`, `********`) and words of state (`expired`) are not
secrets and stay.
"""

from __future__ import annotations

import functools
import re

from compaction.redaction.entropy import looks_random
from compaction.redaction.spans import MAX_WORD_VOWELS, MIN_WORD_VOWELS
from compaction.redaction.vocabulary import NOT_SECRET_VALUES, STOPWORDS

QUOTES = {'"': '"', "'": "'", "`": "`", "“": "”", "«": "»", "‘": "’", "„": "“", "「": "」", "『": "』"}
_VARIABLE = re.compile(r"^\$(?:\{[^}]*\}|\(.*\)|[A-Z_][A-Z0-9_]*|[a-z_][a-z0-9_]*)$")
_REFERENCE_START = (
    "${",
    "$(",
    "%(",
    "{{",
    "{%",
    "<",
    "os.environ",
    "os.getenv",
    "getenv(",
    "env(",
    "env.",
    "process.env",
    "env[",
    "ENV[",
    "vault:",
    "ref+",
    "!Ref",
    "!Sub",
    "!GetAtt",
    "secretKeyRef",
    "valueFrom",
    "ssm:",
    "arn:aws:secretsmanager",
    "[REDACTED:",
    "(",
    "{",
    "[",
)
_CODE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\s*(?:\(|\[|\.\w+\()")
_DOTTED = re.compile(r"^[a-z_][a-z_0-9]*(?:\.[A-Za-z_]\w*)+$")
_UPPER_NAME = re.compile(r"^[A-Z][A-Z_]*[A-Z]$")
_SNAKE_NAME = re.compile(r"^[a-z]+(?:_[a-z]+)+$")
_TYPE_WORDS = frozenset(
    "str string int integer bytes bool boolean secretstr optional text varchar char any none object".split()
)
_WORDY = re.compile(r"^[A-Za-z][a-z]*(?:[ _\-][A-Za-z][a-z]*)*$")
_PLAIN_SEGMENT = re.compile(r"[A-Z]?[a-z0-9_.\-~]*|[A-Z0-9_.\-]*")
_MASK = re.compile(r"^(.)\1{2,}$")
# Where an unquoted rest-of-line value ends: a comment, a clause break, a closing bracket of inline JSON.
_REST_END = re.compile(r"\s#|\s//|[,;]\s|\s-\s|\s(?:and|but|then|und|et|y)\s")
_CJK_END = re.compile(r"[\s，。、；！？）」』]|です|입니다|이에요|예요")


def quoted(text: str, start: int) -> tuple[int, int] | None:
    """(start, end) inside the quotes opening at `start`, on one line; None when they do not close."""
    closing = QUOTES.get(text[start : start + 1])
    if closing is None:
        return None
    position = start + 1
    while position < len(text):
        char = text[position]
        if char == "\\":
            position += 2
            continue
        if char == closing:
            return start + 1, position
        if char == "\n":
            return None
        position += 1
    return None


@functools.cache
def _word_re(stop: str) -> re.Pattern:
    """Characters up to whitespace (Python's \\s is str.isspace) or one of `stop`."""
    return re.compile(f"[^\\s{re.escape(stop)}]*")


def shell_word(text: str, start: int, stop: str = "") -> int:
    """End of the unquoted word at `start` (symbols included), before whitespace or a `stop` character.

    A lone quote before the end or a closing bracket ends it too: it closes a string the word sits in
    (`"cmd": "deploy --password=x"}`).
    """
    position = _word_re(stop).match(text, start).end()  # type: ignore[union-attr]  # (it matches the empty string)
    word = text[start:position]
    for quote in "\"'`":
        if word.count(quote) % 2:
            cut = word.rindex(quote)
            if cut + 1 == len(word) or word[cut + 1] in ",;)}]>":
                position = start + cut
                word = text[start:position]
    return position


def rest_of_line(text: str, start: int) -> int:
    """End of a value that runs to the end of the line, a comment or a clause break."""
    line_end = text.find("\n", start)
    line_end = len(text) if line_end == -1 else line_end
    stop = _REST_END.search(text, start, line_end)
    end = stop.start() if stop else line_end
    while end > start and text[end - 1] in " \t\r,;":
        end -= 1
    return end


def cjk_word(text: str, start: int) -> int:
    stop = _CJK_END.search(text, start)
    return stop.start() if stop else len(text)


def trim_prose(text: str, start: int, end: int) -> int:
    """A value at the end of a sentence loses the sentence's punctuation and closing brackets."""
    while end > start and text[end - 1] in ".,;:!?)]}>\"'”»":
        end -= 1
    return end


# A format string with a field (f"{token}"), a class constant (Settings.API_KEY), what ends a value's
# first word, and the characters of a mask (********).
_FORMAT_STRING = re.compile(r"^[fbru]{1,2}[\"'].*\{")
_CONSTANT = re.compile(r"[A-Z][A-Za-z0-9]*\.[A-Z_][A-Z0-9_]*")
_FIRST_BREAK = re.compile(r"[\s=,|\]\[)]")
_MASK_CHARS = frozenset("*•xX.-_#?")


# Inside a call's arguments, outside its strings: characters of passwords, not of code (iX(aI(Li;rgy&f).
_NOT_CODE_CHARS = re.compile(r"[\^~#!@%]|;.")
_STRING = re.compile(r"\"[^\"]*(?:\"|$)|'[^']*(?:'|$)")


def _code(bare: str) -> bool:
    """A call or subscript (`get_password()`, `secrets["db"]`): a name of three or more characters before it."""
    match = _CODE.match(bare)
    if match is None:
        return False
    name = re.split(r"[\s(\[]", bare, maxsplit=1)[0]
    return len(name) >= MIN_CODE_NAME and not _NOT_CODE_CHARS.search(_STRING.sub("", bare))


def is_reference(value: str) -> bool:
    """The value names where the secret is, or is code, a type or a placeholder: not the secret itself."""
    bare = value.strip().strip("\"'`")
    if not bare:
        return True
    lowered = bare.lower()
    if lowered in NOT_SECRET_VALUES or lowered.rstrip(",;") in NOT_SECRET_VALUES:
        return True
    if _VARIABLE.match(bare) or _FORMAT_STRING.match(bare):
        return True
    core = bare.rstrip(",;)]}")  # an argument inside a call: seed=cfg.seed), list_key=Conf.PREFIX)
    if _DOTTED.match(core) or _CONSTANT.fullmatch(core):
        return True
    if bare.startswith(_REFERENCE_START) or _code(bare) or _DOTTED.match(bare) or _MASK.match(bare):
        return True
    first = _FIRST_BREAK.split(lowered, maxsplit=1)[0]
    if first in _TYPE_WORDS:
        return True
    if set(bare) <= _MASK_CHARS or lowered.startswith(("your_", "your-", "your ", "my_", "<")):
        return True
    if bare.endswith(("...", "…")) and len(bare.rstrip(".…")) <= MAX_ELIDED_PREFIX:
        return True  # a prefix and an ellipsis (sk-..., ghp_…): a placeholder, not a key
    return lowered.startswith(("example", "dummy", "fake", "test123", "placeholder", "changeme", "xxx"))


def looks_like_name(value: str, keyword: str) -> bool:
    """`password=password`, `token=DB_TOKEN`, `api_key=api_key`: an identifier passed along, not a value."""
    bare = value.strip().strip("\"'`")
    return bool(_UPPER_NAME.match(bare) or _SNAKE_NAME.match(bare)) or bare.lower() == keyword


_BLOCK_INDICATOR = re.compile(r"[|>][-+0-9]*[ \t]*")


def block_scalar(text: str, start: int) -> int | None:
    """End of a YAML block value (`key: |` then more-indented lines) whose indicator is at `start`, or None."""
    line_end = text.find("\n", start)
    if line_end == -1 or not _BLOCK_INDICATOR.fullmatch(text, start, line_end):
        return None
    key_line = text.rfind("\n", 0, start) + 1
    indent = len(text[key_line:start]) - len(text[key_line:start].lstrip(" \t"))
    end = position = line_end
    while position < len(text):
        next_end = text.find("\n", position + 1)
        next_end = len(text) if next_end == -1 else next_end
        line = text[position + 1 : next_end]
        if line.strip() and len(line) - len(line.lstrip(" \t")) <= indent:
            break
        if line.strip():
            end = next_end
        position = next_end
    return end if end > line_end else None


# Hex of 16 or more (a key), and what reads as a name rather than a credential: kebab or dotted words
# (scram-sha-256, utf-8), a file name, a version or a date.
_HEX16 = re.compile(r"[0-9a-fA-F]{16,}")
_KEBAB = re.compile(r"[a-z]+(?:[-_.](?:[a-z]+|\d+))+")
_FILE_NAME = re.compile(r"[\w.\-/]+\.(?:py|js|ts|md|txt|json|yaml|yml|html|css|go|rs|rb|java|sh|toml|cfg|ini)")
_VERSION_OR_DATE = re.compile(r"v?\d+(?:\.\d+)+\w*|\d{4}-\d\d-\d\d\S*")


_CASE_PIECE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
_VOWEL = re.compile(r"[aeiouAEIOU]")


MIN_GIBBERISH_CHARS = 8  # shorter mixed-case letters are names and abbreviations (McDonald, iOS)
MIN_CASE_PIECES = 4  # a generated value splits into at least this many case pieces
SHORT_PIECE = 3  # a case piece shorter than this is no word
MAX_ODD_SHARE = 0.4  # beyond this share of letters in pieces that are no words, the value is generated
MIN_CREDENTIAL_CHARS = 8  # a shorter value is a word or a code, not a credential on its own
MAX_ELIDED_PREFIX = 8  # "sk-..." stands for a key; a longer start before the dots may be a real key cut short
MIN_CODE_NAME = 3  # `get_password()`: a call or subscript has a name at least this long before it
MIN_PASSPHRASE_WORDS, MAX_PASSPHRASE_WORDS = 3, 8  # a passphrase's plain words: fewer is a phrase, more prose


def gibberish(value: str) -> bool:
    """Letters of both cases that split into no words: generated (pKTQryZppCH), not a CamelCase name
    (JavaScript, XMLHttpRequest, iPhoneXSMax): four or more case pieces, over 40 % of the letters in
    pieces without a word's share of vowels."""
    if (
        len(value) < MIN_GIBBERISH_CHARS
        or not value.isascii()
        or not value.isalpha()
        or value.islower()
        or value.isupper()
    ):
        return False
    pieces = _CASE_PIECE.findall(value)
    if len(pieces) < MIN_CASE_PIECES:
        return False
    odd = sum(
        len(p)
        for p in pieces
        if len(p) < SHORT_PIECE or not MIN_WORD_VOWELS <= len(_VOWEL.findall(p)) / len(p) <= MAX_WORD_VOWELS
    )
    return odd > MAX_ODD_SHARE * len(value)


def credential_like(value: str) -> bool:
    """A value that reads like a credential on its own: letters mixed with digits or symbols, or random."""
    bare = value.strip()
    if len(bare) < MIN_CREDENTIAL_CHARS or " " in bare:
        return False
    if gibberish(bare):
        return True
    if _HEX16.fullmatch(bare):
        return True
    letters = sum(char.isalpha() for char in bare)
    digits = sum(char.isdigit() for char in bare)
    symbols = len(bare) - letters - digits
    if _KEBAB.fullmatch(bare):
        return False  # a kebab or dotted name: scram-sha-256, en-us, utf-8
    if letters and (digits or symbols) and not _WORDY.match(bare):
        if _FILE_NAME.fullmatch(bare):
            return False
        if "/" in bare and all(_PLAIN_SEGMENT.fullmatch(part) for part in bare.split("/")):
            return False  # a path or a route: src/app/module_3.py, Documents/Reports/2024
        return not _VERSION_OR_DATE.fullmatch(bare)
    return looks_random(bare, strict=False)


# A short password in a sentence ("my password is hunter2"): letters and digits, not a version or an algorithm.
_SHORT_PASSWORD = re.compile(r"(?=[^\d]*\d)(?=[^A-Za-z]*[A-Za-z])[A-Za-z0-9!@#$%^&*_+=~?]{5,}")
_ALGORITHM = re.compile(r"(?i)(?:sha|md|aes|rsa|utf|base|ec|ed|crc|des|rc|v|x|p|h|tls|ssl|ipv|http|oauth)\d+\w{0,2}")


def short_password(value: str) -> bool:
    """A password too short to look random, after a strong word and a copula: hunter2, abc12."""
    return bool(_SHORT_PASSWORD.fullmatch(value)) and not _ALGORITHM.fullmatch(value)


_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]*")


def passphrase(text: str, start: int) -> int | None:
    """End of a run of 3 to 8 plain words that reads as a passphrase (no function words), or None."""
    end = rest_of_line(text, start)
    end = trim_prose(text, start, end)
    words = text[start:end].split()
    if not MIN_PASSPHRASE_WORDS <= len(words) <= MAX_PASSPHRASE_WORDS or not all(
        _PLAIN_WORD.fullmatch(word) for word in words
    ):
        return None
    if any(word.lower() in STOPWORDS for word in words):
        return None
    return end
