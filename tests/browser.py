"""A page of the product in the real browser: one Chromium context per test, closed after it."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

# Screenshots the docs show (Getting started, the Admin guide): written by the browser tests on every run, so
# the pictures stay those of today's pages; commit them with a change to the pages.
DOCS_SCREENS = Path(__file__).resolve().parents[1] / "docs" / "assets" / "screens"


@contextlib.contextmanager
def browser_page(chromium, base_url: str, *, width: int, timeout_ms: int, height: int = 860) -> Iterator:
    context = chromium.new_context(viewport={"width": width, "height": height}, base_url=base_url)
    context.set_default_timeout(timeout_ms)
    try:
        yield context.new_page()
    finally:
        context.close()
