"""Knobs of the conversation substrate, each overridable in Django settings
(CHATCORE_<NAME>), read when used (chatcore.appsettings): a changed setting
takes effect at once.

DEFAULT_CONTEXT_BUDGET: tokens assumed for a channel whose model (and the
    utility model) declare no context window. 128k is conservative for
    current models.
MESSAGE_OVERHEAD_TOKENS: tokens a chat API adds per message for role and
    framing; counted so that budgets match what providers bill.
TOOL_OUTPUT_PRUNE_CHARS: tool results longer than this, older than the latest
    user turn, are replaced in the context (never in the database) by a note.
MAX_MESSAGE_CHARS: longest message content accepted from clients.
MAX_METADATA_BYTES: largest message metadata accepted, as compact UTF-8 JSON
    (8 MiB: room for images a /v1 client sends inline as data URLs).
MAX_JSON_DEPTH: deepest nesting of arrays and objects read from JSON text
    (API bodies, gateway bodies, import files); deeper text is refused before
    it is parsed, since Python's parser recurses (message metadata has its own,
    lower limit: chatcore.metadata.validation.MAX_DEPTH).
ATTACHMENT_TOKENS: tokens counted for each image, audio or file content part
    of a message (OpenAI's figure for one 1024 x 1024 image at high detail).
SEARCH_LANGUAGE: text search configuration of the message index (PostgreSQL's
    `english`, `french`, `simple`...; SQLite stems English only). The index is
    built with it: `manage.py search_reindex` after a change.
SEARCH_MAX_LIMIT: most results one search returns.
SEARCH_TERM_CAP: a query word matching more messages of the path than this is
    "common": it still counts in the ranking of the candidates the rarer words
    bring, but brings none itself, so a search's cost follows its rare words.
SEARCH_CANDIDATES: most candidates ranked per search.
OPENAI_BASE_URL: the endpoint of a catalogue model whose own base URL is
    empty (an OpenAI-compatible server: vLLM, Ollama, Azure...); empty means
    OpenAI's own API.
LLM_TIMEOUT_SECONDS: how long one request to a model may take before it
    counts as failed (the client's timeout).
LLM_MAX_RETRIES: how many times the model client retries a failed request
    itself (with backoff) before the next model is tried.
THROTTLE_EXPENSIVE_RATE: the per-person limit on operations that call a
    model, "<requests>/<s|min|hour|day>" (e.g. "30/min"); empty turns it off.
    Counted in Django's default cache, so every process shares it.
LLM_KEY_VARIABLES: the environment variables a catalogue model may name as
    its key variable (names, or shell-style patterns, case-sensitive). Its
    value is sent to the model's endpoint, so only variables meant for model
    keys: the default names the usual providers' variables, never a pattern
    that would match whatever *_API_KEY a host's process happens to hold.
LLM_KEY_VARIABLES_DENIED: variables no model may name even when a pattern
    above matches: the ones the server's own settings read (its secret key,
    database and broker URLs...). Widening the patterns cannot reach them.
LLM_HTTP_HOSTS: hosts a model's base URL may reach over plain http (an
    in-house vLLM or Ollama); every other host needs https. A loopback host
    (127.0.0.1, localhost) is refused unless listed here or DEBUG is on.
    Link-local and cloud metadata addresses are refused whatever the lists
    say (chatcore/endpoints.py).
MAX_REQUESTS_IN_FLIGHT: most HTTP requests one web process serves at a time
    (a streamed reply counts until it ends), when the host wraps its ASGI
    application in `chatcore.overload.InFlightLimit`; the next ones get a 503
    with Retry-After at once rather than a timeout, and a 500, later. 0: no
    limit. Each in flight needs little but its share of the process's
    database pool and CPU. Processes that share a listening socket never
    hold exactly equal shares of the connections, so the default leaves
    room above an even share (128: a process streams about that many
    replies at once on one core before its CPU is full); at a limit of
    exactly the streams expected ÷ processes the busier one refuses while
    another has room.
OVERLOAD_RETRY_AFTER_SECONDS: the Retry-After of that 503.
REQUEST_ID_TRUSTED_PROXIES: addresses or networks (CIDR) whose `X-Request-ID`
    header is taken as the request's id (chatcore.observability.middleware);
    anyone else's is replaced by a new id, since a client could forge it. The
    address compared is the one Django sees (REMOTE_ADDR). Empty: none.
"""

from chatcore.appsettings import AppSettings

