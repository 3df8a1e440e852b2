"""The soak: real qcluster workers compacting real channels while users write,
workers are killed and the model misbehaves; then the invariants are checked.

Run it against a database of its own (PostgreSQL in practice): it creates a
user, a persona with its own default profile, a chat and a utility model that
point at a LoopbackLLM in this process, and `channels` channels; for the run
it switches auto-compaction on with filters that let busy channels through
(the previous settings are put back at the end).

Timeline:
1. run: user threads append messages (sometimes a new branch, sometimes an
   undo of the latest summary); scan tasks are enqueued every few seconds;
   the LoopbackLLM answers the summarizer with a fault at `fault_rate`; a
   random worker is killed with SIGKILL (its whole process group, as a
   crashed machine) every `kill_every` seconds on average and restarted;
2. drain: no more writes, faults or kills; the workers finish what is queued;
3. stop: the workers are stopped, the leases are given time to expire;
4. check: every message is compared with the hash taken when it was written
   (lost, altered), active summaries are checked for duplicates (two through
   the same message, or two made from the same boundary on one path), every
   channel's lease must be takeable again (stuck), and the pressure columns
   must match the tree (corrupted).

The automatic attempts are counted from the database: the outcome each one
records in its channel's lease row, and the compaction tasks the broker
records as failed. The figures are returned and printed; `ok` is False when
an invariant broke.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import logging
import os
import random
import threading
import time
import uuid
from pathlib import Path

from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import close_old_connections, connection
from django.utils import timezone
from django_q.models import Task
from django_q.tasks import async_task

from chatcore import services as chat_services
from chatcore.models import Channel, LLMModel, Message, Persona, Summary, UsageEntry
from compaction import conf
from compaction.leases import lease_acquire, lease_release
from compaction.models import CompactionLease, CompactionProfile
from compaction.scanner.selectors import compaction_settings_get
from compaction.scanner.services import SETTINGS_FIELDS, compaction_settings_update
from devtools.loopback_llm import LoopbackLLM, Reply, loopback_env
from devtools.processes import QClusters, database_url

WINDOW = 3_000
WORDS = (
    "ledger settlement deploy migration invoice relay schema index cursor branch summary token budget "
    "worker lease queue retry timeout backup replica shard cache pool socket"
).split()
TOPICS = [
    "the ledger service",
    "the nightly batch",
    "the invoice relay",
    "the deploy pipeline",
    "the replica lag",
    "the cache hit rate",
    "the connection pool",
    "the backup restore drill",
]


@dataclasses.dataclass
class SoakConfig:
    """The soak's knobs. The timeouts nest below the compaction lease, as the project requires (model call
    < task timeout < broker retry < lease: `compaction.conf.timeouts_problems`), so only the lease is
    chosen and the others follow from it."""

    channels: int = 6
    workers: int = 3
    fault_rate: float = 0.1
    minutes: float = 10.0
    users: int = 3
    kill_every: float = 30.0
    scan_every: float = 3.0
    seed: int = 7
    lease: int = 25
    drain_seconds: float | None = None
    log_dir: Path | None = None

    @property
    def task_timeout(self) -> int:
        return self.lease - 10

    @property
    def retry(self) -> int:
        return self.lease - 5

    @property
    def llm_timeout(self) -> float:
        return min(2.0, self.task_timeout / 5)


@dataclasses.dataclass
class SoakReport:
    database: str
    config: SoakConfig
    seconds: float = 0.0
    messages_appended: int = 0
    branches: int = 0
    reverts: int = 0
    scans_enqueued: int = 0
    kills: int = 0
    restarts: int = 0
    summaries_written: int = 0
    summaries_active: int = 0
    channels_compacted: int = 0
    duplicates: int = 0
    messages_lost: int = 0
    messages_altered: int = 0
    leases_stuck: int = 0
    pressure_wrong: int = 0
    faults_injected: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    model_errors: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    outcomes: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    problems: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.duplicates or self.messages_lost or self.messages_altered or self.leases_stuck or self.pressure_wrong
        )

    def lines(self) -> list[str]:
        c = self.config
        out = [
            f"Soak on {self.database}: {c.channels} channels, {c.workers} workers, {c.users} users, "
            f"fault rate {c.fault_rate:.0%}, {c.minutes:g} min of load ({self.seconds:.0f} s in all)",
            f"  messages appended           {self.messages_appended} ({self.branches} on new branches)",
            f"  summaries written           {self.summaries_written} ({self.summaries_active} active, "
            f"{self.reverts} undone by users)",
            f"  channels compacted          {self.channels_compacted} of {c.channels}",
            f"  worker kills / restarts     {self.kills} / {self.restarts} (SIGKILL to the process group)",
            f"  scan ticks enqueued         {self.scans_enqueued}",
            f"  duplicates                  {self.duplicates}",
            f"  messages lost / altered     {self.messages_lost} / {self.messages_altered}",
            f"  leases left stuck           {self.leases_stuck}",
            f"  pressure columns wrong      {self.pressure_wrong}",
            "  model faults injected       " + _counts(self.faults_injected),
            "  model errors by cause       " + _counts(self.model_errors),
            "  automatic attempts          " + _counts(self.outcomes),
        ]
        out += [f"  problem: {p}" for p in self.problems]
        out.append("Result: " + ("OK, every invariant held" if self.ok else "FAILED, an invariant broke"))
        return out


def _counts(counter: collections.Counter) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"


def message_hash(message: Message) -> str:
    return hashlib.sha256(
        f"{message.pk}|{message.channel_id}|{message.parent_id}|{message.role}|{message.content}|"
        f"{message.depth}|{message.tokens}|{message.path_tokens}".encode()
    ).hexdigest()


def error_cause(error: str) -> str:
    """The kind of a recorded model error: its words before the first colon."""
    head, _, rest = error.partition(":")
    if head.strip() == "ValueError" and rest.strip():
        return rest.strip()
    return head.strip() or "unknown"


class _Faults:
    """The summarizer's answers: a fault at `rate`, otherwise a short summary."""

    KINDS = {
        "http_500": lambda t: Reply(status=500),
        "http_429": lambda t: Reply(status=429, headers={"Retry-After": "1"}),
        "timeout": lambda t: Reply(content="late", delay=t + 1.0),
        "reset": lambda t: Reply(fault="reset"),
        "truncated": lambda t: Reply(fault="truncated"),
        "malformed": lambda t: Reply(fault="malformed"),
        "empty": lambda t: Reply(content=""),
        "no_choices": lambda t: Reply(fault="no_choices"),
    }

    def __init__(self, *, rate: float, timeout: float, seed: int):
        self.rate = rate
        self.timeout = timeout
        self.random = random.Random(seed)
        self.injected: collections.Counter = collections.Counter()
        self.lock = threading.Lock()
        self.counter = 0

    def __call__(self, request: dict) -> Reply:
        with self.lock:
            self.counter += 1
            if self.rate and self.random.random() < self.rate:
                kind = self.random.choice(sorted(self.KINDS))
                self.injected[kind] += 1
                return self.KINDS[kind](self.timeout)
            number = self.counter
        return Reply(
            content=f"Soak summary {number}: the conversation so far discussed the services, "
            f"their settings and the decisions taken about them."
        )


