"""Tool calls paired with what came of them, for "Done and tried".

A call is an assistant message's request (a tool name and its arguments); its
outcome is the tool result that answers it (by call id, else the next result
of that tool). The outcome is told by quoting the result's own lines: the
error lines when something failed, otherwise the line that sums it up (a
test run's "211 passed in 48.31s", a command's first line), trimmed of the
rules around it but never reworded.
"""

from __future__ import annotations

import dataclasses
import json
import re

from chatcore.bounded_json import json_loads_bounded
from compaction import lexicon
from compaction.pieces import estimate_tokens
from compaction.safety.injection import injection_flags
from compaction.transcript import TranscriptItem, format_date, tool_result_flagged

MAX_OUTCOME_CHARS = 160  # an outcome line is quoted up to this long: the error or the tally, not the log
MIN_WORD_CUT_CHARS = 20  # a long line is cut at a space unless that leaves less than this; then at the limit
# Arguments are shown as their values when the call has at most this many (a command, a path, a query).
FEW_ARGUMENTS = 2
# Arguments longer than the first are cut to the second: enough to tell calls apart on one line.
MAX_ARGUMENTS_CHARS, CUT_ARGUMENTS_CHARS = 120, 100
MAX_OUTCOME_LINES = 2  # the first error line and the line that sums the run up
ATTEMPT_FRAME_TOKENS = 8  # the attempt's line beyond its words: backticks, the arrow, "failed:", quotation marks
# What an attempt is worth beside its words: a failure more than a success, a figure in its outcome more still.
FAILED_ATTEMPT_BONUS, ATTEMPT_BONUS, FIGURE_BONUS = 3.0, 1.5, 1.0
# A line that reports a failure (not one that merely contains the word, like code or a document would).
_FAIL_RE = re.compile(
    r"^\s*(?:E\s{2,}|FAILED\b|FAIL[: ]|ERROR\b|Error:|error:|fatal:|Traceback\b|panic:|[A-Z]\w*(?:Error|Exception)"
    r"\b:?)|\bHTTP/\d(?:\.\d)? [45]\d\d\b|\bexit (?:code|status) [1-9]|\b[1-9]\d* (?:failed|errors?)\b|"
    r"\b(?:permission denied|connection refused|not found|timed out|command not found)\b",
    re.IGNORECASE | re.MULTILINE,
)
_SUMMING_RE = re.compile(
    r"\b(?:\d+ (?:passed|failed|errors?|skipped|warnings?|applied|pending|rows?|files?|changed|found|tests?)|"
    r"passed|success|succeeded|ok\b|OK\b|no issues|all checks passed|done|complete|reverted|would replay)",
    re.IGNORECASE,
)
_RULE_RE = re.compile(r"^(?:[\s=\-_*#>|]+|E\s{2,})|[\s=\-_*#|]+$")
_ARGUMENT_KEYS = ("cmd", "command", "args", "path", "url", "query", "q", "file", "name", "input")


@dataclasses.dataclass(slots=True, eq=False)
class Attempt:
    """One tool call and its outcome, ready to render."""

    item: int  # the calling message
    result_item: int | None  # the tool result's message
    name: str
    arguments: str
    failed: bool
    outcome: list[tuple[int, int]]  # spans of the result quoted as the outcome
    day: str
    words: frozenset[str]
    tokens: int
    bonus: float


def arguments_text(raw: str) -> str:
    """The call's arguments as a reader wants them: the command, path or URL itself when there is one."""
    try:
        parsed = json_loads_bounded(raw)
    except (ValueError, TypeError):
        parsed = None
    if isinstance(parsed, dict):
        values = [str(parsed[key]) for key in _ARGUMENT_KEYS if isinstance(parsed.get(key), str | int | float)]
        if values and len(parsed) <= FEW_ARGUMENTS:
            text = " ".join(" ".join(values).split())  # one line: a newline in a value could open a heading
        else:
            text = json.dumps(parsed, ensure_ascii=False, separators=(", ", ": "))
    else:
        text = " ".join(str(raw).split())
    return text if len(text) <= MAX_ARGUMENTS_CHARS else text[:CUT_ARGUMENTS_CHARS].rstrip() + " …"


