"""The export formats the importer reads, each a function from a file's top-level values to conversations."""

from collections.abc import Callable, Iterable, Iterator

from django.core.exceptions import ValidationError

from compaction.imports.chatgpt import chatgpt_conversations
from compaction.imports.claude import claude_conversations
from compaction.imports.locomo import locomo_conversations
from compaction.imports.openai_messages import openai_messages_conversations
from compaction.imports.openwebui import openwebui_conversations
from compaction.imports.tree import ExportItem, ImportedConversation

Parser = Callable[[Iterable[ExportItem]], Iterator[ImportedConversation]]

PARSERS: dict[str, Parser] = {
    "chatgpt": chatgpt_conversations,
    "claude": claude_conversations,
    "openwebui": openwebui_conversations,
    "openai-messages": openai_messages_conversations,
    "locomo": locomo_conversations,
}
FORMATS = tuple(PARSERS)
FORMAT_CHOICES_TEXT = f"Format must be one of: {', '.join(FORMATS)}."


def format_parser(format: str) -> Parser:
    """The parser of `format`; ValidationError on `format` (not repeating the value) when there is none."""
    try:
        return PARSERS[format]
    except (KeyError, TypeError):
        raise ValidationError({"format": FORMAT_CHOICES_TEXT}) from None
