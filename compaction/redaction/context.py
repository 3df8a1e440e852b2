"""Secret context without a colon or a naming word right before the value.

The keyword layer reads a value right after its word (or after a word or two
that qualify it), the phrase layer a value after a label that ends with a
colon. People also write the value a few words on, in any language, with no
colon ("Lösenordet till NAS:en är …", "the password I set on the router last
week is …"), hand over a generated password with no word at all ("try this
one: …"), or write it into a file from the shell (`echo '…' > ~/.vault_pass`).
Three generic readings, each asking the value to look generated, never
merely to follow a word:

- in a sentence: after a secret-ish word, the first of the next few words of
  the same sentence that reads as a credential (mixed classes, random);
- alone after a colon that ends a phrase: one word, the whole rest of the
  line, in a generated password's shape (upper and lower case, digits and a
  symbol of the kind password generators use);
- in a shell line: the argument of `echo`/`printf` written into a file whose
  name says it holds a secret, or piped into a `--password-stdin` flag.
"""

from __future__ import annotations

import itertools
import re

import re2

from compaction.redaction.entropy import looks_random
from compaction.redaction.phrases import NOT_SECRET_LABEL
from compaction.redaction.public import decodes_to_text
from compaction.redaction.spans import Scan, Spans, char_spans, re2_spans
from compaction.redaction.values import credential_like, is_reference

MAX_WORDS_AFTER = 10  # a value in a sentence is at most this many words after the word that names it
MIN_GENERATED_CHARS = 8  # a generated password is at least this long
MIN_ALONE_CHARS = 12  # one with no word naming it must be this long
ALL_CLASSES = 4  # upper case, lower case, digits and symbols: a generated password has each
MIN_TRANSITIONS = 4  # changes of class along the value: words with a number (Summer2024!) change once or twice
# Symbols password generators add (separators such as - _ . / : are in names, dates and ids too).
_PASSWORD_SYMBOLS = frozenset("!#$%&*+=?@^~|")
# Where a sentence or a clause that could carry the value ends.
_SENTENCE_END = re.compile(r"[.!?。！？;](?:\s|$)|\n")
_WORD = re.compile(r"\S+")
_TRIM = "\"'`“”«»「」()[]{}<>,.;:!?"
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


def _classes(value: str) -> tuple[int, int]:
    """How many character classes `value` mixes, and how often the class changes along it."""
    kinds = [0 if char.isupper() else 1 if char.islower() else 2 if char.isdigit() else 3 for char in value]
    return len(set(kinds)), sum(a != b for a, b in zip(kinds, kinds[1:], strict=False))


def generated(value: str, *, alone: bool = False) -> bool:
    """True when `value` has a generated credential's shape: mixed classes changing often, or random."""
    if len(value) < (MIN_ALONE_CHARS if alone else MIN_GENERATED_CHARS) or "://" in value or _EMAIL.fullmatch(value):
        return False
    if is_reference(value) or decodes_to_text(value):
        return False
    # The classes are counted only for a value with a generator's symbol: without one the shape cannot match.
    if any(char in _PASSWORD_SYMBOLS for char in value):
        classes, transitions = _classes(value)
        if classes == ALL_CLASSES and transitions >= MIN_TRANSITIONS:
            return True
    return not alone and credential_like(value) and looks_random(value, strict=False)


# A word of prose: after a blank, a quote or a bracket, and followed (after its inflection) by a blank.
_BEFORE_PROSE = frozenset(" \t\n\"'“«(")
_FIELD = re.compile(r"-*[\w.-]+=")


def _prose_word(text: str, start: int, end: int) -> bool:
    if start > 0 and text[start - 1] not in _BEFORE_PROSE:
        return False
    while end < len(text) and text[end].isalpha():
        end += 1
    return end < len(text) and text[end] in " \t"


def _in_sentence(scan: Scan, spans: Spans) -> None:
    text, lower = scan.text, scan.lower
    resume = 0
    for start, end in scan.keyword_hits:
        if start < resume or spans.covered(start, end) or not _prose_word(text, start, end):
            continue
        stop = _SENTENCE_END.search(text, end)
        sentence_end = stop.start() if stop else len(text)
        words = list(itertools.islice(_WORD.finditer(text, end, sentence_end), MAX_WORDS_AFTER))
        # A label word before the last word read is before no word either: one search instead of one a word. (A
        # word starts after a blank, so no label word ends where the search ends whichever word it stops at.)
        labelled = bool(words) and NOT_SECRET_LABEL.search(lower, end, words[-1].start()) is not None
        for word in words:
            if labelled and NOT_SECRET_LABEL.search(lower, end, word.start()):
                break
            value = word.group().strip(_TRIM)
            if not value:
                continue
            if _FIELD.match(value):
                break  # another field of a log line or a command (invoice=inv_8807, --user=alice)
            offset = text.index(value, word.start())
            if spans.covered(offset, offset + len(value)):
                break  # another layer took the value already
            if generated(value):
                spans.add(offset, offset + len(value), "password", swallow=True)
                resume = offset + len(value)
                break