class _OutcomeWatch(threading.Thread):
    """Counts the outcomes automatic attempts record in the channels' lease rows.

    `_finish` writes each outcome with its time (`last_finished_at`); an
    abandoned attempt is recorded when the channel is reserved again, with
    one more failure. The rows are read every `every` seconds, so an outcome
    is seen unless the same channel records two within one reading (an
    attempt lasts at least a model call; the soak's reads are 0.25 s apart).
    """

    def __init__(self, channel_ids: list[int], *, every: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.channel_ids = channel_ids
        self.every = every
        self.halt = threading.Event()
        self.seen: dict[int, tuple] = {}
        self.counts: collections.Counter = collections.Counter()

    def read(self) -> None:
        rows = CompactionLease.objects.filter(channel_id__in=self.channel_ids).values_list(
            "channel_id", "last_finished_at", "last_outcome", "failure_count"
        )
        for channel_id, finished_at, outcome, failures in rows:
            state = (finished_at, outcome, failures if outcome == "abandoned" else None)
            if outcome and self.seen.get(channel_id) != state:
                self.counts[outcome] += 1
            self.seen[channel_id] = state

    def run(self) -> None:
        try:
            while not self.halt.wait(self.every):
                self.read()
        finally:
            connection.close()

    def finish(self) -> collections.Counter:
        self.halt.set()
        self.join(timeout=10)
        self.read()
        return self.counts


def _database_label() -> str:
    vendor = connection.vendor
    return {"postgresql": "PostgreSQL", "sqlite": "SQLite"}.get(vendor, vendor)


class Soak:
    def __init__(self, config: SoakConfig, *, stdout=None):
        self.config = config
        self.stdout = stdout
        self.random = random.Random(config.seed)
        self.tag = uuid.uuid4().hex[:8]
        self.hashes: dict[int, str] = {}
        self.hash_lock = threading.Lock()
        self.stop_writes = threading.Event()
        self.report = SoakReport(database=_database_label(), config=config)
        self.channel_ids: list[int] = []

    def say(self, text: str) -> None:
        if self.stdout is not None:
            self.stdout.write(text)
            self.stdout.flush()

    # --- setup -------------------------------------------------------------

    def _setup(self, server: LoopbackLLM) -> None:
        call_command("createcachetable", verbosity=0)  # django-q2 keeps its cluster stats in the cache
        user = get_user_model().objects.create(username=f"soak-{self.tag}")
        self.user = user
        chat = LLMModel.objects.create(
            name=f"soak-chat-{self.tag}", base_url=server.url, api_key_env="", context_window=WINDOW
        )
        utility = LLMModel.objects.create(
            name=f"soak-utility-{self.tag}", base_url=server.url, api_key_env="", context_window=16_000
        )
        persona = Persona.objects.create(
            name=f"Soak {self.tag}", slug=f"soak-{self.tag}", system_prompt="You are a careful assistant."
        )
        CompactionProfile.objects.create(
            name=f"Soak {self.tag}",
            slug=f"soak-{self.tag}",
            persona=persona,
            is_default=True,
            model=utility,
            system_prompt="You summarize conversations faithfully.",
            keep_recent=2,
            max_summary_tokens=400,
            instructions="Summarize the conversation below.\n{previous_summary}\n{focus}\n{transcript}",
        )
        for index in range(self.config.channels):
            channel = chat_services.channel_create(
                owner=user,
                title=f"Soak {self.tag} #{index}",
                persona=persona,
                model=chat,
                settings={"compaction_threshold": 0.5},
            )
            self.channel_ids.append(channel.pk)
            for _ in range(4):
                self._append(channel)
        current = compaction_settings_get()
        self.saved_settings = {name: getattr(current, name) for name in SETTINGS_FIELDS}
        compaction_settings_update(
            actor=None,
            enabled=True,
            threshold=0.5,
            idle_minutes=0,
            cooldown_minutes=0,
            min_messages=6,
            min_new_messages=4,
            concurrency=max(2, self.config.workers * 2),
            hourly_budget=1_000_000,
            batch_size=max(50, self.config.channels * 2),
        )

    def _restore_settings(self) -> None:
        compaction_settings_update(actor=None, **self.saved_settings)

    # --- users -------------------------------------------------------------

    def _text(self, rng: random.Random) -> str:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 45)))
        return f"About {rng.choice(TOPICS)}: {words}."

    def _append(self, channel: Channel, *, rng: random.Random | None = None, parent_id: int | None = None) -> None:
        rng = rng or self.random
        user_msg = chat_services.message_append(
            channel=channel, user=self.user, role="user", content=self._text(rng), parent_id=parent_id
        )
        reply = chat_services.message_append(channel=channel, user=self.user, role="assistant", content=self._text(rng))
        with self.hash_lock:
            for message in (user_msg, reply):
                self.hashes[message.pk] = message_hash(message)
            self.report.messages_appended += 2

    def _user_loop(self, number: int) -> None:
        rng = random.Random(self.config.seed * 1000 + number)
        try:
            while not self.stop_writes.is_set():
                channel = Channel.objects.get(pk=rng.choice(self.channel_ids))
                roll = rng.random()
                if roll < 0.04:
                    self._branch(channel, rng)
                elif roll < 0.06:
                    self._undo(channel)
                else:
                    self._append(channel, rng=rng)
                self.stop_writes.wait(rng.uniform(0.5, 2.0))
        except Exception as error:  # reported, and fails the run
            self.report.problems.append(f"user {number}: {type(error).__name__}: {error}")
        finally:
            close_old_connections()
            connection.close()

    def _branch(self, channel: Channel, rng: random.Random) -> None:
        """An edit of a recent user turn: a sibling, and the cursor follows it."""
        leaf = Message.objects.filter(channel=channel).order_by("-pk").first()
        if leaf is None or leaf.parent_id is None:
            return
        grandparent = Message.objects.filter(pk=leaf.parent_id).values_list("parent_id", flat=True).first()
        if grandparent is None:
            return
        self._append(channel, rng=rng, parent_id=grandparent)
        with self.hash_lock:
            self.report.branches += 1

    def _undo(self, channel: Channel) -> None:
        summary = Summary.objects.filter(channel=channel, reverted_at__isnull=True).order_by("-pk").first()
        if summary is None:
            return
        try:
            chat_services.summary_revert(summary=summary, actor=self.user)
        except Exception:  # reverted meanwhile by the other user thread: fine
            return
        with self.hash_lock:
            self.report.reverts += 1

    # --- the run -----------------------------------------------------------

    def run(self) -> SoakReport:
        cfg = self.config
        started = time.monotonic()
        log_dir = Path(cfg.log_dir or Path(django_settings.VAR_DIR) / "soak" / self.tag)
        log_dir.mkdir(parents=True, exist_ok=True)
        faults = _Faults(rate=cfg.fault_rate, timeout=cfg.llm_timeout, seed=cfg.seed)
        env = {
            **os.environ,
            **loopback_env(dict(os.environ)),
            "DATABASE_URL": database_url(connection.settings_dict),
            "Q_WORKERS": "1",
            "LLM_TIMEOUT_SECONDS": str(cfg.llm_timeout),
            "LLM_MAX_RETRIES": "0",
            "Q_TASK_TIMEOUT_SECONDS": str(cfg.task_timeout),
            "Q_RETRY_SECONDS": str(cfg.retry),
            "COMPACTION_LEASE_SECONDS": str(cfg.lease),
            "Q_POLL_SECONDS": "0.2",
            "LOG_LEVEL": "INFO",
        }
        logging.getLogger("django-q").setLevel(logging.WARNING)  # one line per enqueued scan otherwise
        with LoopbackLLM(responder=faults) as server:
            self._setup(server)
            self.say(
                f"soak {self.tag}: {cfg.channels} channels ready; starting {cfg.workers} workers (logs in {log_dir})\n"
            )
            workers = QClusters(log_dir=log_dir, env=env)
            for index in range(cfg.workers):
                workers.start(f"worker-{index}")
            users = [threading.Thread(target=self._user_loop, args=(n,), daemon=True) for n in range(cfg.users)]
            watch = _OutcomeWatch(self.channel_ids)
            watch.start()
            try:
                for thread in users:
                    thread.start()
                self._load_phase(workers, started + cfg.minutes * 60)
                self.stop_writes.set()
                for thread in users:
                    thread.join(timeout=30)
                faults.rate = 0.0
                self.say("soak: load over; draining the queue\n")
                drain = cfg.drain_seconds if cfg.drain_seconds is not None else cfg.lease + cfg.task_timeout
                self._drain(workers, time.monotonic() + drain)
            finally:
                self.stop_writes.set()
                workers.stop_all()
                self.report.faults_injected = faults.injected
                self.report.outcomes = watch.finish()
            # Any lease a killed worker held expires within `lease` seconds of being taken.
            self._wait_for_leases(timeout=cfg.lease + 5)
            self._check()
            self._restore_settings()
        self.report.seconds = time.monotonic() - started
        return self.report

    def _scan(self) -> None:
        async_task(conf.SCAN_TASK, task_name=f"soak-scan-{self.tag}-{time.time_ns()}")
        self.report.scans_enqueued += 1

    def _load_phase(self, workers: QClusters, until: float) -> None:
        cfg = self.config
        next_scan = time.monotonic()
        next_kill = time.monotonic() + self.random.expovariate(1 / cfg.kill_every) if cfg.kill_every else None
        while time.monotonic() < until:
            now = time.monotonic()
            if now >= next_scan:
                self._scan()
                next_scan = now + cfg.scan_every
            if next_kill is not None and now >= next_kill:
                victim = f"worker-{self.random.randrange(cfg.workers)}"
                workers.kill(victim)
                self.report.kills += 1
                time.sleep(self.random.uniform(0.5, 2.0))
                workers.start(victim)
                self.report.restarts += 1
                next_kill = time.monotonic() + max(3.0, self.random.expovariate(1 / cfg.kill_every))
            time.sleep(0.2)

    def _drain(self, workers: QClusters, until: float) -> None:
        """Scan until nothing is left to do for the channels, or time is up."""
        while time.monotonic() < until:
            self._scan()
            time.sleep(self.config.scan_every)
            busy = CompactionLease.objects.filter(channel_id__in=self.channel_ids, expires_at__gt=timezone.now())
            pending = Channel.objects.filter(pk__in=self.channel_ids, context_ratio__gte=0.5, context_messages__gte=6)
            if not busy.exists() and not pending.exists():
                break

    def _wait_for_leases(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not CompactionLease.objects.filter(
                channel_id__in=self.channel_ids, expires_at__gt=timezone.now()
            ).exists():
                return
            time.sleep(0.5)

    # --- the check ---------------------------------------------------------

    def _check(self) -> None:
        report = self.report
        stored = {m.pk: message_hash(m) for m in Message.objects.filter(channel_id__in=self.channel_ids)}
        report.messages_lost = sum(1 for pk in self.hashes if pk not in stored)
        report.messages_altered = sum(1 for pk, h in self.hashes.items() if pk in stored and stored[pk] != h)
        unexpected = set(stored) - set(self.hashes)
        if unexpected:
            report.problems.append(f"{len(unexpected)} message(s) appeared that no user wrote")
            report.messages_altered += len(unexpected)

        parents = dict(Message.objects.filter(channel_id__in=self.channel_ids).values_list("pk", "parent_id"))

        def ancestors(pk: int) -> set[int]:
            seen = set()
            while pk is not None:
                seen.add(pk)
                pk = parents.get(pk)
            return seen

        summaries = list(Summary.objects.filter(channel_id__in=self.channel_ids).order_by("pk"))
        report.summaries_written = len(summaries)
        active = [s for s in summaries if s.reverted_at is None]
        report.summaries_active = len(active)
        report.channels_compacted = len({s.channel_id for s in summaries})
        by_boundary = collections.defaultdict(list)
        for summary in active:
            by_boundary[(summary.channel_id, summary.previous_id)].append(summary)
        for group in by_boundary.values():
            for i, first in enumerate(group):
                for second in group[i + 1 :]:
                    if first.through_message_id in ancestors(
                        second.through_message_id
                    ) or second.through_message_id in ancestors(first.through_message_id):
                        report.duplicates += 1
                        report.problems.append(
                            f"summaries {first.pk} and {second.pk} cover the same stretch of channel {first.channel_id}"
                        )

        probe = f"soak-check-{self.tag}"
        for channel_id in self.channel_ids:
            if lease_acquire(channel_id=channel_id, holder=probe, seconds=5):
                lease_release(channel_id=channel_id, holder=probe, outcome="", record=False)
            else:
                report.leases_stuck += 1
                report.problems.append(f"the lease of channel {channel_id} cannot be taken after expiry")

        for channel in Channel.objects.filter(pk__in=self.channel_ids).select_related("owner"):
            cursor = channel.cursors.select_related("leaf", "summary__through_message").get(user=channel.owner)
            boundary = chat_services.selectors.summary_boundary_for(leaf_id=cursor.leaf_id)
            if (boundary.pk if boundary else None) != cursor.summary_id:
                report.pressure_wrong += 1
                report.problems.append(f"channel {channel.pk}: the cursor's summary is not the boundary in force")
                continue
            if boundary is None:
                tokens = cursor.leaf.path_tokens
            else:
                tokens = cursor.leaf.path_tokens - boundary.through_message.path_tokens + boundary.tokens
            if channel.context_tokens != tokens:
                report.pressure_wrong += 1
                report.problems.append(f"channel {channel.pk}: context_tokens {channel.context_tokens} != {tokens}")

        for error in UsageEntry.objects.filter(channel_id__in=self.channel_ids, success=False).values_list(
            "error", flat=True
        ):
            report.model_errors[error_cause(error)] += 1
        report.outcomes.update(self._task_failures())

    def _task_failures(self) -> collections.Counter:
        """Automatic compaction tasks that raised or overran their timeout (the
        broker records them as failed; a SIGKILLed task leaves no row and its
        attempt shows as abandoned)."""
        failed = Task.objects.filter(func=conf.AUTO_COMPACT_TASK, success=False)
        ids = set(self.channel_ids)
        return collections.Counter(
            "task failed or timed out" for args in failed.values_list("args", flat=True) if args and args[0] in ids
        )
