"""Structured extracts stored with a summary's metadata: the newest
decisions, the first files (only paths that read as paths), tools used with
their counts, and open questions (of the newest quarter, none that a later
message takes up). Each list holds at most MAX_ITEMS, and reading stops
when it is full, so the cost does not grow with the history. Computed from the
redacted transcript, never from the summary, so they do not depend on which
summarizer ran."""

from __future__ import annotations

from collections import Counter

from compaction import lexicon, references
from compaction.safety.injection import pattern_flags
from compaction.transcript import TranscriptItem

MAX_ITEMS = 20  # of each kind: the extracts are a list to scan, not a second summary
MAX_CHARS = 240  # an extract longer than this is cut: a line a list can show
# Open questions: asked from QUESTIONS_FROM of the stretch on (the newest quarter), of at least MIN_QUESTION_WORDS
# content words, and not taken up later (fewer than TAKEN_UP_WORDS, or a TAKEN_UP_PART, of their words said again).
QUESTIONS_FROM = 0.75
MIN_QUESTION_WORDS = 3
TAKEN_UP_WORDS = 2
TAKEN_UP_PART = 2


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1].rstrip() + "…"


def extracts_collect(items: list[TranscriptItem]) -> dict:
    """Tools counted over every call; the first files and the newest decisions, read only until there are
    enough of them (MAX_ITEMS); open questions from the newest quarter, as the offline summary reads them."""
    tools: Counter = Counter()
    for item in items:
        for call in item.tool_calls:
            tools[call["name"]] += 1
    return {
        "decisions": _newest_decisions(items),
        "files": _first_files(items),
        "tools": {name: count for name, count in sorted(tools.items()) if count},
        "open_questions": list(dict.fromkeys(_open_questions(items)))[-MAX_ITEMS:],
    }


def _first_files(items: list[TranscriptItem]) -> list[str]:
    files: dict[str, None] = {}
    for item in items:
        texts = [call["arguments"] for call in item.tool_calls]
        if item.role != "tool":
            texts.append(item.content)
        for text in texts:
            files.update(dict.fromkeys(references.find_files(text)))
        if len(files) >= MAX_ITEMS:
            break
    return list(files)[:MAX_ITEMS]


def _newest_decisions(items: list[TranscriptItem]) -> list[str]:
    found: dict[str, None] = {}
    for item in reversed(items):
        if item.role == "tool" or not item.content or not lexicon.mentions_decision(item.content):
            continue
        said = [
            _short(f"{item.speaker or item.role}: {sentence}")
            for sentence in lexicon.split_sentences(item.content)
            if not sentence.endswith("?")
            and lexicon.mentions_decision(sentence)
            and not lexicon.looks_like_injection(sentence)
        ]
        found.update(dict.fromkeys(reversed(said)))
        if len(found) >= MAX_ITEMS:
            break
    return list(found)[:MAX_ITEMS][::-1]


def _open_questions(items: list[TranscriptItem]) -> list[str]:
    """Questions of the newest quarter whose words no later message takes up.

    The cheap tests come first: a question of too few words, or one taken up (most are), is dropped before
    the injection check, which then reads only the questions still open. Whether a question is taken up is
    read walking back from the newest message, with the words said after it gathered in a set: messages
    older than the oldest question are never split into words, and a chat with no question splits none."""
    start = int(len(items) * QUESTIONS_FROM)
    asked: list[tuple[int, TranscriptItem, str, frozenset[str]]] = []
    for index in range(start, len(items)):
        item = items[index]
        if item.role == "tool" or "?" not in item.content:
            continue
        for sentence in lexicon.split_sentences(item.content):
            if sentence.endswith("?"):
                words = frozenset(lexicon.content_words(sentence))
                if len(words) >= MIN_QUESTION_WORDS:
                    asked.append((index, item, sentence, words))
    said_later: set[str] = set()  # every word of the messages after the question looked at (stop words too)
    position = len(items)
    still_open: list[tuple[TranscriptItem, str]] = []
    for index, item, sentence, words in reversed(asked):
        while position > index + 1:
            position -= 1
            said_later.update(lexicon.word_runs(items[position].content))
        if len(words & said_later) < max(TAKEN_UP_WORDS, len(words) // TAKEN_UP_PART):
            still_open.append((item, sentence))
    still_open.reverse()
    # Every open question's injection check in one batch (`pattern_flags`: `looks_like_injection` of each sentence,
    # the first passes scanning the batch once instead of each sentence on its own).
    injected = pattern_flags([sentence for _, sentence in still_open]) if still_open else []
    return [
        _short(f"{item.speaker or item.role}: {sentence}")
        for (item, sentence), flag in zip(still_open, injected, strict=True)
        if not flag
    ]


def extracts_from_text(text: str, *, tools: dict[str, int]) -> dict:
    """The extracts of a summary someone wrote or edited: what *its* text
    decides, names and leaves open (every question it keeps is open), so an
    edit that drops a decision drops it from the extracts too. Tools used are
    facts of the transcript, not of the wording: they are passed in."""
    decisions: list[str] = []
    questions: list[str] = []
    for sentence in lexicon.split_sentences(text):
        sentence = sentence.lstrip("#-*+> \t")  # Markdown's bullets and headings are not words
        if not sentence or lexicon.looks_like_injection(sentence):
            continue
        if sentence.endswith("?") and len(lexicon.content_words(sentence)) >= MIN_QUESTION_WORDS:
            questions.append(_short(sentence))
        elif not sentence.endswith("?") and lexicon.mentions_decision(sentence):
            decisions.append(_short(sentence))
    return {
        "decisions": list(dict.fromkeys(decisions))[-MAX_ITEMS:],
        "files": list(dict.fromkeys(references.find_files(text)))[:MAX_ITEMS],
        "tools": dict(sorted(tools.items())),
        "open_questions": list(dict.fromkeys(questions))[-MAX_ITEMS:],
    }
