"""Small text features shared by the offline summarizer, fact pinning and extracts.

Plain regular expressions on purpose: deterministic, fast on thousands of
messages, and nothing to download.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

import re2

from compaction.safety import looks_like_injection
from compaction.safety.first_pass import AsciiTwin, byte_spans

__all__ = ["looks_like_injection"]  # text addressed to a model: see compaction/safety/

WORD_RE = re.compile(r"[A-Za-z0-9]+(?:['’][a-z]+)?")
CONTENT_WORD_RE = re.compile(r"[a-z0-9]+")

URL_RE = re.compile(r"\bhttps?://[^\s<>\"'`)\]}]+[^\s<>\"'`)\]}.,;:!?]")
_DIRECTORY_PATH = r"(?<![\w/.:-])(?:~|\.{1,2})?/?(?:[\w.\-]+/)+[\w.\-]*[\w]"  # a/b/c.py, /etc/x, ./run.sh
_FILE_NAME = (
    r"(?<![\w/.-])[\w\-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|c|h|cc|cpp|hpp|cs|php|sh|sql|md|rst|txt|"
    r"json|ya?ml|toml|ini|cfg|conf|env|html|css|scss|lock|xml|csv|ipynb|dockerfile|tf|proto|log)\b"
)
PATH_RE = re.compile(f"{_DIRECTORY_PATH}|{_FILE_NAME}")
# A text without a slash can hold only PATH_RE's file names: the same matches, with half the pattern to try.
_FILE_NAME_RE = re.compile(_FILE_NAME)
# The hexadecimal forms: a bare hash before "commit", "sha", "hash" or "rev" later on its line, or a hash after one.
_HEX_IDENTIFIERS = r"|[0-9a-f]{7,40}\b(?=[^\n]*\b(?:commit|sha|hash|rev)\b)|(?:commit|sha|hash|rev)\s+[0-9a-f]{7,40}\b"
# Every alternative after the first starts at a word boundary: tested once per position (the same matches,
# about twice as fast as a \b in each alternative). The runs of letters and digits in snake, camel and Pascal case
# are possessive (++, *+): what follows each run (an underscore, a capital, a boundary) cannot follow a shorter
# run of it, so giving characters back could never make a match, and a word that is none of them fails at once.
IDENTIFIER_RE = re.compile(
    r"`[^`\n]{2,80}`"  # anything written as code
    r"|\b(?:[A-Za-z_][A-Za-z0-9]*+(?:_[A-Za-z0-9]++)+\b"  # snake_case / SCREAMING_CASE
    r"|[a-z]++(?:[A-Z][a-z0-9]++)+\b|[A-Z][a-z0-9]++(?:[A-Z][a-z0-9]++)+\b"  # camelCase / PascalCase
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(\)"  # dotted.call()
    r"|[A-Z][A-Z0-9]{1,9}-\d{1,6}\b"  # ticket ids such as ABC-123
    r"|v?\d+\.\d+\.\d+(?:[-+][\w.]+)?\b"  # versions
    rf"{_HEX_IDENTIFIERS}"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)"  # UUIDs
)
MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|"
    r"Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_NUMERIC_DATES = (
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?\b"  # 2024-05-01, with a time
    r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b"  # 5/1/2024
)
# Every alternative starts with a digit or one of these letters: looked at first, so that the other positions
# are passed over at once (the same matches, about twice as fast).
DATE_RE = re.compile(
    r"(?=[\djfmasondytlnw])(?:"
    rf"{_NUMERIC_DATES}"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}}\b|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b"
    rf"|\b{_MONTH}\s+\d{{4}}\b"
    r"|\b(?:yesterday|today|tomorrow|last (?:week|month|year|night|weekend)|next (?:week|month|year)|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b)",
    re.IGNORECASE,
)
NUMBER_RE = re.compile(
    r"(?=[-+$\d])(?<![\w.])[-+]?\$?\d[\d,]*(?:\.\d+)?%?(?:\s?(?:ms|s|kb|mb|gb|tb|k|m|x|×|tokens?|"
    r"messages?|lines?|bytes?|seconds?|minutes?|hours?|days?|weeks?|months?|years?|"
    r"dollars?|euros?|usd|eur|percent|%))?(?![\w])",
    re.IGNORECASE,
)
ERROR_RE = re.compile(
    r"\b(?:[A-Z][A-Za-z]*(?:Error|Exception|Warning)|Traceback|FATAL|ERROR|panic|segmentation fault|"
    r"exit (?:code|status) \d+|status(?: code)? [45]\d\d|HTTP [45]\d\d)\b[^\n]{0,160}?(?=\.\s|\.?$|\n)",
    re.MULTILINE,
)

SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?…])[\"'”’)]*\s+(?=[\"'“‘(]?[A-Z0-9])|\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)")
# Its first alternative with the sentence's last mark matched instead of looked behind for: the engine then jumps
# from mark to mark instead of trying the look-behind at every character. On a line (no line break, so neither
# other alternative can match) each match of it is a match of SENTENCE_SPLIT_RE one character further on.
_SENTENCE_END_RE = re.compile(r"[.!?…][\"'”’)]*\s+(?=[\"'“‘(]?[A-Z0-9])")

STOP_WORDS = frozenset(
    """
