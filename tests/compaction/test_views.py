"""The compaction pages through Django's test client: the Summarize & Continue
panel (preview, edit, replace, branch, one click), Undo and channel settings."""

import pytest
from django.test import Client
from django.urls import reverse

from chatcore import services as chatcore_services
from chatcore.models import AuditEntry, Channel, Summary
from compaction.models import CompactionProfile
from tests.chatcore.factories import ChannelFactory, PersonaFactory, UserFactory
from tests.compaction.factories import CompactionProfileFactory, converse

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def channel(user):
    channel = ChannelFactory(owner=user, title="Ledger work")
    converse(channel, 16)
    return channel


def panel_url(channel):
    return reverse("compaction:panel", args=[channel.pk])


def test_panel_lists_global_and_persona_profiles_only(client_user, user):
    persona, other_persona = PersonaFactory(name="Auditor"), PersonaFactory()
    mine = CompactionProfileFactory(name="Audit trail", slug="audit-trail", persona=persona)
    CompactionProfileFactory(name="Not for this one", slug="elsewhere", persona=other_persona)
    channel = ChannelFactory(owner=user, persona=persona)
    response = client_user.get(panel_url(channel))
    assert response.status_code == 200
    body = response.content.decode()
    assert '<h1 id="panel-title">Summarize &amp; Continue</h1>' in body  # the panel as a page of its own
    assert f'<option value="{mine.slug}"' in body and "Audit trail — Auditor" in body
    assert '<option value="">🗂️ Structured (default)</option>' in body
    assert '<option value="structured"' not in body and '<option value="brief" >' in body
    assert "elsewhere" not in body
    partial = client_user.get(panel_url(channel), **HTMX).content.decode()
    assert partial.startswith('<div class="panel" id="panel">')


def test_preview_shows_draft_and_statistics_and_writes_nothing(client_user, channel):
    response = client_user.post(
        panel_url(channel),
        {"action": "preview", "profile": "structured", "keep_recent": "4", "focus": "the ledger"},
        **HTMX,
    )
    assert response.status_code == 200
    body = response.content.decode()
    channel.refresh_from_db()
    assert 'data-testid="stat-messages">16 → 5</dd>' in body
    assert f'data-testid="stat-tokens">{channel.context_tokens:,} → ' in body
    assert "Summarized</dt><dd>12 messages</dd>" in body
    assert '<textarea name="draft"' in body and 'value="replace"' in body and 'value="branch"' in body
    assert 'name="through_message_id" value="' in body
    assert Summary.objects.count() == 0


def _preview(client, channel, **extra):
    response = client.post(
        panel_url(channel), {"action": "preview", "profile": "structured", "keep_recent": "4", **extra}
    )
    form = response.context["form"]
    return {
        "profile": "structured",
        "keep_recent": "4",
        "focus": "",
        "draft": form.initial["draft"],
        "draft_token": form.initial["draft_token"],
        "through_message_id": form.initial["through_message_id"],
    }


def test_replace_with_the_draft_unchanged_is_not_marked_edited(client_user, channel, user):
    data = _preview(client_user, channel)
    as_a_browser_sends_it = data["draft"].replace("\n", "\r\n")
    response = client_user.post(panel_url(channel), {**data, "draft": as_a_browser_sends_it, "action": "replace"})
    assert response.status_code == 302
    assert response["Location"] == reverse("chat:channel", args=[channel.pk])
    summary = Summary.objects.get()
    assert (summary.content, summary.edited, summary.model, summary.created_by, summary.trigger) == (
        data["draft"].strip(),
        False,
        "offline",
        user,
        "manual",
    )
    assert summary.through_message_id == data["through_message_id"]
    page = client_user.get(reverse("chat:channel", args=[channel.pk])).content.decode()
    assert "12 earlier messages summarized</span>" in page
    assert "Summarized 12 messages" in page


