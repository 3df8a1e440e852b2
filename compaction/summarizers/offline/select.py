"""Budgeted choice: the most valuable units per token, near-duplicates skipped.

A unit is worth the information of its content words (their rarity, see
scoring), times how much it reads as a fact, plus its details; focus terms
triple it. Units are taken best value per token first while the budget
lasts; one whose words are mostly in what was already chosen is a
near-duplicate and skipped. Units sharing a line (one day's facts) pay the
line's prefix once. The greedy order is computed once: any budget's choice
is a prefix of it, which the final fit to the exact token count searches.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from compaction.summarizers.offline.units import Unit

# A candidate whose content words are mostly already in the summary is a near-duplicate.
MIN_NEW_SHARE = 0.35
# A unit with a word of the focus is worth this many times more: what the user asked to keep comes first.
FOCUS_WEIGHT = 3.0
# Tokens added to a cost before value is divided by it: a line's bullet and break, roughly, so that a one-word
# piece cannot win on a tiny denominator.
PER_TOKEN_PAD = 2
# Float noise: a unit re-valued to the ratio of the heap's best is taken, not pushed back.
RATIO_TOLERANCE = 1e-12


def worth(unit: Unit, focus: frozenset[str]) -> float:
    """A unit's value: the information of its words (`unit.weight`, see scoring.information) as a fact, and its
    details."""
    value = unit.weight * unit.factor + unit.bonus
    if focus and not focus.isdisjoint(unit.words):
        value *= FOCUS_WEIGHT
    return value


def greedy(
    units: Sequence[Unit],
    budget: float,
    *,
    value: Callable[[Unit], float],
    line_of: Callable[[Unit], Hashable] | None = None,
    line_cost: Callable[[Unit], int] | None = None,
    covered: set[str] | None = None,
) -> list[tuple[Unit, int]]:
    """(unit, cumulative cost) in the order chosen, until `budget` is spent.

    Lazy evaluation: a unit's cost can only drop (another unit opens its line) and its novelty only shrink,
    so it is re-valued when it comes up and pushed back when it fell behind the next one.
    """
    covered = set() if covered is None else covered
    opened: set[Hashable] = set()

    def cost(unit: Unit) -> int:
        if line_of is None or line_cost is None:
            return unit.tokens
        return unit.tokens + (0 if line_of(unit) in opened else line_cost(unit))

    values = [value(unit) for unit in units]
    heap = [
        (-values[i] / (cost(u) + PER_TOKEN_PAD), u.item, u.position, i) for i, u in enumerate(units) if values[i] > 0
    ]
    heapq.heapify(heap)
    chosen: list[tuple[Unit, int]] = []
    spent = 0
    while heap and spent < budget:
        _, _, _, index = heapq.heappop(heap)
        unit = units[index]
        if unit.words and not unit.previous and len(unit.words - covered) < MIN_NEW_SHARE * len(unit.words):
            continue  # a near-duplicate of what is already chosen
        price = cost(unit)
        current = values[index] / (price + PER_TOKEN_PAD)
        if heap and current < -heap[0][0] - RATIO_TOLERANCE:
            heapq.heappush(heap, (-current, unit.item, unit.position, index))
            continue
        if spent + price > budget:
            continue
        spent += price
        chosen.append((unit, spent))
        covered |= unit.words
        if line_of is not None:
            opened.add(line_of(unit))
    return chosen


T = TypeVar("T")


def within(ranked: Sequence[tuple[float, int, T]], budget: float) -> list[T]:
    """Items ranked by (value, tokens, item), best first, that fit `budget` (skipping those too dear)."""
    chosen: list[T] = []
    spent = 0
    for _, tokens, item in ranked:
        if spent + tokens <= budget:
            chosen.append(item)
            spent += tokens
    return chosen
