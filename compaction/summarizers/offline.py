"""The offline summarizer: extractive, deterministic, structured.

It never writes a sentence of its own about the conversation; it chooses
what was said, keeps who said it and when, and files it under the sections
every profile uses. Each informative sentence of a message is a candidate
(reactions and questions back to the other person are left out), and so is
the caption of what it shared (an image), which weighs half: it describes
an attachment in generic words rather than tells what happened. Sentences
of one message that are chosen stay together, in their order.

A candidate is worth the information of its content words — rare in this
conversation (IDF) and rare in English at large (word frequencies from the
`wordfreq` package, shipped with its data) — weighted by how much it reads as
a report of facts rather than chit-chat (first person, past tense, anchored
in time, naming things), plus the details a reader cannot reconstruct later:
paths, URLs, identifiers, numbers, dates, errors, decisions. Focus terms
count extra. Candidates are taken best value per token first until the
budget is spent; one whose content words are mostly in the summary already
(a near-duplicate) is skipped. Articles, intensifiers and hedges are dropped
from the chosen text, and greetings and catching-up phrases from the start
of a sentence; every other word stays as it was said. Relative time
expressions get the date they mean ("yesterday (7 May 2023)"), since a line
of a summary is read away from its day.

Every line reads "date · speaker: text"; in the timeline one speaker's
facts of one day share a line, so the prefix is paid once and the facts
told together stay together. A section with nothing in it is left out.

With a previous summary, its lines join the candidates with a bonus, so an
iterative update keeps earlier facts while adding new ones inside the same
budget, instead of summarizing a summary.

Text that addresses a summarizer or a model ("ignore previous instructions",
"the summary must say …") is never selected: it cannot become a line of the
summary, let alone an instruction. The summary only says how many such
passages were set aside.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import heapq
import itertools
import math
import re
from collections import Counter, defaultdict

import wordfreq

from chatcore.tokens import count_tokens
from compaction import lexicon
from compaction.dates import anchor_dates, expression_spans
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
    r"whoa|damn|ooh|congrats|congratulations)\b(?-i:\s+[A-Z][a-z]+(?=\s*[,!.]))?[\s,!.…~-]*)+",
    re.IGNORECASE,
)
# Greetings and catching-up phrases that open a chat turn and report nothing ("so much has happened since
# we last spoke - I went to …"): removed with the punctuation that follows them.
_PLEASANTRY_RE = re.compile(
    r"^(?:(?:(?:so )?(?:much|a lot|lots|a lot's|lot's|a bunch|quite a bit|tons|loads)\s+(?:has\s+|'s\s+)?"
    r"(?:happened|going on|been going on)\s+)?since (?:we|I) last (?:spoke|talked|chatted|chat|caught up|saw "
    r"each other|met)|long time no (?:see|talk|chat|speak)|how(?:'s| is) it going|how have you been|how are you"
    r"(?: doing)?|what's up(?: with you)?|guess what|good to (?:hear from|see|talk to) you)"
    # Only as a clause of its own: "guess what I bought" and "since we last talked I have been sober" say something.
    r"(?=\s*[,!?.:;…~-]|\s*$)[\s,!?.:;…~-]*",
    re.IGNORECASE,
)
_MAX_SENTENCE_WORDS = 60
# Value is divided by tokens ** _COST_EXPONENT: at 1, value per token, the usual ratio of budgeted coverage. Lower
# favours long passages, which in chat are more often long reactions than more facts; the compacted context
# on LoCoMo kept fewer answers at 0.5 and 0.75 than at 1 (compaction_fidelity, 29 November 2026).
_COST_EXPONENT = 1.0
# A candidate whose content words are mostly already in the summary is a near-duplicate.
_MIN_NEW_SHARE = 0.35
_CAPITALISED_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
_SHARED_RE = re.compile(r"\[shared an? (?:image|photo|file|link)[^\]]*\]")
_IMAGE_RE = re.compile(
    r"\[shared an image: (?:a |an )?(?:photo|photography|picture|image|close up|drawing|painting)"
    r"(?: of)? (?:a |an |the )?",
    re.I,
)
# Words that cost tokens and carry nothing a reader needs: articles, intensifiers, hedges.
_DROPPED_WORDS = frozenset(
    """a an the really just so very pretty super totally actually basically definitely