# The environment variables project/settings.py reads, except the model key it offers
# (OPENAI_API_KEY): tests/chatcore/test_endpoints.py fails when a new one is missing here.
SERVER_VARIABLES = [
    "SECRET_KEY",
    "DATABASE_URL",
    "REDIS_URL",
    "DEBUG",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "VAR_DIR",
    "STATIC_ROOT",
    "STATIC_MANIFEST",
    "DB_CONN_MAX_AGE",
    "DB_POOL",
    "DB_POOL_MIN_SIZE",
    "DB_POOL_MAX_SIZE",
    "DB_POOL_TIMEOUT_SECONDS",
    "DB_PREPARED_STATEMENTS",
    "THROTTLE_EXPENSIVE_RATE",
    "LOGIN_FAILURE_LIMIT",
    "LOGIN_COOLOFF_MINUTES",
    "LLM_TIMEOUT_SECONDS",
    "LLM_MAX_RETRIES",
    "LLM_HTTP_HOSTS",
    "LLM_KEY_VARIABLES",
    "OPENAI_BASE_URL",
    "REQUEST_ID_TRUSTED_PROXIES",
    "LOG_FORMAT",
    "METRICS_TOKEN",
    "METRICS_ALLOWED_IPS",
    "PROMETHEUS_MULTIPROC_DIR",
    "Q_TASK_TIMEOUT_SECONDS",
    "Q_RETRY_SECONDS",
    "Q_CLUSTER_NAME",
    "Q_WORKERS",
    "Q_POLL_SECONDS",
    "COMPACTION_LEASE_SECONDS",
    "COMPACTION_DRAIN_SECONDS",
    "SEARCH_LANGUAGE",
    "MAX_REQUESTS_IN_FLIGHT",
    "LOG_LEVEL",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "TRUST_X_FORWARDED_PROTO",
    "DJANGO_SETTINGS_MODULE",
]

# The key variables of the usual OpenAI-compatible providers: what a model may name by default.
MODEL_KEY_VARIABLES = [
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "DEEPSEEK_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
]

_settings = AppSettings(
    "CHATCORE_",
    {
        "DEFAULT_CONTEXT_BUDGET": 128_000,
        "MESSAGE_OVERHEAD_TOKENS": 4,
        "TOOL_OUTPUT_PRUNE_CHARS": 4_000,
        "MAX_MESSAGE_CHARS": 1_000_000,
        "MAX_METADATA_BYTES": 8 * 1024 * 1024,
        "MAX_JSON_DEPTH": 64,
        "ATTACHMENT_TOKENS": 765,
        "SEARCH_LANGUAGE": "english",
        "SEARCH_MAX_LIMIT": 50,
        "SEARCH_TERM_CAP": 300,
        "SEARCH_CANDIDATES": 600,
        "OPENAI_BASE_URL": "",
        "LLM_TIMEOUT_SECONDS": 60.0,
        "LLM_MAX_RETRIES": 1,
        "THROTTLE_EXPENSIVE_RATE": "30/min",
        "LLM_KEY_VARIABLES": MODEL_KEY_VARIABLES,
        "LLM_KEY_VARIABLES_DENIED": SERVER_VARIABLES,
        "LLM_HTTP_HOSTS": [],
        "MAX_REQUESTS_IN_FLIGHT": 128,
        "OVERLOAD_RETRY_AFTER_SECONDS": 1,
        "REQUEST_ID_TRUSTED_PROXIES": [],
    },
)

# Declared for type checkers; the values come from `__getattr__` on each access.
DEFAULT_CONTEXT_BUDGET: int
MESSAGE_OVERHEAD_TOKENS: int
TOOL_OUTPUT_PRUNE_CHARS: int
MAX_MESSAGE_CHARS: int
MAX_METADATA_BYTES: int
MAX_JSON_DEPTH: int
ATTACHMENT_TOKENS: int
SEARCH_LANGUAGE: str
SEARCH_MAX_LIMIT: int
SEARCH_TERM_CAP: int
SEARCH_CANDIDATES: int
OPENAI_BASE_URL: str
LLM_TIMEOUT_SECONDS: float
LLM_MAX_RETRIES: int
THROTTLE_EXPENSIVE_RATE: str
LLM_KEY_VARIABLES: list[str]
LLM_KEY_VARIABLES_DENIED: list[str]
LLM_HTTP_HOSTS: list[str]
MAX_REQUESTS_IN_FLIGHT: int
OVERLOAD_RETRY_AFTER_SECONDS: int
REQUEST_ID_TRUSTED_PROXIES: list[str]

__getattr__ = _settings.__getattr__  # PEP 562: `conf.NAME` is read from the settings on each access
