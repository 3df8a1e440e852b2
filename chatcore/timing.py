"""How long named steps of one piece of work took: the one instrument for timing a step, so that
whatever reports durations (the gateway's Server-Timing header; metrics) reads them the same way."""

import contextlib
import time
from collections.abc import Callable, Iterator


class Timings:
    """Milliseconds per step, in the order the steps ended (a step that encloses others ends after them)."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}

    @contextlib.contextmanager
    def timed(self, name: str, *, clock: Callable[[], float] = time.perf_counter) -> Iterator[None]:
        """Time the block as `name` on `clock`: wall time by default; `time.process_time` for the
        process's CPU, `time.thread_time` for this thread's. A block that raises is timed too."""
        started = clock()
        try:
            yield
        finally:
            self.ms[name] = (clock() - started) * 1000