honestly literally quite kinda sorta absolutely truly seriously simply""".split()
)

_FIRST_PERSON_RE = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|we|we're|we've|my|our|me|us|mine)\b", re.I)
_LOWER_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_FIRST_PERSON = frozenset("i i'm i've i'd i'll we we're we've we'd we'll my our me us mine ours".split())
_SECOND_PERSON = frozenset("you your you're you've yours you'd you'll".split())
_IRREGULAR_PAST = frozenset(
    """went made got took gave ran saw bought found began felt met left won lost wrote read
sang taught brought built caught chose drew drove ate fell flew grew heard held kept knew led paid rode sent sold
spent spoke stood swam thought told threw wore did had was were became came broke forgot ago since""".split()
)
_TIME_WORDS = frozenset(
    """yesterday today tonight tomorrow ago last next recently weekend week month year monday
tuesday wednesday thursday friday saturday sunday summer winter spring fall autumn birthday anniversary since
deadline release sprint""".split()
)
# Reactions rather than facts: a sentence made mostly of these reports nothing new.
_EVALUATIVE = frozenset(
    """amazing awesome great good nice cool lovely beautiful wonderful fantastic incredible
inspiring inspired proud happy glad fun exciting excited love loved loving lots special important vital
super sweet cute gorgeous stunning impressive brilliant perfect best better totally sure hope hoping wish feel feels
felt feeling thanks thank congrats congratulations sounds sound looks look seems true agree definitely
keep support supportive means mean meaning appreciate appreciated care caring kind wow interesting thing things
stuff tough hard difficult easy""".split()
)


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
    factor: float = 1.0
    line_cost: int = 0

    @property
    def line_key(self) -> tuple:
        """Units sharing a key share a line: one speaker's facts of one day, or one turn outside the timeline."""
        if self.section == TIMELINE:
            return (self.section, self.date, self.speaker)
        return (self.section, _turn_key(self))


def _speaker_label(item: TranscriptItem) -> str:
    if item.role == "tool":
        return f"tool {item.tool_name or item.speaker}"
    speaker = item.speaker or item.role
    return speaker.capitalize() if speaker in ("user", "assistant") else speaker


def _compress(text: str) -> str:
    """Drop articles, intensifiers and hedges; shorten attachment captions. Meaning-bearing words all stay.

    A relative time expression and the date anchored to it are kept exactly as they are.
    """
    text = _IMAGE_RE.sub("[image: ", text)
    pieces, start = [], 0
    for begin, end in expression_spans(text):
        pieces.extend([(_compress_words(text[start:begin]), False), (text[begin:end], True)])
        start = end
    pieces.append((_compress_words(text[start:]), False))
    return "".join(piece for piece, _ in pieces).strip()


def _compress_words(text: str) -> str:
    """`text` without its dropped words, keeping the spaces at its edges (it may sit between kept pieces)."""
    lead = " " if text[:1].isspace() else ""
    tail = " " if text[-1:].isspace() else ""
    out: list[str] = []
    for token in text.split():
        core = token.strip(".,!?;:\"'()[]…").lower()
        if core in _DROPPED_WORDS and not token.startswith("["):
            trail = token[len(token.rstrip(".,!?;:")) :]
            if trail and out:
                out[-1] += trail
            continue
        out.append(token)
    body = " ".join(out)
    return lead + body + tail if body else (lead or tail)


def _informative(sentence: str) -> bool:
    """Whether a sentence of a message says something beyond reacting or asking back."""
    if _SHARED_RE.search(sentence):
        return True
    words = lexicon.content_words(sentence)
    if sentence.rstrip().endswith("?") and not _FIRST_PERSON_RE.search(sentence):
        return False
    if len(words) < 3 and not lexicon.NUMBER_RE.search(sentence):
        return False
    evaluative = sum(1 for w in words if w in _EVALUATIVE) / max(1, len(words))
    return evaluative < 0.5


