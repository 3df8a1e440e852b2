import datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.models import OrmQ

from chatcore import services as chat_services
from chatcore.models import Channel, Summary
from compaction import conf
from compaction.models import CompactionLease, CompactionSettings
from compaction.scanner import selectors
from compaction.scanner.services import (
    auto_compaction_drain,
    auto_compaction_reserve,
    compaction_settings_update,
    scan_run,
)
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, UserFactory, build_path
from tests.compaction.scanning import MESSAGE_TOKENS, WINDOW, age, auto_settings, pressured_channel, queued_tasks

NOW_PLUS = datetime.timedelta(seconds=1)


def tick(capture, **kwargs):
    with capture(execute=True):
        return scan_run(**kwargs)


def finished_attempt(channel, *, now, minutes_ago: int, outcome: str, **fields) -> CompactionLease:
    """The lease row of an automatic attempt that started `minutes_ago` and ended a minute later."""
    return CompactionLease.objects.create(
        channel=channel,
        last_auto_at=now - datetime.timedelta(minutes=minutes_ago),
        last_finished_at=now - datetime.timedelta(minutes=minutes_ago - 1),
        last_outcome=outcome,
        **fields,
    )


def reasons(report) -> dict[int, str]:
    return {d.channel_id: d.reason or d.action for d in report.decisions}


# --- coarse filters ---------------------------------------------------------


def test_coarse_filters_keep_only_live_direct_idle_recent_channels_with_enough_new_messages(db):
    settings = auto_settings(idle_minutes=2, active_within_days=7)
    eligible = pressured_channel()
    archived = pressured_channel()
    Channel.objects.filter(pk=archived.pk).update(archived=True)
    deleted = pressured_channel()
    Channel.objects.filter(pk=deleted.pk).update(deleted_at=timezone.now())
    ephemeral = pressured_channel(ephemeral=True)
    group = pressured_channel(type=Channel.Type.GROUP)
    busy = pressured_channel()
    stale = pressured_channel()
    few_new = pressured_channel()
    Channel.objects.filter(pk=few_new.pk).update(context_messages=7)
    calm = pressured_channel(window=100_000)
    for channel in (eligible, archived, deleted, ephemeral, group, stale, few_new, calm):
        age(channel, minutes=3)
    age(stale, days=8)

    found = list(selectors.scan_candidates(settings=settings, now=timezone.now()))

    assert [c.pk for c in found] == [eligible.pk]
    assert busy.context_ratio > 0.7 and calm.context_ratio < selectors.coarse_bound(settings=settings)


def test_candidates_come_highest_pressure_first_and_are_limited_by_the_batch_size(db):
    settings = auto_settings(batch_size=2)
    channels = [pressured_channel(messages=n) for n in (11, 13, 12)]
    found = list(selectors.scan_candidates(settings=settings, now=timezone.now() + NOW_PLUS))
    assert [c.pk for c in found] == [channels[1].pk, channels[2].pk]


def test_coarse_bound_is_the_lowest_allowed_threshold_scaled_to_the_default_budget(db):
    settings = auto_settings(threshold=0.8, default_context_budget=64_000)
    assert selectors.coarse_bound(settings=settings) == pytest.approx(conf.MIN_CHANNEL_THRESHOLD * 0.5)


# --- precise check ----------------------------------------------------------


def test_tick_enqueues_a_task_per_qualifying_channel_and_reserves_it(db, django_capture_on_commit_callbacks):
    auto_settings()
    hot = pressured_channel()
    cool = pressured_channel(window=4_000)

    report = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)

    assert reasons(report) == {hot.pk: "enqueue", cool.pk: "below_threshold"}
    decision = report.decisions[0]
    assert decision.ratio == pytest.approx(12 * MESSAGE_TOKENS / WINDOW)
    assert (decision.messages, decision.new_messages, decision.budget) == (12, 12, WINDOW)
    lease = CompactionLease.objects.get(channel=hot)
    assert lease.last_auto_at.isoformat() == decision.ticket
    assert lease.attempt_leaf_id == hot.cursors.get().leaf_id
    assert queued_tasks() == [(conf.AUTO_COMPACT_TASK, (hot.pk, decision.ticket))]
    assert not CompactionLease.objects.filter(channel=cool).exists()


