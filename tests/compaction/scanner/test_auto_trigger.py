"""The event trigger, the settings card in the admin, and the commands."""

import datetime
import json

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from django.utils import timezone
from django_q.models import Schedule

from chatcore import replies as chat_replies
from chatcore.models import AuditEntry, Summary
from compaction import conf
from compaction.models import CompactionLease, CompactionSettings
from compaction.scanner.services import SETTINGS_FIELDS, auto_compaction_drain, compaction_settings_update
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory
from tests.compaction.scanning import auto_settings, owner_create, pressured_channel, queued_tasks


@pytest.fixture
def chat_channel(db, chat_model):
    return ChannelFactory(owner=owner_create(), model=chat_model)


def reply(channel, capture):
    with capture(execute=True):
        return chat_replies.reply_generate(channel=channel, user=channel.owner, content="Next question, please.")


@pytest.mark.parametrize("prompt_tokens, enqueued", [(5_600, True), (5_599, False)])
def test_a_reply_over_the_threshold_enqueues_a_compaction_after_commit(
    chat_channel, llm_server, django_capture_on_commit_callbacks, prompt_tokens, enqueued
):
    auto_settings(threshold=0.70)
    llm_server.script(Reply(content="An answer.", prompt_tokens=prompt_tokens))

    stored = reply(chat_channel, django_capture_on_commit_callbacks)

    assert stored.content == "An answer."
    assert stored.metadata["usage"]["input_tokens"] == prompt_tokens
    assert queued_tasks() == ([(conf.AUTO_COMPACT_TASK, (chat_channel.pk, None))] if enqueued else [])
    assert not Summary.objects.exists()  # the reply did not wait for a compaction


@pytest.mark.parametrize("case", ["ephemeral", "opted_out", "disabled", "own_threshold_higher"])
def test_the_event_trigger_respects_ephemeral_opt_out_kill_switch_and_own_threshold(
    db, chat_model, llm_server, django_capture_on_commit_callbacks, case
):
    auto_settings(enabled=case != "disabled")
    channel_settings = {
        "opted_out": {"auto_compaction": False},
        "own_threshold_higher": {"compaction_threshold": 0.9},
    }.get(case, {})
    channel = ChannelFactory(
        owner=owner_create(), model=chat_model, ephemeral=case == "ephemeral", settings=channel_settings
    )
    llm_server.script(Reply(content="An answer.", prompt_tokens=7_000))

    reply(channel, django_capture_on_commit_callbacks)

    assert queued_tasks() == []


def test_the_event_trigger_uses_the_own_lower_threshold(db, chat_model, llm_server, django_capture_on_commit_callbacks):
    auto_settings(threshold=0.9)
    channel = ChannelFactory(owner=owner_create(), model=chat_model, settings={"compaction_threshold": 0.5})
    llm_server.script(Reply(content="An answer.", prompt_tokens=4_000))
    reply(channel, django_capture_on_commit_callbacks)
    assert queued_tasks() == [(conf.AUTO_COMPACT_TASK, (channel.pk, None))]


def _ago(**delta) -> datetime.datetime:
    return timezone.now() - datetime.timedelta(**delta)


# Each state's lease fields as offsets from the test's own start (a timestamp taken when the module is
# collected is minutes old by the time a long suite reaches these tests), and whether a reply enqueues.
LEASE_STATES = {
    "held": ({"holder": "web-1", "expires_at": {"minutes": -5}}, False),
    "in_flight": ({"last_auto_at": {"seconds": 30}}, False),
    "cooling_down": (
        {"last_auto_at": {"minutes": 5}, "last_finished_at": {"minutes": 4}, "last_outcome": "done"},
        False,
    ),
    "cooled_down": (
        {"last_auto_at": {"hours": 1}, "last_finished_at": {"hours": 1}, "last_outcome": "done"},
        True,
    ),
    "abandoned": ({"last_auto_at": {"hours": 1}}, True),
    "failed_on_an_older_leaf": (
        {"last_auto_at": {"minutes": 5}, "last_finished_at": {"minutes": 4}, "last_outcome": "failed"},
        True,
    ),
    "expired": ({"holder": "web-1", "expires_at": {"minutes": 1}}, True),
}


@pytest.mark.parametrize("state", LEASE_STATES)
def test_the_event_trigger_enqueues_nothing_while_the_lease_says_wait(
    chat_channel, llm_server, django_capture_on_commit_callbacks, state
):
    """A channel compacting or cooling down is left alone: its replies would each cost a task that
    the attempt then skips (798 of them in a 2,000-turn gateway run)."""
    auto_settings(threshold=0.70, cooldown_minutes=30)
    fields, enqueued = LEASE_STATES[state]
    values = {name: _ago(**value) if isinstance(value, dict) else value for name, value in fields.items()}
    CompactionLease.objects.create(channel=chat_channel, attempt_leaf_id=0, **values)
    llm_server.script(Reply(content="An answer.", prompt_tokens=7_000))

    reply(chat_channel, django_capture_on_commit_callbacks)

    assert queued_tasks() == ([(conf.AUTO_COMPACT_TASK, (chat_channel.pk, None))] if enqueued else [])


