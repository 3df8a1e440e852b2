"""How an API client that lost a connection mid-turn learns what became of that turn.

The multi-process test (test_multiprocess.py) kills a web process while
clients are mid-request; each such client asks the surviving process for the
newest messages of its channel and answers, resends, or asks only for the
missing answer. That path runs only when a kill lands mid-turn, so it is
kept here, where a fast test drives it against the real API
(tests/project/test_turns.py).
"""

import enum
import json
from collections.abc import Callable

Get = Callable[[str], tuple[int, bytes]]


class Fate(enum.Enum):
    ANSWERED = "answered"  # the turn and its answer are stored: only the answer was lost on the way
    UNANSWERED = "unanswered"  # the turn is stored: ask for its answer
    LOST = "lost"  # nothing of the turn is stored: send it again


def newest_messages(get: Get, channel_id: int, count: int = 2) -> list[dict]:
    """The newest `count` messages of the active path, oldest first.

    The message list is paginated like every list of the API (`{count, next, previous, results}`, 50 a
    page), so its first page is the oldest messages: read the path's length, then `?offset=length-count`,
    as the API documents for the newest messages.
    """
    url = f"/api/channels/{channel_id}/messages/"
    status, data = get(f"{url}?limit=1")
    assert status == 200, status
    length = json.loads(data)["count"]
    status, data = get(f"{url}?limit={count}&offset={max(0, length - count)}")
    assert status == 200, status
    return json.loads(data)["results"]


def turn_fate(newest: list[dict], text: str) -> tuple[Fate, dict | None]:
    """What became of the turn `text`, from the newest messages of the path; with the stored answer if any."""
    if len(newest) >= 2 and newest[-1]["role"] == "assistant" and newest[-2]["content"] == text:
        return Fate.ANSWERED, newest[-1]
    if newest and newest[-1]["role"] == "user" and newest[-1]["content"] == text:
        return Fate.UNANSWERED, None
    return Fate.LOST, None