def test_channel_opt_out_and_own_threshold_override_the_global_ones(db, django_capture_on_commit_callbacks):
    auto_settings(threshold=0.70)
    opted_out = pressured_channel(settings={"auto_compaction": False})
    eager = pressured_channel(window=4_000, settings={"compaction_threshold": 0.5})
    strict = pressured_channel(settings={"compaction_threshold": 0.95})

    report = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)

    assert reasons(report) == {opted_out.pk: "opted_out", eager.pk: "enqueue", strict.pk: "below_threshold"}
    assert [args[0] for _, args in queued_tasks()] == [eager.pk]


def test_budget_is_the_settings_default_when_no_model_declares_a_window(db, django_capture_on_commit_callbacks):
    auto_settings(default_context_budget=2_400)
    channel = ChannelFactory()  # no model, no utility role
    build_path(channel, 12, words=40)
    channel.refresh_from_db()
    assert channel.context_ratio < 0.1  # the column divides by chatcore's 128k

    report = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)

    assert reasons(report) == {channel.pk: "enqueue"}
    assert report.decisions[0].budget == 2_400


def test_too_few_messages_on_the_path_or_since_the_summary(db, django_capture_on_commit_callbacks):
    auto_settings(min_messages=14, min_new_messages=8)
    short = pressured_channel(messages=13)
    summarized = pressured_channel(messages=20, window=4_000)
    path = list(summarized.messages.order_by("depth"))
    chat_services.summary_write(
        channel=summarized, through_message=path[14], content="Earlier talk.", created_by=summarized.owner
    )
    summarized.refresh_from_db()
    Channel.objects.filter(pk=summarized.pk).update(context_ratio=0.9)

    report = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)

    assert reasons(report) == {short.pk: "too_few_messages"}  # the summarized one has 5 new: not a candidate
    assert summarized.context_messages == 5


def test_lease_held_skips_the_channel(db, django_capture_on_commit_callbacks):
    auto_settings()
    channel = pressured_channel()
    CompactionLease.objects.create(
        channel=channel, holder="manual:web", expires_at=timezone.now() + datetime.timedelta(minutes=5)
    )

    report = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)

    assert reasons(report) == {channel.pk: "lease_held"}
    assert "manual:web" in report.decisions[0].detail
    assert queued_tasks() == []


def test_cooldown_after_an_automatic_compaction(db, django_capture_on_commit_callbacks):
    auto_settings(cooldown_minutes=30)
    channel = pressured_channel()
    now = timezone.now() + NOW_PLUS
    finished_attempt(channel, now=now, minutes_ago=20, outcome="ineffective")

    report = tick(django_capture_on_commit_callbacks, now=now)
    assert reasons(report) == {channel.pk: "cooldown"}
    assert report.decisions[0].detail == "cooldown, 10m remaining"

    report = tick(django_capture_on_commit_callbacks, now=now + datetime.timedelta(minutes=11))
    assert reasons(report) == {channel.pk: "enqueue"}


def test_no_loop_a_failed_attempt_waits_for_new_messages_or_the_cooldown(db, django_capture_on_commit_callbacks):
    auto_settings(cooldown_minutes=30)
    channel = pressured_channel()
    leaf_id = channel.cursors.get().leaf_id
    now = timezone.now() + NOW_PLUS
    failure = {"failure_count": 1, "attempt_leaf_id": leaf_id, "last_error": "HTTP 500"}
    finished_attempt(channel, now=now, minutes_ago=5, outcome="failed", **failure)

    report = tick(django_capture_on_commit_callbacks, now=now)
    assert reasons(report) == {channel.pk: "no_loop"}
    assert report.decisions[0].detail == "last attempt failed, no new messages since; 25m of cooldown remaining"

    assert reasons(tick(django_capture_on_commit_callbacks, now=now + datetime.timedelta(minutes=26))) == {
        channel.pk: "enqueue"
    }
    OrmQ.objects.all().delete()
    CompactionLease.objects.filter(pk=channel.pk).update(
        last_auto_at=now - datetime.timedelta(minutes=5), last_finished_at=now - datetime.timedelta(minutes=4)
    )

    build_path(channel, 2, start=12, words=40)
    report = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)
    assert reasons(report) == {channel.pk: "enqueue"}


