"""Benchmarks of the product's hot paths, one module per scenario.

Each module exposes `run(*, scale: float, stdout, **options) -> dict`: it
builds its own data, prints a table to `stdout`, cleans up, and returns its
figures. `python manage.py compaction_bench` runs them through this
registry. Speed goals live here, printed as figures, never in timed tests.
"""

import importlib
import importlib.util
import inspect
from types import ModuleType

# name → module; a scenario whose module is absent is simply not offered.
REGISTRY: dict[str, str] = {
    "context": "devtools.benchmarks.context",
    "path": "devtools.benchmarks.path",
    "scanner": "devtools.benchmarks.scanner",
    "compaction": "devtools.benchmarks.compaction",
    "throughput": "devtools.benchmarks.throughput",
    "tokens": "devtools.benchmarks.tokens",
    "serving": "devtools.benchmarks.serving",
    "dashboard": "devtools.benchmarks.dashboard",
    "search": "devtools.benchmarks.search",
    "gateway": "devtools.benchmarks.gateway",
}


def scenarios_available() -> list[str]:
    return [name for name, module in REGISTRY.items() if importlib.util.find_spec(module) is not None]


def scenario_module(name: str) -> ModuleType:
    return importlib.import_module(REGISTRY[name])


def scenario_run(name: str, *, scale: float, stdout, **options) -> dict:
    """Run one scenario, passing only the options its `run` accepts."""
    run = scenario_module(name).run
    accepted = inspect.signature(run).parameters
    extra = {key: value for key, value in options.items() if key in accepted and value is not None}
    return run(scale=scale, stdout=stdout, **extra)
