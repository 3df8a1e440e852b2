"""A plain OpenAI Chat Completions history: a list of messages, an object
with `messages` (and optionally `title`), or a list of such objects (as
JSON Lines are read: one conversation per line); JSON Lines of single
messages are one conversation. Messages are read exactly
as the /v1 gateway reads them (roles, text or content parts, tool calls and
results), so an export of a channel in this format imports back to the
same path. A message may carry a `created_at` (ISO 8601 or epoch seconds).
"""

from collections.abc import Iterable, Iterator

from compaction import conf
from compaction.gateway.protocol import ProtocolError, stored_form
from compaction.imports.files import conversation_too_large
from compaction.imports.tree import ExportItem, ImportedConversation, ImportedMessage, invalid, timestamp


def _conversation(item: object, index: int, many: bool) -> ImportedConversation:
    label = f"conversations[{index}]" if many else "The conversation"
    raw = item.get("messages") if isinstance(item, dict) else item
    title = str(item.get("title") or "") if isinstance(item, dict) else ""
    if not isinstance(raw, list) or not raw:
        raise invalid(label, "expected a non-empty list of messages (or an object with 'messages')")
    messages = []
    for position, message in enumerate(raw):
        try:
            form = stored_form(message, position)
        except ProtocolError as error:
            raise invalid(label, f"{error.param}: {error.message}") from None
        key = f"m{position}"
        created = timestamp(message.get("created_at"), f"{label}, messages[{position}]")
        messages.append(
            ImportedMessage(
                key, f"m{position - 1}" if position else None, form.role, form.content, form.metadata, created
            )
        )
    if not title:
        first = next((m.content for m in messages if m.role == "user"), messages[0].content)
        title = " ".join(first.split())[:60] or "Imported conversation"
    return ImportedConversation(title, messages, None, label)


def openai_messages_conversations(items: Iterable[ExportItem]) -> Iterator[ImportedConversation]:
    """The first item decides: objects with `messages` are one conversation each; anything else is a list
    of messages making one conversation, which is then held whole, within the size of one conversation."""
    items = iter(items)
    first = next(items, None)
    if first is None:
        return
    if first.whole:
        yield _conversation(first.value, 0, False)
    elif isinstance(first.value, dict) and "messages" in first.value:
        yield _conversation(first.value, first.index, True)
        yield from (_conversation(item.value, item.index, True) for item in items)
    else:
        messages, size = [first.value], first.size
        for item in items:
            size += item.size
            if size > conf.IMPORT_MAX_CONVERSATION_BYTES:
                raise conversation_too_large(f"The conversation (its messages up to [{item.index}])")
            messages.append(item.value)
        yield _conversation(messages, 0, False)
