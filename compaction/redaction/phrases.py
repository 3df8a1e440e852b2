"""Values labelled by a phrase: the word that names the secret is a few words before the colon.

"recovery codes here just in case: …", "Backup-Code (einmalig verwendbar): …",
"WLAN-Schlüssel fürs Gäste-Netz: …", "BitLocker recovery key for LAPTOP-0231: …",
"here's the Zoom secret, don't share it: …". The keyword layer reads a value
right after its word or after a word or two that qualify it; here the label
is the phrase before a colon (from the start of its line or sentence, a few
words long), and it is enough that it holds a word naming a secret. What
follows the colon is taken when it reads as a credential: random, mixed
letters and digits or symbols, a code in groups (`abcd-efgh-ijkl-mnop`,
`PI90-TPYS-PIJG-NAUM`; letters alone when they pair as no word does), a run
of digits after a word for a code or a PIN, or a list of such codes; a line
that ends with a colon and says what follows ("keep these somewhere safe:")
then codes of one shape, one a line. A label
that says its value is public, or a value that points elsewhere (`${VAR}`, a
placeholder), stays.
"""

from __future__ import annotations

import bisect
import re

import re2

from compaction.redaction.entropy import looks_random
from compaction.redaction.spans import Scan, Spans, char_spans
from compaction.redaction.values import credential_like, is_reference, short_password
from compaction.redaction.vocabulary import PASSWORD_WORDS, STRONG_WORDS
from compaction.redaction.wordness import wordlike
from compaction.safety.first_pass import found as first_pass_found
from compaction.safety.first_pass import loosened

# Words in a label that name a secret (besides every STRONG word): keys, codes, PINs, in several languages.
_LABEL_WORDS = (
    "secret|password|passwort|passphrase|passcode|private key|recovery key|recovery code|backup[ \\-]?code|"
    "backup key|setup key|security key|product key|license key|licence key|activation code|claim code|"
    "access key|api key|api token|auth token|access token|bearer token|token|\\bkey\\b|schlüssel|schluessel|"
    "clé|clave|chiave|chave|sleutel|nyckel|nøgle|klucz|anahtar|\\bpin\\b|\\bpuk\\b|combination|"
    "door code|gate code|alarm code|disarm code|unlock code|wifi|wi-fi|wlan"
)
_LABEL_RE = re.compile(
    "|".join(sorted((re.escape(word) for word in STRONG_WORDS), key=len, reverse=True)) + "|" + _LABEL_WORDS
)


def _where_options() -> re2.Options:
    options = re2.Options()
    options.max_mem = LABEL_MAX_MEM
    return options


LABEL_MAX_MEM = 64 << 20  # RE2's memory for the label words' automaton: a few hundred words without a thrashing cache
# Its RE2 first pass (a superset: word boundaries dropped): most labels hold no such word, and an alternation of a few
# hundred words costs Python's engine a try of each at every character of the label.
_LABEL_FIRST = loosened(_LABEL_RE)
# The same words, as an expression that reports where they are (word boundaries dropped: a superset again), for one
# pass over a whole batch.
_LABEL_WHERE = re2.compile(_LABEL_RE.pattern.replace(r"\b", "").encode(), options=_where_options())
# Words of a label for a short numeric code (a PIN or a door code is a secret of a few digits).
_CODE_LABEL = re.compile(r"\bpin\b|\bpuk\b|code|combination|passcode|kod|codice|código")
# A label that names something public or a property of the secret, not the secret.
NOT_SECRET_LABEL = re.compile(
    r"public|publishable|fingerprint|\bid\b|\bids\b|length|expir|rotat|policy|format|hint|reset|strength|"
    r"\bhash\b|checksum|usage|requirement|url|endpoint|name\b|guidance|guide|rules|tips|advice|example|file"
)
# An apostrophe inside a word (here's, don't) is prose, not a quote.
_APOSTROPHE = re.compile(r"(?<=[^\W\d_])['’](?=[^\W\d_])")
# Characters of code, never of a prose label: quotes, brackets, operators, another colon before this one.
_CODE_CHARS = frozenset("\"'`{}[]<>=|;\\?:$%*")
MAX_LABEL_CHARS = 80  # a label is a phrase: only this much of the text before a colon is read ...
MAX_LABEL_WORDS = 10  # ... and only its last words
# A code written in groups: three or more groups of 4 to 6 letters or digits (app passwords, product keys).
_GROUPED = re.compile(r"[A-Za-z0-9]{4,6}(?:[\- ][A-Za-z0-9]{4,6}){2,}")
MIN_CODE_DIGITS, MAX_CODE_DIGITS = 4, 10  # a PIN, a PUK, a door or backup code
_CODE = re.compile(rf"\d{{{MIN_CODE_DIGITS},{MAX_CODE_DIGITS}}}#?")
# One or more codes in a list: hex or alphanumeric groups joined by a dash (a1b2c-3d4e5), or digits in two halves.
_LISTED_CODE = re.compile(r"[A-Za-z0-9]{4,10}-[A-Za-z0-9]{4,10}|\d{4} \d{4}")
# Where a label starts: the line's start or the end of a sentence.
_SENTENCE_END = re.compile(r"[.!?。！？][ \t]+")
_COLONS = (":", "：")
MAX_CODE_LINES = 16  # a list of codes on the lines after a label ending with a colon ...
MIN_LISTED_CODES = 3  # ... at least this many, all of one shape (a list of one or two is anything)
# The line before such a list says what they are (or how to keep them).
_CODE_INTRO = re.compile(
    r"code|backup|recovery|safe|keep|2fa|mfa|otp|one[ \-]time|authenticator|verification|einmal|sicherung|"
    r"secours|respaldo|recupera"
)
_SHAPE = re.compile(r"[0-9]|[A-Za-z]")
_LETTERS = re.compile(r"[^A-Za-z]+")  # the separators of a grouped code
MIN_LETTER_GROUPS = 4  # a code of letters alone in fewer groups is too little to tell from words or a placeholder


