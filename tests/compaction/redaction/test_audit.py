"""The secrets hidden from every message of a compaction are counted by kind in
the result (service and API body), in the audit row and in the admin's audit list."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from chatcore import services as chat_services
from chatcore.models import AuditEntry
from compaction.services import channel_compact
from tests.chatcore.factories import ChannelFactory
from tests.compaction.factories import converse

EXPECTED = {"aws_access_key": 2, "password": 1, "payment_card": 1}


def _channel_with_secrets(user):
    channel = ChannelFactory(owner=user)
    converse(channel, 2)
    contents = [
        "the deploy key is AKIAIOSFODNN7EXAMPLE, rotate it",
        "and the old one AKIAI44QH8DHBEXAMPLE too; DB_PASSWORD=Sup3r$ecret!",
        "refund the card 4111 1111 1111 1111 please",
    ]
    for index, content in enumerate(contents):
        role = "user" if index % 2 == 0 else "assistant"
        chat_services.message_append(channel=channel, user=user, role=role, content=content)
    converse(channel, 6, start=10)
    return channel


def test_counts_of_every_message_reach_the_result_and_the_audit_row(user):
    channel = _channel_with_secrets(user)
    result = channel_compact(channel=channel, actor=user, keep_recent=2)
    assert result.model == "offline"
    assert result.redactions == EXPECTED
    entry = AuditEntry.objects.get(action="summary.compact")
    assert entry.details["redactions"] == EXPECTED
    assert "AKIA" not in result.summary.content


def test_counts_are_in_the_api_body(user):
    channel = _channel_with_secrets(user)
    api = APIClient()
    api.force_authenticate(user)
    response = api.post(f"/api/channels/{channel.pk}/compact/", {"keep_recent": 2}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["redactions"] == EXPECTED
    assert AuditEntry.objects.get(action="summary.compact").details["redactions"] == EXPECTED


def test_counts_show_in_the_admin_audit_list(user, staff_user):
    channel_compact(channel=_channel_with_secrets(user), actor=user, keep_recent=2)
    client = Client()
    client.force_login(staff_user)
    response = client.get("/admin/chatcore/auditentry/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "Secrets redacted" in page
    assert "aws_access_key × 2, password × 1, payment_card × 1" in page


@pytest.mark.parametrize("details", [{}, {"redactions": {}}, {"redactions": "not a dict"}])
def test_admin_shows_a_dash_without_counts(details, staff_user):
    from chatcore.admin import AuditEntryAdmin

    entry = AuditEntry(action="x", resource="y", details=details)
    assert AuditEntryAdmin.redactions(None, entry) == "—"
