"""Deterministic demo conversations, written for this project.

The long one follows a developer and an assistant taking a small payments
webhook service, invoice-relay, from a failing test suite to its 1.0
release: file paths, URLs, versions, decisions, open questions, tool calls
and their results, with a few edits and regenerations that leave side
branches in the tree. Everything is generated from the tables below, so two
runs produce the same text; nothing touches the network.
"""

import json
import tomllib
from datetime import datetime, timedelta
from importlib import resources

from chatcore.bulk import TreeBuilder

LONG_TITLE = "Shipping invoice-relay 1.0"


class _Script:
    def __init__(self, start: datetime) -> None:
        self.tree = TreeBuilder()
        self.clock = start
        self.calls = 0

    def _tick(self, seconds: int) -> datetime:
        self.clock += timedelta(seconds=seconds)
        return self.clock

    def user(self, text: str, **kwargs) -> int:
        return self.tree.add("user", text, created_at=self._tick(75), **kwargs)

    def assistant(self, text: str, **kwargs) -> int:
        return self.tree.add("assistant", text, created_at=self._tick(20), **kwargs)

    def tool(self, name: str, arguments: dict, result: str, note: str = "") -> None:
        self.calls += 1
        call_id = f"call_{self.calls:04d}"
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        self.tree.add("assistant", note, metadata={"tool_calls": [call]}, created_at=self._tick(5))
        self.tree.add("tool", result, metadata={"tool_call_id": call_id, "name": name}, created_at=self._tick(3))


def _pytest_output(failing: str, passed: int, seconds: float, detail: str) -> str:
    return (
        f"============================= test session starts ==============================\n"
        f"platform linux -- Python 3.11.9, pytest-8.2.2, pluggy-1.5.0\n"
        f"rootdir: /home/maya/src/invoice-relay\nconfigfile: pyproject.toml\ncollected {passed + 1} items\n\n"
        f"{detail}\n"
        f"=========================== short test summary info ============================\n"
        f"FAILED {failing}\n"
        f"========================= 1 failed, {passed} passed in {seconds:.2f}s ========================="
    )


def _long_log() -> str:
    lines = []
    for second in range(50):
        minute, sec = divmod(second, 60)
        if second % 17 == 3:
            lines.append(
                f"2024-06-11T09:{14 + minute:02d}:{sec:02d}Z WARN  relay.forward  attempt=3 "
                f"invoice=inv_{8800 + second} status=503 retry_in=40s upstream=accounting-api"
            )
        else:
            lines.append(
                f"2024-06-11T09:{14 + minute:02d}:{sec:02d}Z INFO  relay.webhook  event=invoice.paid "
                f"invoice=inv_{8800 + second} stored=1 forwarded=1 latency_ms={38 + second % 23}"
            )
    return "\n".join(lines)