a about above after again against all also am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few
for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him
himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my
myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd she'll
she's should shouldn't so some such than that that's the their theirs them themselves then there there's these
they they'd they'll they're they've this those through to too under until up very was wasn't we we'd we'll we're
we've were weren't what what's when when's where where's which while who who's whom why why's with won't would
wouldn't you you'd you'll you're you've your yours yourself yourselves
s t d ll m re ve im ive id youre dont doesnt didnt isnt wasnt cant wont thats whats lets its
just really so very much many also too yeah yes yep okay ok oh ah hey hi hello wow haha lol thanks thank
like get got gets getting go going gone went make made makes making know knew think thought say said says
one thing things something anything everything lot lots way well good great nice awesome cool sure
""".split()
)

DECISION_RE = re.compile(
    r"\b(?:we (?:decided|agreed|chose|settled|will|'ll|are going to|should)|we've decided|decided to|decision|"
    r"let's|lets go with|let us|going (?:to go )?with|i(?:'ll| will) |i(?:'m| am) going to|plan(?:ned)? (?:is|to)|"
    r"agreed|approved|chosen|the fix is|switch(?:ed)? to|instead of|rejected|won't|will not|we'll)\b",
    re.IGNORECASE,
)
OUTCOME_RE = re.compile(
    r"\b(?:tried|trying|attempt(?:ed)?|ran|run|running|fail(?:ed|s|ure)?|works?|worked|fixed|broke|broken|"
    r"error|passes|passed|succeeded|success(?:ful)?|result(?:ed|s)?|turned out|didn't work|doesn't work|"
    r"timed out|crash(?:ed|es)?|reverted|rolled back)\b",
    re.IGNORECASE,
)


# Lower-cased words with an apostrophe's tail kept ("don't"): how the summarizer and the instruction finder split.
TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
# Each byte that is no ASCII lower-case letter or digit made a space: the runs of ASCII text in one translate and a
# split, without a match object per word.
_NOT_RUN_BYTES = bytes(byte if byte in b"abcdefghijklmnopqrstuvwxyz0123456789" else 32 for byte in range(256))


def _ascii_runs(lower: str) -> list[str]:
    return lower.encode("ascii").translate(_NOT_RUN_BYTES).decode("ascii").split()


# An apostrophe between a letter or digit and a letter: where TOKEN_RE keeps a word's tail ("don't"). An apostrophe
# that is only a quotation mark ('TimeoutError', the runners') joins nothing: TOKEN_RE's tokens are then the runs.
# The apostrophe is what the pattern opens with, its neighbours looked at around it: the engine then jumps from
# apostrophe to apostrophe (a literal it scans for) instead of trying a letter class at every position.
_JOINING_APOSTROPHE_RE = re.compile(r"'(?<=[A-Za-z0-9]')(?=[A-Za-z])")


def runs_exact(text: str) -> bool:
    """Whether the split of any span of `runs_text(text)` is `tokens_of` of that span lower-cased, with no
    apostrophe's parts to add: ASCII text in which no apostrophe joins a word's tail to it."""
    return text.isascii() and ("'" not in text or _JOINING_APOSTROPHE_RE.search(text) is None)


def runs_text(text: str) -> str:
    """ASCII `text` lower-cased with each character that is no letter or digit made a space: the split of any
    span of it is `tokens_of` of that span lower-cased (when the text has no apostrophe)."""
    return text.lower().encode("ascii").translate(_NOT_RUN_BYTES).decode("ascii")


def tokens_of(lower: str) -> list[str]:
    """`TOKEN_RE.findall(lower)` (`lower` lower-cased): on ASCII text without an apostrophe, exactly its runs of
    letters and digits."""
    return _ascii_runs(lower) if lower.isascii() and "'" not in lower else TOKEN_RE.findall(lower)


def content_words(text: str) -> list[str]:
    lower = text.lower()
    runs = _ascii_runs(lower) if lower.isascii() else CONTENT_WORD_RE.findall(lower)
    return [w for w in runs if w not in STOP_WORDS]


def word_runs(text: str) -> list[str]:
    """`content_words` with the stop words kept: enough to tell whether a content word is said, without the
    filter's test of each word."""
    lower = text.lower()
    return _ascii_runs(lower) if lower.isascii() else CONTENT_WORD_RE.findall(lower)