def _clean_sentence(sentence: str) -> str:
    sentence = _PLEASANTRY_RE.sub("", _FILLER_RE.sub("", _PLEASANTRY_RE.sub("", sentence))).strip(" -–—,;")
    words = sentence.split()
    if len(words) > _MAX_SENTENCE_WORDS:
        sentence = " ".join(words[:_MAX_SENTENCE_WORDS]) + " …"
    if sentence and sentence[0].islower():
        sentence = sentence[0].upper() + sentence[1:]
    return sentence


def _detail_bonus(text: str) -> float:
    """Details a later turn cannot reconstruct: references, identifiers, dates, numbers, names, errors, decisions."""
    bonus = 0.0
    if "/" in text or "." in text:
        bonus += 2.0 * min(3, len(lexicon.URL_RE.findall(text)) + len(lexicon.find_paths(text)))
    bonus += 1.5 * min(3, len(lexicon.find_identifiers(text)))
    bonus += 1.5 * min(2, len(lexicon.find_dates(text)))
    bonus += 1.0 * min(3, len(lexicon.NUMBER_RE.findall(text)))
    bonus += 0.8 * min(4, len(_CAPITALISED_RE.findall(text)))
    bonus += 1.5 * min(2, len(lexicon.ERROR_RE.findall(text)))
    if lexicon.mentions_decision(text):
        bonus += 2.0
    return bonus


def _fact_factor(text: str, words: frozenset[str]) -> float:
    """How much a passage reads as a report of facts rather than chit-chat, from its form alone.

    Reported events are told in the first person, often in the past tense
    and anchored in time ("last Friday I …"); reactions and questions back
    to the other person ("that's amazing, how did you …?") carry little.
    """
    tokens = _LOWER_WORD_RE.findall(text.lower().replace("’", "'"))
    present = set(tokens)
    factor = 1.8 if present & _TIME_WORDS else 1.0
    factor *= 1.3 if present & _FIRST_PERSON else 0.8
    past = bool(present & _IRREGULAR_PAST) or any(len(t) > 4 and t.endswith("ed") for t in present)
    factor *= 1.2 if past else 0.85
    # A caption describes an attachment in generic words ("a photo of a dog on a boat"); what people said
    # about their lives outweighs it (the sentence that went with the picture is a candidate of its own).
    factor *= 0.5 if "[image:" in text or _SHARED_RE.search(text) else 1.0
    factor *= 1.1 if any(character.isdigit() for character in text) else 1.0
    factor *= 1.0 + 0.1 * min(3, len(_CAPITALISED_RE.findall(text)))
    sentences = max(1, len(lexicon.split_sentences(text)))
    factor *= 1.0 - 0.4 * min(1.0, text.count("?") / sentences)
    factor *= 0.85 ** min(3, sum(1 for t in tokens if t in _SECOND_PERSON))
    if words:
        factor *= 1.0 - 0.8 * sum(1 for w in words if w in _EVALUATIVE) / len(words)
    return factor


def _section_for(text: str, role: str) -> str:
    if role == "tool":
        return TRIED
    if lexicon.URL_RE.search(text) or lexicon.find_paths(text):
        return FILES
    if not text.endswith("?") and lexicon.mentions_decision(text):
        return DECISIONS
    if lexicon.ERROR_RE.search(text) and lexicon.OUTCOME_RE.search(text):
        return TRIED
    return TIMELINE