# (test id, symptom, cause, fix) for the stretch of flaky-test hunting.
FLAKES = [
    (
        "tests/test_retry.py::test_backoff_is_capped",
        "expected 300.0, got 300.00000000000006",
        "float accumulation in the backoff loop",
        "compute the delay as min(base * 2 ** attempt, cap) directly",
    ),
    (
        "tests/test_webhooks.py::test_duplicate_event_is_ignored",
        "IntegrityError leaked out of the handler",
        "the savepoint was opened after the insert",
        "wrap only the insert in a nested atomic block",
    ),
    (
        "tests/test_forward.py::test_timeout_marks_attempt_failed",
        "hangs for 30 s on CI",
        "the fake accounting server never closed the socket",
        "give the fake server a 2 s read timeout",
    ),
    (
        "tests/test_db.py::test_migration_0007_backfills_keys",
        "works locally, fails on Postgres 16.3 in CI",
        "ORDER BY missing in the backfill query",
        "order by received_at, id so batches are stable",
    ),
    (
        "tests/test_signing.py::test_signature_rejects_old_timestamp",
        "fails around midnight UTC",
        "the test built the timestamp with date.today()",
        "freeze time with a fixed datetime in UTC",
    ),
    (
        "tests/test_metrics.py::test_histogram_buckets",
        "bucket 0.25 missing on Python 3.12",
        "dict ordering assumption in the exporter test",
        "compare bucket sets, not lists",
    ),
    (
        "tests/test_worker.py::test_graceful_shutdown",
        "SIGTERM test flaky under xdist",
        "two workers shared one PID file in /tmp",
        "use tmp_path for the PID file",
    ),
    (
        "tests/test_config.py::test_env_overrides",
        "leaks RELAY_TIMEOUT into other tests",
        "os.environ patched without monkeypatch",
        "use monkeypatch.setenv",
    ),
    (
        "tests/test_webhooks.py::test_payload_too_large",
        "413 expected, 500 returned",
        "the size check ran after JSON parsing",
        "check Content-Length before reading the body",
    ),
    (
        "tests/test_forward.py::test_retry_after_header_is_honoured",
        "waits 60 s instead of 5 s",
        "Retry-After parsed as minutes",
        "parse it as seconds or an HTTP date",
    ),
    (
        "tests/test_api.py::test_list_pagination",
        "page 2 repeats an item",
        "ordering by created_at alone is not unique",
        "order by created_at, id",
    ),
    (
        "tests/test_db.py::test_pool_exhaustion",
        "deadlocks with pool size 2",
        "the forwarder held a connection while calling the upstream",
        "release the connection before the HTTP call",
    ),
    (
        "tests/test_signing.py::test_rotated_secret_accepted",
        "rejects events signed with the previous secret",
        "only the newest secret was loaded",
        "accept both secrets during the 24 h rotation window",
    ),
    (
        "tests/test_worker.py::test_lease_is_released_on_error",
        "lease row stays locked for 5 minutes",
        "the finally block ran after the connection closed",
        "release the lease before closing the connection",
    ),
    (
        "tests/test_forward.py::test_http_date_retry_after",
        "fails on machines in UTC+2",
        "the HTTP date was parsed as local time",
        "parse it with email.utils.parsedate_to_datetime",
    ),
    (
        "tests/test_api.py::test_health_reports_version",
        "reports 0.0.0 in the wheel",
        "the version came from git describe",
        "read it with importlib.metadata.version",
    ),
    (
        "tests/test_prune.py::test_keys_older_than_35_days_are_deleted",
        "deletes keys that are 34 days old",
        "the cutoff used days=35 on a date, not a datetime",
        "compare timestamps with a timezone-aware cutoff",
    ),
    (
        "tests/test_webhooks.py::test_unknown_provider_is_404",
        "returns 500 for /webhooks/unknown",
        "KeyError from the provider registry",
        "look providers up with get() and raise 404",
    ),
]

# The pre-release checklist, walked through item by item: (item, command, output, verdict), kept as data
# in demo_checklist.toml (package data).
with resources.files(__package__).joinpath("demo_checklist.toml").open("rb") as _checklist:
    CHECKLIST = [(c["item"], c["command"], c["output"], c["verdict"]) for c in tomllib.load(_checklist)["check"]]