def _label(scan: Scan, colon: int) -> tuple[int, str] | None:
    line_start = scan.text.rfind("\n", 0, colon) + 1
    start = max(line_start, colon - MAX_LABEL_CHARS)
    for match in _SENTENCE_END.finditer(scan.text, start, colon):
        start = match.end()
    label = scan.lower[start:colon]
    bare = _APOSTROPHE.sub("", label) if "'" in label or "’" in label else label  # an apostrophe in a word is none
    if not label.strip() or not _CODE_CHARS.isdisjoint(bare):
        return None
    words = label.split()
    if len(words) > MAX_LABEL_WORDS:
        label = " " + " ".join(words[-MAX_LABEL_WORDS:])
    return start, label


def _credential(value: str, *, code_label: bool, strong: bool) -> bool:
    bare = value.strip("\"'`“”«»「」()[]")
    if not bare or is_reference(bare):
        return False
    if credential_like(bare) or looks_random(bare, strict=False):
        return True
    if code_label and _CODE.fullmatch(bare):
        return True
    return strong and short_password(bare)


def find(scan: Scan, spans: Spans) -> None:
    """Values after a colon whose label, a few words before it, names a secret.

    Most labels name nothing secret, and a batch holds thousands of them: the label words are found by one pass
    of `_LABEL_WHERE` over the whole text, and a colon whose window (the text its label is cut from, see
    `_unskipped`) meets none of them, with a value after it on its line, is left without reading its label (it
    would hold no label word either)."""
    text = scan.text
    hits: tuple[list[int], list[int]] | None = None
    for colon_char in _COLONS:
        # A label is followed by a blank (postgres:16, a URL's scheme, a time are not labels).
        colons = [m.start() for m in _LABEL_COLON_RE.finditer(text)] if colon_char == ":" else _all(text, colon_char)
        if len(colons) < _BATCH_MIN_COLONS:
            for colon in colons:
                _after_label(scan, spans, colon)
            continue
        if hits is None:
            found = char_spans(_LABEL_WHERE, scan.lower)
            hits = [start for start, _ in found], [end for _, end in found]
        # Whether a colon is skipped does not depend on the spans: all are told apart first, in one loop.
        for colon in _unskipped(scan, colons, hits):
            _after_label(scan, spans, colon)


# Below this many colons, labels are read one by one: a pass over the whole text would cost more than it saves.
_BATCH_MIN_COLONS = 8
# A colon followed by a space, a tab, a line break or the end of the text (the engine jumps from colon to colon).
_LABEL_COLON_RE = re.compile(r":(?![^ \t\n])")
# Whitespace other than one space, which `_label` may join differently than its window has it.
_ODD_SPACE_RE = re.compile(r"[^\S ]| {2}")


def _all(text: str, char: str) -> list[int]:
    """Every position of `char` in `text`."""
    found = []
    position = text.find(char)
    while position != -1:
        found.append(position)
        position = text.find(char, position + 1)
    return found


