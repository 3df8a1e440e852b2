"""Writing the hand-over: analyse once, fill the profile's sections, fit the token limit exactly.

The sections with a share of the budget are filled first (each by its
selector, from units no earlier section used); the elastic section (key
facts, or Detailed's account by day) takes the rest. Its units are chosen
greedily once, and the exact fit searches the longest prefix of that
choice whose rendered summary, counted with the real tokenizer, stays
within the limit — references included, since fact pinning adds them
inside the same limit.
"""

from __future__ import annotations

import bisect
import math

from chatcore.tokens import count_tokens
from compaction import lexicon
from compaction.safety.injection import pattern_flags
from compaction.summarizers.offline import layout as layouts
from compaction.summarizers.offline import plans, previous, scoring, scripts, sections
from compaction.summarizers.offline.entries import Entry
from compaction.summarizers.offline.render import ACCOUNT_ATTEMPTS, DAY_PREFIX_TOKENS, render, timeline_entries
from compaction.summarizers.offline.select import MIN_NEW_SHARE, PER_TOKEN_PAD, greedy, worth
from compaction.summarizers.offline.tools import attempts
from compaction.summarizers.offline.units import Read, Unit, may_instruct, read_item, speaker_label, unit_of
from compaction.transcript import TranscriptItem, addresses_model, items_judge

FIXED_SHARE = 0.7  # the most of the budget the sections with a share may take together

_SELECTORS = {
    layouts.INSTRUCTIONS: sections.instructions,
    layouts.GOAL: sections.goal,
    layouts.DECISIONS: sections.decisions,
    layouts.REJECTED: lambda a, b, u: sections.decisions(a, b, u, rejected=True),
    layouts.DONE: sections.done,
    layouts.STATE_NEXT: sections.state_next,
    layouts.STATE: sections.state_next,
    layouts.ACTIONS: plans.actions,
    layouts.QUESTIONS: sections.questions,
    layouts.BLOCKERS: sections.blockers,
    layouts.REFERENCES: plans.references,
}


# A summary limit no stretch comes near: every piece is analysed in full.
ANALYSE_ALL = 1_000_000


def analyse(
    items: list[TranscriptItem], previous_summary: str | None, focus: str, limit: int = ANALYSE_ALL
) -> sections.Analysis:
    """Every candidate unit of the transcript (and of the previous summary), valued; for a summary of `limit`
    tokens, only the pieces that could make it are analysed in full (see _worth_analysing)."""
    reads: list[Read] = []
    set_aside_by: list[str] = []
    set_aside_items: set[int] = set()
    # The words of each message with a piece, for their rarity: a message of one piece is its piece's words (no
    # copy), a longer one their union.
    documents: list[frozenset[str]] = []
    items_judge(items)  # one batch, each message with its neighbours
    for index, item in enumerate(items):
        if addresses_model(item):
            # A message that addresses the summarizer is set aside whole: its other sentences are the
            # payload of the same attempt. The summary says whose it was, never what it asked for.
            set_aside_by.append(speaker_label(item))
            set_aside_items.add(index)
            continue
        item_reads = read_item(index, item)
        if item_reads:
            reads.extend(item_reads)
            words = [read.words for read in item_reads]
            documents.append(words[0] if len(words) == 1 else frozenset().union(*words))
    carried, rejected = previous.carried_units(previous_summary) if previous_summary else ([], 0)
    carried_documents: dict[int, set[str]] = {}
    for carried_unit in carried:
        carried_documents.setdefault(-1 - carried_unit.position, set()).update(carried_unit.words)
    documents.extend(map(frozenset, carried_documents.values()))
    idf = scoring.idf(documents, max(len(items), len(documents)))
    # Each piece's information once: it ranks the pieces for the full analysis, and weighs the units made of them.
    # scoring.information of each: every read's words are in `documents`, so each has a rarity (no default needed).
    rarity = idf.__getitem__
    information = [math.fsum(map(rarity, read.words)) for read in reads]
    worth_analysing = _worth_analysing(reads, information, len(items), limit)
    # One batch for the pieces' checks, and one for their paths, identifiers and dates.
    texts = [reads[i].piece.text for i in worth_analysing]
    injected = pattern_flags(texts)
    details = lexicon.count_details(texts, [reads[i].tokens for i in worth_analysing])
    units: list[Unit] = []
    for i, flag, counted in zip(worth_analysing, injected, details, strict=True):
        unit = unit_of(reads[i], injected=flag, details=counted)
        if unit is not None:
            unit.weight = information[i]
            units.append(unit)
    for carried_unit in carried:
        carried_unit.weight = scoring.information(carried_unit.words, idf)
    focus_words = frozenset(lexicon.content_words(focus or ""))
    values = {id(unit): worth(unit, focus_words) for unit in units + carried}
    return sections.Analysis(
        items=items,
        units=units,
        attempts=attempts(items),
        idf=idf,
        values=values,
        carried=carried,
        set_aside=len(set_aside_by) + rejected,
        set_aside_by=list(dict.fromkeys(set_aside_by)),
        user_turns=[index for index, item in enumerate(items) if item.role == "user"],
        scripts=scripts.by_message(items),
        set_aside_items=frozenset(set_aside_items),
    )


