"""A page of the product in the real browser: one Chromium context per test, closed after it."""

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def browser_page(chromium, base_url: str, *, width: int, timeout_ms: int, height: int = 860) -> Iterator:
    context = chromium.new_context(viewport={"width": width, "height": height}, base_url=base_url)
    context.set_default_timeout(timeout_ms)
    try:
        yield context.new_page()
    finally:
        context.close()