class _Builder:
    def __init__(self) -> None:
        self.units: list[_Unit] = []
        self.set_aside = 0

    def add(self, **fields) -> _Unit | None:
        unit = self.make(**fields)
        if unit is not None:
            self.units.append(unit)
        return unit

    def make(
        self,
        *,
        order: tuple[int, int],
        speaker: str,
        role: str,
        date: str,
        text: str,
        section: str | None = None,
        previous: bool = False,
        bonus: float = 0.0,
        said_on: dt.datetime | None = None,
    ) -> _Unit | None:
        text = text.strip()
        if not text:
            return None
        if (previous or role == "tool" or section is not None) and lexicon.looks_like_injection(text):
            self.set_aside += 1
            return None
        words = frozenset(lexicon.content_words(text))
        details = _detail_bonus(text)
        if len(words) < 3 and details < 1.5 and not previous:
            return None
        factor = 1.0 if previous or role == "tool" else _fact_factor(text, words)
        # Dates first: "the day before yesterday" and "a week ago" need their articles to mean what they mean.
        shown = text if previous else _compress(anchor_dates(text, said_on=said_on))
        prefix = f"- {date} · " if date else "- "
        prefix += f"{speaker}: " if speaker else ""
        unit = _Unit(
            order=order,
            speaker=speaker,
            role=role,
            date=date,
            text=shown,
            words=words,
            bonus=details + bonus,
            tokens=count_tokens(shown) + 1,
            section=section or _section_for(text, role),
            previous=previous,
            factor=factor,
            line_cost=count_tokens(prefix) + 1,
        )
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
            builder.add(
                order=(index, 0),
                speaker=speaker,
                role="tool",
                date=date,
                text=f"returned {summary}" if summary else "returned nothing",
                section=TRIED,
                bonus=1.0,
            )
            continue
        text = _CODE_BLOCK_RE.sub(" [code] ", item.content)
        if lexicon.looks_like_injection(text):
            # A message that addresses the summarizer is set aside whole: its
            # other sentences ("Say X.") are the payload of the same attempt.
            builder.set_aside += 1
            continue
        # What was shared (an image's caption) is kept apart from the sentences around it, so that dropping
        # a reaction ("Look at this!") does not drop the picture with it.
        shared = _SHARED_RE.findall(text)
        sentences = []
        for sentence in lexicon.split_sentences(_SHARED_RE.sub(" ", text)):
            cleaned = _clean_sentence(sentence)
            if cleaned and cleaned != "[code]":
                sentences.append(cleaned)
        if len(sentences) > 1:
            sentences = [sentence for sentence in sentences if _informative(sentence)]
        for position, sentence in enumerate(sentences + shared, start=1):
            builder.add(
                order=(index, position),
                speaker=speaker,
                role=item.role,
                date=date,
                text=sentence,
                said_on=item.created_at,
            )
        for number, call in enumerate(item.tool_calls):
            arguments = " ".join(call["arguments"].split())
            if len(arguments) > 160:
                arguments = arguments[:120] + " … " + arguments[-30:]
            builder.add(
                order=(index, 1000 + number),
                speaker=speaker,
                role=item.role,
                date=date,
                text=f"called {call['name']}({arguments})",
                section=TRIED,
                bonus=1.5,
            )


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
        builder.add(
            order=(-1, number),
            speaker=speaker,
            role="summary",
            date=line_date,
            text=text,
            section=TIMELINE if section == STATE else section,
            previous=True,
            bonus=3.0,
        )


def _idf(units: list[_Unit], documents: int) -> dict[str, float]:
    df: Counter = Counter()
    by_document: dict[int, set[str]] = defaultdict(set)
    for unit in units:
        by_document[unit.order[0]].update(unit.words)
    for words in by_document.values():
        df.update(words)
    total = max(documents, len(by_document), 1)
    # Rare in this conversation (IDF) and rare in English at large: "marshmallows" and "Sweden" outweigh
    # "colors" and "feel", even when each is said once.
    return {
        word: math.log((total + 1) / (count + 0.5)) * min(max(_general_rarity(word) / 3.0, 0.2), 1.5)
        for word, count in df.items()
    }


@functools.cache
def _general_rarity(word: str) -> float:
    """Bits-like surprise of a word in general English: 0 for 'the', about 4 for rare words."""
    if word.isdigit():
        return 2.5
    zipf = wordfreq.zipf_frequency(word, "en")
    return min(max(7.0 - zipf, 0.1), 4.5)


