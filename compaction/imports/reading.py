"""An export file read one conversation at a time, within the import limits (compaction/conf.py)."""

from collections.abc import Iterator
from typing import IO

from compaction import conf
from compaction.imports.files import export_items, export_open, limit_error
from compaction.imports.formats import format_parser
from compaction.imports.tree import ImportedConversation


def conversations_read(
    *, file: IO[bytes], name: str, format: str, title: str | None = None
) -> Iterator[ImportedConversation]:
    """Every conversation of the export in `file` (a binary file, seekable), in the file's order, each
    parsed when it is reached; ValidationError naming the entry or the limit as soon as one is wrong."""
    parser = format_parser(format)
    stream, label = export_open(file, name)
    conversations = messages = 0
    for conversation in parser(export_items(stream, label)):
        conversations += 1
        messages += len(conversation.messages)
        if conversations > conf.IMPORT_MAX_CONVERSATIONS:
            raise limit_error(
                f"{label} holds more than {conf.IMPORT_MAX_CONVERSATIONS:,} conversations",
                limit=conf.IMPORT_MAX_CONVERSATIONS,
                unit="conversations",
                setting="IMPORT_MAX_CONVERSATIONS",
            )
        if messages > conf.IMPORT_MAX_MESSAGES:
            raise limit_error(
                f"{label} holds more than {conf.IMPORT_MAX_MESSAGES:,} messages",
                limit=conf.IMPORT_MAX_MESSAGES,
                unit="messages",
                setting="IMPORT_MAX_MESSAGES",
            )
        if title:
            conversation.title = title
        yield conversation
