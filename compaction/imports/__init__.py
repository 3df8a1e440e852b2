"""Conversations people already have, imported as channels.

`conversation_import` reads one export in one of FORMATS and stores each of
its conversations as a channel of the owner, all or nothing (`tree.py`):

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
from django.core.exceptions import ValidationError

from chatcore.models import Channel
from compaction.imports.chatgpt import chatgpt_conversations
from compaction.imports.claude import claude_conversations
from compaction.imports.locomo import locomo_conversations, locomo_date, locomo_turns
from compaction.imports.openai_messages import openai_messages_conversations
from compaction.imports.openwebui import openwebui_conversations
from compaction.imports.tree import conversations_write

PARSERS = {
    "chatgpt": chatgpt_conversations,
    "claude": claude_conversations,
    "openwebui": openwebui_conversations,
    "openai-messages": openai_messages_conversations,
    "locomo": locomo_conversations,
}
FORMATS = tuple(PARSERS)

__all__ = ["FORMATS", "conversation_import", "conversations_import", "locomo_date", "locomo_turns"]


def conversations_import(*, owner: User, data: object, format: str, title: str | None = None) -> list[Channel]:
    """Every conversation of an export as a channel (`title`, when given, names them all); ValidationError
    naming the entry, and nothing written, when the file is not what `format` says."""
    if format not in PARSERS:
        raise ValidationError({"format": f"Format must be one of: {', '.join(FORMATS)}."})
    conversations = PARSERS[format](data)
    if title:
        for conversation in conversations:
            conversation.title = title
    return conversations_write(owner=owner, conversations=conversations, source=format)


def conversation_import(*, owner: User, data: object, format: str = "locomo", title: str | None = None) -> Channel:
    """The first (for LoCoMo: the only) conversation's channel."""
    return conversations_import(owner=owner, data=data, format=format, title=title)[0]
