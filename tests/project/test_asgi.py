"""`project/asgi.py`: what each web worker does once as it starts."""

import gc
import importlib


def test_a_worker_keeps_what_it_loaded_out_of_the_collector_s_full_passes():
    """Django, the apps and the model client live as long as the worker; a full collection triggered by a
    large request (a 10,000-message /v1 history) would otherwise walk them all again."""
    module = importlib.import_module("project.asgi")

    assert callable(module.application)
    assert gc.get_freeze_count() > 50_000  # every object loaded by then, Django's included
