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
SEARCH_LANGUAGE: text search configuration of the message index (PostgreSQL's
    `english`, `french`, `simple`...; SQLite stems English only). The index is
    built with it: `manage.py search_reindex` after a change.
SEARCH_MAX_LIMIT: most results one search returns.
SEARCH_TERM_CAP: a query word matching more messages of the path than this is
    "common": it still counts in the ranking of the candidates the rarer words
    bring, but brings none itself, so a search's cost follows its rare words.
SEARCH_CANDIDATES: most candidates ranked per search.
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
        "SEARCH_LANGUAGE": "english",
        "SEARCH_MAX_LIMIT": 50,
        "SEARCH_TERM_CAP": 300,
        "SEARCH_CANDIDATES": 600,
    },
)

# Declared for type checkers; the values come from `__getattr__` on each access.
DEFAULT_CONTEXT_BUDGET: int
MESSAGE_OVERHEAD_TOKENS: int
TOOL_OUTPUT_PRUNE_CHARS: int
MAX_MESSAGE_CHARS: int
ATTACHMENT_TOKENS: int
SEARCH_LANGUAGE: str
SEARCH_MAX_LIMIT: int
SEARCH_TERM_CAP: int
SEARCH_CANDIDATES: int


def __getattr__(name: str) -> Any:
    return getattr(_settings, name)
