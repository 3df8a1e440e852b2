"""The offline summarizer: extractive, deterministic, a hand-over someone could take the work over from.

It never writes a sentence of its own about the conversation: it quotes
what was said (every quotation an exact span of its message; docs/design.md,
invariant 10), says who said it and when, and files it under the sections
the profile asks for — the goal from the user's requests, decisions with
who took them, tool calls paired with their outcomes, the key facts day by
day, the current state and next steps from the newest exchanges, open
questions, and the files, commands and identifiers that are what they say.
With the profile's option, the user's instructions and constraints are
kept word for word, newest first when they do not all fit.

Text that addresses a summarizer or a model ("ignore previous
instructions", "the summary must say …") is never quoted; the summary only
says how many such passages were set aside.

Modules: text (quotable pieces), units (one analysis pass), scoring (what a
piece is worth), select (budgeted choice), tools (calls and outcomes),
sections and plans (the selectors), entries and render (writing it out),
previous (iterative updates), layout and profiles (what each profile asks
for), quotes (checking invariant 10), core (putting it together).
"""

from compaction.summarizers.offline.core import summarize
from compaction.summarizers.offline.layout import BUILTIN_LAYOUTS, STRUCTURED, Layout
from compaction.transcript import TranscriptItem

SECTIONS = tuple(section.title for section in STRUCTURED.sections)


def summarize_offline(
    *,
    items: list[TranscriptItem],
    previous_summary: str | None,
    focus: str,
    max_tokens: int,
    layout: Layout | None = None,
) -> str:
    """A hand-over of `items` (merged with `previous_summary`) within `max_tokens`, shaped by `layout`."""
    return summarize(
        items=items,
        previous_summary=previous_summary,
        focus=focus,
        max_tokens=max_tokens,
        layout=layout or STRUCTURED,
    )


__all__ = ["BUILTIN_LAYOUTS", "SECTIONS", "STRUCTURED", "Layout", "summarize_offline"]
