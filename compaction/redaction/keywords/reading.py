"""The value a secret-ish word names: where it is, and whether it can be a secret.

The value follows the identifier (`KEY=value`, `key: value`, `<password>v</password>`,
YAML `key: |` blocks, "the password is v", "密码是v") or, in a sentence, comes
before it ("use Xk9#mQ2$vL as the password"). Whether it is taken depends on
the word's level and the form: a name passed along, markup, a sentence or
prose about a flag is not a secret.
"""

from __future__ import annotations

import re

from compaction.redaction.assignment import value_start
from compaction.redaction.entropy import looks_random
from compaction.redaction.keywords.strength import DIGITS, MEDIUM, STRONG, kind
from compaction.redaction.spans import Scan, Spans
from compaction.redaction.values import (
    block_scalar,
    cjk_word,
    credential_like,
    gibberish,
    is_reference,
    looks_like_name,
    quoted,
    rest_of_line,
    shell_word,
    short_password,
    trim_prose,
)
from compaction.redaction.vocabulary import RECOVERY_CODE_WORDS, WHOLE_LINE_WORDS

# Quotes that may open a quoted identifier ("password": …, 'api_key' => …).
_QUOTE_CHARS = "\"'`"


def value_span(scan: Scan, a: int, b: int, word: str, level: int) -> tuple[int, int, str, bool] | None:
    """(start, end, form, quoted) of the value after the identifier text[a:b]; form is assign/call/flag/prose."""
    text = scan.text
    opening = text[a - 1] if (a > 0 and text[a - 1] in _QUOTE_CHARS) else ""
    enclosing = ""
    position = b
    if opening:
        if text[position : position + 1] == opening:
            position += 1
        else:
            enclosing = opening
    if a > 0 and text[a - 1] == "<" and text[position : position + 1] == ">":
        close = text.find("</", position + 1, scan.line_bounds(position)[1])
        return (position + 1, close, "assign", True) if close > position + 1 else None
    begun = value_start(text, a, position, opening=opening, enclosing=enclosing)
    if begun is None:
        return None
    form, start, spaced = begun
    while start < len(text) and text[start] in " \t":
        start += 1
    if start >= len(text) or text[start] == "\n":
        return None
    inside = quoted(text, start)
    if inside is not None:
        return inside[0], inside[1], form, True
    if form == "assign" and (block_end := block_scalar(text, start)) is not None:
        return text.index("\n", start) + 1, block_end, form, True
    if not text[start].isascii():
        return start, cjk_word(text, start), form, False
    if not word.isascii():  # パスワードは T6zz,dOh です, 密码是Xk9#mQ2$vL，
        return start, min(cjk_word(text, start), shell_word(text, start)), form, False
    if form == "assign" and enclosing:
        end = shell_word(text, start, stop=enclosing)
    elif form == "assign" and opening:
        end = shell_word(text, start, stop=",}]")
    elif form == "assign" and (word in WHOLE_LINE_WORDS or word in RECOVERY_CODE_WORDS):
        end = scan.line_bounds(start)[1]
    elif form == "assign" and spaced and level == STRONG:
        end = rest_of_line(text, start)
    else:
        end = shell_word(text, start, stop=enclosing)
    if form in ("prose", "prose_fill", "direct") or (form == "assign" and spaced):
        end = trim_prose(text, start, end)
    elif text[end - 1 : end] in ",;":
        end -= 1
    return start, end, form, False


def header_position(text: str, a: int) -> bool:
    """A header name starts a line, a quoted string or a curl -H argument (not `cookie: Cookie` in code)."""
    before = text[text.rfind("\n", 0, a) + 1 : a]
    return (
        not before.strip()
        or before.rstrip().endswith(("'", '"', "-H", "--header", "{", ","))
        or before.endswith(("'", '"'))
    )


