"""`recall_history(query, limit)`: the model searches what the summary in force stands in for.

Offered (chatcore.tools) only when a summary is in force on the user's path,
the channel's owner is asking, and neither the admin's setting
(CompactionSettings.recall_tool) nor the channel's (`settings.recall_tool:
false`) turns it off. Results are `recall_search` with scope "summarized":
the top snippets of the summarized originals, each with its date, speaker
and neighbouring turns, redacted.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from chatcore.models import Channel, Cursor
from chatcore.tools import ReplyTool, tool_register
from compaction.recall import recall_search

MAX_LIMIT = 8
DEFAULT_LIMIT = 5  # results when the model names no limit: enough context, little of the window


def _offered(channel: Channel, user: User, cursor: Cursor | None) -> bool:
    from compaction.scanner.selectors import compaction_settings_get

    if channel.owner_id != user.pk or channel.settings.get("recall_tool") is False:
        return False
    # Most channels have no summary in force: that is looked at first, and the settings only when there is one.
    if cursor is None or cursor.summary_id is None:
        return False
    return compaction_settings_get().recall_tool


def _run(channel: Channel, user: User, arguments: dict) -> str:
    query = str(arguments.get("query") or "")
    try:
        limit = max(1, min(MAX_LIMIT, int(arguments.get("limit") or DEFAULT_LIMIT)))
    except (TypeError, ValueError):
        limit = DEFAULT_LIMIT
    try:
        found = recall_search(channel=channel, user=user, query=query, limit=limit, scope="summarized")
    except ValidationError:
        return "[no search words in the query: name the people, things or dates to look for]"
    if not found.results:
        return f"[nothing in the summarized messages matches {query!r}]"
    return "\n\n".join(f"Result {r.rank}:\n{r.content}" for r in found.results)


RECALL_TOOL = ReplyTool(
    name="recall_history",
    description=(
        "Search the original messages of this conversation that the summary stands in for. Use it when the "
        "summary lacks a detail (a name, a number, a date, an exact instruction). Returns the best matching "
        "messages with their dates, speakers and neighbouring turns."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to look for, e.g. 'pottery class July 2023'."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
        },
        "required": ["query"],
    },
    offered=_offered,
    run=_run,
)


def recall_tool_register() -> None:
    tool_register(RECALL_TOOL)