# Hand-written stretches: (user, [(tool, args, result)], assistant, follow-up user, follow-up assistant).
EPISODES = [
    (
        "I'm picking invoice-relay back up after two weeks. Where were we? The repo is ~/src/invoice-relay, "
        "main is at 0.9.4 and CI has been red since Friday.",
        [
            (
                "run_command",
                {"cmd": "git log --oneline -5"},
                "a41c9e2 forward: add Retry-After support (WIP)\n77d0b13 db: migration 0007 idempotency keys\n"
                "5be2f90 ci: pin postgres:16.3\n0c11aa8 release 0.9.4\n9d3e5f1 webhooks: reject unsigned events",
            )
        ],
        "Since 0.9.4 there are three commits: the Postgres 16.3 pin in CI (5be2f90), migration 0007 that adds the "
        "idempotency_keys table (77d0b13), and an unfinished Retry-After change in the forwarder (a41c9e2). "
        "The red CI most likely comes from 0007 or the WIP commit. Shall I run the suite?",
        "Yes, run it, and tell me what 1.0 still needs according to docs/ROADMAP.md.",
        "I'll run the tests first and then read the roadmap.",
    ),
    (
        "Go ahead.",
        [
            (
                "run_tests",
                {"args": "-x -q"},
                _pytest_output(
                    "tests/test_db.py::test_migration_0007_backfills_keys",
                    211,
                    48.31,
                    "tests/test_db.py ........F\n\n    def test_migration_0007_backfills_keys(migrated_db):\n"
                    ">       assert keys == expected\nE       AssertionError: lists differ at index 412",
                ),
            ),
            (
                "read_file",
                {"path": "docs/ROADMAP.md"},
                "# Road to 1.0\n- [x] signed webhooks (HMAC-SHA256, header X-Relay-Signature)\n"
                "- [ ] idempotency keys for every inbound event (ADR 0007)\n- [ ] retries honour Retry-After\n"
                "- [ ] graceful shutdown of the worker\n- [ ] p95 forward latency under 250 ms at 50 req/s\n"
                "- [ ] runbook in docs/RUNBOOK.md",
            ),
        ],
        "One failure: tests/test_db.py::test_migration_0007_backfills_keys, an ordering difference at index 412. "
        "For 1.0 the roadmap lists five open items: idempotency keys (ADR 0007), Retry-After, graceful worker "
        "shutdown, p95 forward latency under 250 ms at 50 req/s, and a runbook in docs/RUNBOOK.md.",
        "Let's fix the migration test first. What's wrong with it?",
        "The backfill query in src/invoice_relay/migrations/0007_idempotency_keys.py reads events without ORDER BY, "
        "so the batch boundaries depend on the physical row order, which changed with Postgres 16.3.",
    ),
    (
        "Show me the query.",
        [
            (
                "read_file",
                {"path": "src/invoice_relay/migrations/0007_idempotency_keys.py", "lines": "18-34"},
                'def backfill(conn):\n    rows = conn.execute(\n        "SELECT id, provider_event_id, received_at FROM events"\n'
                '        " WHERE idempotency_key IS NULL LIMIT 500"\n    ).fetchall()\n    while rows:\n'
                "        for row in rows:\n            conn.execute(UPDATE_KEY, (key_for(row), row.id))\n"
                "        rows = conn.execute(NEXT_BATCH, (rows[-1].id,)).fetchall()",
            )
        ],
        "As suspected: the first SELECT has a LIMIT without ORDER BY, while NEXT_BATCH continues from rows[-1].id. "
        "If the first batch is not the 500 lowest ids, the loop skips rows. Adding ORDER BY received_at, id to both "
        "queries makes it deterministic; ordering by id alone would also do, but received_at keeps keys in event order.",
        "Decision: order by received_at, id. Patch it.",
        "Patched both queries; the migration test passes locally (1 passed in 2.41s).",
    ),
    (
        "Now ADR 0007. Remind me what it decided; the doc is at https://docs.example.net/adr/0007-idempotency-keys",
        [
            (
                "http_get",
                {"url": "https://docs.example.net/adr/0007-idempotency-keys"},
                "ADR 0007 — Idempotency keys\nStatus: accepted (2024-05-28)\nDecision: every inbound event gets a key "
                "sha256(provider || ':' || provider_event_id). A UNIQUE index on idempotency_keys(key) rejects replays. "
                "Keys are kept 35 days, then pruned nightly.\nConsequence: the handler must treat a unique violation as "
                "success (HTTP 200), not as an error.",
            )
        ],
        "ADR 0007 (accepted 2024-05-28): the key is sha256(provider:provider_event_id), a UNIQUE index on "
        "idempotency_keys(key) rejects replays, keys live 35 days and are pruned nightly, and a unique violation "
        "must be answered with 200, not an error.",
        "Does the handler do the 200 part today?",
        "No. src/invoice_relay/webhooks.py catches IntegrityError around the whole request, so a replay rolls back "
        "the transaction and returns 500. It needs a savepoint around the key insert only.",
    ),
]

