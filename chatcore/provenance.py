"""Message metadata the server writes and clients may not.

Some keys of a message's metadata are the server's word about the message:
which model wrote it and how the call went, where a copy or a branch's opening
summary comes from, that it was purged, which import or protocol it came
through, and the server's own translations of the OpenAI protocol. Pages,
the admin, exports and the context sent to models read them as facts (a model
chip, a "copied" link, a "carried over" block, image parts sent instead of the
text), so only the server sets them: a client's metadata holding one is
refused with a 400 that names the key, before anything is stored.

Every other key is the client's: its own notes, and the protocol's fields it
sends (`tool_calls`, `tool_call_id`, `name`), which the server also writes
when it stores a tool round or a /v1 turn but which say what the client says.
`tests/chatcore/test_provenance.py` runs every writer of the server and fails
when one stores a key that is neither reserved here nor one of those.
"""

from django.core.exceptions import ValidationError

# key -> what the server says with it (the refusal quotes it).
RESERVED_KEYS: dict[str, str] = {
    # A reply (chatcore.replies.reply_store) and a tool round (chatcore.tool_rounds).
    "model": "the model that wrote the message",
    "used_fallback": "that the fallback model answered",
    "usage": "the tokens the provider reported",
    "offline": "that the offline model answered",
    "interrupted": "that the reply was stopped before its end",
    "finish_reason": "why the model stopped",
    # A branch (compaction.services.branch): its opening summary and the copies after it.
    "kind": "what kind of message the server made (a branch's carried-over summary)",
    "copied_from": "the original a copied message comes from",
    "source_channel": "the channel a branch comes from",
    "source_summary": "the summary a branch carries over",
    "source_through_message": "the last message a carried-over summary stands for",
    "source_title": "the title of the channel a branch comes from",
    "messages_covered": "how many messages a carried-over summary stands for",
    # Data control (chatcore.data_control): a purged message.
    "purged": "that the message's content was purged",
    # Where a message came in: an import (compaction.imports) or the /v1 gateway.
    "source": "where the message came from (an import's format, the gateway)",
    "source_id": "the message's id in the export it was imported from",
    "content_type": "the content type an imported export gave",
    "attachments": "the files an imported export listed",
    "thinking": "an imported model's reasoning",
    "is_error": "that an imported tool result was an error",
    "speaker": "the speaker an imported conversation named",
    "turn_id": "the turn id of an imported conversation",
    "session": "the session of an imported conversation",
    # The gateway's translation of the protocol (compaction.gateway.protocol).
    "content_parts": "the content parts sent to the model instead of the text",
    "openai_role": "the role the client used in the OpenAI protocol",
}

# The protocol's fields: the server writes them too, but they say what the client says.
PROTOCOL_KEYS = frozenset({"tool_calls", "tool_call_id", "name"})


def client_metadata_check(metadata: object) -> None:
    """ValidationError on `metadata`, naming the first reserved key of a client's metadata (shape and size
    are chatcore.metadata's to check)."""
    if not isinstance(metadata, dict):
        return
    for key in metadata:
        if key in RESERVED_KEYS:
            raise ValidationError(
                {
                    "metadata": f"{key} is set by the server only ({RESERVED_KEYS[key]}); "
                    "leave it out or use a key of your own."
                }
            )
