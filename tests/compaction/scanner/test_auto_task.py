"""The automatic compaction task body, in-process, against the loopback model server."""

import datetime

from django.db import OperationalError
from django.utils import timezone

from chatcore.models import AuditEntry, Message, Summary, UsageEntry
from compaction import conf, tasks
from compaction.models import CompactionLease
from compaction.scanner import attempt
from compaction.scanner.services import auto_compaction_drain, scan_run
from devtools.loopback_llm import Reply
from tests.chatcore.factories import build_path
from tests.compaction.scanning import auto_settings, pressured_channel, queued_tasks

SUMMARY = "## Goal\n- Keep the conversation's decisions.\n## Progress\n- Twelve messages exchanged."


def reserve(capture) -> dict[int, str]:
    with capture(execute=True):
        report = scan_run(now=timezone.now() + datetime.timedelta(seconds=1))
    return {d.channel_id: d.ticket for d in report.decisions if d.ticket}


def run(capture, channel_id: int, ticket: str | None):
    with capture(execute=True):
        # seconds=0: one compaction, the next channel goes to the broker (tests of draining set their own)
        return auto_compaction_drain(channel_id=channel_id, ticket=ticket, seconds=0)[0]


def test_a_reserved_channel_is_compacted_with_trigger_auto_and_the_next_one_is_enqueued(
    utility_model, llm_server, django_capture_on_commit_callbacks
):
    auto_settings(concurrency=1)
    first, second = pressured_channel(messages=13), pressured_channel()
    messages_before = list(Message.objects.order_by("id").values_list("id", "content"))
    tickets = reserve(django_capture_on_commit_callbacks)
    assert list(tickets) == [first.pk]
    llm_server.script(Reply(content=SUMMARY, prompt_tokens=1500, completion_tokens=30))

    outcome = run(django_capture_on_commit_callbacks, first.pk, tickets[first.pk])

    summary = Summary.objects.get()
    assert (outcome.outcome, outcome.tokens_before, outcome.tokens_after) == (
        "done",
        summary.tokens_before,
        summary.tokens_after,
    )
    assert (summary.channel_id, summary.trigger, summary.created_by) == (first.pk, "auto", first.owner)
    assert summary.tokens_after / 2_400 < 0.7 <= summary.tokens_before / 2_400
    lease = CompactionLease.objects.get(pk=first.pk)
    assert (lease.last_outcome, lease.failure_count, lease.last_error, lease.holder, lease.expires_at) == (
        "done",
        0,
        "",
        "",
        None,
    )
    assert lease.last_finished_at >= lease.last_auto_at
    usage = UsageEntry.objects.get(role="utility")
    assert (usage.trigger, usage.channel_id, usage.success) == ("auto", first.pk, True)
    assert AuditEntry.objects.filter(actor_label="system:compaction", details__trigger="auto").count() == 1
    assert list(Message.objects.order_by("id").values_list("id", "content")) == messages_before
    # the worker's refill tick reserved the next channel at once
    assert [args[0] for _, args in queued_tasks()] == [first.pk, second.pk]
    assert CompactionLease.objects.get(pk=second.pk).last_auto_at is not None


def test_a_failed_model_call_is_an_outcome_not_a_retry_and_waits_for_new_messages(
    utility_model, llm_server, django_capture_on_commit_callbacks
):
    auto_settings(concurrency=1)
    channel = pressured_channel()
    llm_server.default = Reply(status=500)
    tickets = reserve(django_capture_on_commit_callbacks)

    outcome = run(django_capture_on_commit_callbacks, channel.pk, tickets[channel.pk])

    assert outcome.outcome == "failed" and "HTTP 500" in outcome.detail
    assert not Summary.objects.exists()
    lease = CompactionLease.objects.get(pk=channel.pk)
    assert (lease.last_outcome, lease.failure_count, lease.holder) == ("failed", 1, "")
    assert "HTTP 500" in lease.last_error
    assert lease.attempt_leaf_id == channel.cursors.get().leaf_id
    assert set(UsageEntry.objects.values_list("trigger", "success")) == {("auto", False)}

    again = scan_run(now=timezone.now() + datetime.timedelta(seconds=1))
    assert [(d.reason, d.detail) for d in again.decisions] == [
        ("no_loop", "last attempt failed, no new messages since; 30m of cooldown remaining")
    ]

    build_path(channel, 2, start=12, words=40)
    assert [d.action for d in scan_run(now=timezone.now() + datetime.timedelta(seconds=1)).decisions] == ["enqueue"]


