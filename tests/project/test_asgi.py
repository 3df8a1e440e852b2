"""`project/asgi.py`: what each web worker does once as it starts."""

import gc
import importlib
import subprocess
import sys


def test_a_worker_keeps_what_it_loaded_out_of_the_collector_s_full_passes():
    """Django, the apps and the model client live as long as the worker; a full collection triggered by a
    large request (a 10,000-message /v1 history) would otherwise walk them all again."""
    module = importlib.import_module("project.asgi")

    assert callable(module.application)
    assert gc.get_freeze_count() > 50_000  # every object loaded by then, Django's included


def test_a_worker_imports_the_urlconf_before_its_first_request():
    """Otherwise the first request each worker resolves imports every app's views inside the event loop."""
    code = "import sys, project.asgi; print('project.urls' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "True"


def test_a_worker_collects_a_request_s_cycles_in_one_young_pass():
    """The young generation is large enough that a request's objects are mostly dead by the first young
    collection that sees them, instead of being walked by several passes of every generation."""
    module = importlib.import_module("project.asgi")

    assert gc.get_threshold()[0] == module.YOUNG_COLLECTION_THRESHOLD
