"""Pausing Python's cyclic garbage collector around the CPU-bound stretches of a compaction or an import.

Loading a path of 5,000 messages and reading them for the offline summary
creates some 100,000 small objects (model instances, transcript items,
pieces of sentences and their word sets) that stay alive until the summary
is written. Each batch of them that survives a young collection counts
towards a full one, and a full collection walks every object of the process:
left on, the collector runs full collections during a compaction that
take a noticeable share of its CPU and free nothing — these objects hold
no reference cycles. Paused, the objects are looked at once,
when it resumes. A bulk import (`chatcore.bulk`) is the same: several
objects a row (the row, its instance, its hash), all kept until it returns.

Only around stretches that run on the CPU (never around a model call or a
wait), so that the process's other threads go on collecting soon after.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off for the block, and back on after it if it was on before it (nesting keeps it off)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
