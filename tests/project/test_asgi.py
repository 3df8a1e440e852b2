"""`project/asgi.py`: what each web worker does once as it starts.

Each test starts a worker's module in a process of its own: imported here it would freeze the test run's
objects and change the collector's thresholds for every test after it."""

import json
import subprocess
import sys

# Python's own young-generation threshold, which a worker raises.
PYTHON_YOUNG_THRESHOLD = 700


def _worker_started(code: str) -> str:
    """The last line `code` prints after importing `project.asgi` in a fresh interpreter."""
    script = f"import gc, json, sys, project.asgi; {code}"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_a_worker_keeps_what_it_loaded_out_of_the_collector_s_full_passes():
    """Django, the apps and the model client live as long as the worker; a full collection triggered by a
    large request (a 10,000-message /v1 history) would otherwise walk them all again."""
    app_callable, frozen = json.loads(
        _worker_started("print(json.dumps([callable(project.asgi.application), gc.get_freeze_count()]))")
    )

    assert app_callable is True
    assert frozen > 50_000  # every object loaded by then, Django's included


def test_a_worker_imports_the_urlconf_before_its_first_request():
    """Otherwise the first request each worker resolves imports every app's views inside the event loop."""
    assert _worker_started("print('project.urls' in sys.modules)") == "True"


def test_a_worker_collects_a_request_s_cycles_in_one_young_pass():
    """The young generation is large enough that a request's objects are mostly dead by the first young
    collection that sees them, instead of being walked by several passes of every generation."""
    young, wanted = json.loads(
        _worker_started("print(json.dumps([gc.get_threshold()[0], project.asgi.YOUNG_COLLECTION_THRESHOLD]))")
    )

    assert young == wanted > PYTHON_YOUNG_THRESHOLD
