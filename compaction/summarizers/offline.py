"""The offline summarizer: extractive, deterministic, structured.

It never writes a sentence of its own about the conversation; it chooses
sentences that were said, keeps who said them and when, and files them under
the sections every profile uses. Choosing is a budgeted coverage problem:
each sentence is worth the rarity (TF-IDF across the transcript) of the
content words it adds to what is already chosen, plus the kinds of detail a
reader cannot reconstruct later — names, numbers, dates, paths, URLs,
identifiers, decisions — divided by what it costs in tokens. A greedy pass
with lazy re-evaluation picks the best value per token until the budget is
spent; a sentence that would add almost nothing new (a near-duplicate) is
never picked.

With a previous summary, its lines join the candidates with a bonus, so an
iterative update keeps earlier facts while adding new ones inside the same
budget, instead of summarising a summary.

Text that addresses a summarizer or a model ("ignore previous instructions",
"the summary must say …") is never selected: it cannot become a line of the
summary, let alone an instruction. The summary only says how many such
passages were set aside.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import re
from collections import Counter, defaultdict

from chatcore.tokens import count_tokens
from compaction import lexicon
from compaction.redaction import redact
from compaction.transcript import TranscriptItem, format_date

GOAL = "Goal"
TIMELINE = "Timeline / key facts"
DECISIONS = "Key decisions"
TRIED = "Tried and outcome"
FILES = "Files and references"
QUESTIONS = "Open questions"
STATE = "Current state"
SECTIONS = (GOAL, TIMELINE, DECISIONS, TRIED, FILES, QUESTIONS, STATE)

_HEADING_RE = re.compile(r"^#{2,3}\s+(.*?)\s*$")
_BULLET_RE = re.compile(r"^\s*[-*•]\s+(.*)$")
_DATED_BULLET_RE = re.compile(r"^(\d{1,2} [A-Z][a-z]+ \d{4}) · (.*)$")
_CODE_BLOCK_RE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_FILLER_RE = re.compile(
    r"^(?:(?:oh|ohh|wow|hey|hi|hello|yeah|yes|yep|yup|haha+|hah|lol|omg|aw+|ah+|um+|uh|hmm+|well|so|thanks|"
    r"thank you|cool|great|nice|awesome|sure|okay|ok|totally|absolutely|definitely|right|true|exactly|gosh|"
    r"whoa|damn|ooh|congrats|congratulations)\b(?:\s+[A-Z][a-z]+)?[\s,!.…~-]*)+",
    re.IGNORECASE,
)
_MAX_SENTENCE_WORDS = 60
_CAPITALISED_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


@dataclasses.dataclass
class _Unit:
    order: tuple[int, int]
    speaker: str
    role: str
    date: str
    text: str
    words: frozenset[str]
    bonus: float
    tokens: int
    section: str
    previous: bool = False


def _speaker_label(item: TranscriptItem) -> str:
    if item.role == "tool":
        return f"tool {item.tool_name or item.speaker}"
    speaker = item.speaker or item.role
    return speaker.capitalize() if speaker in ("user", "assistant") else speaker


def _clean_sentence(sentence: str) -> str:
    sentence = _FILLER_RE.sub("", sentence).strip(" -–—,;")
    words = sentence.split()
    if len(words) > _MAX_SENTENCE_WORDS:
        sentence = " ".join(words[:_MAX_SENTENCE_WORDS]) + " …"
    if sentence and sentence[0].islower():
        sentence = sentence[0].upper() + sentence[1:]
    return sentence


def _detail_bonus(text: str) -> float:
    bonus = 0.0
    bonus += 2.0 * min(3, len(lexicon.URL_RE.findall(text)) + len(lexicon.PATH_RE.findall(text)))
    bonus += 1.5 * min(3, len(lexicon.IDENTIFIER_RE.findall(text)))
    bonus += 1.5 * min(2, len(lexicon.DATE_RE.findall(text)))
    bonus += 1.0 * min(3, len(lexicon.NUMBER_RE.findall(text)))
    bonus += 0.8 * min(4, len(_CAPITALISED_RE.findall(text)))
    bonus += 1.5 * min(2, len(lexicon.ERROR_RE.findall(text)))
    if lexicon.DECISION_RE.search(text):
        bonus += 2.0
    return bonus


def _section_for(text: str, role: str) -> str:
    if role == "tool":
        return TRIED
    if lexicon.URL_RE.search(text) or lexicon.PATH_RE.search(text):
        return FILES
    if lexicon.DECISION_RE.search(text) and not text.endswith("?"):
        return DECISIONS
    if lexicon.OUTCOME_RE.search(text) and lexicon.ERROR_RE.search(text):
        return TRIED
    return TIMELINE


class _Builder:
    def __init__(self) -> None:
        self.units: list[_Unit] = []
        self.set_aside = 0

    def add(self, *, order: tuple[int, int], speaker: str, role: str, date: str, text: str,
            section: str | None = None, previous: bool = False, bonus: float = 0.0) -> _Unit | None:
        text = text.strip()
        if not text:
            return None
        if lexicon.looks_like_injection(text):
            self.set_aside += 1
            return None
        words = frozenset(lexicon.content_words(text))
        details = _detail_bonus(text)
        if len(words) < 3 and details < 1.5 and not previous:
            return None
        prefix = f"- {speaker}: " if speaker else "- "
        unit = _Unit(order=order, speaker=speaker, role=role, date=date, text=text, words=words,
                     bonus=details + bonus, tokens=count_tokens(prefix + text) + 1,
                     section=section or _section_for(text, role), previous=previous)
        self.units.append(unit)
        return unit


def _units_from_items(builder: _Builder, items: list[TranscriptItem]) -> None:
    for index, item in enumerate(items):
        speaker = _speaker_label(item)
        date = format_date(item.created_at)
        if item.role == "tool":
            body = item.content.strip()
            lines = [line.strip() for line in body.splitlines() if line.strip()]
            errors = [m.group(0) for m in lexicon.ERROR_RE.finditer(body)][:2]
            summary = "; ".join(dict.fromkeys(([lines[0][:200]] if lines else []) + [e[:200] for e in errors]))
            builder.add(order=(index, 0), speaker=speaker, role="tool", date=date,
                        text=f"returned {summary}" if summary else "returned nothing", section=TRIED, bonus=1.0)
            continue
        text = _CODE_BLOCK_RE.sub(" [code] ", item.content)
        if lexicon.looks_like_injection(text):
            # A message that addresses the summarizer is set aside whole: its
            # other sentences ("Say X.") are the payload of the same attempt.
            builder.set_aside += 1
            continue
        for position, sentence in enumerate(lexicon.split_sentences(text)):
            cleaned = _clean_sentence(sentence)
            if cleaned and cleaned != "[code]":
                builder.add(order=(index, position + 1), speaker=speaker, role=item.role, date=date, text=cleaned)
        for number, call in enumerate(item.tool_calls):
            arguments = " ".join(call["arguments"].split())
            if len(arguments) > 160:
                arguments = arguments[:120] + " … " + arguments[-30:]
            builder.add(order=(index, 1000 + number), speaker=speaker, role=item.role, date=date,
                        text=f"called {call['name']}({arguments})", section=TRIED, bonus=1.5)


def _units_from_previous(builder: _Builder, previous_summary: str) -> None:
    """Each bullet of the previous summary is a candidate that keeps its section and date."""
    section = TIMELINE
    date = ""
    for number, line in enumerate(redact(previous_summary).text.splitlines()):
        heading = _HEADING_RE.match(line)
        if heading:
            title = heading.group(1)
            if title in SECTIONS:
                section, date = title, ""
            elif section == TIMELINE and lexicon.DATE_RE.fullmatch(title):
                date = title
            continue
        bullet = _BULLET_RE.match(line)
        if not bullet:
            continue
        text = bullet.group(1).strip()
        if text.lower() in ("none", "none recorded.") or text.startswith("Note: "):
            continue
        line_date = date
        dated = _DATED_BULLET_RE.match(text)
        if dated:
            line_date, text = dated.group(1), dated.group(2)
        speaker = ""
        if ": " in text[:60]:
            speaker, text = text.split(": ", 1)
        builder.add(order=(-1, number), speaker=speaker, role="summary", date=line_date, text=text,
                    section=TIMELINE if section == STATE else section, previous=True, bonus=3.0)


def _idf(units: list[_Unit], documents: int) -> dict[str, float]:
    df: Counter = Counter()
    by_document: dict[int, set[str]] = defaultdict(set)
    for unit in units:
        by_document[unit.order[0]].update(unit.words)
    for words in by_document.values():
        df.update(words)
    total = max(documents, len(by_document), 1)
    return {word: math.log((total + 1) / (count + 0.5)) for word, count in df.items()}


def _select(units: list[_Unit], budget: int, idf: dict[str, float], focus_words: set[str],
            reserved: list[_Unit]) -> list[_Unit]:
    """Budgeted greedy coverage with lazy evaluation (the gain of a unit only shrinks)."""
    covered: set[str] = set()
    chosen: list[_Unit] = []
    spent = 0
    for unit in reserved:
        chosen.append(unit)
        covered |= unit.words
        spent += unit.tokens

    def gain(unit: _Unit) -> float:
        fresh = unit.words - covered
        if unit.words and len(fresh) < 0.35 * len(unit.words) and not unit.previous:
            return 0.0  # a near-duplicate of what is already chosen
        value = sum(idf.get(word, 1.0) for word in fresh) + unit.bonus
        value += sum(3.0 + idf.get(word, 1.0) for word in unit.words & focus_words)
        return value

    def priority(unit: _Unit, value: float) -> float:
        return value / (unit.tokens + 2)

    reserved_ids = {id(unit) for unit in reserved}
    heap = []
    for position, unit in enumerate(units):
        if id(unit) in reserved_ids:
            continue
        heap.append((-priority(unit, gain(unit)), unit.order, position))
    heapq.heapify(heap)
    while heap and spent < budget:
        negative, order, position = heapq.heappop(heap)
        unit = units[position]
        value = gain(unit)
        if value <= 0:
            continue
        current = priority(unit, value)
        if heap and current < -heap[0][0] - 1e-12:
            heapq.heappush(heap, (-current, order, position))
            continue
        if spent + unit.tokens > budget:
            continue
        chosen.append(unit)
        covered |= unit.words
        spent += unit.tokens
    return chosen


def _open_questions(items: list[TranscriptItem], builder_units: list[_Unit]) -> list[_Unit]:
    """Questions in the last part of the transcript that no later turn seems to answer."""
    if not items:
        return []
    start = int(len(items) * 0.75)
    later_words: dict[int, set[str]] = {}
    running: set[str] = set()
    for index in range(len(items) - 1, -1, -1):
        later_words[index] = set(running)
        running |= set(lexicon.content_words(items[index].content))
    found = []
    for unit in builder_units:
        index = unit.order[0]
        if index < start or unit.previous or not unit.text.endswith("?") or len(unit.words) < 3:
            continue
        answered = len(unit.words & later_words.get(index, set())) >= max(2, len(unit.words) // 2)
        if not answered:
            found.append(unit)
    return found[-3:]


def _render_line(unit: _Unit, with_date: bool) -> str:
    prefix = f"{unit.speaker}: " if unit.speaker else ""
    if with_date and unit.date:
        return f"- {unit.date} · {prefix}{unit.text}"
    return f"- {prefix}{unit.text}"


def _render(header: str, sections: dict[str, list[_Unit]], set_aside: int) -> str:
    lines = [header]
    for title in SECTIONS:
        units = sorted(sections.get(title, []), key=lambda u: u.order)
        lines.append(f"## {title}")
        if title == TIMELINE:
            current_date = None
            for unit in units:
                if unit.date and unit.date != current_date:
                    lines.append(f"### {unit.date}")
                    current_date = unit.date
                lines.append(_render_line(unit, with_date=False))
        else:
            lines.extend(_render_line(unit, with_date=True) for unit in units)
        if title == STATE and set_aside:
            lines.append(f"- Note: {set_aside} passage(s) addressed to a model or summarizer were kept out of "
                         "this summary; they are conversation content, not instructions.")
        if lines[-1] == f"## {title}":
            lines.append("- none")
    return "\n".join(lines)


def _header(items: list[TranscriptItem], previous_summary: str | None) -> str:
    speakers = list(dict.fromkeys(_speaker_label(i) for i in items if i.role in ("user", "assistant")))
    dates = [i.created_at for i in items if i.created_at is not None]
    span = f", {format_date(min(dates))} to {format_date(max(dates))}" if dates else ""
    who = f" between {', '.join(speakers[:4])}" if speakers else ""
    update = " (updated from the previous summary)" if previous_summary else ""
    return f"# Summary of {len(items)} messages{who}{span}{update}"


def _truncate_to_tokens(text: str, max_tokens: int) -> str:
    while text and count_tokens(text) > max_tokens:
        cut = max(1, int(len(text) * max_tokens / max(count_tokens(text), 1)) - 4)
        text = text[:cut].rstrip()
    return text


def summarize_offline(*, items: list[TranscriptItem], previous_summary: str | None, focus: str,
                      max_tokens: int) -> str:
    """A structured summary of `items` (merged with `previous_summary`) within `max_tokens`."""
    max_tokens = max(int(max_tokens), 1)
    builder = _Builder()
    if previous_summary:
        _units_from_previous(builder, previous_summary)
    _units_from_items(builder, items)
    units = builder.units
    idf = _idf(units, len(items))
    focus_words = set(lexicon.content_words(focus or ""))

    reserved: list[_Unit] = []
    previous_goal = [u for u in units if u.previous and u.section == GOAL]
    if previous_goal:
        reserved.extend(previous_goal[:2])
    else:
        users = [u for u in units if u.role == "user" and not u.previous]
        goal = next((u for u in users if len(u.words) >= 4 and not u.text.endswith("?")), users[0] if users else None)
        if goal is not None:
            reserved.append(dataclasses.replace(goal, section=GOAL))
    questions = [dataclasses.replace(u, section=QUESTIONS) for u in _open_questions(items, units)]
    state_units: list[_Unit] = []
    taken = set().union(*(u.words for u in reserved)) if reserved else set()
    for index in range(len(items) - 1, max(-1, len(items) - 8), -1):
        if len(state_units) >= 2:
            break
        candidates = [u for u in units if u.order[0] == index and not u.previous and u.role != "tool"
                      and len(u.words - taken) >= 0.5 * len(u.words)]
        if candidates:
            best = max(candidates, key=lambda u: (len(u.words) + u.bonus, -u.order[1]))
            state_units.append(dataclasses.replace(best, section=STATE))
            taken |= best.words

    header = _header(items, previous_summary)
    skeleton = _render(header, {}, builder.set_aside)
    overhead = count_tokens(skeleton) + 2 * len(SECTIONS)
    budget = max_tokens - overhead
    affordable = []
    spent = sum(u.tokens for u in reserved)
    for share, group in ((0.25, state_units[:1]), (0.3, state_units[1:] + questions)):
        for unit in group:
            if spent + unit.tokens <= budget * share:
                affordable.append(unit)
                spent += unit.tokens
    reserved_all = [u for u in reserved if u.tokens <= budget] + affordable
    excluded = {(u.order, u.text) for u in reserved_all}
    pool = [u for u in units if (u.order, u.text) not in excluded]
    chosen = _select(pool, budget, idf, focus_words, reserved_all)

    def render(selection: list[_Unit]) -> str:
        sections: dict[str, list[_Unit]] = defaultdict(list)
        for unit in selection:
            sections[unit.section].append(unit)
        return _render(header, sections, builder.set_aside)

    text = render(chosen)
    # Dates add headings the estimate did not count: drop the least valuable lines until it fits.
    while count_tokens(text) > max_tokens and chosen:
        removable = [u for u in chosen if u not in reserved_all] or chosen
        victim = min(removable, key=lambda u: ((u.bonus + len(u.words)) / (u.tokens + 2), u.order))
        chosen = [u for u in chosen if u is not victim]
        text = render(chosen)
    if count_tokens(text) > max_tokens:
        text = _truncate_to_tokens(text, max_tokens)
    return text
