"""Protecting the opening exchange: a profile's `protect_first_n`.

The first messages of a conversation often set the task ("you are
reviewing our payments service; never touch production"). With
`protect_first_n = N`, the first N messages of the channel are never
summarized: every summary carries them word for word, as they were written
(redacted like everything else), in a section of their own at its head, and
the summarizer works on the rest. Their ids are kept in the summary's
extracts, so a later summary (an iterative update) carries the same
messages again without walking the history, and a previous summary's copy
of the section is set aside before the update and written afresh.
"""

from __future__ import annotations

import re

from chatcore.models import Message, Summary
from compaction.redaction import redact
from compaction.safety.structure import RAW_NAME_CHARS, neutralize_lines, safe_speaker

TITLE = "Opening exchange (verbatim)"
EXTRACTS_KEY = "protected_messages"
_SECTION_RE = re.compile(rf"^## {re.escape(TITLE)}\n.*?(?=^## |\Z)", re.MULTILINE | re.DOTALL)


def opening_messages(*, count: int, path: list[Message], boundary: Summary | None) -> list[Message]:
    """The channel's first `count` messages: from the path when nothing is summarized yet, else the ones the
    summary in force protected."""
    if count <= 0:
        return []
    if boundary is None:
        return [m for m in path[:count] if m.depth < count]
    ids = (boundary.extracts or {}).get(EXTRACTS_KEY) or []
    return list(Message.objects.filter(pk__in=ids[:count]).order_by("depth"))


def opening_section(messages: list[Message]) -> str:
    """The messages as they were written, each under its speaker, as a Markdown quotation block."""
    if not messages:
        return ""
    lines = [f"## {TITLE}"]
    for message in messages:
        # Names and lines are made safe: a name or a line of a message must not open a section of the summary.
        raw = (message.metadata or {}).get("speaker")
        speaker = (
            safe_speaker(str(raw)[:RAW_NAME_CHARS], message.role.capitalize())[0] if raw else message.role.capitalize()
        )
        text = neutralize_lines(redact(message.content or "").text.strip()) or "(no text)"
        lines.append(f"**{speaker}:**")
        lines.extend(f"> {line}" if line.strip() else ">" for line in text.splitlines())
    return "\n".join(lines)


def without_opening(text: str | None) -> str | None:
    """A previous summary without its copy of the opening exchange (the update writes it afresh)."""
    if not text:
        return text
    return _SECTION_RE.sub("", text).strip()