def test_an_attempt_in_flight_holds_its_channel_until_the_lease_time_then_counts_as_abandoned(
    db, django_capture_on_commit_callbacks
):
    auto_settings()
    channel = pressured_channel()
    now = timezone.now() + NOW_PLUS
    CompactionLease.objects.create(channel=channel, last_auto_at=now - datetime.timedelta(seconds=10))

    assert reasons(tick(django_capture_on_commit_callbacks, now=now)) == {channel.pk: "in_flight"}

    later = now + datetime.timedelta(seconds=conf.LEASE_SECONDS)
    report = tick(django_capture_on_commit_callbacks, now=later)
    assert reasons(report) == {channel.pk: "enqueue"}
    assert report.decisions[0].abandoned
    lease = CompactionLease.objects.get(pk=channel.pk)
    assert (lease.last_outcome, lease.failure_count, lease.last_auto_at) == ("abandoned", 1, later)
    assert "never reported back" in lease.last_error


def test_hourly_budget_counts_automatic_summaries_and_failed_attempts(db, django_capture_on_commit_callbacks):
    auto_settings(hourly_budget=3)
    done_earlier = pressured_channel(messages=2)
    chat_services.summary_write(
        channel=done_earlier,
        through_message=done_earlier.messages.order_by("depth")[0],
        content="Summary.",
        created_by=None,
        trigger=Summary.Trigger.AUTO,
    )
    failed_earlier = pressured_channel(messages=2)
    first, second = pressured_channel(messages=13), pressured_channel(messages=12)
    now = timezone.now() + NOW_PLUS
    finished_attempt(failed_earlier, now=now, minutes_ago=50, outcome="failed")

    report = tick(django_capture_on_commit_callbacks, now=now)

    assert report.budget_used == 2
    assert reasons(report) == {first.pk: "enqueue", second.pk: "budget"}
    assert report.decisions[1].detail == "budget, 2 of 3 automatic compactions this hour"


def test_concurrency_limits_the_attempts_in_flight_across_ticks(db, django_capture_on_commit_callbacks):
    auto_settings(concurrency=2)
    channels = [pressured_channel(messages=n) for n in (14, 13, 12)]

    first = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)
    assert reasons(first) == {channels[0].pk: "enqueue", channels[1].pk: "enqueue", channels[2].pk: "concurrency"}

    second = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)
    assert second.in_flight == 2
    assert reasons(second) == {channels[0].pk: "in_flight", channels[1].pk: "in_flight", channels[2].pk: "concurrency"}

    CompactionLease.objects.filter(pk=channels[0].pk).update(
        last_finished_at=timezone.now() + NOW_PLUS, last_outcome="done"
    )
    third = tick(django_capture_on_commit_callbacks, now=timezone.now() + 2 * NOW_PLUS)
    assert third.in_flight == 1
    assert reasons(third) == {channels[0].pk: "cooldown", channels[1].pk: "in_flight", channels[2].pk: "enqueue"}
    assert [args[0] for _, args in queued_tasks()] == [c.pk for c in channels]


def test_settings_changes_take_effect_on_the_next_tick_and_the_kill_switch_stops_new_work(
    db, django_capture_on_commit_callbacks, staff_user
):
    auto_settings(threshold=0.95)
    channel = pressured_channel()
    assert reasons(tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)) == {
        channel.pk: "below_threshold"
    }

    compaction_settings_update(actor=staff_user, enabled=False, threshold=0.6)
    report = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)
    assert (report.enabled, report.decisions, queued_tasks()) == (False, [], [])

    compaction_settings_update(actor=staff_user, enabled=True)
    assert reasons(tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)) == {channel.pk: "enqueue"}


def test_kill_switch_also_stops_tasks_already_queued(db, django_capture_on_commit_callbacks):
    auto_settings()
    channel = pressured_channel()
    report = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)
    CompactionSettings.objects.update(enabled=False)

    [outcome] = auto_compaction_drain(channel_id=channel.pk, ticket=report.decisions[0].ticket, seconds=0)

    assert (outcome.outcome, outcome.detail) == ("skipped", "auto-compaction was turned off")
    lease = CompactionLease.objects.get(pk=channel.pk)
    assert (lease.last_outcome, lease.failure_count) == ("skipped", 0)
    assert not Summary.objects.exists()


def test_a_stale_or_duplicate_delivery_does_nothing(db, django_capture_on_commit_callbacks):
    auto_settings()
    channel = pressured_channel()
    report = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)
    ticket = report.decisions[0].ticket
    CompactionLease.objects.filter(pk=channel.pk).update(
        last_finished_at=timezone.now() + NOW_PLUS * 5, last_outcome="done"
    )
    before = CompactionLease.objects.values().get(pk=channel.pk)

    [outcome] = auto_compaction_drain(channel_id=channel.pk, ticket=ticket, seconds=0)

    assert outcome.outcome == "stale"
    assert CompactionLease.objects.values().get(pk=channel.pk) == before
    assert not Summary.objects.exists()