def split_sentences(text: str) -> list[str]:
    if "\n" in text:
        parts = SENTENCE_SPLIT_RE.split(text)
    else:  # a line (most messages): the split at each match of _SENTENCE_END_RE, after its mark
        parts, position = [], 0
        for match in _SENTENCE_END_RE.finditer(text):
            parts.append(text[position : match.start() + 1])
            position = match.end()
        parts.append(text[position:])
    out = []
    for part in parts:
        part = " ".join(part.split())
        if part:
            out.append(part)
    return out


_HINT_WORD_RE = re.compile(r"[a-z]+")


_DECISION_HINTS = frozenset(
    """we decided decide decision agreed agree chose chosen settled will ll going let lets
plan planned approved fix switch switched instead rejected won not""".split()
)


# DECISION_RE's RE2 twin: on ASCII text its long alternation is one linear scan, not an attempt at every position.
_DECISION_TWIN = AsciiTwin(DECISION_RE)


def mentions_decision(text: str, words: frozenset[str] | None = None) -> bool:
    """Whether `text` speaks of a decision; `words` (its lower-cased words, if already split) spare a split."""
    hints = words if words is not None else _HINT_WORD_RE.findall(text.lower())
    if _DECISION_HINTS.isdisjoint(hints):
        return False
    return _DECISION_TWIN.search(text)


# What a text must hold for a finder's pattern to match at all: far cheaper to search for than the pattern.
_MAYBE = {
    "path": re.compile(r"/|\w\.[A-Za-z]"),
    "identifier": re.compile(r"[_`]|\(\)|[a-z][A-Z]|\d\.\d|[A-Z]-\d|\d-|-\d|\b(?:commit|sha|hash|rev)\b"),
    "date": re.compile(
        r"\d|\b(?:[Yy]esterday|[Tt]oday|[Tt]omorrow|[Ll]ast|[Nn]ext|Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|"
        r"Sep|Oct|Nov|Dec|Mon|Tue|Wed|Thu|Fri|Sat|Sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|"
        r"dec|mon|tue|wed|thu|fri|sat|sun)"
    ),
}


# The identifiers' prefilter, an alternation tried at every position, in RE2 on ASCII text (one linear scan).
_MAYBE_IDENTIFIER = AsciiTwin(_MAYBE["identifier"])


# Each prefilter's commonest case is a plain character test first (the same answer, without a search).
def find_paths(text: str) -> list[str]:
    if "/" not in text and not _MAYBE["path"].search(text):
        return []
    if text.isascii():
        data = b"\n" + text.encode("ascii")  # the newline stands for the text's start: see _PATH_TWIN
        return [text[start : end - 1] for start, end in byte_spans(_PATH_TWIN, data)]
    if "/" in text:
        return [m.group(0) for m in PATH_RE.finditer(text)]
    return _FILE_NAME_RE.findall(text)


def find_identifiers(text: str) -> list[str]:
    maybe = "_" in text or "`" in text or _MAYBE_IDENTIFIER.search(text)
    if not maybe:
        return []
    if text.isascii() and not ("commit" in text or "sha" in text or "hash" in text or "rev" in text):  # _HEX_WORDS
        return [text[start:end] for start, end in byte_spans(_IDENTIFIER_TWIN, text.encode("ascii"))]
    return IDENTIFIER_RE.findall(text)


