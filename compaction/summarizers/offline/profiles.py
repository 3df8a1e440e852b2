"""From a compaction profile to the offline summary's layout, and what to tell staff about it.

A built-in profile whose template is still the shipped one gets the layout
designed for it. Any other profile (a custom one, or a built-in whose
template was edited) gets the sections its template's headings ask for;
a template without headings gets the Structured sections. The profile's
"keep instructions verbatim" option adds or removes that section.

`offline_notes` says in plain words what the extractive summarizer does
with a profile and what it cannot do: it quotes, it never writes prose, so
instructions about length in words, tone, language or format are only
followed by a model.
"""

from __future__ import annotations

import re
from typing import Any

from compaction.builtins import BUILTIN_BY_SLUG
from compaction.summarizers.offline import layout as layouts

# Sentences of a template that ask for something only a writer can do.
_PROSE_RE = re.compile(
    r"\b(?:words?|sentences?|paragraphs?|tone|style|voice|language|translate|english|french|german|spanish|"
    r"bullet|numbered|prose|concise|short|brief|tersely|friendly|formal|informal|explain|rephrase|reword|"
    r"in your own words|format|markdown|table|json|emoji)\b",
    re.IGNORECASE,
)
_SENTENCE_RE = re.compile(r"[^.!?\n]+[.!?]?")
MIN_PROSE_CHARS = 12  # a shorter sentence of a template is a label or a fragment, not an instruction
SHOWN_PROSE = 3  # the notes quote this many of the instructions only a model can follow


def _template(profile: Any) -> str:
    return getattr(profile, "instructions", "") or ""


def offline_layout(profile: Any) -> layouts.Layout:
    """The sections the offline summary has for `profile`."""
    slug = getattr(profile, "slug", "")
    shipped = BUILTIN_BY_SLUG.get(slug)
    if getattr(profile, "is_builtin", False) and shipped and _template(profile) == shipped["instructions"]:
        layout = layouts.BUILTIN_LAYOUTS[slug]
    else:
        layout = layouts.custom_layout(_template(profile)) or layouts.STRUCTURED
    return layout.with_instructions(bool(getattr(profile, "keep_instructions_verbatim", False)))


def prose_instructions(template: str) -> list[str]:
    """The template's sentences that ask for writing rather than choosing (word limits, tone, format …)."""
    found = []
    for line in template.splitlines():
        if line.lstrip().startswith("#") or "{" in line:
            continue
        for sentence in _SENTENCE_RE.findall(line):
            sentence = sentence.strip()
            if len(sentence) > MIN_PROSE_CHARS and _PROSE_RE.search(sentence) and sentence not in found:
                found.append(sentence)
    return found


def offline_notes(profile: Any) -> list[str]:
    """Plain statements of how the offline summarizer follows `profile`, and what it cannot follow."""
    layout = offline_layout(profile)
    titles = ", ".join(section.title for section in layout.sections)
    limit = getattr(profile, "max_summary_tokens", 0)
    notes = [
        f"Without a model, the built-in offline summarizer writes these sections: {titles}. It quotes what was "
        f"said (word for word, with who said it and when) and stays within {limit:,} tokens, references included."
    ]
    if layout.name == "custom":
        headings = layouts.template_headings(_template(profile))
        if headings:
            unknown = [s.title for s in layout.sections if s.words and layouts.heading_kind(s.title) is None]
            notes.append("The sections come from the headings of this profile's template.")
            if unknown:
                notes.append(
                    "No offline selector matches "
                    + ", ".join(f"“{title}”" for title in unknown)
                    + ": those sections get the facts that mention their words."
                )
        else:
            notes.append("The template has no section headings, so the offline summary uses the Structured sections.")
    prose = prose_instructions(_template(profile))
    if prose:
        shown = " ".join(f"“{sentence}”" for sentence in prose[:SHOWN_PROSE])
        notes.append(
            f"These instructions can only be followed by a model, not offline: {shown} Offline, nothing is "
            f"reworded or written anew; the length is set by the token limit alone."
        )
    if getattr(profile, "keep_instructions_verbatim", False):
        notes.append(
            "The user's instructions and constraints are kept word for word (newest first when short of room)."
        )
    return notes
