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
import itertools
import math
import re
from collections.abc import Collection, Iterable

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
    units: list[tuple[str, Collection[int], float]] = [
        (unit, matched.get(unit, ()), weights.get(unit, 0.0) * (K1 + 1)) for unit in query.units
    ]
    average = max(average_tokens, 1.0)
    named: list[Candidate] = []
    dated: list[Candidate] = []  # all of them, when the query names a period
    scores: dict[int, float] = {}
    if len(units) == 1:
        # One unit (a common word's search): a candidate without a speaker scores its one share (the sum below
        # from 0.0 of one share is that share), the same number for every candidate of a length, so it is
        # worked out once per length, in one pass over the candidates.
        ((_unit, members, numerator),) = units
        share_of: dict[int, float] = {}
        for candidate in candidates:
            if query.periods:
                dated.append(candidate)
            if candidate[SPEAKER]:
                named.append(candidate)
                continue
            message_id = candidate[ID]
            if message_id not in members:
                continue
            tokens = candidate[TOKENS]
            share = share_of.get(tokens)
            if share is None:
                share = share_of[tokens] = numerator / (1 + K1 * (1 - B + B * tokens / average))
            if share > 0:
                scores[message_id] = share
    else:
        scores = _unnamed_scores(candidates, units, average, named, dated, query)
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


def _unnamed_scores(
    candidates: Iterable[Candidate],
    units: list[tuple[str, Collection[int], float]],
    average: float,
    named: list[Candidate],
    dated: list[Candidate],
    query: ParsedQuery,
) -> dict[int, float]:
    """The scores of the candidates without a speaker, unit by unit; those with one are added to `named` (and
    all of them to `dated` when the query names a period)."""
    # Each length's damping once (a length's is the same number for every candidate of that length; most
    # candidates share a few dozen lengths), by candidate.
    damping: dict[int, float] = {}
    divisor_of: dict[int, float] = {}
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
    return {i: score for i, score in scores.items() if score > 0}


def with_neighbours(
    *, scores: dict[int, float], depth_of: dict[int, int], context: int, limit: int
) -> list[tuple[float, int, int]]:
    """The best `limit` as (score, depth, id), best first; all candidates are on one path, so depth says who
    is next to whom."""
    by_depth = {depth_of[i]: s for i, s in scores.items()}
    near = by_depth.get
    steps = [step for step in range(-context, context + 1) if step]
    # The depths with another candidate within `context` turns (most candidates have none, and their score is
    # their own: adding NEIGHBOUR_SHARE × 0.0 changes nothing). In depth order a candidate's nearest other is
    # beside it, so each pair of consecutive depths is compared once, where a set lookup per step and depth
    # cost more (a common word's candidates come in depth order already, which sorting finds at once).
    paired: set[int] = set()
    if steps:
        for low, high in itertools.pairwise(sorted(by_depth)):
            if high - low <= context:
                paired.add(low)
                paired.add(high)
    ranked = list(zip(scores.values(), map(depth_of.__getitem__, scores), scores, strict=True))
    if paired:
        for position, (score, depth, message_id) in enumerate(ranked):
            if depth in paired:
                around = 0.0  # added up in the order of the steps, as sum() did
                for step in steps:
                    around += near(depth + step, 0.0)
                ranked[position] = (score + NEIGHBOUR_SHARE * around, depth, message_id)
    return heapq.nlargest(limit, ranked)  # as sorted(ranked, reverse=True)[:limit], without sorting them all