def test_the_panel_hands_back_only_the_signed_token(client_user, channel):
    """What the draft is and who wrote it are the server's: the page carries a signed token, not the original text
    or the model's name to be read back."""
    body = client_user.post(panel_url(channel), {"action": "preview", "keep_recent": "4"}).content.decode()
    assert 'name="draft_token" value="' in body
    assert 'name="original"' not in body and 'name="draft_model"' not in body


@pytest.mark.parametrize(
    "claims",
    [
        {"original": "My own words, not the model's.", "draft_model": "offline"},  # the old hidden fields
        {"draft_token": "forged"},
    ],
)
def test_a_persons_text_is_never_stored_as_a_models(client_user, channel, claims):
    data = _preview(client_user, channel)
    data.pop("draft_token")
    mine = "My own words, not the model's."
    response = client_user.post(panel_url(channel), {**data, **claims, "draft": mine, "action": "replace"})
    if "draft_token" in claims:
        assert response.status_code == 400
        assert "This is not a draft token the server gave" in response.content.decode()
        assert Summary.objects.count() == 0
        return
    assert response.status_code == 302
    summary = Summary.objects.get()
    assert (summary.content, summary.model, summary.edited) == (mine, "edited", True)


def test_a_token_of_the_draft_does_not_vouch_for_other_text(client_user, channel):
    data = _preview(client_user, channel)
    client_user.post(panel_url(channel), {**data, "draft": "Rewritten by me.", "action": "replace"})
    summary = Summary.objects.get()
    assert (summary.content, summary.model, summary.edited) == ("Rewritten by me.", "edited", True)


def test_replace_with_an_edited_draft_over_htmx(client_user, channel):
    data = _preview(client_user, channel)
    edited = "## Goal\n- Move the ledger to PostgreSQL 16.\n\n## Open questions\n- Batch at 02:30 UTC?"
    response = client_user.post(panel_url(channel), {**data, "draft": edited, "action": "replace"}, **HTMX)
    assert response.status_code == 200
    assert response["HX-Retarget"] == "#channel-main"
    assert response["HX-Reswap"] == "outerHTML"
    assert response["HX-Trigger"] == "compaction-done"
    body = response.content.decode()
    assert body.startswith('<div id="channel-main"')
    assert "<h2>Open questions</h2>" in body
    assert 'hx-swap-oob="true"' in body
    summary = Summary.objects.get()
    assert (summary.content, summary.edited) == (edited, True)


def test_summarize_now_without_preview(client_user, channel):
    response = client_user.post(panel_url(channel), {"action": "now", "profile": "brief", "keep_recent": ""})
    assert response.status_code == 302
    summary = Summary.objects.get()
    assert (summary.profile_slug, summary.edited, summary.trigger) == ("brief", False, "manual")
    keep = CompactionProfile.objects.get(slug="brief").keep_recent
    assert summary.through_message.depth == 15 - keep
    channel.refresh_from_db()
    assert channel.context_messages == keep


def test_branch_from_an_edited_draft_opens_the_new_channel(client_user, channel, user):
    data = _preview(client_user, channel)
    response = client_user.post(panel_url(channel), {**data, "draft": "Carry this over.", "action": "branch"})
    branch = Channel.objects.exclude(pk=channel.pk).get()
    assert response.status_code == 302
    assert response["Location"] == reverse("chat:channel", args=[branch.pk])
    assert (branch.owner, branch.branched_from, branch.title) == (user, channel, "Ledger work (continued)")
    first, *copies = branch.messages.order_by("depth")
    assert "Carry this over." in first.content
    kept = channel.messages.filter(depth__gt=channel.messages.get(pk=data["through_message_id"]).depth)
    assert [c.metadata["copied_from"]["message"] for c in copies] == list(
        kept.order_by("depth").values_list("pk", flat=True)
    )
    assert len(copies) == 4
    assert Summary.objects.count() == 0
    page = client_user.get(response["Location"]).content.decode()
    source_url = reverse("chat:channel", args=[channel.pk])
    assert f'branched from <a href="{source_url}">“Ledger work”</a></span>' in page
    # The summary is a block of its own: not your message, no Edit, no "no reply yet".
    assert f'<section class="carried-summary" id="m{first.pk}"' in page
    assert f'<a href="{source_url}">“Ledger work”</a> · stands for its first 12 messages · an unsaved draft' in page
    assert "Carry this over." in page and "[Summary of the earlier conversation" not in page
    assert f'action="{reverse("chat:edit", args=[branch.pk, first.pk])}"' not in page
    assert "has no reply yet" not in page
    for copy in copies:
        original = copy.metadata["copied_from"]["message"]
        assert f'id="m{copy.pk}"' in page
        assert f'href="{source_url}#m{original}" title="A copy of message {original}' in page


