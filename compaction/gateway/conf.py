"""Knobs of the OpenAI-compatible gateway, each overridable in Django settings
(COMPACTION_GATEWAY_<NAME>).

COMPACTION_GATEWAY_MAX_REQUEST_BYTES (32 MiB): largest request body accepted (clients
    resend whole histories: 10,000 messages are about 2 MB).
COMPACTION_GATEWAY_OUTPUT_RESERVE_SHARE (0.125): share of the model's context window
    kept free for the answer when the request names no `max_tokens` /
    `max_completion_tokens` (capped at the model's `max_output_tokens`).
COMPACTION_GATEWAY_TAIL_PROBE (8): how many of the newest incoming hashes the first
    lookup tries; a client that adds a turn to what it was answered is found
    by it, an edit further back takes one more lookup over every hash.
COMPACTION_GATEWAY_LOOKUP_CHUNK (10,000): hashes per query in that second lookup
    (PostgreSQL takes at most 65,535 parameters, SQLite 32,766).
COMPACTION_GATEWAY_COMPACT_ATTEMPTS (6): inline compactions tried for one call before
    answering 400 `context_length_exceeded` (each summarizes what the
    summarizing model can read; a long stretch may take several).
COMPACTION_GATEWAY_LEASE_WAIT_SECONDS (60): how long a call waits for a compaction of
    its channel that another process holds before answering 503.
COMPACTION_GATEWAY_READ_MEMO_BYTES (64 MiB): what each web process may keep of the bodies
    it read, so that a resent history is parsed, checked and hashed once
    (compaction.gateway.resent; about three times a body's size per
    conversation); 0 reads every body whole.
"""

from chatcore.appsettings import AppSettings

_settings = AppSettings(
    "COMPACTION_GATEWAY_",
    {
        "MAX_REQUEST_BYTES": 32 * 1024 * 1024,
        "OUTPUT_RESERVE_SHARE": 0.125,
        "TAIL_PROBE": 8,
        "LOOKUP_CHUNK": 10_000,
        "COMPACT_ATTEMPTS": 6,
        "LEASE_WAIT_SECONDS": 60.0,
        "READ_MEMO_BYTES": 64 * 1024 * 1024,
    },
)

# Declared for type checkers; the values come from `__getattr__` on each access.
MAX_REQUEST_BYTES: int
OUTPUT_RESERVE_SHARE: float
TAIL_PROBE: int
LOOKUP_CHUNK: int
COMPACT_ATTEMPTS: int
LEASE_WAIT_SECONDS: float
READ_MEMO_BYTES: int

__getattr__ = _settings.__getattr__  # PEP 562: `conf.NAME` is read from the settings on each access