def test_one_event_task_per_channel_waits_in_the_broker_until_it_starts(
    chat_channel, llm_server, django_capture_on_commit_callbacks
):
    """Replies of a channel waiting for a slot queue no second task while the first waits for a worker;
    once it has started (and skipped, here), the next reply over the threshold queues one again."""
    auto_settings(threshold=0.70)
    llm_server.script(*[Reply(content="An answer.", prompt_tokens=7_000)] * 3)

    reply(chat_channel, django_capture_on_commit_callbacks)
    reply(chat_channel, django_capture_on_commit_callbacks)
    assert queued_tasks() == [(conf.AUTO_COMPACT_TASK, (chat_channel.pk, None))]

    with django_capture_on_commit_callbacks(execute=True):
        outcome = auto_compaction_drain(channel_id=chat_channel.pk, ticket=None, seconds=0)[0]
    assert outcome.outcome == "skipped"  # a fresh channel: too few messages
    assert not CompactionLease.objects.filter(pk=chat_channel.pk, last_auto_at__isnull=False).exists()

    reply(chat_channel, django_capture_on_commit_callbacks)
    assert queued_tasks() == [(conf.AUTO_COMPACT_TASK, (chat_channel.pk, None))] * 2


@override_settings(
    CACHES={"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}},
    CHATCORE_THROTTLE_EXPENSIVE_RATE="",  # the per-person limit counts in the cache too
)
def test_a_cache_that_does_not_answer_does_not_stop_the_event_task(
    chat_channel, llm_server, django_capture_on_commit_callbacks
):
    auto_settings(threshold=0.70)
    llm_server.script(*[Reply(content="An answer.", prompt_tokens=7_000)] * 2)

    reply(chat_channel, django_capture_on_commit_callbacks)
    reply(chat_channel, django_capture_on_commit_callbacks)

    assert queued_tasks() == [(conf.AUTO_COMPACT_TASK, (chat_channel.pk, None))] * 2


# --- admin ------------------------------------------------------------------


@pytest.fixture
def staff_client(staff_user):
    client = Client()
    client.force_login(staff_user)
    return client


def _form(**overrides) -> dict:
    row = CompactionSettings.objects.get(pk=1)
    data = {name: getattr(row, name) for name in SETTINGS_FIELDS if name != "enabled"}
    if row.enabled:
        data["enabled"] = "on"
    data.update(overrides)
    return data


def test_the_settings_list_opens_the_single_card(staff_client):
    response = staff_client.get("/admin/compaction/compactionsettings/")
    assert response.status_code == 302
    assert response["Location"] == "/admin/compaction/compactionsettings/1/change/"
    page = staff_client.get(response["Location"]).content.decode()
    assert "Auto-compaction" in page
    assert "No schedule yet: run `python manage.py setup_schedules`." in page
    assert "No failures recorded." in page


def test_the_settings_card_shows_clear_field_errors_and_saves_nothing(staff_client):
    response = staff_client.post(
        "/admin/compaction/compactionsettings/1/change/", _form(threshold="1.5", min_new_messages="50", concurrency="0")
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors == {
        "threshold": [
            "The threshold is a share of the context window between 0.05 and 0.99 (0.70 means compact at 70% full)."
        ],
        "concurrency": [
            "Concurrency is the number of compactions in flight at once across the deployment, from 1 to 64."
        ],
    }
    response = staff_client.post("/admin/compaction/compactionsettings/1/change/", _form(min_new_messages="50"))
    assert response.context["adminform"].form.errors == {
        "min_new_messages": ["Cannot exceed the minimum messages on the path (10): new messages are part of the path."]
    }
    row = CompactionSettings.objects.get(pk=1)
    assert (row.threshold, row.min_new_messages, row.concurrency, row.enabled) == (0.70, 8, 2, False)


def test_saving_the_card_goes_through_the_service_and_moves_the_schedule(staff_client, staff_user):
    call_command("setup_schedules")
    response = staff_client.post(
        "/admin/compaction/compactionsettings/1/change/", _form(enabled="on", interval_minutes="12", threshold="0.8")
    )
    assert response.status_code == 302
    row = CompactionSettings.objects.get(pk=1)
    assert (row.enabled, row.interval_minutes, row.threshold) == (True, 12, 0.8)
    assert Schedule.objects.get(name=conf.SCAN_SCHEDULE_NAME).minutes == 12
    audit = AuditEntry.objects.get(action="compaction.settings")
    assert (audit.actor, audit.details) == (staff_user, {"enabled": True, "interval_minutes": 12, "threshold": 0.8})


def test_the_card_and_the_lease_list_show_failures(staff_client):
    channel = pressured_channel(messages=2)
    CompactionLease.objects.create(
        channel=channel, failure_count=3, last_outcome="failed", last_error="The model call failed: HTTP 500"
    )
    page = staff_client.get("/admin/compaction/compactionsettings/1/change/").content.decode()
    assert "3 failure(s) on 1 channel(s)." in page
    assert "The model call failed: HTTP 500" in page
    listing = staff_client.get("/admin/compaction/compactionlease/?last_outcome=failed").content.decode()
    assert "The model call failed: HTTP 500" in listing and channel.title in listing


# --- commands ---------------------------------------------------------------


def test_compaction_scan_prints_candidates_and_decisions(db, capsys):
    auto_settings(idle_minutes=0)
    hot = pressured_channel(messages=13)
    opted_out = pressured_channel(settings={"auto_compaction": False})

    call_command("compaction_scan", "--dry-run", "--json")
    report = json.loads(capsys.readouterr().out)
    assert (report["dry_run"], report["candidates"], report["enqueued"]) == (True, 2, [hot.pk])
    assert [(d["channel_id"], d["action"], d["reason"]) for d in report["decisions"]] == [
        (hot.pk, "would_enqueue", ""),
        (opted_out.pk, "skip", "opted_out"),
    ]
    assert not CompactionLease.objects.exists()

    call_command("compaction_scan")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("2 candidate(s) with pressure >= 0.05; 0 in flight of 10;")
    assert lines[2].split()[0] == str(hot.pk) and lines[2].endswith("enqueued")
    assert lines[3].endswith("skip: opted out")
    assert CompactionLease.objects.filter(pk=hot.pk, last_auto_at__isnull=False).exists()


def test_compaction_scan_says_when_it_is_off(db, capsys):
    call_command("compaction_scan")
    assert capsys.readouterr().out.startswith("Auto-compaction is off: nothing scanned.")


@pytest.mark.parametrize(("prompt_tokens", "statements"), [(5_599, 0), (7_000, 1)])
def test_the_event_trigger_reads_no_settings_after_the_reply_s_commit(
    chat_channel, llm_server, django_capture_on_commit_callbacks, django_assert_num_queries, prompt_tokens, statements
):
    """The settings row comes with the reply's own write (chatcore.signals.ReadAlong): what runs after the commit
    decides on it without a statement of its own (under the threshold: none at all; over it, with the channel
    cooling down: the lease's row alone, and no field of the settings the write left out is loaded)."""
    auto_settings(threshold=0.70, cooldown_minutes=30)
    values = {"last_auto_at": _ago(minutes=5), "last_finished_at": _ago(minutes=4), "last_outcome": "done"}
    CompactionLease.objects.create(channel=chat_channel, attempt_leaf_id=0, **values)
    llm_server.script(Reply(content="An answer.", prompt_tokens=prompt_tokens))
    with django_capture_on_commit_callbacks() as callbacks:
        chat_replies.reply_generate(channel=chat_channel, user=chat_channel.owner, content="Next question, please.")
    with django_assert_num_queries(statements):
        for callback in callbacks:
            callback()
    assert queued_tasks() == []


def test_the_event_trigger_follows_the_settings_as_they_change_between_replies(
    db, chat_model, llm_server, django_capture_on_commit_callbacks
):
    """Each reply decides on the settings as its own write read them: a change made between two replies holds
    for the second (the threshold, the kill switch), in the same process."""
    steps = [
        ({"threshold": 0.70}, True),
        ({"threshold": 0.75}, False),
        ({"threshold": 0.50, "enabled": False}, False),
        ({"threshold": 0.50, "enabled": True}, True),
    ]
    auto_settings()
    for values, enqueued in steps:
        compaction_settings_update(actor=None, **values)
        channel = ChannelFactory(owner=owner_create(), model=chat_model)
        llm_server.script(Reply(content="An answer.", prompt_tokens=5_600))
        reply(channel, django_capture_on_commit_callbacks)
        assert (values, (conf.AUTO_COMPACT_TASK, (channel.pk, None)) in queued_tasks()) == (values, enqueued)


def test_the_event_trigger_reads_the_settings_itself_when_the_reply_was_written_another_way(
    chat_channel, llm_server, django_capture_on_commit_callbacks, monkeypatch
):
    """A reply written row by row reads nothing along: the trigger reads the settings after the commit, as before
    (and makes the row with its defaults when there is none)."""
    from chatcore import statements

    CompactionSettings.objects.all().delete()
    monkeypatch.setattr(statements, "placeable_in_one", lambda *, message, companions: False)
    llm_server.script(Reply(content="An answer.", prompt_tokens=7_000))
    reply(chat_channel, django_capture_on_commit_callbacks)
    assert CompactionSettings.objects.get().enabled is False and queued_tasks() == []
    auto_settings(threshold=0.70)
    llm_server.script(Reply(content="An answer.", prompt_tokens=7_000))
    reply(ChannelFactory(owner=owner_create(), model=chat_channel.model), django_capture_on_commit_callbacks)
    assert len(queued_tasks()) == 1