def test_a_channel_compacted_by_someone_else_meanwhile_is_busy_not_failed(
    utility_model, llm_server, django_capture_on_commit_callbacks
):
    auto_settings()
    channel = pressured_channel()
    tickets = reserve(django_capture_on_commit_callbacks)
    CompactionLease.objects.filter(pk=channel.pk).update(
        holder="web:1:manual", expires_at=timezone.now() + datetime.timedelta(minutes=5)
    )

    outcome = run(django_capture_on_commit_callbacks, channel.pk, tickets[channel.pk])

    assert outcome.outcome == "busy"
    lease = CompactionLease.objects.get(pk=channel.pk)
    assert (lease.last_outcome, lease.failure_count, lease.holder) == ("busy", 0, "web:1:manual")
    assert llm_server.requests == [] and not Summary.objects.exists()


def test_nothing_to_compact_is_recorded_and_not_retried_without_new_messages(
    utility_model, llm_server, django_capture_on_commit_callbacks
):
    auto_settings(min_messages=2, min_new_messages=2)
    channel = pressured_channel(messages=5, window=900)
    tickets = reserve(django_capture_on_commit_callbacks)

    outcome = run(django_capture_on_commit_callbacks, channel.pk, tickets[channel.pk])

    assert outcome.outcome == "nothing"
    lease = CompactionLease.objects.get(pk=channel.pk)
    assert (lease.last_outcome, lease.failure_count) == ("nothing", 0)
    assert [d.reason for d in scan_run(now=timezone.now() + datetime.timedelta(seconds=1)).decisions] == ["no_loop"]


def test_a_compaction_that_leaves_the_channel_over_its_threshold_is_ineffective_and_cools_down(
    utility_model, llm_server, django_capture_on_commit_callbacks
):
    auto_settings()
    channel = pressured_channel(settings={"compaction_threshold": 0.3})
    tickets = reserve(django_capture_on_commit_callbacks)
    llm_server.script(Reply(content=SUMMARY))

    outcome = run(django_capture_on_commit_callbacks, channel.pk, tickets[channel.pk])

    assert outcome.outcome == "ineffective"
    assert Summary.objects.get().tokens_after / 2_400 >= 0.3
    assert CompactionLease.objects.get(pk=channel.pk).last_outcome == "ineffective"
    channel.refresh_from_db()
    assert channel.context_messages < 8  # not even a candidate until more messages come


def test_the_event_path_checks_reserves_and_compacts_in_the_task(
    utility_model, llm_server, django_capture_on_commit_callbacks
):
    auto_settings()
    channel = pressured_channel()
    llm_server.script(Reply(content=SUMMARY))

    outcome = run(django_capture_on_commit_callbacks, channel.pk, None)

    assert outcome.outcome == "done"
    assert Summary.objects.get().trigger == "auto"
    second = run(django_capture_on_commit_callbacks, channel.pk, None)
    assert second.outcome == "skipped" and second.detail.endswith("messages since the summary < 8")
    assert len(llm_server.requests) == 1
    assert conf.AUTO_COMPACT_TASK == "compaction.tasks.auto_compact"


def test_a_worker_drains_the_backlog_itself_while_its_time_lasts(
    utility_model, llm_server, django_capture_on_commit_callbacks
):
    auto_settings(concurrency=1)
    # highest pressure first: 14, 13 then 12 messages
    channels = [pressured_channel(messages=14), pressured_channel(messages=13), pressured_channel()]
    tickets = reserve(django_capture_on_commit_callbacks)
    [(first, ticket)] = tickets.items()
    llm_server.default = Reply(content=SUMMARY)

    with django_capture_on_commit_callbacks(execute=True):
        outcomes = auto_compaction_drain(channel_id=first, ticket=ticket, seconds=60)

    assert [(o.channel_id, o.outcome) for o in outcomes] == [(c.pk, "done") for c in channels]
    assert sorted(Summary.objects.values_list("channel_id", "trigger")) == [(c.pk, "auto") for c in channels]
    # one task was enqueued by the scan; the worker reserved and ran the other two itself
    assert [args[0] for _, args in queued_tasks()] == [first]
    assert [
        (lease.last_outcome, lease.last_finished_at >= lease.last_auto_at)
        for lease in CompactionLease.objects.order_by("pk")
    ] == [("done", True)] * 3
    assert len(llm_server.requests) == 3


def test_a_worker_out_of_time_hands_the_next_channel_to_the_broker(
    utility_model, llm_server, django_capture_on_commit_callbacks
):
    auto_settings(concurrency=1)
    first, second, third = pressured_channel(messages=14), pressured_channel(messages=13), pressured_channel()
    tickets = reserve(django_capture_on_commit_callbacks)
    llm_server.default = Reply(content=SUMMARY)

    with django_capture_on_commit_callbacks(execute=True):
        outcomes = auto_compaction_drain(channel_id=first.pk, ticket=tickets[first.pk], seconds=0)

    assert [(o.channel_id, o.outcome) for o in outcomes] == [(first.pk, "done")]
    assert [args[0] for _, args in queued_tasks()] == [first.pk, second.pk]
    assert not CompactionLease.objects.filter(pk=third.pk).exists()