def test_dry_run_decides_but_writes_nothing(db, django_capture_on_commit_callbacks):
    auto_settings()
    channel = pressured_channel()
    report = tick(django_capture_on_commit_callbacks, dry_run=True, now=timezone.now() + NOW_PLUS)
    assert reasons(report) == {channel.pk: "would_enqueue"}
    assert not CompactionLease.objects.exists() and queued_tasks() == []


def test_event_reservation_applies_the_same_checks(db, django_capture_on_commit_callbacks):
    auto_settings(concurrency=1)
    first, second = pressured_channel(), pressured_channel()
    with django_capture_on_commit_callbacks(execute=True):
        assert auto_compaction_reserve(channel_id=first.pk).action == "enqueue"
        decision = auto_compaction_reserve(channel_id=second.pk)
    assert (decision.action, decision.reason) == ("skip", "concurrency")
    CompactionSettings.objects.update(enabled=False)
    assert auto_compaction_reserve(channel_id=second.pk).reason == "off"


# --- cost -------------------------------------------------------------------


def _tick_queries(django_capture_on_commit_callbacks) -> int:
    with CaptureQueriesContext(connection) as captured:
        tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)
    return len(captured)


def test_a_tick_costs_the_same_queries_whatever_the_messages_and_the_candidates(db, django_capture_on_commit_callbacks):
    auto_settings(concurrency=1)
    model = LLMModelFactory(context_window=WINDOW)
    first = [pressured_channel(model=model) for _ in range(2)]
    small = _tick_queries(django_capture_on_commit_callbacks)
    OrmQ.objects.all().delete()
    CompactionLease.objects.all().delete()

    big_model = LLMModelFactory(context_window=8_000)
    more = [pressured_channel(model=big_model) for _ in range(6)]
    for channel in first:
        build_path(channel, 20, start=12, words=40)
    large = _tick_queries(django_capture_on_commit_callbacks)

    assert small == large
    # savepoint, settings, schedule, candidates, leases, leaves, utility window, attempt counts, summaries,
    # release; for the one channel enqueued: savepoint, create its lease, release, and the broker's insert.
    assert large == 14
    assert len(more) + len(first) == len(scan_run(dry_run=True).decisions)


def test_a_refill_costs_the_same_queries_whatever_the_candidates(db, django_capture_on_commit_callbacks):
    auto_settings(concurrency=1)
    model = LLMModelFactory(context_window=WINDOW)

    def refill_queries() -> int:
        with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks(execute=True):
            report = scan_run(source="refill", take=1, now=timezone.now() + NOW_PLUS)
        assert report.taken is not None and report.enqueued == []
        CompactionLease.objects.all().delete()
        return len(captured)

    [pressured_channel(model=model) for _ in range(2)]
    small = refill_queries()
    [pressured_channel(model=model) for _ in range(10)]
    large = refill_queries()

    # savepoint, settings, candidates, attempt counts, summaries, leases, leaves, utility window, release;
    # for the channel taken: savepoint, create its lease, release. No schedule, nothing for the broker.
    assert small == large == 12


# --- schedule ---------------------------------------------------------------


def test_setup_schedules_is_idempotent_and_the_interval_follows_the_settings(db, staff_user):
    from django.core.management import call_command
    from django_q.models import Schedule

    call_command("setup_schedules")
    call_command("setup_schedules")
    schedule = Schedule.objects.get(name=conf.SCAN_SCHEDULE_NAME)
    assert (Schedule.objects.count(), schedule.func, schedule.minutes, schedule.repeats) == (1, conf.SCAN_TASK, 5, -1)

    compaction_settings_update(actor=staff_user, interval_minutes=15)
    schedule.refresh_from_db()
    assert schedule.minutes == 15
    assert schedule.next_run <= timezone.now() + datetime.timedelta(minutes=15)

    CompactionSettings.objects.update(interval_minutes=2)  # changed behind the service's back
    scan_run()
    schedule.refresh_from_db()
    assert schedule.minutes == 2

    Schedule.objects.create(
        name=conf.SCAN_SCHEDULE_NAME, func=conf.SCAN_TASK, schedule_type=Schedule.MINUTES, minutes=9
    )
    call_command("setup_schedules", "--enable")
    assert list(Schedule.objects.values_list("pk", "minutes")) == [(schedule.pk, 2)]
    assert CompactionSettings.objects.get().enabled


