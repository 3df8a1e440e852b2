"""The faults a provider shows in practice, as LoopbackLLM replies, with the
cause the gateway must record for each. Shared by the reply and compaction
fault tests."""

from devtools.loopback_llm import Reply

# Model calls in fault tests time out after this many seconds, without retries.
FAULT_TIMEOUT = 1.0
TOO_LONG_LIMIT = 2_000

FAULTS: dict[str, tuple[Reply, str]] = {
    "http_500": (Reply(status=500), "HTTP 500: Error code: 500 - injected error 500"),
    "http_503": (
        Reply(status=503, body={"error": {"message": "overloaded"}}),
        "HTTP 503: Error code: 503 - overloaded",
    ),
    "http_429_retry_after": (
        Reply(status=429, headers={"Retry-After": "7"}),
        "rate limited (429): Error code: 429 - injected error 429 (retry after 7s)",
    ),
    "timeout": (Reply(delay=FAULT_TIMEOUT * 4), "timeout: the model did not answer in time"),
    "hang": (Reply(fault="hang"), "timeout: the model did not answer in time"),
    "connection_reset": (Reply(fault="reset"), "connection: [Errno 104] Connection reset by peer"),
    "truncated_json": (Reply(fault="truncated"), "connection: peer closed connection without sending complete"),
    "malformed_json": (Reply(fault="malformed"), "invalid response: the body is not JSON"),
    "empty_content": (Reply(content=""), "ValueError: the model returned empty content"),
    "null_content": (Reply(content=None), "ValueError: the model returned empty content"),
    "blank_content": (Reply(content=" \n\t "), "ValueError: the model returned empty content"),
    "no_choices": (Reply(fault="no_choices"), "ValueError: the response had no choices"),
    "too_long": (Reply(content="x" * (TOO_LONG_LIMIT + 1)), "ValueError: the reply is longer than allowed"),
    "slow_body": (Reply(fault="slow_body", chunk_delay=FAULT_TIMEOUT * 3), "timeout: the model did not answer in time"),
}
