"""Structured extracts stored with a summary's metadata: decisions, files,
tools used with their counts, and open questions. Computed from the
redacted transcript, never from the summary, so they do not depend on which
summarizer ran."""

from __future__ import annotations

from collections import Counter

from compaction import lexicon
from compaction.transcript import TranscriptItem

MAX_ITEMS = 20
MAX_CHARS = 240


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1].rstrip() + "…"


def extracts_collect(items: list[TranscriptItem]) -> dict:
    decisions: list[str] = []
    files: list[str] = []
    tools: Counter = Counter()
    questions: list[tuple[int, str, frozenset[str]]] = []
    for index, item in enumerate(items):
        for call in item.tool_calls:
            tools[call["name"]] += 1
            files.extend(lexicon.find_paths(call["arguments"]))
        if item.role == "tool":
            continue
        files.extend(lexicon.find_paths(item.content))
        for sentence in lexicon.split_sentences(item.content):
            if lexicon.looks_like_injection(sentence):
                continue
            speaker = item.speaker if item.speaker else item.role
            if not sentence.endswith("?") and lexicon.mentions_decision(sentence):
                decisions.append(_short(f"{speaker}: {sentence}"))
            elif sentence.endswith("?") and len(lexicon.content_words(sentence)) >= 3:
                questions.append((index, _short(f"{speaker}: {sentence}"), frozenset(lexicon.content_words(sentence))))
    last_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        for word in lexicon.content_words(item.content):
            last_seen[word] = index
    open_questions = [
        text
        for index, text, words in questions
        if sum(1 for w in words if last_seen.get(w, -1) > index) < max(2, len(words) // 2)
    ]
    return {
        "decisions": list(dict.fromkeys(decisions))[-MAX_ITEMS:],
        "files": list(dict.fromkeys(files))[:MAX_ITEMS],
        "tools": {name: count for name, count in sorted(tools.items()) if count},
        "open_questions": list(dict.fromkeys(open_questions))[-MAX_ITEMS:],
    }


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
        if sentence.endswith("?") and len(lexicon.content_words(sentence)) >= 3:
            questions.append(_short(sentence))
        elif not sentence.endswith("?") and lexicon.mentions_decision(sentence):
            decisions.append(_short(sentence))
    return {
        "decisions": list(dict.fromkeys(decisions))[-MAX_ITEMS:],
        "files": list(dict.fromkeys(lexicon.find_paths(text)))[:MAX_ITEMS],
        "tools": dict(sorted(tools.items())),
        "open_questions": list(dict.fromkeys(questions))[-MAX_ITEMS:],
    }
