"""The admin lists staff read at 1280 px: chosen columns, percentages,
usernames, formatted extracts, filters and dates; destructive or resetting
actions ask first."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import Client
from django.utils import timezone

from chatcore import services
from chatcore.models import AuditEntry, Message, Summary, UsageEntry
from compaction.models import CompactionProfile
from tests.chatcore.factories import ChannelFactory, UserFactory, build_path


@pytest.fixture
def staff(db):
    client = Client()
    user = UserFactory(is_staff=True, is_superuser=True, username="ops-anna")
    client.force_login(user)
    client.user = user
    return client


@pytest.fixture
def summary(db, staff):
    channel = ChannelFactory(owner=staff.user, title="Ledger migration")
    messages = build_path(channel, 6)
    summary = services.summary_write(
        channel=channel,
        through_message=messages[3],
        content="Earlier: a start.",
        created_by=staff.user,
        extracts={"decisions": ["Ship on Friday."], "files": ["src/a.py"], "tools": {"grep": 3}, "open_questions": []},
    )
    channel.context_ratio = 0.8944
    channel.save(update_fields=["context_ratio"])
    UsageEntry.objects.create(channel=channel, user=staff.user, role="utility", model="offline", duration_ms=1234)
    return summary


def test_channel_list_shows_percentages_and_usernames(staff, summary):
    page = staff.get("/admin/chatcore/channel/").content.decode()
    assert "89.4%" in page and "0.8944" not in page
    assert "ops-anna" in page
    assert "?last_activity_at__year=" in page  # the date drill-down


def test_audit_list_names_the_actor(staff, summary):
    AuditEntry.objects.create(actor=staff.user, actor_label=f"user:{staff.user.pk}", action="x.y", resource="r:1")
    page = staff.get("/admin/chatcore/auditentry/").content.decode()
    assert "ops-anna" in page and f"user:{staff.user.pk}" not in page


def test_summary_page_formats_extracts(staff, summary):
    page = staff.get(f"/admin/chatcore/summary/{summary.pk}/change/").content.decode()
    assert "<h4>Decisions</h4><ul><li>Ship on Friday.</li></ul>" in page
    assert "<code>grep</code> × 3" in page
    assert '{"decisions"' not in page


def test_usage_list_formats(staff, summary):
    page = staff.get("/admin/chatcore/usageentry/").content.decode()
    assert "1.23 s" in page and "0 + 0" in page


def test_revert_action_asks_first(staff, summary):
    data = {"action": "revert_selected", ACTION_CHECKBOX_NAME: [summary.pk], "index": 0}
    response = staff.post("/admin/chatcore/summary/", data)
    assert response.status_code == 200 and "Revert these summaries?" in response.content.decode()
    summary.refresh_from_db()
    assert summary.reverted_at is None
    response = staff.post("/admin/chatcore/summary/", {**data, "confirmed": "yes"}, follow=True)
    assert "Reverted 1 summary." in response.content.decode()
    summary.refresh_from_db()
    assert summary.reverted_at is not None


def test_revert_action_reports_a_refused_summary_and_reverts_the_others(staff, summary):
    other_channel = ChannelFactory(owner=staff.user, title="Purged history")
    other_messages = build_path(other_channel, 6)
    refused = services.summary_write(
        channel=other_channel, through_message=other_messages[3], content="Earlier: gone.", created_by=staff.user
    )
    Message.objects.filter(pk=other_messages[3].pk).update(purged_at=timezone.now())
    data = {"action": "revert_selected", ACTION_CHECKBOX_NAME: [summary.pk, refused.pk], "index": 0, "confirmed": "yes"}
    page = staff.post("/admin/chatcore/summary/", data, follow=True).content.decode()
    assert "Reverted 1 summary." in page
    assert "cannot be reverted" in page
    summary.refresh_from_db()
    refused.refresh_from_db()
    assert summary.reverted_at is not None and refused.reverted_at is None


def test_reset_to_shipped_asks_first(staff):
    profile = CompactionProfile.objects.get(slug="structured")
    shipped = profile.system_prompt
    CompactionProfile.objects.filter(pk=profile.pk).update(system_prompt="Changed by hand.")
    data = {"action": "reset_to_shipped", ACTION_CHECKBOX_NAME: [profile.pk], "index": 0}
    response = staff.post("/admin/compaction/compactionprofile/", data)
    page = response.content.decode()
    assert response.status_code == 200 and "Reset these profiles to their shipped text?" in page
    assert "Yes, I’m sure" in page
    profile.refresh_from_db()
    assert profile.system_prompt == "Changed by hand."
    staff.post("/admin/compaction/compactionprofile/", {**data, "confirmed": "yes"})
    profile.refresh_from_db()
    assert profile.system_prompt == shipped


def test_summary_list_columns(staff, summary):
    page = staff.get("/admin/chatcore/summary/").content.decode()
    assert f"{summary.tokens_before:,} → {summary.tokens_after:,}" in page
    assert Summary.objects.count() == 1