SIDE_BRANCH_QUESTION = "Should we switch the data layer to SQLAlchemy 2.0 ORM before 1.0, or stay on plain psycopg 3.2?"
SIDE_BRANCH_EDIT = (
    "Before 1.0, is there any reason to leave plain psycopg 3.2.1 for SQLAlchemy 2.0.31? "
    "Keep the answer to the trade-offs that matter for a service this small."
)


def _episode(script: _Script, user: str, tools: list, answer: str, follow: str, reply: str) -> None:
    script.user(user)
    for name, arguments, result in tools:
        script.tool(name, arguments, result)
    script.assistant(answer)
    script.user(follow)
    script.assistant(reply)


def _flake(script: _Script, number: int, test_id: str, symptom: str, cause: str, fix: str) -> None:
    path = test_id.split("::")[0]
    build = 1180 + number * 7
    script.user(f"CI build #{build} is red again: {test_id} — {symptom}. Can you look?")
    script.tool(
        "run_tests",
        {"args": f"{test_id} -p no:randomly --count=20"},
        f"{path} ....F...F...........\n2 failed, 18 passed in {3.1 + number * 0.37:.2f}s\nE   {symptom}",
        note=f"Re-running {test_id} twenty times to see how often it fails.",
    )
    script.assistant(f"It fails 2 times in 20. The cause is {cause}. The fix is to {fix}.")
    script.user("Makes sense. Apply it and push.")
    script.tool(
        "run_command",
        {"cmd": f"git commit -am 'tests: {fix[:48]}' && git push origin fix/flake-{number}"},
        f"[fix/flake-{number} {9_000_000 + number * 7919:07x}] tests: {fix[:48]}\n 1 file changed\n"
        f"remote: https://git.example.net/payments/invoice-relay/-/merge_requests/{212 + number}",
    )
    script.assistant(
        f"Pushed as merge request !{212 + number} "
        f"(https://git.example.net/payments/invoice-relay/-/merge_requests/{212 + number}). "
        f"Build #{build + 1} is green: {30 + number} jobs, 6m{10 + number:02d}s."
    )


