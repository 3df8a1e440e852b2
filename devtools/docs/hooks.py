"""MkDocs hook (mkdocs.yml `hooks:`): fills the generated parts of the pages at build time.

A page asks for a part with a marker line, `<!-- generated: NAME -->`, replaced by the part:
`app-settings` (every prefixed setting of the apps, from their conf modules), `environment` (every
variable project/settings.py reads), `openapi` (the REST API from drf-spectacular's schema) and
`offline-samples` (the offline summarizer's hand-overs of the demo channel).
Problems found while generating are logged as warnings, which `mkdocs build --strict` turns into a
failed build.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.generated")

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)


# The checkout: the site (project/) and devtools are not installed packages (the wheel holds the apps only),
# so the build, started as the mkdocs command, imports them from here.
CHECKOUT = str(Path(__file__).resolve().parents[2])


def _django() -> None:
    """Django set up once, with the project's settings (the schema and the conf modules need it)."""
    if CHECKOUT not in sys.path:
        sys.path.insert(0, CHECKOUT)
    import django
    from django.apps import apps

    if not apps.ready:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
        django.setup()


def _part(name: str, markdown: str) -> str:
    _django()  # before the imports: the samples' modules define models
    from devtools.docs import openapi, reference, samples

    if name == "app-settings":
        text, problems = reference.app_settings_markdown()
    elif name == "environment":
        text, problems = reference.environment_markdown(markdown)
    elif name == "openapi":
        text, problems = openapi.api_markdown(), []
    elif name == "offline-samples":
        text, problems = samples.offline_samples_markdown(), []
    else:
        text, problems = "", [f"unknown generated part {name!r}"]
    for problem in problems:
        log.warning(problem)
    return text


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return MARKER.sub(lambda match: _part(match.group(1), markdown), markdown)
