"""Purge through a summary, delete a channel with all its data, staff export."""

import json

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from chatcore import conf as chatcore_conf
from chatcore import data_control, services
from chatcore.context import PURGED_NOTE, context_assemble
from chatcore.errors import Conflict, PermissionDenied
from chatcore.models import AuditEntry, Channel, Cursor, Message, Summary, UsageEntry
from chatcore.permissions import EXPORT_CHANNEL
from chatcore.quotes import QUOTE_REMOVED
from chatcore.tokens import count_tokens
from tests.chatcore.factories import ChannelFactory, UserFactory, build_path


def _client(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def summarized(user):
    """Six messages, a summary through the fourth, and a branch that left after the second."""
    channel = ChannelFactory(owner=user)
    path = build_path(channel, 6)
    summary = services.summary_write(
        channel=channel, through_message=path[3], content="Earlier: words.", created_by=user
    )
    branch = services.message_append(
        channel=channel, user=user, role="user", content="a side question", parent_id=path[1].pk, move_cursor=False
    )
    return channel, path, summary, branch


def test_purge_blanks_the_covered_path_only(user, summarized):
    channel, path, summary, branch = summarized
    before = {m.pk: (m.depth, m.tokens, m.path_tokens, m.parent_id) for m in Message.objects.filter(channel=channel)}
    channel.refresh_from_db()
    pressure = (channel.context_tokens, channel.context_messages, channel.context_ratio)

    response = _client(user).post(
        reverse("chat_api:summary-purge", args=[summary.pk]), {"confirm": True}, format="json"
    )

    assert response.status_code == 200
    assert response.json() == {
        "summary_id": summary.pk,
        "channel_id": channel.pk,
        "purged": 4,
        "already_purged": 0,
        "quotes_kept": 0,
        "quotes_removed": 0,
        "note": "",
    }
    for message in Message.objects.filter(pk__in=[m.pk for m in path[:4]]):
        assert (message.content, message.metadata) == ("", {"purged": True})
        assert message.purged_at is not None
    untouched = Message.objects.filter(pk__in=[path[4].pk, path[5].pk, branch.pk]).order_by("id")
    assert [m.content for m in untouched] == [path[4].content, path[5].content, "a side question"]
    assert all(m.purged_at is None for m in untouched)
    # The tree and its running totals are exactly as before.
    after = {m.pk: (m.depth, m.tokens, m.path_tokens, m.parent_id) for m in Message.objects.filter(channel=channel)}
    assert after == before
    channel.refresh_from_db()
    assert (channel.context_tokens, channel.context_messages, channel.context_ratio) == pressure
    # The active path's context is the summary and what follows: unchanged.
    assembled = context_assemble(channel=channel, user=user)
    assert [m["content"] for m in assembled.messages[1:]] == [path[4].content, path[5].content]
    # A branch that left before the summary sees a note where the originals were.
    on_branch = context_assemble(channel=channel, user=user, leaf=branch)
    assert [m["content"] for m in on_branch.messages] == [PURGED_NOTE, PURGED_NOTE, "a side question"]
    audit = AuditEntry.objects.get(action="summary.purge")
    assert (audit.actor, audit.actor_label, audit.resource) == (user, f"user:{user.pk}", f"summary:{summary.pk}")
    assert audit.details == {
        "channel": channel.pk,
        "through_message": path[3].pk,
        "purged": 4,
        "already_purged": 0,
        "quotes_kept": 0,
        "quotes_removed": 0,
        "summaries": [summary.pk],
    }


def test_purge_twice_reports_what_was_already_gone(user, summarized):
    channel, path, summary, _ = summarized
    data_control.summary_purge(summary=summary, actor=user, confirm=True)
    later = services.summary_write(
        channel=channel, through_message=path[5], content="Later: more words.", created_by=user
    )
    result = data_control.summary_purge(summary=later, actor=user, confirm=True)
    assert (result.purged_count, result.already_purged) == (2, 4)


@pytest.mark.parametrize("body", [{}, {"confirm": False}, {"confirm": "no"}])
def test_purge_requires_explicit_confirmation(user, summarized, body):
    channel, path, summary, _ = summarized
    response = _client(user).post(reverse("chat_api:summary-purge", args=[summary.pk]), body, format="json")
    assert response.status_code == 400
    payload = response.json()
    assert payload["code"] == "invalid" and set(payload["errors"]) == {"confirm"}
    assert payload["detail"].startswith("confirm: ")
    assert not Message.objects.filter(channel=channel, purged_at__isnull=False).exists()
    assert not AuditEntry.objects.filter(action="summary.purge").exists()


def test_purge_refuses_another_users_summary_as_not_found(other_user, summarized):
    channel, path, summary, _ = summarized
    response = _client(other_user).post(
        reverse("chat_api:summary-purge", args=[summary.pk]), {"confirm": True}, format="json"
    )
    assert response.status_code == 404
    assert response.json() == {"detail": "Summary not found.", "code": "not_found"}
    assert not Message.objects.filter(channel=channel, purged_at__isnull=False).exists()


def test_purge_through_a_reverted_summary_is_a_conflict(user, summarized):
    channel, path, summary, _ = summarized
    services.summary_revert(summary=summary, actor=user)
    response = _client(user).post(
        reverse("chat_api:summary-purge", args=[summary.pk]), {"confirm": True}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["code"] == "summary_reverted"
    assert not Message.objects.filter(channel=channel, purged_at__isnull=False).exists()


def test_a_summary_whose_originals_were_purged_cannot_be_reverted(user, summarized):
    channel, path, summary, _ = summarized
    data_control.summary_purge(summary=summary, actor=user, confirm=True)
    with pytest.raises(Conflict) as caught:
        services.summary_revert(summary=summary, actor=user)
    assert caught.value.code == "originals_purged"
    summary.refresh_from_db()
    assert summary.reverted_at is None


def test_delete_with_purge_removes_the_channel_and_everything_in_it(user, summarized, chat_model):
    channel, path, summary, _ = summarized
    keep = ChannelFactory(owner=user)
    kept = build_path(keep, 2)
    _client(user).post(reverse("chat_api:reply", args=[channel.pk]), {"content": "one more"}, format="json")
    usage_ids = list(UsageEntry.objects.filter(channel=channel).values_list("pk", flat=True))
    assert usage_ids

    response = _client(user).delete(reverse("chat_api:channel", args=[channel.pk]) + "?purge=true")

    assert response.status_code == 204
    assert not Channel.objects.filter(pk=channel.pk).exists()
    assert not Message.objects.filter(channel_id=channel.pk).exists()
    assert not Summary.objects.filter(channel_id=channel.pk).exists()
    assert not Cursor.objects.filter(channel_id=channel.pk).exists()
    assert list(UsageEntry.objects.filter(pk__in=usage_ids).values_list("channel", flat=True)) == [None] * len(
        usage_ids
    )
    audit = AuditEntry.objects.get(action="channel.purge")
    assert (audit.actor, audit.resource, audit.details) == (
        user,
        f"channel:{channel.pk}",
        {"messages": 9, "summaries": 1},
    )
    assert list(Message.objects.filter(channel=keep).order_by("id")) == kept


def test_delete_without_purge_only_hides(user, summarized):
    channel, *_ = summarized
    assert _client(user).delete(reverse("chat_api:channel", args=[channel.pk])).status_code == 204
    channel.refresh_from_db()
    assert channel.deleted_at is not None
    assert Message.objects.filter(channel=channel).count() == 7


def test_delete_with_an_unclear_purge_flag_is_refused(user, summarized):
    channel, *_ = summarized
    response = _client(user).delete(reverse("chat_api:channel", args=[channel.pk]) + "?purge=maybe")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "purge: purge must be true or false.",
        "code": "invalid",
        "errors": {"purge": ["purge must be true or false."]},
    }
    channel.refresh_from_db()
    assert channel.deleted_at is None


def test_staff_export_has_every_branch_and_summary(user, staff_user, summarized):
    channel, path, summary, branch = summarized
    services.summary_revert(summary=summary, actor=user)

    response = _client(staff_user).get(reverse("chat_api:channel-export", args=[channel.pk]))

    assert response.status_code == 200
    document = response.json()
    assert set(document) == {"format", "exported_at", "channel", "messages", "summaries", "cursors"}
    assert document["format"] == "compaction-channel-export/1"
    assert document["channel"]["id"] == channel.pk and document["channel"]["owner_id"] == user.pk
    assert [m["id"] for m in document["messages"]] == [m.pk for m in path] + [branch.pk]
    assert document["messages"][4] == {
        "id": path[4].pk,
        "parent_id": path[3].pk,
        "role": "user",
        "content": path[4].content,
        "metadata": {},
        "author_id": user.pk,
        "created_at": path[4].created_at.isoformat(),
        "depth": 4,
        "tokens": path[4].tokens,
        "purged_at": None,
    }
    assert [(s["id"], s["content"], s["reverted_at"] is not None) for s in document["summaries"]] == [
        (summary.pk, "Earlier: words.", True)
    ]
    assert document["cursors"] == [{"user_id": user.pk, "leaf_id": path[5].pk, "summary_id": None}]
    audit = AuditEntry.objects.get(action="channel.export")
    assert (audit.actor, audit.details) == (staff_user, {"messages": 7, "summaries": 1})


EXPORT_PERMISSION_MISSING = (
    "Only staff holding the permission “Can export any person's channel with every message” "
    "(chatcore.export_channel) can export any person's channel in full; "
    "a superuser grants permissions in the admin (Users or Groups)."
)


def test_the_full_export_needs_staff_with_the_export_permission(user, summarized):
    channel, *_ = summarized
    url = reverse("chat_api:channel-export", args=[channel.pk])
    owner = _client(user).get(url)
    assert owner.status_code == 403
    assert owner.json() == {"detail": "Only staff can export any person's channel in full.", "code": "forbidden"}
    assert _client().get(url).status_code in {401, 403}
    bare = _client(UserFactory(is_staff=True)).get(url)
    missing = {"detail": EXPORT_PERMISSION_MISSING, "code": "forbidden", "permissions": [EXPORT_CHANNEL]}
    assert (bare.status_code, bare.json()) == (403, missing)
    not_staff = _client(UserFactory(permissions=[EXPORT_CHANNEL])).get(url)
    assert not_staff.status_code == 403
    assert not AuditEntry.objects.filter(action="channel.export").exists()

    exporter = UserFactory(is_staff=True, permissions=[EXPORT_CHANNEL])
    response = _client(exporter).get(url)
    assert response.status_code == 200 and response.json()["channel"]["id"] == channel.pk
    assert AuditEntry.objects.get(action="channel.export").actor == exporter


def test_the_export_service_refuses_without_the_permission(summarized):
    channel, *_ = summarized
    for actor in (None, channel.owner, UserFactory(is_staff=True, permissions=["chatcore.view_channel"])):
        with pytest.raises(PermissionDenied):
            data_control.channel_export(channel=channel, actor=actor)
    assert not AuditEntry.objects.filter(action="channel.export").exists()


def test_export_of_a_missing_channel_is_not_found(staff_user):
    response = _client(staff_user).get(reverse("chat_api:channel-export", args=[999_999]))
    assert response.status_code == 404
    assert response.json() == {"detail": "Channel not found.", "code": "not_found"}


def test_admin_action_exports_json(client, staff_user, summarized):
    channel, path, *_ = summarized
    client.force_login(staff_user)
    response = client.post(
        reverse("admin:chatcore_channel_changelist"), {"action": "export_json", "_selected_action": [channel.pk]}
    )
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="channels-export.json"'
    documents = json.loads(response.content)
    assert [d["channel"]["id"] for d in documents] == [channel.pk]
    assert len(documents[0]["messages"]) == 7


def test_admin_export_action_needs_the_export_permission(client, summarized):
    """Staff who may see the channel list but not export: the action is not offered, and posting it anyway
    exports nothing (Django answers "No action selected" on the list)."""
    channel, *_ = summarized
    client.force_login(UserFactory(is_staff=True, permissions=["chatcore.view_channel"]))
    changelist = reverse("admin:chatcore_channel_changelist")
    assert 'value="export_json"' not in client.get(changelist).content.decode()
    response = client.post(changelist, {"action": "export_json", "_selected_action": [channel.pk]})
    assert response.get("Content-Disposition") is None
    assert not AuditEntry.objects.filter(action="channel.export").exists()

    client.force_login(UserFactory(is_staff=True, permissions=["chatcore.view_channel", EXPORT_CHANNEL]))
    assert 'value="export_json"' in client.get(changelist).content.decode()
    response = client.post(changelist, {"action": "export_json", "_selected_action": [channel.pk]})
    assert response["Content-Disposition"] == 'attachment; filename="channels-export.json"'


def test_admin_delete_purges_with_an_audit_row(client, staff_user, summarized):
    channel, *_ = summarized
    client.force_login(staff_user)
    response = client.post(reverse("admin:chatcore_channel_delete", args=[channel.pk]), {"post": "yes"})
    assert response.status_code == 302
    assert not Channel.objects.filter(pk=channel.pk).exists()
    assert not Message.objects.filter(channel_id=channel.pk).exists()
    assert AuditEntry.objects.get(action="channel.purge").actor == staff_user


@pytest.fixture
def compacted(user):
    """A channel compacted by the offline summarizer, whose summary quotes its messages word for word."""
    from compaction.services import channel_compact
    from tests.compaction.factories import converse

    channel = ChannelFactory(owner=user)
    messages = converse(channel, 14)
    summary = channel_compact(channel=channel, actor=user, keep_recent=4).summary
    covered = [m.content for m in messages if m.depth <= summary.through_message.depth]
    return channel, summary, covered


def _sentences(texts: list[str]) -> list[str]:
    """The originals' sentences of six words or more: none may be left in a summary whose quotes were purged."""
    return [s.strip() for text in texts for s in text.split(".") if len(s.split()) >= 6]


def _pressure_is_consistent(channel: Channel, summary: Summary) -> None:
    channel.refresh_from_db()
    leaf = Cursor.objects.get(channel=channel, user=channel.owner).leaf
    assert channel.context_tokens == leaf.path_tokens - summary.through_message.path_tokens + summary.tokens


def test_a_purge_says_the_summary_keeps_their_words_and_blanks_them_on_request(user, compacted):
    channel, summary, covered = compacted
    url = reverse("chat_api:summary-purge", args=[summary.pk])
    text, extracts = summary.content, summary.extracts
    assert any(sentence in text for sentence in _sentences(covered))

    first = _client(user).post(url, {"confirm": True}, format="json")
    assert first.status_code == 200
    kept = first.json()["quotes_kept"]
    assert kept > 5
    assert first.json() == {
        "summary_id": summary.pk,
        "channel_id": channel.pk,
        "purged": len(covered),
        "already_purged": 0,
        "quotes_kept": kept,
        "quotes_removed": 0,
        "note": f"The summaries of these messages quote {kept} passages of them word for word; they stay unless you "
        "also send quotes=true, which blanks them in the summaries (each says where).",
    }
    summary.refresh_from_db()
    assert (summary.content, summary.extracts, summary.quotes_purged_at) == (text, extracts, None)
    assert summary.purged_quotes  # where they are, for a later request: the originals are gone by then

    second = _client(user).post(url, {"confirm": True, "quotes": True}, format="json")
    assert second.status_code == 200
    assert second.json() | {"note": ""} == first.json() | {
        "purged": 0,
        "already_purged": len(covered),
        "quotes_kept": 0,
        "quotes_removed": kept,
        "note": "",
    }
    assert second.json()["note"] == (
        f"{kept} passages of the summaries quoted the purged messages and were blanked; each summary says where."
    )
    summary.refresh_from_db()
    assert not [sentence for sentence in _sentences(covered) if sentence in summary.content]
    assert not [s for s in _sentences(covered) if any(s in item for item in summary.extracts["decisions"])]
    assert QUOTE_REMOVED in summary.content and summary.content.endswith("were removed where marked.]")
    assert "passages of this summary and" in summary.content.splitlines()[-1]
    assert (summary.purged_quotes, summary.quotes_purged_at is not None) == ({}, True)
    assert summary.tokens == count_tokens(summary.content) + chatcore_conf.MESSAGE_OVERHEAD_TOKENS
    _pressure_is_consistent(channel, summary)
    audits = list(AuditEntry.objects.filter(action="summary.purge").order_by("pk").values_list("details", flat=True))
    assert [(a["quotes_kept"], a["quotes_removed"], a["summaries"]) for a in audits] == [
        (kept, 0, [summary.pk]),
        (0, kept, [summary.pk]),
    ]


def test_the_confirmation_offers_to_purge_the_quotes_and_nothing_is_written(user, compacted):
    channel, summary, covered = compacted
    body = {"confirm": False, "quotes": True}
    response = _client(user).post(reverse("chat_api:summary-purge", args=[summary.pk]), body, format="json")
    assert response.status_code == 400
    detail = response.json()["errors"]["confirm"][0]
    assert detail.startswith("Purging cannot be undone: send confirm=true to go ahead. The summaries of these")
    assert "send quotes=true, which blanks them in the summaries" in detail
    summary.refresh_from_db()
    assert (summary.purged_quotes, summary.quotes_purged_at) == ({}, None)
    assert not Message.objects.filter(channel=channel, purged_at__isnull=False).exists()


def test_every_summary_of_the_path_has_its_quotes_blanked_in_one_step(user):
    """An iterative update keeps the earlier summary (and a reverted one stays a row): all of them quote the
    purged messages, and all are blanked when asked, each saying so."""
    from compaction.services import channel_compact
    from tests.compaction.factories import converse

    channel = ChannelFactory(owner=user)
    messages = converse(channel, 14)
    reverted = channel_compact(channel=channel, actor=user, keep_recent=8).summary
    services.summary_revert(summary=reverted, actor=user)
    earlier = channel_compact(channel=channel, actor=user, keep_recent=8).summary
    messages += converse(channel, 8, start=14)
    latest = channel_compact(channel=channel, actor=user, keep_recent=4).summary
    assert latest.previous_id == earlier.pk
    covered = [m.content for m in messages if m.depth <= latest.through_message.depth]

    result = data_control.summary_purge(summary=latest, actor=user, confirm=True, quotes=True)

    assert (result.quotes_kept, result.purged_count) == (0, len(covered)) and result.quotes_removed > 10
    for row in Summary.objects.filter(pk__in=[reverted.pk, earlier.pk, latest.pk]):
        assert not [sentence for sentence in _sentences(covered) if sentence in row.content], row
        assert row.quotes_purged_at is not None and row.content.endswith("removed where marked.]")
    _pressure_is_consistent(channel, Summary.objects.get(pk=latest.pk))
