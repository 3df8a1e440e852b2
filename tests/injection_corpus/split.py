"""Which components belong to the test part (the rule is stated in the package docstring).

A pool is a list of interchangeable components: one language's injection phrasings, one
language's benign texts of one kind, one language's frames of one family, one language's
ordinary exchanges, one group of language-neutral carrier templates. Within a pool the
components are ranked by a salted SHA-256 of their id and the first TEST_SHARE of them go to
test; with the families held out whole, that puts about 40% of the cases in test. The ranking
depends on nothing but the ids, so nobody chose which phrasing is held out, and adding a
component to one pool leaves every other pool's split as it was.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

TEST_SHARE = 0.38
SALT = "injection-corpus/split/1"
DEV = "dev"
TEST = "test"
# Families none of whose templates are in dev: a detector tuned on dev meets them first in test.
HELD_OUT_FAMILIES = frozenset({"markup", "enc_url", "enc_leet"})


def _rank(identifier: str) -> str:
    return hashlib.sha256(f"{SALT}:{identifier}".encode()).hexdigest()


def held_out_count(pool: str, size: int) -> int:
    """How many of a pool of `size` go to test: TEST_SHARE of it, at least one and never all. The
    fraction is rounded up or down by the pool's own hash (unbiased rounding), so that the many
    small pools add up to TEST_SHARE instead of all rounding the same way."""
    if size < 2:
        raise ValueError(f"pool {pool} needs at least two components to be split")
    exact = TEST_SHARE * size
    whole = int(exact)
    if int(_rank(f"pool:{pool}")[:8], 16) / 16**8 < exact - whole:
        whole += 1
    return min(size - 1, max(1, whole))


def assign(pool: str, ids: Iterable[str]) -> dict[str, str]:
    """id -> DEV or TEST for the components of one pool."""
    ids = list(ids)
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate ids in pool {pool}: {ids}")
    held_out = set(sorted(ids, key=_rank)[: held_out_count(pool, len(ids))])
    return {identifier: TEST if identifier in held_out else DEV for identifier in ids}
