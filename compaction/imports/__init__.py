"""Conversations people already have, imported as channels.

An export in one of FORMATS is read one top-level value at a time
(`files.py`, within the limits of `reading.py`), each conversation stored as
a channel of the owner in a transaction of its own, by a background task that
reports its progress (`jobs.py`); exports already in memory go in all or
nothing (`conversations_import`, `tree.py`). The formats:

- `chatgpt`: ChatGPT's conversations.json, the `mapping` tree of each
  conversation with every edited or regenerated branch, the cursor on
  `current_node` (`chatgpt.py`);
- `claude`: Claude's conversations.json, `chat_messages` in order, or as a
  tree where they name `parent_message_uuid` (`claude.py`);
- `openwebui`: Open WebUI's chat export, its `history.messages` tree and
  `currentId` (`openwebui.py`);
- `openai-messages`: a plain OpenAI `messages` list, `{"messages": [...]}`
  or JSON Lines of those, one conversation each (`openai_messages.py`);
- `locomo`: a LoCoMo benchmark conversation (`locomo.py`).
"""

from django.contrib.auth.models import User

from chatcore.models import Channel
from compaction.imports.formats import FORMATS, PARSERS, format_parser
from compaction.imports.locomo import locomo_date, locomo_turns
from compaction.imports.tree import conversations_write, export_items_of

__all__ = [
    "FORMATS",
    "PARSERS",
    "conversation_import",
    "conversations_import",
    "locomo_date",
    "locomo_turns",
]


def conversations_import(*, owner: User, data: object, format: str, title: str | None = None) -> list[Channel]:
    """Every conversation of an export already in memory as a channel (`title`, when given, names them
    all), all or none; ValidationError naming the entry, and nothing written, when the data is not what
    `format` says. Files and uploads go through `compaction.imports.jobs` instead (streamed, limited, a
    conversation per transaction)."""
    conversations = list(format_parser(format)(export_items_of(data)))
    if title:
        for conversation in conversations:
            conversation.title = title
    return conversations_write(owner=owner, conversations=conversations, source=format)


def conversation_import(*, owner: User, data: object, format: str = "locomo", title: str | None = None) -> Channel:
    """The first (for LoCoMo: the only) conversation's channel."""
    return conversations_import(owner=owner, data=data, format=format, title=title)[0]