# One word alone after a colon, to the end of its line: Python's `[:：][ \t]+(\S+)[ \t]*$` (MULTILINE), in RE2 with
# Python's \S spelled out (any character but a Unicode space, as str.isspace reads them), so that it finds the same
# spans in one linear pass over the text's bytes (Python's engine tried it at every character, colon or not).
_ALONE = re2.compile("(?m)[:：][ \t]+[^\\s\\x{0b}\\x{1c}-\\x{1f}\\x{85}\\pZ]+[ \t]*$".encode())
_BLANKS = " \t"
# What the text must hold for a generated password alone after a colon: a symbol in the line's last word.
_ALONE_MARK = re.compile(r"[:：][ \t]+\S*[!#$%&*+=?@^~|]\S*[ \t]*$", re.MULTILINE)


def suspicious(scan: Scan) -> bool:
    """True when the text may hold a generated password alone after a colon, which the shared scan's
    marks (secret-ish words, runs of token characters) do not announce."""
    return ":" in scan.text and _ALONE_MARK.search(scan.text) is not None


def _alone_after_colon(scan: Scan, spans: Spans) -> None:
    text = scan.text
    if ":" not in text and "：" not in text:
        return
    # On ASCII text the image is the text's bytes; otherwise the spans are turned back into characters.
    found = re2_spans(_ALONE, scan.image) if text.isascii() else char_spans(_ALONE, text)
    for match_start, match_end in found:
        start = match_start + 1  # after the colon and its blanks: the word
        while text[start] in _BLANKS:
            start += 1
        end = match_end
        while text[end - 1] in _BLANKS:
            end -= 1
        value = text[start:end].rstrip(".,;")
        if not spans.covered(start, start + len(value)) and generated(value, alone=True):
            spans.add(start, start + len(value), "password", swallow=True)


# echo/printf of one argument written into a file, or piped into a command reading a password on stdin.
_ECHO = re.compile(
    r"(?<![\w-])(?:echo(?:[ \t]+-[neE]+)*|printf(?:[ \t]+(?:\"%s(?:\\n)?\"|'%s(?:\\n)?'))?)[ \t]+"
    r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s|>;&]+)[ \t]*"
    r"(?:>>?[ \t]*(?P<file>[^\s;&|]+)|\|[ \t]*(?P<command>[^\n;&]*))"
)
_SECRET_FILE = re.compile(r"(?i)pass|secret|token|cred|pwd|\.key$|[._-]key\b|apikey|vault")
_NOT_SECRET_FILE = re.compile(r"(?i)authorized_keys|known_hosts|\.pub$|public|\.gpg$|\.asc$|passwd$")
_STDIN_FLAG = re.compile(r"--password-stdin|--pass(?:word)?-stdin|--secret-stdin|--token-stdin|chpasswd")


def _shell(scan: Scan, spans: Spans) -> None:
    if "echo" not in scan.lower and "printf" not in scan.lower:
        return
    text = scan.text
    for match in _ECHO.finditer(text):
        target = match.group("file")
        if target is not None:
            name = target.rsplit("/", 1)[-1]
            if not _SECRET_FILE.search(name) or _NOT_SECRET_FILE.search(name):
                continue
        elif not _STDIN_FLAG.search(match.group("command") or ""):
            continue
        start, end = match.span(1)
        if text[start] in "\"'":
            start, end = start + 1, end - 1
        value = text[start:end]
        if end > start and not is_reference(value) and not spans.covered(start, end):
            spans.add(start, end, "password", swallow=True)


def find(scan: Scan, spans: Spans) -> None:
    """Values a secret-ish word names from a few words away, generated passwords alone after a colon, and
    secrets a shell line writes into a secret's file or hands to a command on stdin."""
    _shell(scan, spans)
    _in_sentence(scan, spans)
    _alone_after_colon(scan, spans)
