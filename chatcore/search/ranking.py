"""One ranking for both engines: BM25's weighting, then the hit's neighbours.

Each query unit (a word or a phrase) weighs its inverse document frequency
over the messages of the path searched, damped by the message's length
(BM25 with a term frequency of one: k1 = 1.2, b = 0.5, so that a long
message is not buried under short replies that happen to repeat a word).
Then, chosen by what the LoCoMo fidelity measure found (docs/benchmarks/fidelity.md):

- a word that is the name of the message's speaker counts as a match of
  the speaker, not of the text: ×1.3 rather than its weight;
- a message from a period the query names (a month and a year, a day) ×1.5;
- half of its neighbours' scores is added (within `context` turns on the
  path): an answer often sits beside the turn that asked for it, and a
  result is shown with those neighbours;
- ties go to the more recent message.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Iterable

from chatcore.search.engine import ID, SPEAKER, TOKENS, Candidate, created_at
from chatcore.search.query import ParsedQuery

K1 = 1.2
B = 0.5
SPEAKER_BOOST = 1.3
PERIOD_BOOST = 1.5
NEIGHBOUR_SHARE = 0.5

_NAME_RE = re.compile(r"[^\W_]+")


def idf(*, matches: int, messages: int) -> float:
    messages = max(messages, matches, 1)
    return math.log(1 + (messages - matches + 0.5) / (matches + 0.5))


def _speaker_words(speaker: str) -> frozenset[str]:
    return frozenset(_NAME_RE.findall(speaker.lower()))


def base_scores(
    *,
    query: ParsedQuery,
    candidates: Iterable[Candidate],
    matched: dict[str, set[int]],
    weights: dict[str, float],
    average_tokens: float,
) -> dict[int, float]:
    """Each candidate's own score, before its neighbours are counted."""
    # Per unit, once: the set of its matches and its numerator (the same products as computed per candidate).
    units = [(unit, matched.get(unit, ()), weights.get(unit, 0.0) * (K1 + 1)) for unit in query.units]
    average = max(average_tokens, 1.0)
    # Each length's damping once (a length's is the same number for every candidate of that length; most
    # candidates share a few dozen lengths), by candidate.
    damping: dict[int, float] = {}
    divisor_of: dict[int, float] = {}
    named: list[Candidate] = []
    dated: list[Candidate] = []  # all of them, when the query names a period
    for candidate in candidates:
        if query.periods:
            dated.append(candidate)
        if candidate[SPEAKER]:
            named.append(candidate)
            continue
        tokens = candidate[TOKENS]
        divisor = damping.get(tokens)
        if divisor is None:
            divisor = damping[tokens] = 1 + K1 * (1 - B + B * tokens / average)
        divisor_of[candidate[ID]] = divisor
    # A candidate without a speaker: its units' shares added unit by unit, in the query's order, as the
    # per-candidate sum adds them (the same float additions from 0.0, so the same scores).
    scores: dict[int, float] = {}
    for _unit, members, numerator in units:
        for message_id in members:
            divisor = divisor_of.get(message_id)
            if divisor is not None:
                scores[message_id] = scores.get(message_id, 0.0) + numerator / divisor
    scores = {i: score for i, score in scores.items() if score > 0}
    for candidate in named:
        names = _speaker_words(candidate[SPEAKER])
        length = K1 * (1 - B + B * candidate[TOKENS] / average)
        score, speaker = 0.0, False
        for unit, members, numerator in units:
            if candidate[ID] not in members:
                continue
            if unit in names:
                speaker = True
                continue
            score += numerator / (1 + length)
        if score <= 0:
            continue
        if speaker:
            score *= SPEAKER_BOOST
        scores[candidate[ID]] = score
    if query.periods:
        for candidate in dated:
            if candidate[ID] not in scores:
                continue
            when = created_at(candidate)
            if when is not None and any(period.holds(when.date()) for period in query.periods):
                scores[candidate[ID]] *= PERIOD_BOOST
    return scores


def with_neighbours(
    *, scores: dict[int, float], depth_of: dict[int, int], context: int, limit: int
) -> list[tuple[float, int, int]]:
    """The best `limit` as (score, depth, id), best first; all candidates are on one path, so depth says who
    is next to whom."""
    by_depth = {depth_of[i]: s for i, s in scores.items()}
    near = by_depth.get
    steps = [step for step in range(-context, context + 1) if step]
    # The depths with another candidate within `context` turns, found by sets (most candidates have none, and
    # their score is their own: adding NEIGHBOUR_SHARE × 0.0 changes nothing).
    depths = set(by_depth)
    paired: set[int] = set()
    for step in steps:
        paired |= depths.intersection(map(step.__add__, depths))
    ranked = list(zip(scores.values(), map(depth_of.__getitem__, scores), scores, strict=True))
    if paired:
        for position, (score, depth, message_id) in enumerate(ranked):
            if depth in paired:
                around = 0.0  # added up in the order of the steps, as sum() did
                for step in steps:
                    around += near(depth + step, 0.0)
                ranked[position] = (score + NEIGHBOUR_SHARE * around, depth, message_id)
    return heapq.nlargest(limit, ranked)  # as sorted(ranked, reverse=True)[:limit], without sorting them all