def count_details(texts: Sequence[str], tokens: Sequence[frozenset[str]]) -> list[tuple[int, int, int]]:
    """(len(find_paths(text)), len(find_identifiers(text)), len(find_dates(text, digits, tokens or None))) of each
    text with its lower-cased words (`digits`: whether it has one), the twins' scans made once over all the ASCII
    texts that need them, joined by newlines.

    No twin can match across a newline: a path's body, an identifier and a numeric date hold none (only a path's
    leading character, the one its look behind reads, may be one), and the newline is no word character, so each
    text's \b at its start and end reads the same as at the ends of the text alone. A match therefore lies within
    one text (a path's with the newline before it, which stands for its start as in find_paths), and the scan of the
    joined texts finds, in each, exactly the matches of a scan of it alone: a batch of thousands of short pieces
    costs one scan instead of a scan and its setup each."""
    counts = [[0, 0, 0] for _ in texts]
    batches: tuple[list[int], list[int], list[int]] = ([], [], [])
    for i, (text, words) in enumerate(zip(texts, tokens, strict=True)):
        ascii_text = text.isascii()
        if "/" in text or _MAYBE["path"].search(text):
            if ascii_text:
                batches[0].append(i)
            else:
                counts[i][0] = len(find_paths(text))
        if "_" in text or "`" in text or _MAYBE_IDENTIFIER.search(text):
            if ascii_text and not ("commit" in text or "sha" in text or "hash" in text or "rev" in text):
                batches[1].append(i)
            else:
                counts[i][1] = len(IDENTIFIER_RE.findall(text))
        digits = _DIGIT_RE.search(text) is not None
        if words and ascii_text and _DATE_WORDS.isdisjoint(words):
            if digits and ("-" in text or "/" in text):  # find_dates' numeric forms alone
                batches[2].append(i)
        else:
            counts[i][2] = len(find_dates(text, digits, words or None))
    for kind, twin in enumerate((_PATH_TWIN, _IDENTIFIER_TWIN, _NUMERIC_DATE_TWIN)):
        chosen = batches[kind]
        if not chosen:
            continue
        # Each text's offset in the joined data, counting the newline before it (a path's leading character).
        starts, offset = [], 0
        for i in chosen:
            starts.append(offset)
            offset += len(texts[i]) + 1
        data = ("\n" + "\n".join(texts[i] for i in chosen)).encode("ascii")
        for start, _ in byte_spans(twin, data):
            counts[chosen[bisect.bisect_right(starts, start) - 1]][kind] += 1
    return [(paths, identifiers, dates) for paths, identifiers, dates in counts]


# RE2 copies of PATH_RE and IDENTIFIER_RE, read on ASCII text only (where RE2's \w, \d and \b are Python's), each
# one linear scan instead of a backtracking attempt at every position: the same matches, several times faster.
# IDENTIFIER_RE's twin has plain runs for its possessive ones (the same matches: see the comment above it) and lacks
# the hexadecimal forms, whose lookahead RE2 cannot read: it is asked only of a text without any of _HEX_WORDS, where
# those forms cannot match.
_HEX_WORDS = ("commit", "sha", "hash", "rev")
_IDENTIFIER_TWIN = re2.compile(
    IDENTIFIER_RE.pattern.replace(_HEX_IDENTIFIERS, "").replace("++", "+").replace("*+", "*")
)
# PATH_RE's forms each open with a look behind at one character, which RE2 cannot read: the twin reads that character
# instead (a match of it is one character longer, at the front), and the text is searched with a newline before it,
# which stands for the start of the text (a newline passes both looks behind, and like the start it is no word
# character). The look behind can never read into the match before: every match ends with a word character, which
# both looks behind refuse, so the next match cannot start right after it either.
_PATH_TWIN = re2.compile(
    _DIRECTORY_PATH.replace("(?<![\\w/.:-])", "[^\\w/.:-]") + "|" + _FILE_NAME.replace("(?<![\\w/.-])", "[^\\w/.-]")
)


def find_dates(text: str, digits: bool = False, tokens: frozenset[str] | None = None) -> list[str]:
    """`digits` says the caller saw a digit in `text` already (then the prefilter would match); `tokens`, when
    given, are its lower-cased words (TOKEN_RE's, an apostrophe's parts included), which spare DATE_RE's
    written-out forms when none of their words is there."""
    if tokens is not None and text.isascii() and _DATE_WORDS.isdisjoint(tokens):
        # Every written-out form holds a month or a day word as a whole word (on ASCII text, ignoring case
        # folds no other letter into them): only the numeric forms can match, and they need a digit.
        has_digit = digits or _DIGIT_RE.search(text) is not None
        return _NUMERIC_DATE_RE.findall(text) if has_digit and ("-" in text or "/" in text) else []
    return DATE_RE.findall(text) if digits or _MAYBE["date"].search(text) else []


# The words of DATE_RE's forms that are not numeric: its months as it spells them, and its day words.
_DATE_WORDS = frozenset(
    """jan january feb february mar march apr april may jun june jul july aug august sep sept september oct october
nov november dec december yesterday today tomorrow last next monday tuesday wednesday thursday friday saturday
sunday""".split()
)
# DATE_RE's numeric forms alone (a digit looked for first, as DATE_RE looks for its first characters).
_NUMERIC_DATE_RE = re.compile(rf"(?=\d)(?:{_NUMERIC_DATES})", re.IGNORECASE)
# Its RE2 copy, read on ASCII text only (see count_details).
_NUMERIC_DATE_TWIN = re2.compile(f"(?i){_NUMERIC_DATES}")
_DIGIT_RE = re.compile(r"\d")