def _select(
    units: list[_Unit], budget: int, idf: dict[str, float], focus_words: set[str], reserved: list[_Unit]
) -> list[_Unit]:
    """Budgeted greedy coverage with lazy evaluation.

    A unit's gain only shrinks as others are chosen; its cost can drop when another unit opens its line
    (no second prefix), and it is re-valued when it comes up, which at worst takes it a little later than a
    full re-sort would.
    """
    covered: set[str] = set()
    chosen: list[_Unit] = []
    opened: set[tuple] = set()
    spent = 0

    def cost(unit: _Unit) -> int:
        # A unit joining a line already in the summary pays only for its words, not for another prefix.
        return unit.tokens + (0 if unit.line_key in opened else unit.line_cost)

    for unit in reserved:
        chosen.append(unit)
        covered |= unit.words
        spent += cost(unit)
        opened.add(unit.line_key)

    def gain(unit: _Unit) -> float:
        fresh = unit.words - covered
        if unit.words and len(fresh) < _MIN_NEW_SHARE * len(unit.words) and not unit.previous:
            return 0.0  # a near-duplicate of what is already chosen
        # fsum: a set's order changes with the hash seed, and a plain float sum with it; ties must not.
        value = math.fsum(idf.get(word, 1.0) for word in unit.words) * unit.factor + unit.bonus
        if focus_words and not focus_words.isdisjoint(unit.words):
            value *= 3.0  # what the user asked to keep comes first
        return value

    def priority(unit: _Unit, value: float) -> float:
        return value / (cost(unit) + 2) ** _COST_EXPONENT

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
        if spent + cost(unit) > budget:
            continue
        chosen.append(unit)
        covered |= unit.words
        spent += cost(unit)
        opened.add(unit.line_key)
    return chosen


