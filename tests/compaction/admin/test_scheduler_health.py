"""The settings page's scheduler health: the scanner's last run and duration, the queue, a stale warning."""

import datetime
import uuid

import pytest
from django.urls import reverse
from django.utils import timezone
from django_q.models import Task

from compaction.observability.scheduler import scheduler_health
from compaction.scanner.selectors import compaction_settings_get
from compaction.scanner.settings import scan_schedule_sync

pytestmark = pytest.mark.django_db

WARNING = "No scan for 3 intervals (15 minutes): is the task cluster (manage.py qcluster) running?"


def _ran(*, minutes_ago: float, seconds: float, success: bool = True) -> None:
    schedule, _ = scan_schedule_sync(settings=compaction_settings_get())
    started = timezone.now() - datetime.timedelta(minutes=minutes_ago)
    Task.objects.create(
        id=uuid.uuid4().hex,
        name=f"scan-{minutes_ago}",
        func=schedule.func,
        started=started,
        stopped=started + datetime.timedelta(seconds=seconds),
        success=success,
    )


def _page(client) -> str:
    row = compaction_settings_get()
    response = client.get(reverse("admin:compaction_compactionsettings_change", args=[row.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_a_scanner_that_never_ran_is_a_warning(client, staff_user):
    client.force_login(staff_user)
    page = _page(client)
    assert "The scanner has not run yet. Tasks waiting in the queue: 0." in page
    assert WARNING in page


def test_a_recent_run_shows_when_and_how_long_without_a_warning(client, staff_user):
    _ran(minutes_ago=20, seconds=2.0)
    _ran(minutes_ago=1, seconds=0.25)
    client.force_login(staff_user)
    page = _page(client)
    health = scheduler_health()
    when = f"{timezone.localtime(health.last_started):%Y-%m-%d %H:%M:%S}"
    assert f"The scanner last ran {when}, took 0.25 s. Tasks waiting in the queue: 0." in page
    assert WARNING not in page
    assert (health.last_seconds, health.last_success, health.queued, health.stale) == (0.25, True, 0, False)


def test_no_run_for_three_intervals_is_a_warning(client, staff_user):
    _ran(minutes_ago=16, seconds=0.5, success=False)
    client.force_login(staff_user)
    page = _page(client)
    assert "took 0.50 s and failed." in page
    assert WARNING in page
