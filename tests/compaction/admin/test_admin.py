"""Profiles admin (actions, import, save through the services) and the channels' "compact now" action."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from chatcore.models import Channel, Message, Summary
from compaction.builtins import BUILTIN_BY_SLUG
from compaction.models import CompactionProfile
from tests.chatcore.factories import ChannelFactory
from tests.compaction.factories import CompactionProfileFactory, converse

CHANGELIST = "/admin/compaction/compactionprofile/"


@pytest.fixture
def admin_client_staff(client, staff_user):
    client.force_login(staff_user)
    return client


def _action(client, url, action, ids, **extra):
    return client.post(url, {"action": action, "_selected_action": [str(i) for i in ids], **extra}, follow=True)


def test_reset_duplicate_and_export_actions(admin_client_staff):
    brief = CompactionProfile.objects.get(slug="brief")
    CompactionProfile.objects.filter(pk=brief.pk).update(instructions="Changed {transcript}", keep_recent=1)
    # Resetting asks first (a confirmation page), then runs on "Yes, I'm sure".
    asked = _action(admin_client_staff, CHANGELIST, "reset_to_shipped", [brief.pk])
    assert "Reset these profiles to their shipped text?" in asked.content.decode()
    assert CompactionProfile.objects.get(pk=brief.pk).keep_recent == 1
    response = _action(admin_client_staff, CHANGELIST, "reset_to_shipped", [brief.pk], confirmed="yes")
    assert "Reset 1 profile(s) to their shipped text." in response.content.decode()
    brief.refresh_from_db()
    assert (brief.instructions, brief.keep_recent) == (BUILTIN_BY_SLUG["brief"]["instructions"], 4)

    response = _action(admin_client_staff, CHANGELIST, "duplicate", [brief.pk])
    copy = CompactionProfile.objects.get(slug="brief-copy")
    assert "Created brief-copy." in response.content.decode()
    assert (copy.is_builtin, copy.is_default, copy.instructions) == (False, False, brief.instructions)

    response = admin_client_staff.post(CHANGELIST, {"action": "export_json", "_selected_action": [brief.pk, copy.pk]})
    assert response["Content-Disposition"] == 'attachment; filename="compaction-profiles.json"'
    document = json.loads(response.content)
    assert [p["slug"] for p in document["profiles"]] == ["brief", "brief-copy"]


def test_builtins_cannot_be_deleted_custom_ones_can(admin_client_staff):
    structured = CompactionProfile.objects.get(slug="structured")
    assert admin_client_staff.get(f"{CHANGELIST}{structured.pk}/delete/").status_code == 403
    custom = CompactionProfileFactory()
    response = admin_client_staff.post(f"{CHANGELIST}{custom.pk}/delete/", {"post": "yes"}, follow=True)
    assert response.status_code == 200
    assert not CompactionProfile.objects.filter(pk=custom.pk).exists()


def test_add_form_rejects_a_bad_template_and_saves_a_good_one_through_the_service(admin_client_staff):
    data = {
        "name": "Team notes",
        "slug": "team-notes",
        "symbol": "🗒",
        "description": "",
        "persona": "",
        "system_prompt": "Summarize.",
        "instructions": "{transcript.__dict__}",
        "keep_recent": 3,
        "max_summary_tokens": 500,
        "temperature": 0.2,
        "protect_first_n": 0,
        "model": "",
        "is_default": "on",
    }
    response = admin_client_staff.post(f"{CHANGELIST}add/", data)
    assert response.status_code == 200
    assert "reaches into attributes or items" in response.content.decode()
    assert not CompactionProfile.objects.filter(slug="team-notes").exists()

    data["instructions"] = "Notes for the team.\n{transcript}"
    response = admin_client_staff.post(f"{CHANGELIST}add/", data, follow=True)
    assert response.status_code == 200
    profile = CompactionProfile.objects.get(slug="team-notes")
    # It became the global default; the previous one was cleared in the same transaction.
    assert profile.is_default
    assert list(CompactionProfile.objects.filter(is_default=True, persona__isnull=True)) == [profile]


def test_import_view(admin_client_staff):
    document = {
        "version": 1,
        "profiles": [
            {
                "slug": "imported-one",
                "name": "Imported",
                "system_prompt": "s",
                "instructions": "{persona}: {transcript}",
            }
        ],
    }
    upload = SimpleUploadedFile("p.json", json.dumps(document).encode(), content_type="application/json")
    response = admin_client_staff.post(f"{CHANGELIST}import/", {"file": upload}, follow=True)
    assert "Imported 1 profile(s): imported-one." in response.content.decode()
    assert CompactionProfile.objects.filter(slug="imported-one", is_builtin=False).exists()
    bad = SimpleUploadedFile("p.json", b"{not json", content_type="application/json")
    response = admin_client_staff.post(f"{CHANGELIST}import/", {"file": bad})
    assert response.status_code == 200 and "Not valid JSON" in response.content.decode()
    assert "Import JSON" in admin_client_staff.get(CHANGELIST).content.decode()


def test_channel_compact_now_action(admin_client_staff, staff_user):
    busy = ChannelFactory(title="Busy")
    converse(busy, 12)
    quiet = ChannelFactory(title="Quiet")
    converse(quiet, 3)
    response = _action(admin_client_staff, "/admin/chatcore/channel/", "compact_now", [busy.pk, quiet.pk])
    page = response.content.decode()
    summary = Summary.objects.get()
    assert summary.channel == busy and summary.created_by == staff_user and summary.model == "offline"
    assert f"Busy: messages 12 → 7, tokens {summary.tokens_before:,} → {summary.tokens_after:,}" in page
    assert "Quiet: Nothing to compact" in page


def test_summary_branch_action_and_the_branch_in_the_admin(admin_client_staff, staff_user):
    from compaction.services import channel_compact

    source = ChannelFactory(title="Invoice relay")
    converse(source, 12, start=1)  # the newest 3 start with a user's message
    summary = channel_compact(channel=source, actor=staff_user, keep_recent=3).summary
    response = _action(admin_client_staff, "/admin/chatcore/summary/", "branch_from_summary", [summary.pk])
    branch = Channel.objects.get(branched_from=source)
    page = response.content.decode()
    assert (
        f'Summary #{summary.pk}: branched into <a href="/admin/chatcore/channel/{branch.pk}/change/">'
        f"Invoice relay (continued)</a> (channel #{branch.pk}; the summary and 3 copied messages)." in page
    )
    first, *copies = Message.objects.filter(channel=branch).order_by("depth")
    assert [c.metadata["copied_from"]["message"] for c in copies] == list(
        Message.objects.filter(channel=source, depth__gt=summary.through_message.depth)
        .order_by("depth")
        .values_list("pk", flat=True)
    )

    page = admin_client_staff.get(f"/admin/chatcore/channel/{branch.pk}/change/").content.decode()
    assert (
        f'channel <a href="/admin/chatcore/channel/{source.pk}/change/">#{source.pk} “Invoice relay”</a> '
        f'at <a href="/admin/chatcore/summary/{summary.pk}/change/">summary #{summary.pk}</a>; it opens with the '
        f"carried-over summary, then 3 copies of the messages after it" in page
    )

    listing = admin_client_staff.get(f"/admin/chatcore/message/?channel__id__exact={branch.pk}")
    assert listing.status_code == 200
    page = listing.content.decode()
    assert (
        f'carried-over summary of <a href="/admin/chatcore/channel/{source.pk}/change/">channel #{source.pk}</a> '
        f'(<a href="/admin/chatcore/summary/{summary.pk}/change/">summary #{summary.pk}</a>)' in page
    )
    for copy in copies:
        original = copy.metadata["copied_from"]["message"]
        assert (
            f'copy of <a href="/admin/chatcore/message/{original}/change/">message #{original}</a> '
            f"of channel #{source.pk}" in page
        )
    assert page.count("copy of <a href=") == 3


def test_profile_page_says_how_the_offline_summarizer_follows_it(admin_client_staff):
    brief = CompactionProfile.objects.get(slug="brief")
    page = admin_client_staff.get(f"{CHANGELIST}{brief.pk}/change/").content.decode()
    assert "Without a model, the built-in offline summarizer writes these sections: Goal, Settled" in page
    assert "These instructions can only be followed by a model, not offline" in page
    assert 'name="keep_instructions_verbatim"' in page and 'name="protect_first_n"' in page
