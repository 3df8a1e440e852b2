"""Knobs of the compaction app, each overridable in Django settings
(COMPACTION_<NAME>), read when used (chatcore.appsettings): a changed
setting takes effect at once, and tests change them through `settings`.

The values an operator changes while the product runs (threshold, interval,
concurrency, cooldown, ...) are not here: they live in the
CompactionSettings row, edited in the admin and read afresh at every scan.
These are deployment constants.

INJECTION_MODEL (COMPACTION_INJECTION_MODEL, default True): whether the learned injection model
    (compaction/safety/model.py) judges messages beside the phrase patterns. It reads no id, path, URL or
    version (those count only as length), so developers' detail-heavy messages stay in summaries; a message it
    flags is set aside from an offline summary with a note, never deleted. Off, the patterns judge alone
    (`manage.py injection_eval --no-model` measures that).
LEASE_SECONDS (COMPACTION_LEASE_SECONDS, default 420): how long a compaction
    holds its channel. A crashed holder's lease runs out after this, and an
    automatic attempt that never reported back is considered abandoned after
    the same time, so the scanner may try again.
MIN_CHANNEL_THRESHOLD (COMPACTION_MIN_CHANNEL_THRESHOLD, default 0.05): the
    lowest threshold a channel's own setting can take effect with (lower
    values are raised to it). The scanner's coarse bound on the pressure
    column is the lower of this and the global threshold, so a channel with a
    low personal threshold is still found by the index range scan.
SCAN_SCHEDULE_NAME (COMPACTION_SCAN_SCHEDULE_NAME, default
    "compaction-scan"): the django-q2 Schedule that runs the scanner.
REFILL_ON_FINISH (COMPACTION_REFILL_ON_FINISH, default True): when an
    automatic compaction finishes, its worker runs one more scan at once, so
    a backlog drains at `concurrency` compactions at a time instead of
    `concurrency` per scan interval. The hourly budget still bounds the rate.
DRAIN_SECONDS (COMPACTION_DRAIN_SECONDS, default: the task timeout minus the
    longest model call minus 30 s, so 30 s with the shipped timeouts): for
    how long a worker that finished an automatic compaction may take the
    next reserved channel itself instead of handing it to the broker. Each
    hand-off costs a broker poll and a task start (a quarter to half a
    second with the default poll), time in which the slot sits idle; a
    worker that continues keeps the slot busy with model calls. A new
    compaction is started only while the task, with the longest model call
    and DRAIN_MARGIN_SECONDS (30 s) added, stays inside the task timeout: a
    larger setting is cut to that (and `manage.py check` says so); 0 turns
    this off.
METRICS_TOKEN (COMPACTION_METRICS_TOKEN, default ""): the bearer token that opens `/metrics`
    (compaction.observability.views); empty: no token opens it.
METRICS_ALLOWED_IPS (COMPACTION_METRICS_ALLOWED_IPS, default loopback only): addresses or networks
    (CIDR) that may read `/metrics` without the token.
METRICS_MULTIPROCESS_DIR (COMPACTION_METRICS_MULTIPROCESS_DIR, default ""): the folder where every
    process writes its metric values (prometheus_client's multi-process mode, which reads
    PROMETHEUS_MULTIPROC_DIR itself); `/metrics` adds them up. Empty: this process's values alone.
CLUSTER_SEEN_SECONDS (COMPACTION_CLUSTER_SEEN_SECONDS, default 60): while automatic compaction is on,
    `/readyz` fails when no task cluster has reported in for this long.
TASK_TIMEOUT_SECONDS (COMPACTION_TASK_TIMEOUT_SECONDS, default: the django-q2
    cluster's `timeout` in Q_CLUSTER, else 300): how long a background task may
    run before the cluster stops it.
RETRY_SECONDS (COMPACTION_RETRY_SECONDS, default: the cluster's `retry` in
    Q_CLUSTER, else 360): after how long the broker hands an unacknowledged
    task to another worker. Together with the model calls' timeout and
    retries (chatcore's CHATCORE_LLM_TIMEOUT_SECONDS, CHATCORE_LLM_MAX_RETRIES),
    `timeouts_problems()` checks they nest: the longest model call (primary
    and fallback, each with its retries) < the task timeout < the broker's
    retry < the lease. Then a slow call is cut by the task timeout before the
    broker hands the task to a second worker, and even a redelivered task
    finds the lease still held.

Compaction service constants:

COMPACTION_MIN_NEW_MESSAGES (4): fewer new messages than this after the
    boundary (once the newest `keep_recent` are set aside) is not worth a
    model call; the service refuses with the reason.
COMPACTION_LEASE_SECONDS (420): how long one
    compaction may hold a channel; longer than any model call and task
    timeout, so a live holder is never overtaken, while a crashed one's
    lease simply expires.
COMPACTION_INPUT_SHARE (0.75): share of the summarizing model's context
    window the request may fill; older messages beyond it stay raw and are
    summarized by the next compaction.
COMPACTION_MAX_FOCUS_CHARS (2,000): longest focus text accepted.
COMPACTION_MAX_CONTENT_CHARS (200,000): longest edited draft accepted.
COMPACTION_BRANCH_TITLE_SUFFIX (" (continued)"): appended to the title of a
    channel branched from a summary.

Imports (compaction/imports/): an export is read as a stream, one top-level
value at a time, so these bound what a file can cost the server; a file over
any of them is refused (400) before anything is written, the message naming
the limit.

COMPACTION_IMPORT_MAX_FILE_BYTES (256 MiB): the largest file accepted as
    uploaded (a ZIP counts as sent).
COMPACTION_IMPORT_MAX_UNPACKED_BYTES (1 GiB): the most JSON text one import
    reads, once a ZIP is unpacked: the archive's declared size is checked
    first, and what is read is counted as it streams, so a small archive that
    unpacks to far more (a "zip bomb") is refused without being unpacked.
COMPACTION_IMPORT_MAX_CONVERSATION_BYTES (32 MiB): the largest single
    top-level value (one conversation, or a whole file that is one object);
    the only part of a file held in memory at once, with what it parses to.
COMPACTION_IMPORT_MAX_CONVERSATIONS (20,000) and COMPACTION_IMPORT_MAX_MESSAGES
    (1,000,000): the most conversations, and messages in all, one import
    stores (counted as the importer will store them: ChatGPT's hidden blank
    messages left out, a Claude turn with tool use counted per message).
COMPACTION_IMPORT_SLICE_SECONDS (60): how long one background task writes
    before it hands the rest of the import to a new task (each conversation
    is its own transaction either way); kept well inside the task timeout.
COMPACTION_IMPORT_STORAGE ("default"): the alias in STORAGES where an
    upload waits for its background import. Web and worker processes must
    share it: on several machines, a shared storage (object storage, a
    shared volume). The file is removed when the import ends.
"""

