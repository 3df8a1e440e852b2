"""The selectors: which units fill each kind of section, and how each line is framed.

Every selector takes the shared analysis, a budget in (estimated) tokens and
the units already used by an earlier section, and returns entries. They
read the forms of speech found once per unit (a request, a decision, a next
step, an open question, an instruction) and the recency of what was said.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections import Counter
from operator import attrgetter

from compaction import instructions as instruction_rules
from compaction.summarizers.offline import patterns
from compaction.summarizers.offline.entries import Entry
from compaction.summarizers.offline.select import PER_TOKEN_PAD, within
from compaction.summarizers.offline.tools import Attempt
from compaction.summarizers.offline.units import Unit
from compaction.transcript import TranscriptItem

LINE_TOKENS = 6  # "- 8 May 2023 · Ana: " and the line break, roughly
PROSE_CHARS_PER_TOKEN = 4  # a line's lead or tail (the summarizer's own words) counted from its characters
MIN_CONTENT_WORDS = 3  # a piece with fewer content words is too thin to state a goal, a decision or a question
# A short conversation's recent part: at least this many messages, at most this part (a third) of them.
MIN_RECENT_MESSAGES = 2
SHORT_RECENT_PART = 3


@dataclasses.dataclass
class Analysis:
    items: list[TranscriptItem]
    units: list[Unit]
    attempts: list[Attempt]
    idf: dict[str, float]
    values: dict[int, float]  # id(unit) → worth
    carried: list[Unit]
    set_aside: int = 0
    set_aside_by: list[str] = dataclasses.field(default_factory=list)  # whose messages were set aside
    frontier: float = 0.0  # value per token of the last unit the budget would take on worth alone
    user_turns: list[int] = dataclasses.field(default_factory=list)  # indices of the user's messages
    # script → indices of the people's messages written in it (scripts.scripts_of), set aside ones included
    scripts: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    set_aside_items: frozenset[int] = frozenset()  # indices of the messages set aside as addressed to a model
    heading: str = ""  # the summary's header line, once written (render.header: the same for every render)

    def worthy(self, entry: Entry, factor: float) -> bool:
        """Whether an entry is worth its tokens: at least `factor` times the budget's marginal value per token."""
        return entry.value / (entry.tokens + PER_TOKEN_PAD) >= factor * self.frontier

    def value(self, unit: Unit) -> float:
        return self.values[id(unit)]

    def recent_from(self, share: float, least: int, most: int) -> int:
        """The index from which the newest `share` of the messages starts: at least `least` of them (but never
        more than a third of a short conversation), at most `most`."""
        short = max(MIN_RECENT_MESSAGES, len(self.items) // SHORT_RECENT_PART)
        count = min(max(int(len(self.items) * share), min(least, short)), most)
        return max(0, len(self.items) - count)


def _entry(units: list[Unit], analysis: Analysis, **framing) -> Entry:
    tokens = sum(u.tokens for u in units) + LINE_TOKENS + len(framing.get("lead", "")) // PROSE_CHARS_PER_TOKEN
    return Entry(
        units=units,
        day=units[0].day,
        value=sum(analysis.value(u) for u in units),
        tokens=tokens + len(framing.get("tail", "")) // PROSE_CHARS_PER_TOKEN,
        **framing,
    )


def _ranked(entries: list[Entry]) -> list[tuple[float, int, Entry]]:
    return sorted(
        ((e.value / (e.tokens + PER_TOKEN_PAD), e.tokens, e) for e in entries), key=lambda x: (-x[0], x[2].order)
    )


def _good(analysis: Analysis, entries: list[Entry], factor: float) -> list[Entry]:
    return [entry for entry in entries if analysis.worthy(entry, factor)]


# Goals: a request's centrality is per square root of its words (a long request is not central in proportion to
# its length); a request phrased as a goal gets a bonus, its worth a small part; at most MAX_GOALS of them, each
# with at least GOAL_NEW_SHARE of its words new, worth at least GOAL_WORTH of the budget's value per token.
CENTRALITY_LENGTH_POWER = 0.5
GOAL_FORM_BONUS = 2.0
GOAL_WORTH_WEIGHT = 0.1
MAX_GOALS = 2
GOAL_NEW_SHARE = 0.5
GOAL_WORTH = 0.5


def goal(analysis: Analysis, budget: float, used: set[int]) -> list[Entry]:
    """What the user is trying to achieve: their requests whose words recur across their requests."""
    requests = [
        u
        for u in analysis.units
        if u.role == "user"
        and id(u) not in used
        and ("goal" in u.flags or "instruction" in u.flags)
        and ("question" not in u.flags or "instruction" in u.flags)
        and len(u.words) >= MIN_CONTENT_WORDS
    ]
    if not requests:
        return []
    spread = Counter(word for u in requests for word in u.words)
    scored = []
    for unit in requests:
        centrality = (
            sum(analysis.idf.get(w, 1.0) * (spread[w] - 1) for w in unit.words)
            / len(unit.words) ** CENTRALITY_LENGTH_POWER
        )
        form = GOAL_FORM_BONUS if "goal" in unit.flags else 0.0
        scored.append((centrality + form + GOAL_WORTH_WEIGHT * analysis.value(unit), unit))
    scored.sort(key=lambda pair: (-pair[0], pair[1].order))
    entries: list[Entry] = []
    for _, unit in scored:
        if len(entries) == MAX_GOALS:
            break
        if all(len(unit.words - e.units[0].words) >= GOAL_NEW_SHARE * len(unit.words) for e in entries):
            entries.append(_entry([unit], analysis))
    return within([(0, e.tokens, e) for e in _good(analysis, entries, GOAL_WORTH)], budget)


def instructions(analysis: Analysis, budget: float, used: set[int]) -> list[Entry]:
    """The user's instructions and constraints, each once, word for word; newest first when they do not all fit."""
    seen, found = set(), []
    for unit in analysis.units:
        if unit.role != "user" or "instruction" not in unit.flags or unit.piece is None or unit.piece.cut:
            continue
        if id(unit) in used:
            continue  # already quoted word for word in an earlier section (the goal)
        key = " ".join(unit.text.lower().split())
        if key not in seen:
            seen.add(key)
            found.append(unit)
    chosen = instruction_rules.newest_that_fit(found, int(budget), lambda u: u.tokens + LINE_TOKENS)
    return [_entry([unit], analysis) for unit in chosen]


EXPLICIT_DECISION_WEIGHT = 2.0  # "we decided …" said outright outweighs a decision read from its form
# A short agreement ("Agreed.", at most AGREEMENT_CHARS) credits the proposal in one of the PROPOSAL_MESSAGES
# messages before it, quoted in at most PROPOSAL_UNITS pieces and weighted AGREEMENT_WEIGHT: both sides settled it.
AGREEMENT_CHARS = 200
PROPOSAL_MESSAGES = 3
PROPOSAL_UNITS = 4
AGREEMENT_WEIGHT = 1.5
# The sections below keep an entry worth at least this part of the budget's value per token (blockers: less, since
# a failure is worth knowing even when it says little).
SECTION_WORTH = 1.0
BLOCKER_WORTH = 0.6


def decisions(analysis: Analysis, budget: float, used: set[int], *, rejected: bool = False) -> list[Entry]:
    """Settled choices with who settled them; a short agreement ("Agreed.") credits the proposal it accepts."""
    flag = "rejected" if rejected else "decision"
    entries = [
        _entry([u], analysis)
        for u in analysis.units
        if flag in u.flags
        and id(u) not in used
        and "question" not in u.flags
        and u.role in ("user", "assistant")
        and len(u.words) >= MIN_CONTENT_WORDS
        and ("instruction" not in u.flags or bool(patterns.FORMS["explicit_decision"].search(u.text)))
    ]
    for entry in entries:
        if patterns.FORMS["explicit_decision"].search(entry.units[0].text):
            entry.value *= EXPLICIT_DECISION_WEIGHT
    if not rejected:
        entries.extend(_agreements(analysis, used))
    return within(_ranked(_good(analysis, entries, SECTION_WORTH)), budget)


def _agreements(analysis: Analysis, used: set[int]) -> list[Entry]:
    agreement, proposal_re = patterns.FORMS["agreement"], patterns.FORMS["proposal"]
    by_item: dict[int, list[Unit]] = {}
    for unit in analysis.units:
        by_item.setdefault(unit.item, []).append(unit)
    entries = []
    for index, item in enumerate(analysis.items):
        if item.role != "user" or len(item.content) > AGREEMENT_CHARS or not agreement.match(item.content.strip()):
            continue
        previous = next(
            (i for i in range(index - 1, max(-1, index - 1 - PROPOSAL_MESSAGES), -1) if by_item.get(i)), None
        )
        if previous is None or analysis.items[previous].role != "assistant":
            continue
        sentences = {u.piece.sentence for u in by_item[previous] if proposal_re.search(u.text) and u.piece}
        proposal = [u for u in by_item[previous] if u.piece and u.piece.sentence in sentences and id(u) not in used]
        if proposal:
            who = item.speaker.capitalize() if item.speaker in ("user", "assistant") else item.speaker
            entry = _entry(
                proposal[:PROPOSAL_UNITS], analysis, lead=f"{who} agreed to {proposal[0].speaker}'s proposal:"
            )
            entry.value *= AGREEMENT_WEIGHT
            entries.append(entry)
    return entries


# Where things stand: the newest share of the messages (at least, at most: see Analysis.recent_from); a next step
# (or, for state_next, a statement of state) weighs WANTED_WEIGHT, anything else OTHER_WEIGHT; at most STATE_LINES.
STATE_RECENT = (0.04, 8, 40)
WANTED_WEIGHT = 2.0
OTHER_WEIGHT = 0.6
STATE_LINES = 5


def state_next(analysis: Analysis, budget: float, used: set[int], *, next_only: bool = False) -> list[Entry]:
    """Where things stand and what comes next, from the newest exchanges."""
    start = analysis.recent_from(*STATE_RECENT)
    candidates = []
    for unit in analysis.units:
        if unit.item < start or id(unit) in used or "question" in unit.flags:
            continue  # a question belongs with the open questions
        wanted = "next" in unit.flags or (not next_only and "state" in unit.flags)
        recency = 1.0 + (unit.item - start) / max(1, len(analysis.items) - start)
        value = analysis.value(unit) * (WANTED_WEIGHT if wanted else OTHER_WEIGHT) * recency
        entry = _entry([unit], analysis, lead=f"Next — {unit.speaker}:" if "next" in unit.flags else "")
        entry.value = value
        candidates.append(entry)
    chosen = within(_ranked(_good(analysis, candidates, SECTION_WORTH)), budget)
    return chosen[:STATE_LINES]


# Open questions: those said to be open (weighing OPEN_WEIGHT), and those asked from QUESTIONS_FROM of the
# conversation on that no later message takes up (fewer than TAKEN_UP_WORDS, or a TAKEN_UP_PART, of their words
# said again); at most QUESTION_LINES.
QUESTIONS_FROM = 0.75
OPEN_WEIGHT = 2.0
TAKEN_UP_WORDS = 2
TAKEN_UP_PART = 2
QUESTION_LINES = 6


def questions(analysis: Analysis, budget: float, used: set[int]) -> list[Entry]:
    """Questions said to be open, and questions of the newest quarter that nothing after them takes up."""
    # The units are in the order said (analysis.units never goes back), so each word's last message is the
    # message of the last unit that says it: a later unit's update overwrites an earlier one's. Only a message
    # from `start` on can take up a question asked from there, so the units before it are passed over.
    start = int(len(analysis.items) * QUESTIONS_FROM)
    last_seen: dict[str, int] = {}
    for unit in analysis.units[bisect.bisect_left(analysis.units, start, key=attrgetter("item")) :]:
        last_seen.update(dict.fromkeys(unit.words, unit.item))
    entries = []
    for unit in analysis.units:
        if id(unit) in used or unit.role not in ("user", "assistant"):
            continue
        explicit = "open" in unit.flags
        asked = "question" in unit.flags and unit.item >= start and len(unit.words) >= MIN_CONTENT_WORDS
        if asked and not explicit:
            taken_up = sum(1 for word in unit.words if last_seen.get(word, -1) > unit.item)
            asked = taken_up < max(TAKEN_UP_WORDS, len(unit.words) // TAKEN_UP_PART)
        if explicit or asked:
            entry = _entry([unit], analysis)
            entry.value *= OPEN_WEIGHT if explicit else 1.0
            entries.append(entry)
    return within(_ranked(_good(analysis, entries, SECTION_WORTH)), budget)[:QUESTION_LINES]


# Blockers: blocking statements of the newer half (the messages from len // BLOCKERS_FROM_PART on) and
# failed attempts among the newest RECENT_ATTEMPTS, a failure weighing FAILED_BLOCKER_WEIGHT; at most BLOCKER_LINES.
BLOCKERS_FROM_PART = 2
RECENT_ATTEMPTS = 40
FAILED_BLOCKER_WEIGHT = 2
BLOCKER_LINES = 6


def blockers(analysis: Analysis, budget: float, used: set[int]) -> list[Entry]:
    """What stands in the way: blocking statements of the newer half, and the newest failed attempts."""
    start = len(analysis.items) // BLOCKERS_FROM_PART
    entries = [
        _entry([u], analysis)
        for u in analysis.units
        if "blocker" in u.flags and u.item >= start and id(u) not in used and u.role in ("user", "assistant")
    ]
    for attempt in analysis.attempts[-RECENT_ATTEMPTS:]:
        if attempt.failed and attempt.item >= start:
            entries.append(
                Entry(
                    attempt=attempt, day=attempt.day, value=attempt.bonus * FAILED_BLOCKER_WEIGHT, tokens=attempt.tokens
                )
            )
    return within(_ranked(_good(analysis, entries, BLOCKER_WORTH)), budget)[:BLOCKER_LINES]


_READS = ("read", "get", "fetch", "open", "cat", "view", "search", "list")
# Tool attempts: worth the square root of their words' information (a long command line is not worth more in
# proportion), plus their bonus; a failure counts FAILED_WEIGHT, a successful read READ_WEIGHT, a repeat of the same
# call with the same arguments REPEAT_WEIGHT.
ATTEMPT_INFORMATION_POWER = 0.5
FAILED_WEIGHT = 2.0
READ_WEIGHT = 0.4
REPEAT_WEIGHT = 0.5


def done(analysis: Analysis, budget: float, used: set[int]) -> list[Entry]:
    """Tool calls with their outcomes: failures and figures first, reads of files and pages last."""
    entries, seen = [], set()
    for attempt in analysis.attempts:
        key = (attempt.name, attempt.arguments)
        value = sum(analysis.idf.get(w, 1.0) for w in attempt.words) ** ATTEMPT_INFORMATION_POWER + attempt.bonus
        value *= FAILED_WEIGHT if attempt.failed else 1.0
        value *= READ_WEIGHT if any(word in attempt.name.lower() for word in _READS) and not attempt.failed else 1.0
        value *= REPEAT_WEIGHT if key in seen else 1.0
        seen.add(key)
        entries.append(Entry(attempt=attempt, day=attempt.day, value=value, tokens=attempt.tokens))
    return within(_ranked(entries), budget)
