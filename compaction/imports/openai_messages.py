"""A plain OpenAI Chat Completions history: a list of messages, an object
with `messages` (and optionally `title`), or a list of such objects (as
JSON Lines are read: one conversation per line). Messages are read exactly
as the /v1 gateway reads them (roles, text or content parts, tool calls and
results), so an export of a channel in this format imports back to the
same path. A message may carry a `created_at` (ISO 8601 or epoch seconds).
"""

from compaction.gateway.protocol import ProtocolError, stored_form
from compaction.imports.tree import ImportedConversation, ImportedMessage, invalid, timestamp


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


def openai_messages_conversations(data: object) -> list[ImportedConversation]:
    if isinstance(data, list) and data and all(isinstance(i, dict) and "messages" in i for i in data):
        return [_conversation(item, index, True) for index, item in enumerate(data)]
    if isinstance(data, dict) or isinstance(data, list):
        return [_conversation(data, 0, False)]
    raise invalid("The file", "not an OpenAI messages list")