def test_settings_row_ships_with_auto_compaction_off(db):
    row = CompactionSettings.objects.get(pk=1)
    assert (row.enabled, row.threshold, row.interval_minutes, row.concurrency, row.cooldown_minutes) == (
        False,
        0.70,
        5,
        2,
        30,
    )


def test_settings_update_validates_every_value_with_a_clear_message(db, staff_user):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as caught:
        compaction_settings_update(actor=staff_user, threshold=1.5, concurrency=0, min_new_messages=0)
    assert caught.value.message_dict == {
        "threshold": [
            "The threshold is a share of the context window between 0.05 and 0.99 (0.70 means compact at 70% full)."
        ],
        "concurrency": [
            "Concurrency is the number of compactions in flight at once across the deployment, from 1 to 64."
        ],
        "min_new_messages": ["Minimum new messages since the last summary must be from 1 to 100000."],
    }
    with pytest.raises(ValidationError) as caught:
        compaction_settings_update(actor=staff_user, min_new_messages=20)
    assert caught.value.message_dict == {
        "min_new_messages": ["Cannot exceed the minimum messages on the path (10): new messages are part of the path."]
    }
    assert CompactionSettings.objects.get().min_new_messages == 8


def test_timeouts_nest(settings):
    assert conf.timeouts_problems() == []
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "retry": 200}
    assert conf.timeouts_problems() == [
        "the task timeout (300s) must be shorter than the broker's retry (200s), or a running task is handed "
        "to a second worker"
    ]


def test_without_a_cluster_configuration_the_apps_defaults_nest(settings):
    """A host that leaves Q_CLUSTER unset gets the apps' own timeouts, and no warning."""
    del settings.Q_CLUSTER
    assert (conf.TASK_TIMEOUT_SECONDS, conf.RETRY_SECONDS) == (300, 360)
    assert conf.timeouts_problems() == []
    settings.COMPACTION_TASK_TIMEOUT_SECONDS = 400  # named for the apps: it comes before the cluster's
    settings.Q_CLUSTER = {"timeout": 100, "retry": 200}
    assert (conf.TASK_TIMEOUT_SECONDS, conf.RETRY_SECONDS) == (400, 200)


def test_a_worker_drains_only_while_the_longest_model_call_still_fits_its_task_timeout(settings):
    # shipped: 300 s task timeout - 240 s longest model call (60 s x 2 tries x 2 models) - 30 s margin
    assert conf.DRAIN_SECONDS == 30
    settings.COMPACTION_DRAIN_SECONDS = 5
    assert conf.DRAIN_SECONDS == 5
    assert conf.timeouts_problems() == []
    settings.COMPACTION_DRAIN_SECONDS = 120  # a compaction started at 119 s could run until 359 s
    assert conf.DRAIN_SECONDS == 30
    assert conf.timeouts_problems() == [
        "COMPACTION_DRAIN_SECONDS (120s) is longer than the task timeout leaves after the longest model call "
        "and a 30s margin (30s); it is cut to that"
    ]
    settings.CHATCORE_LLM_TIMEOUT_SECONDS = 70
    assert conf.DRAIN_SECONDS == 0


def test_other_users_cursors_do_not_count_as_the_owners_path(db, django_capture_on_commit_callbacks):
    auto_settings()
    channel = pressured_channel()
    visitor = UserFactory()
    chat_services.message_append(channel=channel, user=visitor, role="user", content="Hello from a visitor.")
    report = tick(django_capture_on_commit_callbacks, now=timezone.now() + NOW_PLUS)
    assert report.decisions[0].leaf_id == channel.cursors.get(user=channel.owner).leaf_id


def test_the_settings_are_read_once_inside_a_call_and_afresh_at_each_call(db, django_assert_num_queries):
    """`settings_read_once`: a call's later reads take its first one; the next call reads the row again."""
    selectors.compaction_settings_get()  # the row exists
    with django_assert_num_queries(1), selectors.settings_read_once():
        first = selectors.compaction_settings_get()
        assert selectors.compaction_settings_get() is first
    CompactionSettings.objects.filter(pk=selectors.SETTINGS_PK).update(enabled=True)
    with django_assert_num_queries(1), selectors.settings_read_once():
        assert selectors.compaction_settings_get().enabled
        assert selectors.compaction_settings_get().enabled
    with django_assert_num_queries(2):
        selectors.compaction_settings_get()
        selectors.compaction_settings_get()