from collections.abc import Callable

from django.conf import settings

from chatcore import conf as chatcore_conf
from chatcore.appsettings import AppSettings

# Time a compaction needs beyond its model calls (database, redaction, the
# offline summarizer, the refill tick), kept free when a draining worker
# decides whether one more compaction still fits in its task timeout.
DRAIN_MARGIN_SECONDS = 30.0

# A task's timeout and the broker's retry when the cluster's configuration names none: they nest
# around the longest model call of chatcore's defaults and inside the lease.
DEFAULT_TASK_TIMEOUT = 300.0
DEFAULT_RETRY = 360.0

SCAN_TASK = "compaction.tasks.scan"
AUTO_COMPACT_TASK = "compaction.tasks.auto_compact"
IMPORT_TASK = "compaction.tasks.conversations_import"


def drain_limit() -> float:
    """The longest a worker may keep starting compactions: after it, the longest
    model call and the margin would no longer fit in the task timeout."""
    limits = timeouts()
    return max(0.0, limits["task_timeout"] - limits["longest_model_call"] - DRAIN_MARGIN_SECONDS)


def _drain_seconds() -> float:
    configured = getattr(settings, "COMPACTION_DRAIN_SECONDS", None)
    if configured is None:
        return drain_limit()
    return min(max(0.0, float(configured)), drain_limit())


def _cluster_value(name: str, setting: str, default: float) -> Callable[[], float]:
    """A knob whose default is the django-q2 cluster's own value (Q_CLUSTER[name]), else `default`."""

    def value() -> float:
        configured = getattr(settings, setting, None)
        if configured is not None:
            return float(configured)
        return float((getattr(settings, "Q_CLUSTER", None) or {}).get(name) or default)

    return value


def timeouts() -> dict[str, float]:
    llm_timeout = float(chatcore_conf.LLM_TIMEOUT_SECONDS)
    llm_retries = int(chatcore_conf.LLM_MAX_RETRIES)
    return {
        "llm_timeout": llm_timeout,
        # Primary then fallback, each tried 1 + retries times.
        "longest_model_call": llm_timeout * (llm_retries + 1) * 2,
        "task_timeout": float(_settings.TASK_TIMEOUT_SECONDS),
        "retry": float(_settings.RETRY_SECONDS),
        "lease": float(_settings.LEASE_SECONDS),
    }