def test_branch_from_a_stored_summary_links_the_source_and_its_summary(client_user, channel, user):
    from compaction.services import channel_compact, summary_branch

    summary = channel_compact(channel=channel, actor=user, keep_recent=2).summary
    branch = summary_branch(channel=channel, actor=user, summary=summary)
    page = client_user.get(reverse("chat:channel", args=[branch.pk])).content.decode()
    originals = reverse("chat:originals", args=[channel.pk, summary.pk])
    assert f'at <a href="{originals}">summary #{summary.pk}</a></span>' in page
    assert f'· <a href="{originals}">summary #{summary.pk} and its originals</a>' in page
    assert page.count('class="chip chip-muted copied-from"') == 2
    assert client_user.get(originals).status_code == 200


def test_branch_over_htmx_redirects_the_browser(client_user, channel):
    data = _preview(client_user, channel)
    response = client_user.post(panel_url(channel), {**data, "action": "branch"}, **HTMX)
    branch = Channel.objects.exclude(pk=channel.pk).get()
    assert response.status_code == 204
    assert response["HX-Redirect"] == reverse("chat:channel", args=[branch.pk])


def test_too_little_to_compact_is_explained(client_user, user):
    short = ChannelFactory(owner=user)
    converse(short, 3)
    response = client_user.post(panel_url(short), {"action": "preview", "profile": "structured"}, **HTMX)
    assert response.status_code == 422
    body = response.content.decode()
    assert "<strong>Not enough to summarize yet.</strong> Nothing to compact:" in body
    assert Summary.objects.count() == 0


def test_unknown_profile_is_refused(client_user, channel):
    response = client_user.post(panel_url(channel), {"action": "preview", "profile": "nope"})
    assert response.status_code == 400
    assert b"Select a valid choice." in response.content
    assert Summary.objects.count() == 0


def test_undo_reverts_the_summary(client_user, channel, user):
    messages = list(channel.messages.order_by("depth"))
    summary = chatcore_services.summary_write(
        channel=channel, through_message=messages[9], content="Earlier.", created_by=user
    )
    response = client_user.post(reverse("compaction:undo", args=[channel.pk, summary.pk]))
    assert response.status_code == 302
    summary.refresh_from_db()
    assert summary.reverted_at is not None
    assert AuditEntry.objects.filter(action="summary.revert", resource=f"summary:{summary.pk}").exists()
    page = client_user.get(reverse("chat:channel", args=[channel.pk])).content.decode()
    assert "earlier messages summarized" not in page
    assert messages[0].content in page
    assert "Summary undone" in page
    again = client_user.post(reverse("compaction:undo", args=[channel.pk, summary.pk]), **HTMX)
    assert again.status_code == 400
    assert b"already reverted" in again.content


