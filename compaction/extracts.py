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
            files.extend(m.group(0) for m in lexicon.PATH_RE.finditer(call["arguments"]))
        if item.role == "tool":
            continue
        files.extend(m.group(0) for m in lexicon.PATH_RE.finditer(item.content))
        for sentence in lexicon.split_sentences(item.content):
            if lexicon.looks_like_injection(sentence):
                continue
            speaker = item.speaker if item.speaker else item.role
            if lexicon.DECISION_RE.search(sentence) and not sentence.endswith("?"):
                decisions.append(_short(f"{speaker}: {sentence}"))
            elif sentence.endswith("?") and len(lexicon.content_words(sentence)) >= 3:
                questions.append((index, _short(f"{speaker}: {sentence}"),
                                  frozenset(lexicon.content_words(sentence))))
    later: set[str] = set()
    unanswered_after: dict[int, set[str]] = {}
    for index in range(len(items) - 1, -1, -1):
        unanswered_after[index] = set(later)
        later |= set(lexicon.content_words(items[index].content))
    open_questions = [text for index, text, words in questions
                      if len(words & unanswered_after.get(index, set())) < max(2, len(words) // 2)]
    return {
        "decisions": list(dict.fromkeys(decisions))[-MAX_ITEMS:],
        "files": list(dict.fromkeys(files))[:MAX_ITEMS],
        "tools": {name: count for name, count in sorted(tools.items()) if count},
        "open_questions": list(dict.fromkeys(open_questions))[-MAX_ITEMS:],
    }
