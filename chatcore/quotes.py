"""Passages of a summary that repeat messages word for word.

A summary keeps its originals' words: the offline summarizer is extractive
(it quotes), a model quotes too, the opening exchange is carried verbatim and
the extracts lift decisions and questions from the transcript. Purging the
originals (chatcore.data_control) therefore says how much of them the summary
still quotes, and can blank those passages as well: each is replaced by
QUOTE_REMOVED in place and the summary ends with a note saying how many were
removed, so the summary tells its reader what is missing (nothing is edited
silently).

A passage is a run of at least QUOTE_MIN_WORDS words that some message holds in
the same order: words are compared exactly (letters, digits, their case, the
punctuation inside a word such as a path's), whatever punctuation and spacing
lie between them, so a quote re-spaced or re-punctuated by the summarizer is
still found. Shorter repeats (a name, a figure, a path the summary pinned) are
the summary's facts, not quotes.
"""

import re
from collections.abc import Iterable

QUOTE_MIN_WORDS = 4
QUOTE_REMOVED = "[passage removed: it quoted a purged message]"
# A word: letters or digits, with the punctuation inside it (a path, a URL, "row-level", "don't" are one word).
_WORD_RE = re.compile(r"\w+(?:[./:'’@#+-]+\w+)*")
# Quotation marks around a passage go with it, so no empty pair is left behind.
_OPENING_MARKS = "\"'“‘«„‹"
_CLOSING_MARKS = "\"'”’»›“"  # “ closes a German „quote“
_TRAILING_PUNCTUATION = ".,;:!?…"

Span = tuple[int, int]


def _grams(words: list[str]) -> Iterable[int]:
    return (hash(tuple(words[i : i + QUOTE_MIN_WORDS])) for i in range(len(words) - QUOTE_MIN_WORDS + 1))


def source_grams(sources: Iterable[str]) -> set[int]:
    """Every run of QUOTE_MIN_WORDS consecutive words of the sources, hashed (one pass over their text)."""
    grams: set[int] = set()
    for text in sources:
        grams.update(_grams(_WORD_RE.findall(text)))
    return grams


def _with_marks(text: str, start: int, end: int) -> Span:
    """The span widened to the quotation marks that enclose it, and the punctuation inside the closing one."""
    close = end
    while close < len(text) and text[close] in _TRAILING_PUNCTUATION:
        close += 1
    if start > 0 and text[start - 1] in _OPENING_MARKS and close < len(text) and text[close] in _CLOSING_MARKS:
        return start - 1, close + 1
    return start, end


def quoted_spans(text: str, grams: set[int]) -> list[Span]:
    """The character spans of `text` that repeat the sources of `grams` word for word, in order, merged."""
    matches = list(_WORD_RE.finditer(text))
    words = [match.group() for match in matches]
    quoted = [False] * len(words)
    for index, gram in enumerate(_grams(words)):
        if gram in grams:
            quoted[index : index + QUOTE_MIN_WORDS] = [True] * QUOTE_MIN_WORDS
    spans: list[Span] = []
    index = 0
    while index < len(words):
        if not quoted[index]:
            index += 1
            continue
        first = index
        while index < len(words) and quoted[index]:
            index += 1
        spans.append(_with_marks(text, matches[first].start(), matches[index - 1].end()))
    return spans


def spans_merged(spans: Iterable[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def quotes_blanked(text: str, spans: Iterable[Span]) -> str:
    """`text` with each span replaced by QUOTE_REMOVED."""
    for start, end in reversed(spans_merged(spans)):
        text = text[:start] + QUOTE_REMOVED + text[end:]
    return text


def _passages(count: int) -> str:
    return "1 passage" if count == 1 else f"{count:,} passages"


def removal_note(*, text: int, extracts: int) -> str:
    """What a summary says at its end once passages were removed from its text and its extracts."""
    where = [f"{_passages(text)} of this summary"] if text else []
    where += [f"{_passages(extracts)} of its extracts"] if extracts else []
    verb = "was" if text + extracts == 1 else "were"
    return f"[{' and '.join(where)} quoted messages that were purged and {verb} removed where marked.]"


# A summary's record of its quotes: {"content": [[start, end], ...], "extracts": [[key, index, start, end], ...]},
# spans of its text and of the texts its extracts list (decisions, questions...), as JSON can hold them.
ExtractSpan = tuple[str, int, int, int]


def _record_read(record: object) -> tuple[list[Span], set[ExtractSpan]]:
    """A stored record as spans (nothing from a record that is not one)."""
    record = record if isinstance(record, dict) else {}
    content = [(int(start), int(end)) for start, end in record.get("content", [])]
    extracts = {(str(key), int(index), int(start), int(end)) for key, index, start, end in record.get("extracts", [])}
    return content, extracts


def quotes_found(*, content: str, extracts: object, grams: set[int], known: object = None) -> dict:
    """Where the summary's text and extracts quote the sources of `grams`, together with what `known` (an
    earlier record of the same summary) held."""
    content_spans, extract_spans = _record_read(known)
    content_spans += quoted_spans(content, grams)
    for key, items in extracts.items() if isinstance(extracts, dict) else []:
        for index, item in enumerate(items if isinstance(items, list) else []):
            if isinstance(item, str):
                extract_spans.update((key, index, start, end) for start, end in quoted_spans(item, grams))
    found: dict = {}
    if content_spans:
        found["content"] = [list(span) for span in spans_merged(content_spans)]
    if extract_spans:
        found["extracts"] = [list(item) for item in sorted(extract_spans)]
    return found


def quotes_count(record: object) -> int:
    """How many passages a record holds (each merged span of the text, each extract that quotes)."""
    content_spans, extract_spans = _record_read(record)
    return len(content_spans) + len({(key, index) for key, index, _start, _end in extract_spans})


def quotes_blanked_all(*, content: str, extracts: object, record: object) -> tuple[str, object]:
    """The summary's text and extracts with every recorded passage blanked, and a note at the end of the text."""
    count = quotes_count(record)
    if not count:
        return content, extracts
    content_spans, extract_spans = _record_read(record)
    blanked = dict(extracts) if isinstance(extracts, dict) else {}
    by_item: dict[tuple[str, int], list[Span]] = {}
    for key, index, start, end in extract_spans:
        by_item.setdefault((key, index), []).append((start, end))
    for (key, index), spans in by_item.items():
        items = list(blanked.get(key) or [])
        if index < len(items) and isinstance(items[index], str):
            items[index] = quotes_blanked(items[index], spans)
            blanked[key] = items
    note = removal_note(text=len(spans_merged(content_spans)), extracts=len(by_item))
    return f"{quotes_blanked(content, content_spans)}\n\n{note}", blanked
