"""Knobs of the conversation substrate, each overridable in Django settings
(CHATCORE_<NAME>), read when used (chatcore.appsettings): a changed setting
takes effect at once.

DEFAULT_CONTEXT_BUDGET: tokens assumed for a channel whose model (and the
    utility model) declare no context window. 128k is conservative for
    current models.
MESSAGE_OVERHEAD_TOKENS: tokens a chat API adds per message for role and
    framing; counted so that budgets match what providers bill.
TOOL_OUTPUT_PRUNE_CHARS: tool results longer than this, older than the latest
    user turn, are replaced in the context (never in the database) by a note.
MAX_MESSAGE_CHARS: longest message content accepted from clients.
ATTACHMENT_TOKENS: tokens counted for each image, audio or file content part
    of a message (OpenAI's figure for one 1024 x 1024 image at high detail).
"""

from typing import Any

from chatcore.appsettings import AppSettings

_settings = AppSettings(
    "CHATCORE_",
    {
        "DEFAULT_CONTEXT_BUDGET": 128_000,
        "MESSAGE_OVERHEAD_TOKENS": 4,
        "TOOL_OUTPUT_PRUNE_CHARS": 4_000,
        "MAX_MESSAGE_CHARS": 1_000_000,
        "ATTACHMENT_TOKENS": 765,
    },
)

# Declared for type checkers; the values come from `__getattr__` on each access.
DEFAULT_CONTEXT_BUDGET: int
MESSAGE_OVERHEAD_TOKENS: int
TOOL_OUTPUT_PRUNE_CHARS: int
MAX_MESSAGE_CHARS: int
ATTACHMENT_TOKENS: int


def __getattr__(name: str) -> Any:
    return getattr(_settings, name)