# Pieces analysed in full per token of the summary's limit (and at least MIN_ANALYSED): far more than a summary
# can quote, so that what is left out could not have been chosen anyway.
ANALYSED_PER_TOKEN = 2
MIN_ANALYSED = 2_000
RECENT_ANALYSED = 40  # the newest messages (at least; a twentieth of a long stretch) are all analysed
RECENT_ANALYSED_PART = 20  # ... and of a long stretch, its newest twentieth
INSTRUCTIONS_ANALYSED = 400


def _worth_analysing(reads: list[Read], information: list[float], count: int, limit: int) -> list[int]:
    """The pieces a full analysis is worth (their positions in `reads`, in order): the most informative by their
    words alone (`information`, each read's), every possible instruction of the user's, and everything of the
    newest quarter (state, next steps, open questions)."""
    keep = max(MIN_ANALYSED, ANALYSED_PER_TOKEN * limit)
    if len(reads) <= keep:
        return list(range(len(reads)))
    recent = count - max(RECENT_ANALYSED, count // RECENT_ANALYSED_PART)
    # The most informative first; the sort is stable (reversed too), so equal figures keep the order of the pieces.
    ranked = sorted(range(len(reads)), key=information.__getitem__, reverse=True)
    chosen = set(ranked[:keep])
    # The reads are in the order of their messages: those of the newest messages are the last ones.
    chosen.update(range(bisect.bisect_left(reads, recent, key=_message_of), len(reads)))
    # Instructions are kept newest first: the newest possible ones are far more than any limit can hold, and the
    # search stops at the last one kept.
    instructing = 0
    for i in range(len(reads) - 1, -1, -1):
        if instructing == INSTRUCTIONS_ANALYSED:
            break
        if may_instruct(reads[i]):
            chosen.add(i)
            instructing += 1
    return sorted(chosen)


def _message_of(read: Read) -> int:
    return read.index


# The order in which the sections with a share choose their units: what a reader needs first takes first.
_PRIORITY = {
    layouts.GOAL: 0,
    layouts.INSTRUCTIONS: 1,
    layouts.STATE_NEXT: 2,
    layouts.STATE: 2,
    layouts.ACTIONS: 2,
    layouts.DECISIONS: 3,
    layouts.QUESTIONS: 4,
    layouts.BLOCKERS: 5,
    layouts.DONE: 6,
    layouts.REJECTED: 7,
    layouts.REFERENCES: 8,
}
_PRIORITY_OTHER = 9  # a custom heading's facts choose after every named section
# A custom heading's facts, and the tool attempts beside Detailed's account, each take this share of the budget.
CUSTOM_FACTS_SHARE = 0.2
ACCOUNT_ATTEMPTS_SHARE = 0.2


def _fixed_sections(analysis: sections.Analysis, layout: layouts.Layout, budget: float) -> dict[int, list[Entry]]:
    """Entries of each non-elastic section (by position in the layout), in priority order."""
    chosen: dict[int, list[Entry]] = {}
    used: set[int] = set()
    order = sorted(
        (i for i, s in enumerate(layout.sections) if s.kind not in layouts.ELASTIC or s.words),
        key=lambda i: _PRIORITY.get(layout.sections[i].kind, _PRIORITY_OTHER),
    )
    covered: set[str] = set()
    for position in order:
        section = layout.sections[position]
        if section.kind in layouts.ELASTIC:
            entries = _facts_about(analysis, section, budget * CUSTOM_FACTS_SHARE, used)
        else:
            entries = _SELECTORS[section.kind](analysis, budget * section.share, used)
        kept = []
        for entry in entries:
            # Instructions are kept whatever else says the same; any other near-duplicate is left out.
            if section.kind != layouts.INSTRUCTIONS and _repeats(entry, covered):
                continue
            kept.append(entry)
            used.update(id(unit) for unit in entry.units)
            covered.update(word for unit in entry.units for word in unit.words)
        chosen[position] = kept
    if any(section.kind == layouts.ACCOUNT for section in layout.sections):
        chosen[ACCOUNT_ATTEMPTS] = sections.done(analysis, budget * ACCOUNT_ATTEMPTS_SHARE, used)
    return chosen


def _repeats(entry: Entry, covered: set[str]) -> bool:
    """Whether an entry's words are mostly said already by an earlier section (a near-duplicate)."""
    words = set().union(*(unit.words for unit in entry.units)) if entry.units else set()
    return bool(words) and len(words - covered) < MIN_NEW_SHARE * len(words)


# Longer than a custom heading's share of the largest summary: its facts stay one line a day, never split by
# day headings.
ONE_LINE_A_DAY = 10_000


def _facts_about(analysis, section: layouts.Section, budget: float, used: set[int]) -> list[Entry]:
    """A custom heading's facts: the units that share its words."""
    units = [u for u in analysis.units if id(u) not in used and not section.words.isdisjoint(u.words)]
    picked = [unit for unit, _ in greedy(units, budget, value=analysis.value)]
    return timeline_entries(picked, line_tokens=ONE_LINE_A_DAY)


# The greedy order of the elastic section covers this much more than the room left, and a little more for a
# small room: the exact fit searches within it, and must find every unit that could still fit.
ELASTIC_ORDER_FACTOR = 1.5
ELASTIC_ORDER_EXTRA_TOKENS = 50


def summarize(
    *,
    items: list[TranscriptItem],
    previous_summary: str | None,
    focus: str,
    max_tokens: int,
    layout: layouts.Layout,
) -> str:
    max_tokens = max(int(max_tokens), 1)
    analysis = analyse(items, previous_summary, focus, max_tokens)
    skeleton = render(analysis, layout, {}, [])
    overhead = count_tokens(skeleton) + sum(count_tokens(f"## {s.title}") + 1 for s in layout.sections)
    budget = max(max_tokens - overhead, 0)
    analysis.frontier = _frontier(analysis, budget)
    fixed = _fixed_sections(analysis, layout, budget)
    # The sections with a share are counted exactly and kept within FIXED_SHARE of the budget, the weakest
    # lines going first, so that the key facts always have room.
    fixed_limit = overhead + int(budget * FIXED_SHARE)
    while any(fixed.values()) and count_tokens(render(analysis, layout, fixed, [])) > fixed_limit:
        _drop_weakest(fixed)
    used = {id(unit) for entries in fixed.values() for entry in entries for unit in entry.units}
    spent = count_tokens(render(analysis, layout, fixed, [])) - overhead
    elastic = next((i for i, s in enumerate(layout.sections) if s.kind in layouts.ELASTIC and not s.words), None)
    pool = [u for u in analysis.units + analysis.carried if id(u) not in used]
    covered = {word for entries in fixed.values() for entry in entries for unit in entry.units for word in unit.words}
    order = greedy(
        pool,
        max(budget - spent, 0) * ELASTIC_ORDER_FACTOR + ELASTIC_ORDER_EXTRA_TOKENS,
        covered=covered,
        value=analysis.value,
        line_of=lambda u: (u.day, u.previous),
        line_cost=lambda u: DAY_PREFIX_TOKENS,  # a day's line pays for its date once
    )

    def text_for(count: int, fixed_entries: dict[int, list[Entry]]) -> str:
        picked = [unit for unit, _ in order[:count]] if elastic is not None else []
        return render(analysis, layout, fixed_entries, picked)

    count = _longest_fit(lambda n: count_tokens(text_for(n, fixed)), len(order), max_tokens, order, budget - spent)
    picked = [unit for unit, _ in order[:count]] if elastic is not None else []
    if elastic is not None:
        picked = _fill(
            picked, order[count:], lambda units: count_tokens(render(analysis, layout, fixed, units)), max_tokens
        )
    text = render(analysis, layout, fixed, picked)
    while count_tokens(text) > max_tokens and any(fixed.values()):
        _drop_weakest(fixed)
        text = text_for(0, fixed)
    if count_tokens(text) > max_tokens:
        text = _truncate(text, max_tokens)
    return text


def _frontier(analysis: sections.Analysis, budget: float) -> float:
    """The value per token below which a budget of `budget` taken on worth alone would stop."""
    ranked = sorted(((analysis.value(u) / (u.tokens + PER_TOKEN_PAD), u.tokens) for u in analysis.units), reverse=True)
    spent = 0
    for ratio, tokens in ranked:
        spent += tokens + PER_TOKEN_PAD
        if spent >= budget:
            return ratio
    return 0.0


GALLOP_PARTS = 16  # the search gallops up from the estimate in steps of a sixteenth of the candidates, doubling


def _longest_fit(cost, size: int, limit: int, order, room: float) -> int:
    """The largest n in [0, size] with cost(n) <= limit (cost grows with n), starting from the estimate."""
    guess = sum(1 for _, spent in order if spent <= room)
    low, high = 0, size
    if cost(guess) <= limit:
        low = guess
        step = max(1, size // GALLOP_PARTS)
        while low < size and cost(min(size, low + step)) <= limit:
            low = min(size, low + step)
            step *= 2
        high = min(size, low + step)
    else:
        high = guess - 1
    while low < high:
        middle = (low + high + 1) // 2
        if cost(middle) <= limit:
            low = middle
        else:
            high = middle - 1
    return low


FILL_TRIES = 12  # units after the longest prefix that are tried one by one (each try renders the summary)


def _fill(picked: list[Unit], rest, cost, limit: int) -> list[Unit]:
    """After the longest prefix that fits, the next units that still fit one by one (a few tries): a dear
    unit that does not fit should not leave the room after it unused."""
    for unit, _ in rest[:FILL_TRIES]:
        if cost([*picked, unit]) <= limit:
            picked = [*picked, unit]
    return picked


def _drop_weakest(fixed: dict[int, list[Entry]]) -> None:
    candidates = [(e.value / (e.tokens + PER_TOKEN_PAD), k, e) for k, entries in fixed.items() for e in entries]
    _, key, victim = min(candidates, key=lambda c: (c[0], c[1]))
    fixed[key] = [e for e in fixed[key] if e is not victim]


TRUNCATE_MARGIN_CHARS = 4  # each cut goes this far below the proportional estimate, so one cut nearly always does


def _truncate(text: str, max_tokens: int) -> str:
    while text and count_tokens(text) > max_tokens:
        cut = max(1, int(len(text) * max_tokens / max(count_tokens(text), 1)) - TRUNCATE_MARGIN_CHARS)
        text = text[:cut].rstrip()
    return text
