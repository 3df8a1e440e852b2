"""The selectors: which units fill each kind of section, and how each line is framed.

Every selector takes the shared analysis, a budget in (estimated) tokens and
the units already used by an earlier section, and returns entries. They
read the forms of speech found once per unit (a request, a decision, a next
step, an open question, an instruction) and the recency of what was said.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from compaction import instructions as instruction_rules
from compaction.summarizers.offline import patterns
from compaction.summarizers.offline.entries import Entry
from compaction.summarizers.offline.select import within
from compaction.summarizers.offline.tools import Attempt
from compaction.summarizers.offline.units import Unit
from compaction.transcript import TranscriptItem

LINE_TOKENS = 6  # "- 8 May 2023 · Ana: " and the line break, roughly


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

    def worthy(self, entry: Entry, factor: float) -> bool:
        """Whether an entry is worth its tokens: at least `factor` times the budget's marginal value per token."""
        return entry.value / (entry.tokens + 2) >= factor * self.frontier

    def value(self, unit: Unit) -> float:
        return self.values[id(unit)]

    def recent_from(self, share: float, least: int, most: int) -> int:
        """The index from which the newest `share` of the messages starts: at least `least` of them (but never
        more than a third of a short conversation), at most `most`."""
        count = min(max(int(len(self.items) * share), min(least, max(2, len(self.items) // 3))), most)
        return max(0, len(self.items) - count)


def _entry(units: list[Unit], analysis: Analysis, **framing) -> Entry:
    tokens = sum(u.tokens for u in units) + LINE_TOKENS + len(framing.get("lead", "")) // 4
    return Entry(
        units=units,
        day=units[0].day,
        value=sum(analysis.value(u) for u in units),
        tokens=tokens + len(framing.get("tail", "")) // 4,
        **framing,
    )


def _ranked(entries: list[Entry]) -> list[tuple[float, int, Entry]]:
    return sorted(((e.value / (e.tokens + 2), e.tokens, e) for e in entries), key=lambda x: (-x[0], x[2].order))


def _good(analysis: Analysis, entries: list[Entry], factor: float) -> list[Entry]:
    return [entry for entry in entries if analysis.worthy(entry, factor)]


def goal(analysis: Analysis, budget: float, used: set[int]) -> list[Entry]:
    """What the user is trying to achieve: their requests whose words recur across their requests."""
    requests = [
        u
        for u in analysis.units
        if u.role == "user"
        and id(u) not in used
        and ("goal" in u.flags or "instruction" in u.flags)
        and ("question" not in u.flags or "instruction" in u.flags)
        and len(u.words) >= 3
    ]
    if not requests:
        return []
    spread = Counter(word for u in requests for word in u.words)
    scored = []
    for unit in requests:
        centrality = sum(analysis.idf.get(w, 1.0) * (spread[w] - 1) for w in unit.words) / len(unit.words) ** 0.5
        scored.append((centrality + (2.0 if "goal" in unit.flags else 0.0) + 0.1 * analysis.value(unit), unit))
    scored.sort(key=lambda pair: (-pair[0], pair[1].order))
    entries: list[Entry] = []
    for _, unit in scored:
        if len(entries) == 2:
            break
        if all(len(unit.words - e.units[0].words) >= 0.5 * len(unit.words) for e in entries):
            entries.append(_entry([unit], analysis))
    return within([(0, e.tokens, e) for e in _good(analysis, entries, 0.5)], budget)


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
        and len(u.words) >= 3
        and ("instruction" not in u.flags or bool(patterns.FORMS["explicit_decision"].search(u.text)))
    ]
    for entry in entries:
        if patterns.FORMS["explicit_decision"].search(entry.units[0].text):
            entry.value *= 2.0
    if not rejected:
        entries.extend(_agreements(analysis, used))
    return within(_ranked(_good(analysis, entries, 1.0)), budget)


def _agreements(analysis: Analysis, used: set[int]) -> list[Entry]:
    agreement, proposal_re = patterns.FORMS["agreement"], patterns.FORMS["proposal"]
    by_item: dict[int, list[Unit]] = {}
    for unit in analysis.units:
        by_item.setdefault(unit.item, []).append(unit)
    entries = []
    for index, item in enumerate(analysis.items):
        if item.role != "user" or len(item.content) > 200 or not agreement.match(item.content.strip()):
            continue
        previous = next((i for i in range(index - 1, max(-1, index - 4), -1) if by_item.get(i)), None)
        if previous is None or analysis.items[previous].role != "assistant":
            continue
        sentences = {u.piece.sentence for u in by_item[previous] if proposal_re.search(u.text) and u.piece}
        proposal = [u for u in by_item[previous] if u.piece and u.piece.sentence in sentences and id(u) not in used]
        if proposal:
            who = item.speaker.capitalize() if item.speaker in ("user", "assistant") else item.speaker
            entry = _entry(proposal[:4], analysis, lead=f"{who} agreed to {proposal[0].speaker}'s proposal:")
            entry.value *= 1.5
            entries.append(entry)
    return entries


def state_next(analysis: Analysis, budget: float, used: set[int], *, next_only: bool = False) -> list[Entry]:
    """Where things stand and what comes next, from the newest exchanges."""
    start = analysis.recent_from(0.04, 8, 40)
    candidates = []
    for unit in analysis.units:
        if unit.item < start or id(unit) in used or "question" in unit.flags:
            continue  # a question belongs with the open questions
        wanted = "next" in unit.flags or (not next_only and "state" in unit.flags)
        recency = 1.0 + (unit.item - start) / max(1, len(analysis.items) - start)
        value = analysis.value(unit) * (2.0 if wanted else 0.6) * recency
        entry = _entry([unit], analysis, lead=f"Next — {unit.speaker}:" if "next" in unit.flags else "")
        entry.value = value
        candidates.append(entry)
    chosen = within(_ranked(_good(analysis, candidates, 1.0)), budget)
    return chosen[:5]


def questions(analysis: Analysis, budget: float, used: set[int]) -> list[Entry]:
    """Questions said to be open, and questions of the newest quarter that nothing after them takes up."""
    last_seen: dict[str, int] = {}
    for unit in analysis.units:
        for word in unit.words:
            last_seen[word] = max(last_seen.get(word, -1), unit.item)
    start = int(len(analysis.items) * 0.75)
    entries = []
    for unit in analysis.units:
        if id(unit) in used or unit.role not in ("user", "assistant"):
            continue
        explicit = "open" in unit.flags
        asked = "question" in unit.flags and unit.item >= start and len(unit.words) >= 3
        if asked and not explicit:
            taken_up = sum(1 for word in unit.words if last_seen.get(word, -1) > unit.item)
            asked = taken_up < max(2, len(unit.words) // 2)
        if explicit or asked:
            entry = _entry([unit], analysis)
            entry.value *= 2.0 if explicit else 1.0
            entries.append(entry)
    return within(_ranked(_good(analysis, entries, 1.0)), budget)[:6]


def blockers(analysis: Analysis, budget: float, used: set[int]) -> list[Entry]:
    """What stands in the way: blocking statements of the newer half, and the newest failed attempts."""
    start = len(analysis.items) // 2
    entries = [
        _entry([u], analysis)
        for u in analysis.units
        if "blocker" in u.flags and u.item >= start and id(u) not in used and u.role in ("user", "assistant")
    ]
    for attempt in analysis.attempts[-40:]:
        if attempt.failed and attempt.item >= start:
            entries.append(Entry(attempt=attempt, day=attempt.day, value=attempt.bonus * 2, tokens=attempt.tokens))
    return within(_ranked(_good(analysis, entries, 0.6)), budget)[:6]


_READS = ("read", "get", "fetch", "open", "cat", "view", "search", "list")


def done(analysis: Analysis, budget: float, used: set[int]) -> list[Entry]:
    """Tool calls with their outcomes: failures and figures first, reads of files and pages last."""
    entries, seen = [], set()
    for attempt in analysis.attempts:
        key = (attempt.name, attempt.arguments)
        value = sum(analysis.idf.get(w, 1.0) for w in attempt.words) ** 0.5 + attempt.bonus
        value *= 2.0 if attempt.failed else 1.0
        value *= 0.4 if any(word in attempt.name.lower() for word in _READS) and not attempt.failed else 1.0
        value *= 0.5 if key in seen else 1.0
        seen.add(key)
        entries.append(Entry(attempt=attempt, day=attempt.day, value=value, tokens=attempt.tokens))
    return within(_ranked(entries), budget)
