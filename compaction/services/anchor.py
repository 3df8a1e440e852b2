"""Where a summary may end: just before one of the user's messages.

The kept part of a channel then opens with a request, so a request and the
answer to it (with any tool calls between) are summarized together or kept
together, whatever asked for the compaction (the button, the API, the
scanner, the gateway). Keeping a little more than `keep_recent` is the
price; with no user message to anchor at, nothing is summarized and the
caller says so.
"""

from django.core.exceptions import ValidationError

from chatcore.models import Message


def cut_anchor(path: list[Message], cut: int) -> int:
    """`cut` moved back until `path[cut:]` opens with a user's message (or is empty)."""
    while 0 < cut < len(path) and path[cut].role != Message.Role.USER:
        cut -= 1
    return cut


def cut_check(path: list[Message], cut: int) -> None:
    """An explicit cut (an edited draft's message) must also end before a user's message or at the leaf."""
    if cut < len(path) and path[cut].role != Message.Role.USER:
        raise ValidationError(
            {
                "through_message_id": "A summary must end just before one of the user's messages (or at "
                "the newest message), never between a request and its answer. Make a new draft."
            }
        )