def _unskipped(scan: Scan, colons: list[int], hits: tuple[list[int], list[int]]) -> list[int]:
    """The colons of `colons` that must be read, in order (one loop over thousands of colons, its names bound once).

    A colon may be left unread when its window (the lower-cased text from its line's start, at most
    MAX_LABEL_CHARS before it) meets no label word of the whole text's pass (`hits`: starts and ends, in order),
    every blank in it is one space and its line goes on after it.

    A label word inside the window would be found by the pass or lie under one it found that overlaps the
    window. The label `_label` reads is a part of its window, or, when it has more than MAX_LABEL_WORDS words,
    its last words joined by one space after a space: still a part of the window when every blank in the window
    is one space. A colon whose line ends with it (a list of codes may follow) is never skipped: it is read for
    what its label says of the list."""
    text, lower = scan.text, scan.lower
    starts, ends = hits
    count, length = len(starts), len(text)
    rfind, bisect_right, odd_space = text.rfind, bisect.bisect_right, _ODD_SPACE_RE.search
    read = []
    for colon in colons:
        earliest = colon - MAX_LABEL_CHARS
        start = rfind("\n", earliest if earliest > 0 else 0, colon) + 1
        if start < earliest:
            start = earliest
        if count:
            index = bisect_right(ends, start)  # the first label word that ends inside or after the window
            if index < count and starts[index] < colon:
                read.append(colon)
                continue
        window = lower[start:colon]
        # Every blank but the ASCII space is unprintable: a printable window without two spaces in a row has no
        # odd blank, without the expression's try at each character.
        if ("  " in window or not window.isprintable()) and odd_space(window) is not None:
            read.append(colon)
            continue
        if colon + 2 < length and text[colon + 1] == " " and not text[colon + 2].isspace():
            continue  # the value starts right after the colon's space (most colons)
        line_end = text.find("\n", colon)
        rest = text[colon + 1 : line_end] if line_end != -1 else text[colon + 1 :]
        if not rest.strip():
            read.append(colon)
    return read


def _after_label(scan: Scan, spans: Spans, colon: int) -> None:
    text = scan.text
    found = _label(scan, colon)
    if found is None:
        return
    _, label = found
    line_end = scan.line_bounds(colon)[1]
    if not text[colon + 1 : line_end].strip():
        if _CODE_INTRO.search(label):
            _codes_below(scan, spans, line_end)  # "keep these somewhere safe:" then a code a line
        return
    words = list(_LABEL_RE.finditer(label)) if first_pass_found(_LABEL_FIRST, label) else []
    if not words or NOT_SECRET_LABEL.search(label, words[-1].end()):
        return
    strong = any(word.group() in PASSWORD_WORDS or "secret" in word.group() for word in words)
    code_label = bool(_CODE_LABEL.search(label))
    start = colon + 1
    while start < line_end and text[start] in " \t":
        start += 1
    if spans.covered(start, line_end):
        return  # the keyword layer read this value already
    rest = text[start:line_end]
    grouped = _GROUPED.match(rest)
    if grouped is not None and (
        any(c.isdigit() for c in grouped.group()) or code_label or strong or _random_letter_groups(grouped.group())
    ):
        spans.add(start, start + grouped.end(), "secret", swallow=True)
        return
    listed = list(_LISTED_CODE.finditer(rest))
    if "code" in label and listed and listed[0].start() == 0:
        for match in listed:
            spans.add(start + match.start(), start + match.end(), "recovery_code", swallow=True)
        return
    value = rest.split()[0].rstrip(".,;)")
    if _credential(value, code_label=code_label, strong=strong):
        offset = text.index(value, start)
        spans.add(offset, offset + len(value), "password" if strong else "secret", swallow=True)


def _random_letter_groups(code: str) -> bool:
    """Groups of letters alone (an app-specific password) count when there are enough of them, they pair as no
    word does and none is a run of the alphabet (`abcd efgh ijkl`, a placeholder)."""
    groups = _LETTERS.split(code)
    if len(groups) < MIN_LETTER_GROUPS or any(_alphabet_run(group.lower()) for group in groups):
        return False
    return not wordlike("".join(groups))


def _alphabet_run(group: str) -> bool:
    return all(ord(b) - ord(a) == 1 for a, b in zip(group, group[1:], strict=False))


def _codes_below(scan: Scan, spans: Spans, position: int) -> None:
    """Codes one a line, all of one shape, after a line that ends with a colon (backup codes, recovery codes)."""
    text = scan.text
    found: list[tuple[int, int]] = []
    shapes = set()
    while position < len(text) and len(found) < MAX_CODE_LINES:
        line_start = position + 1
        line_end = scan.line_bounds(line_start)[1]
        line = text[line_start:line_end].strip()
        if not (_CODE.fullmatch(line) or _LISTED_CODE.fullmatch(line)):
            break
        offset = text.index(line, line_start)
        found.append((offset, offset + len(line)))
        shapes.add(_SHAPE.sub(_shape_of, line))
        position = line_end
    if len(found) >= MIN_LISTED_CODES and len(shapes) == 1:
        for start, end in found:
            spans.add(start, end, "recovery_code", swallow=True)


def _shape_of(match: re.Match) -> str:
    return "9" if match.group().isdigit() else "a"
