"""A chat completion call as the use cases read it, once the protocol has checked it
(`protocol.completion_request`): plain data, so that the services need nothing of HTTP."""

import dataclasses


@dataclasses.dataclass(slots=True)
class StoredForm:
    """One incoming message in the form `message_append` stores and its chain hash digests."""

    role: str
    content: str
    metadata: dict


@dataclasses.dataclass(frozen=True)
class CompletionRequest:
    model: str
    messages: list[StoredForm]
    params: dict
    stream: bool
    include_usage: bool
    channel_id: int | None
    legacy_functions: bool = False  # the client used `functions`: the answer goes back as `function_call`
    # The messages' chain hashes under the seed of user `hashed_for`, when the reader took them
    # (compaction.gateway.resent).
    hashes: list[str] | None = None
    hashed_for: int | None = None
