"""A page of the product in the real browser: one Chromium context per test, closed after it."""

import contextlib
import time
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


SCRIPTS_READY = "document.readyState === 'complete' && !!window.htmx"
SCRIPTS_WAIT_SECONDS = 20
SCRIPTS_POLL_SECONDS = 0.05


def scripts_ready(page, expression: str = SCRIPTS_READY) -> None:
    """Wait until `expression` holds in the page (by default: loaded, deferred scripts run).

    Playwright's `wait_for_function` polls a string by evaluating it with `eval` inside the page, which the
    site's Content-Security-Policy (no 'unsafe-eval') refuses whenever the first check is not already true;
    `page.evaluate` runs through the DevTools protocol, which the policy does not govern. A navigation under
    way destroys the context an evaluation runs in: that check is tried again."""
    from playwright.sync_api import Error

    deadline = time.monotonic() + SCRIPTS_WAIT_SECONDS
    while True:
        with contextlib.suppress(Error):
            if page.evaluate(expression):
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"the page never reached `{expression}` ({page.url})")
        time.sleep(SCRIPTS_POLL_SECONDS)