def timeouts_problems() -> list[str]:
    """Each way the timeouts fail to nest, in words; empty when coherent."""
    t = timeouts()
    problems = []
    if not t["longest_model_call"] < t["task_timeout"]:
        problems.append(
            f"the longest model call ({t['longest_model_call']:g}s: CHATCORE_LLM_TIMEOUT_SECONDS x "
            f"(CHATCORE_LLM_MAX_RETRIES + 1) "
            f"x 2 models) must be shorter than the task timeout ({t['task_timeout']:g}s)"
        )
    if not t["task_timeout"] < t["retry"]:
        problems.append(
            f"the task timeout ({t['task_timeout']:g}s) must be shorter than the broker's retry "
            f"({t['retry']:g}s), or a running task is handed to a second worker"
        )
    configured = getattr(settings, "COMPACTION_DRAIN_SECONDS", None)
    if configured is not None and float(configured) > drain_limit():
        problems.append(
            f"COMPACTION_DRAIN_SECONDS ({float(configured):g}s) is longer than the task timeout leaves after the "
            f"longest model call and a {DRAIN_MARGIN_SECONDS:g}s margin ({drain_limit():g}s); it is cut to that"
        )
    if not t["retry"] < t["lease"]:
        problems.append(
            f"the broker's retry ({t['retry']:g}s) must be shorter than the compaction lease "
            f"({t['lease']:g}s), so that the lease outlives any delivery of the task"
        )
    return problems


_settings = AppSettings(
    "COMPACTION_",
    {
        "LEASE_SECONDS": 420,
        "MIN_CHANNEL_THRESHOLD": 0.05,
        "SCAN_SCHEDULE_NAME": "compaction-scan",
        "REFILL_ON_FINISH": True,
        "MIN_NEW_MESSAGES": 4,
        "INPUT_SHARE": 0.75,
        "MAX_FOCUS_CHARS": 2_000,
        "MAX_CONTENT_CHARS": 200_000,
        "BRANCH_TITLE_SUFFIX": " (continued)",
        "IMPORT_MAX_FILE_BYTES": 256 * 2**20,
        "IMPORT_MAX_UNPACKED_BYTES": 2**30,
        "IMPORT_MAX_CONVERSATION_BYTES": 32 * 2**20,
        "IMPORT_MAX_CONVERSATIONS": 20_000,
        "IMPORT_MAX_MESSAGES": 1_000_000,
        "IMPORT_SLICE_SECONDS": 60,
        "IMPORT_STORAGE": "default",
        "INJECTION_MODEL": True,
        "METRICS_TOKEN": "",
        "METRICS_ALLOWED_IPS": ["127.0.0.1", "::1"],
        "METRICS_MULTIPROCESS_DIR": "",
        "CLUSTER_SEEN_SECONDS": 60,
    },
    derived={
        "DRAIN_SECONDS": _drain_seconds,
        "TASK_TIMEOUT_SECONDS": _cluster_value("timeout", "COMPACTION_TASK_TIMEOUT_SECONDS", DEFAULT_TASK_TIMEOUT),
        "RETRY_SECONDS": _cluster_value("retry", "COMPACTION_RETRY_SECONDS", DEFAULT_RETRY),
    },
)

# Declared for type checkers; the values come from `__getattr__` on each access.
LEASE_SECONDS: int
MIN_CHANNEL_THRESHOLD: float
SCAN_SCHEDULE_NAME: str
REFILL_ON_FINISH: bool
MIN_NEW_MESSAGES: int
INPUT_SHARE: float
MAX_FOCUS_CHARS: int
MAX_CONTENT_CHARS: int
BRANCH_TITLE_SUFFIX: str
IMPORT_MAX_FILE_BYTES: int
IMPORT_MAX_UNPACKED_BYTES: int
IMPORT_MAX_CONVERSATION_BYTES: int
IMPORT_MAX_CONVERSATIONS: int
IMPORT_MAX_MESSAGES: int
IMPORT_SLICE_SECONDS: float
IMPORT_STORAGE: str
INJECTION_MODEL: bool
METRICS_TOKEN: str
METRICS_ALLOWED_IPS: list[str]
METRICS_MULTIPROCESS_DIR: str
CLUSTER_SEEN_SECONDS: float
DRAIN_SECONDS: float
TASK_TIMEOUT_SECONDS: float
RETRY_SECONDS: float

__getattr__ = _settings.__getattr__  # PEP 562: `conf.NAME` is read from the settings on each access