def test_settings_save_through_the_service_validation(client_user, channel):
    address = reverse("compaction:settings", args=[channel.pk])
    page = client_user.get(address)
    assert page.status_code == 200
    assert b'placeholder="70"' in page.content
    response = client_user.post(address, {"auto_compaction": "off", "threshold_percent": "60"})
    assert response.status_code == 302 and response["Location"] == address
    channel.refresh_from_db()
    assert channel.settings == {"auto_compaction": False, "compaction_threshold": 0.6}
    assert b"Settings saved." in client_user.get(address).content

    bad = client_user.post(address, {"auto_compaction": "on", "threshold_percent": "150"})
    assert bad.status_code == 400
    assert b"compaction_threshold must be a number between 0 and 1" in bad.content
    channel.refresh_from_db()
    assert channel.settings == {"auto_compaction": False, "compaction_threshold": 0.6}

    client_user.post(address, {"auto_compaction": "", "threshold_percent": ""})
    channel.refresh_from_db()
    assert channel.settings == {}


STAFF_LINKS = {
    "channel": "/admin/chatcore/channel/",
    "settings": "/admin/compaction/compactionsettings/",
    "dashboard": "/admin/compaction/usagedashboard/",
}


@pytest.mark.parametrize(
    ("permissions", "links"),
    [
        ([], []),
        (["compaction.view_usage_dashboard"], ["dashboard"]),
        (["chatcore.view_channel", "compaction.change_compactionsettings"], ["channel", "settings"]),
    ],
)
def test_the_staff_links_are_those_the_staff_member_may_open(db, permissions, links):
    staff = UserFactory(is_staff=True, permissions=permissions)
    channel = ChannelFactory(owner=staff)
    client = Client()
    client.force_login(staff)
    page = client.get(reverse("compaction:settings", args=[channel.pk])).content.decode()
    assert [name for name, url in STAFF_LINKS.items() if url in page] == links
    assert ("For staff" in page) == bool(links)


def test_other_peoples_channels_are_not_found(client_user, other_user):
    theirs = ChannelFactory(owner=other_user)
    converse(theirs, 12)
    summary = chatcore_services.summary_write(
        channel=theirs, through_message=theirs.messages.order_by("depth")[5], content="Theirs.", created_by=other_user
    )
    assert client_user.get(panel_url(theirs)).status_code == 404
    assert client_user.post(panel_url(theirs), {"action": "now"}).status_code == 404
    assert client_user.post(reverse("compaction:undo", args=[theirs.pk, summary.pk])).status_code == 404
    assert client_user.get(reverse("compaction:settings", args=[theirs.pk])).status_code == 404
    assert (
        client_user.post(reverse("compaction:settings", args=[theirs.pk]), {"auto_compaction": "off"}).status_code
        == 404
    )
    summary.refresh_from_db()
    theirs.refresh_from_db()
    assert (summary.reverted_at, theirs.settings, Summary.objects.count()) == (None, {}, 1)


def test_compaction_forms_need_the_csrf_token(user, channel):
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    summary = chatcore_services.summary_write(
        channel=channel, through_message=channel.messages.order_by("depth")[5], content="Kept.", created_by=user
    )
    assert client.post(panel_url(channel), {"action": "now"}).status_code == 403
    assert client.post(reverse("compaction:undo", args=[channel.pk, summary.pk])).status_code == 403
    assert client.post(reverse("compaction:settings", args=[channel.pk]), {"auto_compaction": "off"}).status_code == 403
    summary.refresh_from_db()
    assert (Summary.objects.count(), summary.reverted_at) == (1, None)
    assert CompactionProfile.objects.filter(slug="structured").exists()


def test_the_panel_says_what_the_offline_summarizer_cannot_follow(client_user, channel):
    """No utility model is configured here: the panel tells, per profile, what offline means for it."""
    body = client_user.get(panel_url(channel)).content.decode()
    assert 'data-testid="offline-notes"' in body
    assert "Without a model, the built-in offline summarizer writes these sections: Goal, Settled, Key points" in body
    assert "These instructions can only be followed by a model, not offline: “Write at most about 150 words" in body