def _trimmed_line(content: str, start: int, end: int) -> tuple[int, int]:
    line = content[start:end]
    match = _RULE_RE.match(line)
    if match:
        start += match.end()
        line = content[start:end]
    tail = _RULE_RE.search(line)
    if tail:
        end = start + tail.start()
    if end - start > MAX_OUTCOME_CHARS:
        cut = content.rfind(" ", start, start + MAX_OUTCOME_CHARS)
        end = cut if cut > start + MIN_WORD_CUT_CHARS else start + MAX_OUTCOME_CHARS
    return start, end


def outcome_spans(content: str) -> tuple[bool, list[tuple[int, int]]]:
    """(failed, the spans that tell the outcome): up to two error lines, else the line that sums the run up."""
    lines = [(m.start(), m.end()) for m in re.finditer(r"[^\n]+", content) if m.group(0).strip(" =-_*#")]
    if not lines:
        return False, []
    errors = [span for span in lines if _FAIL_RE.search(content, *span)]
    if errors:
        chosen = errors[:1] + [span for span in reversed(lines) if _SUMMING_RE.search(content, *span)][:1]
        chosen = sorted(set(chosen))[:MAX_OUTCOME_LINES]
        return True, [_trimmed_line(content, *span) for span in chosen]
    summing = [span for span in lines if _SUMMING_RE.search(content, *span)]
    span = summing[-1] if summing else lines[0]
    return False, [_trimmed_line(content, *span)]


def attempts(items: list[TranscriptItem]) -> list[Attempt]:
    """Every tool call of the transcript with its outcome, in order."""
    results_by_id: dict[str, int] = {}
    results_by_name: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        if item.role == "tool":
            if item.tool_call_id:
                results_by_id[item.tool_call_id] = index
            results_by_name.setdefault(item.tool_name or item.speaker, []).append(index)
    used: set[int] = set()
    found: list[Attempt] = []
    for index, item in enumerate(items):
        for call in item.tool_calls:
            result = results_by_id.get(call.get("id") or "")
            if result is None:
                result = next((i for i in results_by_name.get(call["name"], []) if i > index and i not in used), None)
            if result is not None:
                used.add(result)
            found.append(_attempt(index, item, call, result, items[result] if result is not None else None))
    return found


def _attempt(index: int, item: TranscriptItem, call: dict, result: int | None, tool: TranscriptItem | None) -> Attempt:
    failed, spans = outcome_spans(tool.content) if tool is not None else (False, [])
    if tool is not None and tool_result_flagged(tool):
        # The detector flagged the result as a whole: each line is judged alone, and only lines it clears are quoted.
        verdicts = injection_flags([tool.content[a:b] for a, b in spans], neighbours=False)
        spans = [span for span, flagged in zip(spans, verdicts, strict=True) if not flagged]
    elif tool is not None:  # a line of the result that addresses a model is not quoted as its outcome
        spans = [(a, b) for a, b in spans if not lexicon.looks_like_injection(tool.content[a:b])]
    arguments = arguments_text(call.get("arguments", ""))
    quoted = " ".join(tool.content[a:b] for a, b in spans) if tool is not None else ""
    words = frozenset(lexicon.content_words(f"{call['name']} {arguments} {quoted}"))
    return Attempt(
        item=index,
        result_item=result,
        name=call["name"],
        arguments=arguments,
        failed=failed,
        outcome=spans,
        day=format_date(item.created_at),
        words=words,
        tokens=estimate_tokens(f"{call['name']} {arguments} {quoted}") + ATTEMPT_FRAME_TOKENS,
        bonus=(FAILED_ATTEMPT_BONUS if failed else ATTEMPT_BONUS)
        + (FIGURE_BONUS if quoted and any(c.isdigit() for c in quoted) else 0.0),
    )
