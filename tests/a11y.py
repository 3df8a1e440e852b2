"""Accessibility checks for the browser tests: axe-core (vendored in tests/vendor/axe-core)
run inside the page, with the WCAG 2.0/2.1 A and AA rules and axe's best practices.

The script is evaluated through the DevTools protocol rather than added as a <script>
element, so the pages' Content-Security-Policy stays as strict as in production.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

AXE = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]


@cache
def _axe_source() -> str:
    return AXE.read_text(encoding="utf-8")


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """The violations axe finds on the page as it is now (each with its rule, impact and nodes)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(_axe_source())
    return page.evaluate(
        """async (tags) => {
            const result = await window.axe.run(document, {runOnly: {type: 'tag', values: tags}});
            return result.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary})),
            }));
        }""",
        TAGS,
    )


def assert_accessible(page: Any, state: str) -> None:
    """Fail with a readable list when axe finds anything on this page state."""
    violations = axe_violations(page)
    lines = [
        f"{v['id']} ({v['impact']}): {v['help']} — {node['target']}: {node['summary']}"
        for v in violations
        for node in v["nodes"][:5]
    ]
    assert not violations, f"axe found {len(violations)} violation(s) on {state}:\n" + "\n".join(lines)