# "use Xk9#mQ2$vL as the password", "'Hunter2!x' is my password": the value before the word.
_BEFORE = re.compile(
    r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\n]{3,80})(?P=q)|(?P<plain>[^\s\"'`]{6,80}))[ \t]+(?:is|was|as)[ \t]+"
    r"(?:(?:the|my|our|your|his|her|their|a|an|new|old|current|same)[ \t]+)?(?:[\w-]+[ \t]+){0,2}$"
)
# How far before the word, on its line, a value before it is looked for.
BEFORE_CHARS = 160


def value_before(scan: Scan, spans: Spans, a: int, word: str, ident: str, level: int) -> None:
    """Hide a value written before the word that names it, in a sentence."""
    if level < MEDIUM:
        return
    window_start = max(scan.text.rfind("\n", 0, a) + 1, a - BEFORE_CHARS)
    window = scan.text[window_start:a].replace("\t", " ")
    if " is " not in window and " was " not in window and " as " not in window:
        return  # the expression needs one of these words between blanks
    match = _BEFORE.search(scan.text, window_start, a)
    if match is None:
        return
    group = "quoted" if match.group("quoted") is not None else "plain"
    value = match.group(group)
    if (group == "quoted" and level == STRONG) or credential_like(value):
        if not is_reference(value) and not looks_like_name(value, word):
            spans.add(match.start(group), match.end(group), kind(word, ident, ""), swallow=True)


# Hex of 128 bits or more, with or without 0x: a key when a word of keys names it.
_LONG_HEX = re.compile(r"(?:0x)?[0-9a-fA-F]{32,}")
# Words after which a long hex value is a key, not a digest.
_HEX_KEY_WORDS = frozenset(("hmac", "key", "secret", "seed", "salt", "token", "pat"))


def _long_hex(value: str, word: str) -> bool:
    return word in _HEX_KEY_WORDS and bool(_LONG_HEX.fullmatch(value))


# Values that are not secrets: markup, a name passed along (`f(key=self.key)`), another attribute, words.
_TAG = re.compile(r"</?\w+>")
_PASSED_NAME = re.compile(r"[A-Za-z_][\w.]*[),][),;\]}]*")
_ATTRIBUTE = re.compile(r"[\w-]+=[\"']")
_WORDS_JOINED = re.compile(r"[A-Za-z][a-z]*(?:[_\-][A-Za-z][a-z]*)*")
# Words joined by separators or CamelCase (each repetition starts unambiguously: no backtracking blow-up).
_NAME_OR_SENTENCE = re.compile(r"_*[A-Za-z][a-z]*(?:(?:[_\- ][A-Za-z]|[A-Z])[a-z]*)*_*\.?")
# A PIN, a CVV or a one-time code: this many digits.
MIN_CODE_DIGITS, MAX_CODE_DIGITS = 3, 8
# A passcode in a sentence made of digits and symbols needs this many digits ("the passcode is 8841#").
MIN_PASSCODE_DIGITS = 4
_PASSCODE_SYMBOLS = "#*!@$%^&+=-"
# A MEDIUM word's value with no separator ("signing secret 5f2b…") is a key from this length on.
MIN_DIRECT_MEDIUM_CHARS = 16
# A STRONG word's value needs this many characters; a MEDIUM word's this many.
MIN_STRONG_CHARS, MIN_MEDIUM_CHARS = 3, 6
# A MEDIUM word's value of joined words shorter than this is a name (session_cookie_name); longer may be a key.
MAX_NAME_CHARS = 24


def plausible(value: str, *, word: str, level: int, form: str, is_quoted: bool) -> bool:
    """Whether `value`, found after `word` in `form`, can be the secret (not a name, a type, prose or markup)."""
    bare = value.strip()
    if not bare or is_reference(bare) or _TAG.search(bare):
        return False
    if not is_quoted and (looks_like_name(bare.rstrip(",;)]}"), word) or _PASSED_NAME.fullmatch(bare)):
        return False  # a name passed along: password=password, filter(key=self.key), salt=salt,
    if level < STRONG and _NAME_OR_SENTENCE.fullmatch(bare) and not gibberish(bare):
        return False  # a name or a sentence: SESSION_KEY = "_auth_user_id", "CSRF token missing."
    if form == "flag" and not (is_quoted or credential_like(bare)):
        return False  # prose about a flag: "--password leaks it to ps"
    if level == DIGITS:
        return (MIN_CODE_DIGITS <= len(bare) <= MAX_CODE_DIGITS and bare.isdecimal()) or (
            form != "direct" and credential_like(bare)
        )
    if form == "direct":  # no separator at all ("hmac key 5f2b…", "netrc password s3cr3t"): only what is plainly a key
        if not is_quoted and _ATTRIBUTE.match(bare):
            return False  # another attribute follows: type="password" name="password"
        if level == STRONG and (is_quoted or (credential_like(bare) and any(c.isdigit() for c in bare))):
            return True
        if level == MEDIUM and len(bare) >= MIN_DIRECT_MEDIUM_CHARS and credential_like(bare):
            return True
        return looks_random(bare, strict=False) or _long_hex(bare, word)
    if form == "call" and not is_quoted:
        return False
    if form in ("prose", "prose_fill") and not is_quoted:
        if (
            level == STRONG
            and sum(c.isdigit() for c in bare) >= MIN_PASSCODE_DIGITS
            and all((c.isdecimal() or c in _PASSCODE_SYMBOLS) for c in bare)
        ):
            return True  # "the passcode is 8841#"
        return credential_like(bare) or (level == STRONG and form == "prose" and short_password(bare))
    if level == STRONG:
        return len(bare) >= MIN_STRONG_CHARS
    if level == MEDIUM:
        return len(bare) >= MIN_MEDIUM_CHARS and not (_WORDS_JOINED.fullmatch(bare) and len(bare) < MAX_NAME_CHARS)
    return credential_like(bare)