def long_conversation(start: datetime) -> list:
    """The items of the long conversation; the last one is the active leaf."""
    script = _Script(start)
    for episode in EPISODES:
        _episode(script, *episode)

    # An edited question: the first wording and its answer stay as a side branch.
    before_question = script.tree.leaf
    script.user(SIDE_BRANCH_QUESTION)
    script.assistant(
        "Switching now would touch every query in src/invoice_relay/db.py (41 of them) a month before "
        "the release. I would not."
    )
    script.user("Fair, but what about the migrations?")
    script.tree.goto(before_question)
    script.user(SIDE_BRANCH_EDIT)
    script.assistant(
        "Stay on psycopg 3.2.1 for 1.0. The ORM would buy relationship loading and a unit of work that "
        "this service does not need (four tables, no joins deeper than one), and it would cost a "
        "rewrite of db.py and its 41 queries plus new failure modes in the pool. Revisit after 1.0 if "
        "the reporting endpoints grow. Decision recorded in docs/adr/0009-stay-on-psycopg.md."
    )

    script.user("Let's fix the replay handling in webhooks.py then.")
    script.tool(
        "read_file",
        {"path": "src/invoice_relay/webhooks.py", "lines": "60-92"},
        "@router.post('/webhooks/{provider}')\nasync def receive(provider: str, request: Request):\n"
        "    body = await request.body()\n    verify_signature(provider, request.headers, body)\n"
        "    event = parse_event(provider, body)\n    try:\n        with db.transaction() as tx:\n"
        "            tx.insert_key(event.key)\n            tx.insert_event(event)\n"
        "    except IntegrityError:\n        log.exception('webhook failed')\n"
        "        raise HTTPException(500)\n    return {'status': 'stored'}",
    )
    script.assistant(
        "Here is the plan: inside the transaction, insert the key in a savepoint; on a unique "
        "violation of idempotency_keys_key_uniq, return {'status': 'duplicate'} with 200 and log at "
        "INFO, not ERROR. Other IntegrityErrors still surface as 500."
    )
    # A regenerated answer: the first one stays as a sibling.
    regenerate_from = script.user("Write the code.")
    script.assistant("Use try/except around insert_key and return 200 on any exception.")
    script.tree.goto(regenerate_from)
    script.assistant(
        "```python\ntry:\n    with db.transaction() as tx:\n        with tx.savepoint():\n"
        "            inserted = tx.insert_key(event.key)  # ON CONFLICT DO NOTHING RETURNING key\n"
        "        if not inserted:\n            log.info('duplicate event', extra={'key': event.key})\n"
        "            return {'status': 'duplicate'}\n        tx.insert_event(event)\nexcept "
        "IntegrityError:\n    log.exception('webhook failed')\n    raise HTTPException(500)\n"
        "return {'status': 'stored'}\n```\nON CONFLICT DO NOTHING avoids the exception path entirely; "
        "the savepoint keeps a failed key insert from poisoning the outer transaction."
    )
    script.user("Nice. Tests?")
    script.tool("run_tests", {"args": "tests/test_webhooks.py -q"}, "......................\n22 passed in 3.87s")
    script.assistant("All 22 webhook tests pass, including test_duplicate_event_is_ignored.")

    script.user("What did production look like this morning? Grafana: https://grafana.example.net/d/relay/overview")
    script.tool("run_command", {"cmd": "kubectl -n payments logs deploy/invoice-relay --since=3m"}, _long_log())
    script.assistant(
        "50 seconds of logs: every invoice.paid event was stored and forwarded, latency 38-60 ms; "
        "3 forwards got 503 from accounting-api and were scheduled to retry in 40 s. That retry delay "
        "ignores the upstream's Retry-After: 5, which is the open roadmap item."
    )

    # A side branch that explored a rewrite and was dropped.
    fork = script.user("Honest question: would rewriting the forwarder in Go fix the latency target?")
    script.assistant("Unlikely: p95 is dominated by accounting-api (210 ms of the 240 ms), not by our code.")
    script.user("OK, forget it.")
    script.tree.goto(fork - 1)
    script.user("Next: Retry-After. What does the WIP commit a41c9e2 do?")
    script.tool(
        "read_file",
        {"path": "src/invoice_relay/retry.py"},
        "BASE = 2.0\nCAP = 300.0\n\ndef next_delay(attempt, retry_after=None):\n"
        "    delay = BASE\n    for _ in range(attempt):\n        delay *= 2\n"
        "    if retry_after:\n        return float(retry_after) * 60  # TODO\n    return min(delay, CAP)",
    )
    script.assistant(
        "Two bugs: Retry-After is multiplied by 60 (it is seconds, or an HTTP date), and the loop "
        "accumulates floats. Proposed: parse seconds or an RFC 9110 HTTP date, clamp to [1, 300], "
        "and compute min(BASE * 2 ** attempt, CAP) for the fallback."
    )
    script.user(
        "Agreed. Open question for later: should we also honour Retry-After on 429 from the provider "
        "side? Put it in docs/OPEN_QUESTIONS.md."
    )
    script.assistant(
        "Added to docs/OPEN_QUESTIONS.md as Q3, with the note that the provider currently sends no "
        "Retry-After on 429 (checked in their docs, version 2024-04)."
    )

    for number, flake in enumerate(FLAKES):
        _flake(script, number, *flake)

    script.user("Let's walk the release checklist in docs/RELEASE.md, one item at a time. Short answers.")
    script.assistant(f"There are {len(CHECKLIST)} items. Starting with the first.")
    for item, command, output, verdict in CHECKLIST:
        script.user(f"Next: {item}.")
        script.tool("run_command", {"cmd": command}, output)
        script.assistant(verdict)
    script.assistant("Checklist complete: every item passes.")

    script.user("Load test time. Target from the roadmap: p95 under 250 ms at 50 req/s.")
    script.tool(
        "run_command",
        {"cmd": "k6 run --vus 50 --duration 5m loadtest/forward.js"},
        "http_req_duration: avg=118ms p(90)=201ms p(95)=236ms max=1.41s\nhttp_reqs: 15012 (50.0/s)\n"
        "checks: 99.98% (3 failed of 15012)",
    )
    script.assistant(
        "p95 is 236 ms at 50.0 req/s, under the 250 ms target; 3 of 15,012 checks failed, all "
        "upstream 503s that were retried. Max 1.41 s is a retry."
    )
    script.user("Graceful shutdown is the last code item. Worker is src/invoice_relay/worker.py.")
    script.assistant(
        "On SIGTERM the worker should stop taking new jobs, finish the one in hand within "
        "terminationGracePeriodSeconds (30 in deploy/k8s/deployment.yaml), and release its lease. "
        "I will add a signal handler that sets a stop event checked between jobs."
    )
    script.user("Do it, then bump to 1.0.0 in pyproject.toml and write the runbook.")
    script.tool("run_tests", {"args": "-q"}, "........................................\n236 passed in 51.02s")
    script.assistant(
        "Done: 236 tests pass. Version is 1.0.0 in pyproject.toml; docs/RUNBOOK.md covers deploys, "
        "rollback to 0.9.4 (kubectl rollout undo deploy/invoice-relay -n payments), replaying dead "
        "letters, and the 35-day key pruning job."
    )
    script.user("Tag it and deploy to staging: https://relay.staging.example.net/healthz should say 1.0.0.")
    script.tool(
        "http_get",
        {"url": "https://relay.staging.example.net/healthz"},
        '{"status": "ok", "version": "1.0.0", "db": "ok", "queue_depth": 0}',
    )
    script.assistant(
        "Staging reports version 1.0.0, database ok, queue empty. Remaining before production: "
        "the answer to Q3 in docs/OPEN_QUESTIONS.md and a sign-off from the accounting team."
    )
    return script.tree.items