def _open_questions(builder: _Builder, items: list[TranscriptItem]) -> list[_Unit]:
    """Questions in the last quarter of the transcript whose words no later message takes up."""
    last_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        for word in lexicon.content_words(item.content):
            last_seen[word] = index
    found = []
    for index in range(int(len(items) * 0.75), len(items)):
        item = items[index]
        if item.role not in ("user", "assistant"):
            continue
        for sentence in lexicon.split_sentences(item.content):
            if not sentence.endswith("?") or lexicon.looks_like_injection(sentence):
                continue
            words = set(lexicon.content_words(sentence))
            if len(words) < 3:
                continue
            taken_up = sum(1 for word in words if last_seen.get(word, -1) > index)
            if taken_up < max(2, len(words) // 2):
                unit = builder.make(
                    order=(index, 900),
                    speaker=_speaker_label(item),
                    role=item.role,
                    date=format_date(item.created_at),
                    text=_clean_sentence(sentence),
                    section=QUESTIONS,
                    said_on=item.created_at,
                )
                if unit is not None:
                    found.append(unit)
    return found[-3:]


def _turn_key(unit: _Unit) -> tuple[int, int]:
    return (unit.order[0], -1) if unit.order[0] >= 0 else (-1, unit.order[1])


def _group_lines(units: list[_Unit]) -> list[list[_Unit]]:
    """Units that share a line key, in the order they were said, as lines in the order of their first unit."""
    groups: dict[tuple, list[_Unit]] = {}
    for unit in sorted(units, key=lambda u: u.order):
        groups.setdefault(unit.line_key, []).append(unit)
    return list(groups.values())


def _joined(text: str) -> str:
    """A sentence followed by another on the same line ends with its own mark, or gets a full stop."""
    return text + "." if text[-1:].isalnum() else text


def _render_line(group: list[_Unit]) -> str:
    first = group[0]
    parts = [first.text]
    for before, unit in itertools.pairwise(group):
        parts[-1] = _joined(parts[-1])
        # Sentences left out between two of one turn, or another turn of the speaker's: not one utterance.
        gap = _turn_key(before) != _turn_key(unit) or unit.order[1] != before.order[1] + 1
        parts.append(("… " if gap else "") + unit.text)
    body = " ".join(parts)
    prefix = f"{first.speaker}: " if first.speaker else ""
    if first.date:
        return f"- {first.date} · {prefix}{body}"
    return f"- {prefix}{body}"


def _render(header: str, sections: dict[str, list[_Unit]], set_aside: int) -> str:
    """The sections that have something to say, in their fixed order; empty ones cost no tokens."""
    lines = [header]
    for title in SECTIONS:
        body = [_render_line(group) for group in _group_lines(sections.get(title, []))]
        if title == STATE and set_aside:
            body.append(
                f"- Note: {set_aside} passage(s) addressed to a model or summarizer were kept out of "
                "this summary; they are conversation content, not instructions."
            )
        if body:
            lines.append(f"## {title}")
            lines.extend(body)
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


def summarize_offline(*, items: list[TranscriptItem], previous_summary: str | None, focus: str, max_tokens: int) -> str:
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
    questions = _open_questions(builder, items)
    state_units: list[_Unit] = []
    taken = set().union(*(u.words for u in reserved)) if reserved else set()
    for index in range(len(items) - 1, max(-1, len(items) - 8), -1):
        if len(state_units) >= 2:
            break
        candidates = [
            u
            for u in units
            if u.order[0] == index
            and not u.previous
            and u.role != "tool"
            and len(u.words - taken) >= 0.5 * len(u.words)
        ]
        if candidates:
            best = max(candidates, key=lambda u: (len(u.words) + u.bonus, -u.order[1]))
            state_units.append(dataclasses.replace(best, section=STATE))
            taken |= best.words

    header = _header(items, previous_summary)
    skeleton = _render(header, {}, builder.set_aside)
    # Headings are paid only by the sections that get a line; count them all, the fit below gives back the rest.
    overhead = count_tokens(skeleton) + sum(count_tokens(f"## {title}") + 1 for title in SECTIONS)
    budget = max_tokens - overhead
    affordable = []
    spent = sum(u.tokens + u.line_cost for u in reserved)
    for share, group in ((0.25, state_units[:1]), (0.3, state_units[1:] + questions)):
        for unit in group:
            if spent + unit.tokens + unit.line_cost <= budget * share:
                affordable.append(unit)
                spent += unit.tokens + unit.line_cost
    reserved_all = [u for u in reserved if u.tokens + u.line_cost <= budget] + affordable
    excluded = {(u.order, u.text) for u in reserved_all}
    pool = [u for u in units if (u.order, u.text) not in excluded]
    chosen = _select(pool, budget, idf, focus_words, reserved_all)

    def render(selection: list[_Unit]) -> str:
        sections: dict[str, list[_Unit]] = defaultdict(list)
        for unit in selection:
            sections[unit.section].append(unit)
        return _render(header, sections, builder.set_aside)

    text = render(chosen)
    # The estimate counts every heading and a full prefix per line, and the rendered text is often shorter:
    # give what is left back to the selection, halving the step when a wider choice would not fit.
    step = max_tokens - count_tokens(text)
    for _ in range(6):
        if step < 8:
            break
        wider = _select(pool, budget + step, idf, focus_words, reserved_all)
        wider_text = render(wider)
        if count_tokens(wider_text) <= max_tokens:
            budget += step
            chosen, text = wider, wider_text
            step = max_tokens - count_tokens(text)
        else:
            step //= 2
    # Should the estimate have been short instead, drop the least valuable lines until it fits.
    while count_tokens(text) > max_tokens and chosen:
        removable = [u for u in chosen if u not in reserved_all] or chosen
        victim = min(removable, key=lambda u: ((u.bonus + len(u.words)) / (u.tokens + 2), u.order))
        chosen = [u for u in chosen if u is not victim]
        text = render(chosen)
    if count_tokens(text) > max_tokens:
        text = _truncate_to_tokens(text, max_tokens)
    return text
