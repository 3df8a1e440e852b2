"""The admin's actions and custom views ask for the permission of what they do, not only for staff: staff who
may see a list cannot change, revert, branch, export, compact or revoke through it."""

import pytest
from django.test import Client

from chatcore.api_tokens import api_token_create
from chatcore.models import ApiToken, AuditEntry, Channel, Summary
from compaction.models import CompactionProfile
from compaction.services import channel_compact
from tests.chatcore.factories import ChannelFactory, UserFactory
from tests.compaction.factories import CompactionProfileFactory, converse


def _viewer(*permissions: str) -> Client:
    client = Client()
    client.force_login(UserFactory(is_staff=True, permissions=list(permissions)))
    return client


def _offered(client: Client, url: str) -> set[str]:
    page = client.get(url).content.decode()
    return {
        action
        for action in (
            "revert_selected",
            "branch_from_summary",
            "compact_now",
            "export_json",
            "reset_to_shipped",
            "duplicate",
            "delete_selected",
        )
        if f'value="{action}"' in page
    }


def _post_action(client: Client, url: str, action: str, ids: list[int]):
    return client.post(url, {"action": action, "_selected_action": [str(i) for i in ids], "confirmed": "yes"})


@pytest.fixture
def summarized(db):
    channel = ChannelFactory(title="Someone's channel")
    converse(channel, 12)
    return channel, channel_compact(channel=channel, actor=channel.owner, keep_recent=3).summary


def test_summary_actions_need_change_summary(summarized):
    channel, summary = summarized
    url = "/admin/chatcore/summary/"
    viewer = _viewer("chatcore.view_summary")
    assert _offered(viewer, url) == set()
    for action in ("revert_selected", "branch_from_summary"):
        _post_action(viewer, url, action, [summary.pk])
    summary.refresh_from_db()
    assert summary.reverted_at is None and not Channel.objects.filter(branched_from=channel).exists()

    changer = _viewer("chatcore.view_summary", "chatcore.change_summary")
    assert _offered(changer, url) == {"revert_selected", "branch_from_summary"}
    assert changer.get(f"{url}{summary.pk}/change/").status_code == 200  # still read-only: no edits of a summary
    assert changer.post(f"{url}{summary.pk}/change/", {"content": "Rewritten."}).status_code == 403
    _post_action(changer, url, "revert_selected", [summary.pk])
    summary.refresh_from_db()
    assert summary.reverted_at is not None


def test_compact_now_needs_change_channel(db):
    channel = ChannelFactory()
    converse(channel, 12)
    url = "/admin/chatcore/channel/"
    viewer = _viewer("chatcore.view_channel")
    assert _offered(viewer, url) == set()
    _post_action(viewer, url, "compact_now", [channel.pk])
    assert not Summary.objects.exists()
    changer = _viewer("chatcore.view_channel", "chatcore.change_channel")
    assert _offered(changer, url) == {"compact_now"}
    _post_action(changer, url, "compact_now", [channel.pk])
    assert Summary.objects.filter(channel=channel).count() == 1


def test_revoking_a_token_needs_delete_token(db):
    token, _key = api_token_create(user=UserFactory(), name="a script")
    url = "/admin/chatcore/apitoken/"
    viewer = _viewer("chatcore.view_apitoken")
    assert _offered(viewer, url) == set()
    assert viewer.post(f"{url}{token.pk}/delete/", {"post": "yes"}).status_code == 403
    _post_action(viewer, url, "delete_selected", [token.pk])
    assert ApiToken.objects.filter(pk=token.pk).exists()
    revoker = _viewer("chatcore.view_apitoken", "chatcore.delete_apitoken")
    assert revoker.post(f"{url}{token.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not ApiToken.objects.filter(pk=token.pk).exists()
    assert AuditEntry.objects.filter(action="token.revoke").count() == 1


def test_profile_actions_and_import_need_their_permissions(db):
    url = "/admin/compaction/compactionprofile/"
    brief = CompactionProfile.objects.get(slug="brief")
    CompactionProfile.objects.filter(pk=brief.pk).update(keep_recent=1)
    viewer = _viewer("compaction.view_compactionprofile")
    assert _offered(viewer, url) == {"export_json"}
    assert "Import JSON" not in viewer.get(url).content.decode()
    assert viewer.get(f"{url}import/").status_code == 403
    for action in ("reset_to_shipped", "duplicate"):
        _post_action(viewer, url, action, [brief.pk])
    assert CompactionProfile.objects.get(pk=brief.pk).keep_recent == 1
    assert not CompactionProfile.objects.filter(slug="brief-copy").exists()

    adder = _viewer("compaction.view_compactionprofile", "compaction.add_compactionprofile")
    assert _offered(adder, url) == {"export_json", "duplicate"}
    assert adder.get(f"{url}import/").status_code == 403  # an import also changes profiles
    _post_action(adder, url, "duplicate", [brief.pk])
    assert CompactionProfile.objects.filter(slug="brief-copy").exists()

    custom = CompactionProfileFactory()
    importer = _viewer(*(f"compaction.{p}_compactionprofile" for p in ("view", "add", "change")))
    assert _offered(importer, url) == {"export_json", "duplicate", "reset_to_shipped"}
    assert "Import JSON" in importer.get(url).content.decode()
    assert importer.get(f"{url}import/").status_code == 200
    assert importer.post(f"{url}{custom.pk}/delete/", {"post": "yes"}).status_code == 403
    assert CompactionProfile.objects.filter(pk=custom.pk).exists()
