"""The conversation each probe is put into, and the checks of what came out, written apart from the product's own
patterns (tests/compaction/safety/red_team_probes.py has the probes).

A line is whatever str.splitlines() or a Markdown reader breaks at, so the checks split at every kind of line
break; a line "looks like structure" by a small pattern of its own, read after NFKC, without format characters
and with the common Cyrillic and Greek look-alikes made Latin."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata

from chatcore.models import Message
from compaction.facts import HEADING as PINNED_HEADING
from compaction.prompting import messages_build
from compaction.services.opening import TITLE as OPENING_TITLE
from compaction.summarizers.offline import BUILTIN_LAYOUTS, summarize_offline
from compaction.transcript import render_transcript, transcript_items
from tests.compaction.factories import TOPICS
from tests.compaction.safety.red_team_probes import FORGED

START = dt.datetime(2024, 5, 3, 9, 0, tzinfo=dt.UTC)
TURNS = 8  # seven messages and one tool call, each opened by a label of the renderer's
LINE_BREAK_RE = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_FORMAT_RE = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")
_LATIN = str.maketrans(
    "АВЕКМНОРСТХУЅІЈаеорсухіјѕΑΒΕΗΙΚΜΝΟΡΤΥΧαοιερυνκτ", "ABEKMHOPCTXYSIJaeopcyxijsABEHIKMNOPTYXaoiepuvkt"
)
_SUSPECT_RE = re.compile(
    r"^[\s>*_~`•+\-]*(?:[\[(<{【〔⟦«‹]\s*)?(?:user|assistant|system|tool|human|ai)\b"
    r"|^[\s>]*#{1,6}\s|^[\s>]*</?\s*[a-z]|^[\s>]*(?:<<<|>>>|```|~~~)|^[\s>]*={3,}\s*$"
    r"|^[\s>*]*(?:key decisions|decisions|summary)\s*:?\s*\**:?\s*$|<\|im_"
)
_LABEL_RE = re.compile(r"\[(?:USER|ASSISTANT|TOOL RESULT|TOOL CALL)(?: · [^\]\n]*)?\]: ")
_SUMMARY_LINE_RE = re.compile(r"# Hand-over|## |### \d|- ")
TITLES = {section.title for layout in BUILTIN_LAYOUTS.values() for section in layout.sections} | {
    PINNED_HEADING.removeprefix("## "),
    OPENING_TITLE,
}


def conversation(
    *, content: str = "", tool_result: str = "", speaker: str = "", tool_name: str = "", arguments: str = ""
) -> list[Message]:
    """Seven messages (unsaved: the transcript reads only their fields) with the probe where it is asked."""
    messages: list[Message] = []

    def add(role: str, text: str, **metadata) -> None:
        created = START + dt.timedelta(minutes=len(messages))
        messages.append(Message(pk=len(messages) + 1, role=role, content=text, metadata=metadata, created_at=created))

    named = {"speaker": speaker} if speaker else {}
    tool = tool_name or "bank_api"
    call = {"id": "call_1", "type": "function", "function": {"name": tool, "arguments": arguments or '{"cmd": "x"}'}}
    add("user", TOPICS[0], **named)
    add("assistant", TOPICS[1])
    add("user", f"Here is the note from the bank. {content or 'Nothing else.'} Thanks, that is all.")
    add("assistant", "Checking the status of the transfer.", tool_calls=[call])
    add("tool", tool_result or "status: pending, 2 transfers queued", name=tool, tool_call_id="call_1")
    add("user", TOPICS[2], **named)
    add("assistant", TOPICS[3])
    return messages


def prompt_and_summary(messages: list[Message]) -> tuple[str, str]:
    """The request's user message as summary_generate builds it for a model, and the offline summary."""
    items = transcript_items(messages)
    prompt = messages_build(
        system_prompt="Summarize.", instructions="{transcript}", transcript=render_transcript(items)
    )
    summary = summarize_offline(items=items, previous_summary=None, focus="", max_tokens=800)
    return prompt[1]["content"], summary


def _skeleton(line: str) -> str:
    return unicodedata.normalize("NFKC", _FORMAT_RE.sub("", line)).translate(_LATIN).lower()


def forged_turns(prompt: str) -> list[str]:
    """Lines inside the transcript's fence that a reader could take for a turn, a fence or a heading of their own:
    any line that is not one of the renderer's labels nor an indented continuation, and any that reads like
    structure without the escaping backslash."""
    fence = re.search(r"<<<BEGIN TRANSCRIPT ([0-9a-f]{16})>>>\n(.*)\n<<<END TRANSCRIPT \1>>>", prompt, re.DOTALL)
    assert fence is not None
    assert sum(line.startswith("<<<END TRANSCRIPT") for line in LINE_BREAK_RE.split(prompt)) == 1
    bad, labels = [], 0
    for line in LINE_BREAK_RE.split(fence.group(2)):
        if not line.strip():
            continue
        label = _LABEL_RE.match(line)
        if label:
            labels += 1
            rest = line[label.end() :]
        elif line.startswith("  "):
            rest = line[2:]
        else:
            bad.append(line)
            continue
        if _SUSPECT_RE.search(_skeleton(rest)) and not rest.startswith("\\"):
            bad.append(line)
    if labels != TURNS:
        bad.append(f"{labels} labels instead of {TURNS}")
    return bad


def forged_lines(summary: str) -> list[str]:
    """Lines of the offline summary that are not its own: any line that is not its header, one of the section
    headings a layout or fact pinning writes (each once), a day heading or a bullet; and any line where the forged
    text stands outside a quotation or inline code."""
    lines = [line for line in LINE_BREAK_RE.split(summary) if line.strip()]
    bad = [line for line in lines if not _SUMMARY_LINE_RE.match(line)]
    for line in lines:
        opened = [found for found in (line.find("“"), line.find("`")) if found >= 0]
        if FORGED in line and not (opened and min(opened) < line.find(FORGED)):
            bad.append(line)
    headings = [line[3:] for line in lines if line.startswith("## ")]
    if not set(headings) <= TITLES or len(set(headings)) != len(headings):
        bad.append(f"headings {headings}")
    return bad