def short_conversations(start: datetime) -> dict[str, tuple[str, list]]:
    """Two small channels: title → (persona slug, items)."""
    reading = _Script(start)
    for user, assistant in [
        (
            "I want to understand consensus protocols properly. Where should I start?",
            "Start with the Raft paper (Ongaro and Ousterhout, USENIX ATC 2014): it was written to be understandable. "
            "Then Paxos Made Simple (Lamport, 2001), then Viewstamped Replication Revisited (2012).",
        ),
        (
            "What should I take notes on while reading Raft?",
            "Three things: how a leader is elected (terms, randomized timeouts of 150-300 ms), how the log is "
            "replicated (the log matching property), and why a new leader never loses committed entries.",
        ),
        (
            "Is there a way to check my understanding?",
            "Implement it against the MIT 6.5840 labs' test harness, or read the TLA+ specification in the Raft "
            "repository and run the model checker on three servers.",
        ),
        (
            "Open question for me: how do membership changes stay safe?",
            "Joint consensus (section 6 of the paper) or single-server changes from Ongaro's thesis, chapter 4. "
            "Both keep any two majorities overlapping during the change.",
        ),
    ]:
        reading.user(user)
        reading.assistant(assistant)
    trip = _Script(start + timedelta(hours=3))
    for user, assistant in [
        (
            "Two days in Lisbon in March, on foot mostly. What should the first day look like?",
            "Alfama in the morning before the crowds, the castle at opening (9:00), lunch in Graça, then the 28 tram "
            "down to Baixa and the riverfront at sunset.",
        ),
        (
            "And the second day?",
            "Belém: the monastery early, the tower, the pastries, then the MAAT museum and a walk back along the river. "
            "Book the monastery online; the queue in March is still 30-45 minutes.",
        ),
        ("Budget for food, roughly?", "Around 35-50 EUR a day per person eating in tascas, more for seafood."),
    ]:
        trip.user(user)
        trip.assistant(assistant)
    return {
        "Reading list: consensus protocols": ("researcher", reading.tree.items),
        "Weekend in Lisbon": ("generalist", trip.tree.items),
    }