def test_the_task_reports_every_channel_it_compacted(utility_model, llm_server, django_capture_on_commit_callbacks):
    auto_settings(concurrency=1)
    first, second = pressured_channel(messages=13), pressured_channel()
    tickets = reserve(django_capture_on_commit_callbacks)
    llm_server.default = Reply(content=SUMMARY)

    with django_capture_on_commit_callbacks(execute=True):
        result = tasks.auto_compact(first.pk, tickets[first.pk])

    summaries = Summary.objects.order_by("channel_id")
    assert [summary.channel_id for summary in summaries] == [first.pk, second.pk]
    assert result == "; ".join(
        f"channel {summary.channel_id} done: {summary.messages_covered} messages summarized by {summary.model}"
        for summary in summaries
    )


def test_a_refill_stops_at_the_first_candidate_without_a_free_slot(db, django_capture_on_commit_callbacks):
    auto_settings(concurrency=1)
    channels = [pressured_channel(messages=14), pressured_channel(messages=13), pressured_channel()]

    with django_capture_on_commit_callbacks(execute=True):
        refill = scan_run(source="refill", take=1)
    again = scan_run(source="refill")
    full = scan_run(dry_run=True)

    assert [(d.channel_id, d.action, d.taken) for d in refill.decisions] == [(channels[0].pk, "enqueue", True)]
    assert refill.taken is refill.decisions[0] and queued_tasks() == []
    assert (again.in_flight, again.decisions) == (1, [])
    assert [(d.channel_id, d.reason) for d in full.decisions] == [
        (channels[0].pk, "in_flight"),
        (channels[1].pk, "concurrency"),
        (channels[2].pk, "concurrency"),
    ]


def test_a_failing_refill_keeps_what_the_worker_finished(
    utility_model, llm_server, django_capture_on_commit_callbacks, monkeypatch, caplog
):
    auto_settings(concurrency=1)
    first, second = pressured_channel(messages=13), pressured_channel()
    tickets = reserve(django_capture_on_commit_callbacks)
    llm_server.default = Reply(content=SUMMARY)

    def refill_fails(**kwargs):
        raise OperationalError("could not obtain lock on row in relation compaction_compactionsettings")

    monkeypatch.setattr(attempt, "scan_run", refill_fails)
    with django_capture_on_commit_callbacks(execute=True):
        outcomes = auto_compaction_drain(channel_id=first.pk, ticket=tickets[first.pk], seconds=60)

    assert [(o.channel_id, o.outcome) for o in outcomes] == [(first.pk, "done")]
    assert list(Summary.objects.values_list("channel_id", flat=True)) == [first.pk]
    assert CompactionLease.objects.get(pk=first.pk).last_outcome == "done"
    assert not CompactionLease.objects.filter(pk=second.pk).exists()
    assert f"refill: the tick after channel {first.pk} failed" in caplog.text


def test_a_taken_channel_that_raises_is_recorded_as_failed_not_left_in_flight(
    utility_model, llm_server, django_capture_on_commit_callbacks, monkeypatch
):
    auto_settings(concurrency=1)
    first, second = pressured_channel(messages=13), pressured_channel()
    tickets = reserve(django_capture_on_commit_callbacks)
    llm_server.default = Reply(content=SUMMARY)
    claim = attempt._claim

    def claim_second_fails(*, channel_id, ticket):
        if channel_id == second.pk:
            raise OperationalError("server closed the connection unexpectedly")
        return claim(channel_id=channel_id, ticket=ticket)

    monkeypatch.setattr(attempt, "_claim", claim_second_fails)
    with django_capture_on_commit_callbacks(execute=True):
        outcomes = auto_compaction_drain(channel_id=first.pk, ticket=tickets[first.pk], seconds=60)

    assert [(o.channel_id, o.outcome, o.detail) for o in outcomes] == [
        (first.pk, "done", outcomes[0].detail),
        (second.pk, "failed", "OperationalError: server closed the connection unexpectedly"),
    ]
    lease = CompactionLease.objects.get(pk=second.pk)
    assert (lease.last_outcome, lease.failure_count, lease.last_finished_at >= lease.last_auto_at) == (
        "failed",
        1,
        True,
    )
    assert list(Summary.objects.values_list("channel_id", flat=True)) == [first.pk]
    assert queued_tasks() == [(conf.AUTO_COMPACT_TASK, (first.pk, tickets[first.pk]))]
