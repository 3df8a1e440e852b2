"""The compaction REST API end to end: status and the whole JSON body of every endpoint."""

import pytest
from rest_framework.test import APIClient

from chatcore.models import AuditEntry, Channel, Message, Summary, UsageEntry
from compaction.extracts import extracts_from_text
from compaction.leases import lease_acquire
from compaction.models import CompactionProfile
from compaction.summarizers.offline.profiles import offline_notes
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, PersonaFactory
from tests.chatcore.test_api import channel_body, fields_body, listing
from tests.compaction.factories import PROFILE_TEMPLATE, CompactionProfileFactory, converse

NOT_FOUND = {"detail": "Channel not found.", "code": "not_found"}


def staff_only(doing: str) -> dict:
    return {"detail": f"Only staff can {doing} compaction profiles.", "code": "forbidden"}


def permission_missing(doing: str, *labels: str) -> dict:
    """The 403 body for staff without the permission(s) `labels` ("add" → “Can add compaction profile”)."""
    named = " and ".join(f"“Can {label} compaction profile” (compaction.{label}_compactionprofile)" for label in labels)
    return {
        "detail": f"Only staff holding the permission{'s' if len(labels) > 1 else ''} {named} can {doing} compaction "
        "profiles; a superuser grants permissions in the admin (Users or Groups).",
        "code": "forbidden",
        "permissions": [f"compaction.{label}_compactionprofile" for label in labels],
    }


SUMMARY_TEXT = "## Goal\n- Keep the ledger healthy."


def summary_body(summary: Summary) -> dict:
    names = "id through_message_id previous_id content tokens trigger profile_slug model used_fallback input_tokens"
    names += " output_tokens tokens_before tokens_after messages_covered extracts edited reverted_at created_by_id"
    body = fields_body(summary, names + " created_at", channel="channel_id")
    return body | {"is_active": summary.reverted_at is None}


def profile_body(profile: CompactionProfile) -> dict:
    names = "id slug name description symbol system_prompt instructions keep_recent max_summary_tokens temperature"
    names += " keep_instructions_verbatim protect_first_n is_builtin is_default created_at updated_at"
    return fields_body(profile, names) | {
        "offline_notes": offline_notes(profile),
        "model": profile.model.name if profile.model_id else None,
        "persona": profile.persona.slug if profile.persona_id else None,
        "team": profile.team.slug if profile.team_id else None,
    }


@pytest.fixture
def channel(user):
    channel = ChannelFactory(owner=user)
    converse(channel, 12)
    return channel


def test_compact_201_with_the_summary_and_statistics(api, channel, utility_model, llm_server):
    llm_server.script(Reply(content=SUMMARY_TEXT, prompt_tokens=700, completion_tokens=15))
    response = api.post(
        f"/api/channels/{channel.pk}/compact/", {"keep_recent": 4, "focus": "the ledger"}, format="json"
    )
    assert response.status_code == 201, response.json()
    summary = Summary.objects.get()
    messages = list(Message.objects.order_by("id"))
    assert response.json() == {
        "summary": summary_body(summary),
        "dry_run": False,
        "content": summary.content,
        "profile": "structured",
        "through_message_id": messages[7].pk,
        "summarized_count": 8,
        "model": "loopback-utility",
        "used_fallback": False,
        "input_tokens": 700,
        "output_tokens": 15,
        "tokens_before": messages[-1].path_tokens,
        "tokens_after": summary.tokens_after,
        "messages_before": 12,
        "messages_after": 5,
        "edited": False,
        "truncated": False,
        "extracts": summary.extracts,
        "redactions": {},
        "draft_token": None,
    }
    assert summary.content.startswith(SUMMARY_TEXT)
    assert "the ledger" in llm_server.requests[-1]["messages"][1]["content"]


def test_compact_dry_run_200_then_edited_apply_201(api, channel, utility_model, llm_server):
    llm_server.script(Reply(content=SUMMARY_TEXT, prompt_tokens=700, completion_tokens=15))
    response = api.post(f"/api/channels/{channel.pk}/compact/", {"dry_run": True, "keep_recent": 2}, format="json")
    assert response.status_code == 200
    body = response.json()
    messages = list(Message.objects.order_by("id"))
    assert body == {
        "summary": None,
        "dry_run": True,
        "content": body["content"],
        "profile": "structured",
        "through_message_id": messages[9].pk,
        "summarized_count": 10,
        "model": "loopback-utility",
        "used_fallback": False,
        "input_tokens": 700,
        "output_tokens": 15,
        "tokens_before": messages[-1].path_tokens,
        "tokens_after": body["tokens_after"],
        "messages_before": 12,
        "messages_after": 3,
        "edited": False,
        "truncated": False,
        "extracts": body["extracts"],
        "redactions": {},
        "draft_token": body["draft_token"],
    }
    assert isinstance(body["draft_token"], str) and body["draft_token"]
    assert body["content"].startswith(SUMMARY_TEXT) and body["tokens_after"] < body["tokens_before"]
    assert Summary.objects.count() == 0 and UsageEntry.objects.count() == 1

    edited = "## Goal\n- Keep the ledger healthy, edited."
    response = api.post(
        f"/api/channels/{channel.pk}/compact/",
        {"content": edited, "through_message_id": body["through_message_id"], "draft_token": body["draft_token"]},
        format="json",
    )
    assert response.status_code == 201
    summary = Summary.objects.get()
    assert response.json() == {
        "summary": summary_body(summary),
        "dry_run": False,
        "content": edited,
        "profile": "structured",
        "through_message_id": messages[9].pk,
        "summarized_count": 10,
        "model": "edited",
        "used_fallback": False,
        "input_tokens": 0,
        "output_tokens": 0,
        "tokens_before": messages[-1].path_tokens,
        "tokens_after": summary.tokens_after,
        "messages_before": 12,
        "messages_after": 3,
        "edited": True,
        "truncated": False,
        "extracts": summary.extracts,
        "redactions": {},
        "draft_token": None,
    }
    assert summary.edited and summary.content == edited and len(llm_server.requests) == 1
    assert summary.model == "edited"
    # The edit's own extracts: what its text says (tools stay the transcript's facts), not the draft's.
    assert summary.extracts == extracts_from_text(edited, tools=body["extracts"]["tools"])


def test_an_unchanged_draft_applied_with_its_token_keeps_its_model(api, channel, utility_model, llm_server):
    llm_server.script(Reply(content=SUMMARY_TEXT, prompt_tokens=700, completion_tokens=15))
    url = f"/api/channels/{channel.pk}/compact/"
    draft = api.post(url, {"dry_run": True, "keep_recent": 2}, format="json").json()
    without = api.post(url, {"content": draft["content"], "draft_token": "x" + draft["draft_token"]}, format="json")
    assert without.status_code == 400
    assert without.json() == {
        "detail": "draft_token: This is not a draft token the server gave (or it was altered); preview again.",
        "code": "invalid",
        "errors": {"draft_token": ["This is not a draft token the server gave (or it was altered); preview again."]},
    }
    response = api.post(url, {"content": draft["content"], "draft_token": draft["draft_token"]}, format="json")
    assert response.status_code == 201
    summary = Summary.objects.get()
    assert (summary.model, summary.edited, summary.through_message_id) == (
        "loopback-utility",
        False,
        draft["through_message_id"],
    )
    assert len(llm_server.requests) == 1


def test_compact_409_when_in_progress(api, channel):
    lease_acquire(channel_id=channel.pk, holder="elsewhere:1:x", seconds=300)
    response = api.post(f"/api/channels/{channel.pk}/compact/", {}, format="json")
    assert response.status_code == 409
    assert response.json() == {
        "detail": "A compaction of this channel is already in progress; try again when it has finished.",
        "code": "in_progress",
    }


def test_compact_422_with_the_reason(api, user):
    channel = ChannelFactory(owner=user)
    converse(channel, 5)
    response = api.post(f"/api/channels/{channel.pk}/compact/", {"keep_recent": 3}, format="json")
    assert response.status_code == 422
    assert response.json() == {
        "detail": "Nothing to compact: 5 message(s) since the start, of which the newest 3 are kept as they are "
        "(keep_recent 3), leaves 2 to summarize; at least 4 are needed.",
        "code": "nothing_to_compact",
        "reason": "too_few_messages",
        "new_messages": 5,
        "keep_recent": 3,
        "kept": 3,
        "would_summarize": 2,
        "minimum": 4,
        "profile": "structured",
    }


def test_compact_422_reports_the_profiles_keep_recent_when_none_is_given(api, user):
    """`{}` uses the profile's keep_recent: the body names that value, not how many happened to be kept."""
    channel = ChannelFactory(owner=user)
    converse(channel, 2)
    profile = CompactionProfileFactory(slug="keeps-six", keep_recent=6)
    response = api.post(f"/api/channels/{channel.pk}/compact/", {"profile": profile.slug}, format="json")
    assert (response.status_code, response.json()) == (
        422,
        {
            "detail": "Nothing to compact: 2 message(s) since the start, of which the newest 2 are kept as they are "
            "(keep_recent 6), leaves 0 to summarize; at least 4 are needed.",
            "code": "nothing_to_compact",
            "reason": "too_few_messages",
            "new_messages": 2,
            "keep_recent": 6,
            "kept": 2,
            "would_summarize": 0,
            "minimum": 4,
            "profile": "keeps-six",
        },
    )


def test_compact_502_when_the_model_fails_and_nothing_is_written(api, channel, utility_model, llm_server, settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    llm_server.script(Reply(status=500))
    response = api.post(f"/api/channels/{channel.pk}/compact/", {}, format="json")
    assert response.status_code == 502
    assert response.json() == {
        "detail": "The model call failed: loopback-utility: HTTP 500: Error code: 500 - injected error 500",
        "code": "model_failed",
        "errors": ["loopback-utility: HTTP 500: Error code: 500 - injected error 500"],
    }
    assert Summary.objects.count() == 0


def test_compact_400_for_bad_input_and_unknown_profile(api, channel):
    response = api.post(f"/api/channels/{channel.pk}/compact/", {"keep_recent": -1}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "keep_recent: Ensure this value is greater than or equal to 0.",
        "code": "invalid",
        "errors": {"keep_recent": ["Ensure this value is greater than or equal to 0."]},
    }
    response = api.post(f"/api/channels/{channel.pk}/compact/", {"profile": "nope"}, format="json")
    message = "No profile 'nope' is available for this channel (global profiles and those of its persona are)."
    assert response.status_code == 400
    assert response.json() == {"detail": f"profile: {message}", "code": "invalid", "errors": {"profile": [message]}}


def test_compact_404_for_another_users_channel(api, other_user):
    channel = ChannelFactory(owner=other_user)
    converse(channel, 6)
    response = api.post(f"/api/channels/{channel.pk}/compact/", {}, format="json")
    assert response.status_code == 404 and response.json() == NOT_FOUND
    assert api.post(f"/api/channels/{channel.pk}/branch/", {"content": "x"}, format="json").json() == NOT_FOUND
    assert api.get(f"/api/channels/{channel.pk}/summaries/").json() == NOT_FOUND


def test_anonymous_is_refused(channel):
    response = APIClient().post(f"/api/channels/{channel.pk}/compact/", {}, format="json")
    assert response.status_code in (401, 403)
    assert response.json() == {"detail": "Authentication credentials were not provided.", "code": "not_authenticated"}


def test_summaries_list_and_revert(api, channel, user):
    from compaction.services import channel_compact

    first = channel_compact(channel=channel, actor=user, keep_recent=4).summary
    response = api.get(f"/api/channels/{channel.pk}/summaries/")
    assert response.status_code == 200
    assert response.json() == {"count": 1, "next": None, "previous": None, "results": [summary_body(first)]}

    response = api.post(f"/api/summaries/{first.pk}/revert/")
    assert response.status_code == 200
    first.refresh_from_db()
    assert first.reverted_at is not None
    assert response.json() == summary_body(first)
    channel.refresh_from_db()
    assert channel.context_messages == 12

    response = api.post(f"/api/summaries/{first.pk}/revert/")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "This summary was already reverted.",
        "code": "invalid",
        "errors": {"non_field_errors": ["This summary was already reverted."]},
    }


def test_revert_of_another_users_summary_is_404(api, other_user):
    from compaction.services import channel_compact

    channel = ChannelFactory(owner=other_user)
    converse(channel, 10)
    summary = channel_compact(channel=channel, actor=other_user).summary
    response = api.post(f"/api/summaries/{summary.pk}/revert/")
    assert response.status_code == 404
    assert response.json() == {"detail": "Summary not found.", "code": "not_found"}
    summary.refresh_from_db()
    assert summary.reverted_at is None


def test_branch_from_a_summary_201(api, user):
    from compaction.services import channel_compact

    persona = PersonaFactory()
    model = LLMModelFactory(name="chat-x")
    source = ChannelFactory(owner=user, persona=persona, model=model, title="Ledger work")
    converse(source, 10, start=1)  # opens with the assistant, so the newest 3 start with a user's message
    summary = channel_compact(channel=source, actor=user, keep_recent=3).summary
    source.refresh_from_db()
    before = (source.context_tokens, source.context_messages, Message.objects.filter(channel=source).count())
    response = api.post(f"/api/channels/{source.pk}/branch/", {"summary": summary.pk}, format="json")
    assert response.status_code == 201
    branch = Channel.objects.exclude(pk=source.pk).get()
    assert response.json() == channel_body(branch)
    assert response.json()["branched_from"] == source.pk and response.json()["branched_from_summary"] == summary.pk
    assert (branch.title, branch.persona, branch.model, branch.branched_from, branch.branched_from_summary) == (
        "Ledger work (continued)",
        persona,
        model,
        source,
        summary,
    )
    first, *copies = Message.objects.filter(channel=branch).order_by("depth")
    assert first.role == "user" and first.parent_id is None
    assert first.content.startswith('[Summary of the earlier conversation "Ledger work"')
    assert first.content.endswith(summary.content)
    assert first.metadata == {
        "kind": "branch_summary",
        "source_channel": source.pk,
        "source_summary": summary.pk,
        "source_through_message": summary.through_message_id,
        "source_title": "Ledger work",
        "messages_covered": 7,
    }
    kept = list(Message.objects.filter(channel=source, depth__gt=summary.through_message.depth).order_by("depth"))
    assert [(c.role, c.content, c.metadata["copied_from"]) for c in copies] == [
        (m.role, m.content, {"channel": source.pk, "message": m.pk}) for m in kept
    ]
    assert len(copies) == 3
    # The API shows the new channel's path: the summary block, then the copies with their provenance.
    listed = api.get(f"/api/channels/{branch.pk}/messages/").json()["results"]
    assert [m["id"] for m in listed] == [first.pk, *(c.pk for c in copies)]
    assert [m["metadata"].get("copied_from") for m in listed[1:]] == [c.metadata["copied_from"] for c in copies]
    source.refresh_from_db()
    assert (source.context_tokens, source.context_messages, Message.objects.filter(channel=source).count()) == before
    assert AuditEntry.objects.filter(action="channel.branch", resource=f"channel:{branch.pk}").exists()


def test_branch_from_draft_content_and_from_a_fresh_draft(api, channel, utility_model, llm_server):
    response = api.post(
        f"/api/channels/{channel.pk}/branch/", {"content": "My own notes, token=abcdef123456789"}, format="json"
    )
    assert response.status_code == 201
    branch = Channel.objects.get(pk=response.json()["id"])
    assert response.json() == channel_body(branch)
    opening = Message.objects.get(channel=branch, depth=0)
    assert "My own notes" in opening.content and "abcdef123456789" not in opening.content
    assert branch.branched_from_summary is None
    keep = CompactionProfile.objects.get(slug="structured").keep_recent
    assert Message.objects.filter(channel=branch, metadata__has_key="copied_from").count() == keep

    llm_server.script(Reply(content=SUMMARY_TEXT))
    response = api.post(f"/api/channels/{channel.pk}/branch/", {"focus": "ledger"}, format="json")
    assert response.status_code == 201
    second = Channel.objects.get(pk=response.json()["id"])
    assert SUMMARY_TEXT in Message.objects.get(channel=second, depth=0).content
    assert Summary.objects.count() == 0  # a fresh draft is not stored in the source


def test_branch_from_a_draft_with_its_through_message(api, channel):
    path = list(Message.objects.filter(channel=channel).order_by("depth"))
    response = api.post(
        f"/api/channels/{channel.pk}/branch/",
        {"content": "Notes up to the fifth turn.", "through_message_id": path[4].pk},
        format="json",
    )
    assert response.status_code == 201
    branch = Channel.objects.get(pk=response.json()["id"])
    copies = Message.objects.filter(channel=branch, depth__gt=0).order_by("depth")
    assert [c.metadata["copied_from"]["message"] for c in copies] == [m.pk for m in path[5:]]
    response = api.post(
        f"/api/channels/{channel.pk}/branch/", {"content": "x", "through_message_id": 10**9}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "detail": "through_message_id: No such message in this channel.",
        "code": "invalid",
        "errors": {"through_message_id": ["No such message in this channel."]},
    }


def test_branch_from_a_summary_of_another_channel_is_404(api, user, channel):
    from compaction.services import channel_compact

    other = ChannelFactory(owner=user)
    converse(other, 10)
    summary = channel_compact(channel=other, actor=user).summary
    response = api.post(f"/api/channels/{channel.pk}/branch/", {"summary": summary.pk}, format="json")
    assert response.status_code == 404
    assert response.json() == {"detail": "Summary not found.", "code": "not_found"}


def test_profiles_list_for_users_and_for_a_channel(api, user):
    persona, other_persona = PersonaFactory(), PersonaFactory()
    mine = CompactionProfileFactory(persona=persona, slug="for-mine")
    theirs = CompactionProfileFactory(persona=other_persona, slug="for-theirs")
    builtins = list(CompactionProfile.objects.filter(is_builtin=True).order_by("-is_default", "name"))
    response = api.get("/api/profiles/")
    assert response.status_code == 200
    assert response.json() == listing([profile_body(p) for p in builtins] + [profile_body(mine), profile_body(theirs)])
    channel = ChannelFactory(owner=user, persona=persona)
    response = api.get(f"/api/profiles/?channel={channel.pk}")
    assert response.json() == listing([profile_body(p) for p in builtins] + [profile_body(mine)])


def test_profile_create_update_delete_are_staff_only(api, staff_api):
    payload = {"name": "Terse", "system_prompt": "Be terse.", "instructions": "Summarize: {transcript}"}
    assert api.post("/api/profiles/", payload, format="json").json() == staff_only("create")
    response = staff_api.post("/api/profiles/", payload, format="json")
    assert response.status_code == 201
    profile = CompactionProfile.objects.get(slug="terse")
    assert response.json() == profile_body(profile)
    assert (profile.is_builtin, profile.is_default, profile.keep_recent) == (False, False, 6)

    response = api.patch(f"/api/profiles/{profile.pk}/", {"name": "Short"}, format="json")
    assert response.status_code == 403 and response.json() == staff_only("change")
    response = staff_api.patch(f"/api/profiles/{profile.pk}/", {"name": "Short", "keep_recent": 3}, format="json")
    assert response.status_code == 200
    assert response.json() == profile_body(profile) and profile.name == "Short" and profile.keep_recent == 3

    assert api.delete(f"/api/profiles/{profile.pk}/").status_code == 403
    response = staff_api.delete(f"/api/profiles/{profile.pk}/")
    assert response.status_code == 204 and not CompactionProfile.objects.filter(pk=profile.pk).exists()


@pytest.mark.parametrize(
    "instructions, message",
    [
        ("No placeholder at all.", "The template must contain {transcript}, where the conversation goes."),
        (
            "{transcript} {secret}",
            "Unknown placeholder {secret}. Allowed: {transcript}, {previous_summary}, {focus}, "
            "{persona}. Write {{ and }} for literal braces.",
        ),
        (
            "{transcript.__class__}",
            "Placeholder {transcript.__class__} reaches into attributes or items, which is not "
            "allowed: use a plain name, one of {transcript}, {previous_summary}, {focus}, "
            "{persona}.",
        ),
        (
            "{0} {transcript}",
            "Positional placeholder {0} is not allowed: use a name, one of {transcript}, "
            "{previous_summary}, {focus}, {persona}.",
        ),
    ],
)
def test_profile_create_rejects_bad_templates_with_a_field_message(staff_api, instructions, message):
    response = staff_api.post(
        "/api/profiles/", {"name": "Bad", "system_prompt": "x", "instructions": instructions}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "detail": f"instructions: {message}",
        "code": "invalid",
        "errors": {"instructions": [message]},
    }
    assert not CompactionProfile.objects.filter(name="Bad").exists()


def test_builtin_profile_cannot_be_deleted_but_can_be_reset_and_duplicated(staff_api):
    brief = CompactionProfile.objects.get(slug="brief")
    shipped = brief.instructions
    response = staff_api.delete(f"/api/profiles/{brief.pk}/")
    assert response.status_code == 409
    assert response.json() == {
        "detail": "Built-in profiles cannot be deleted; edit it, reset it, or duplicate it instead.",
        "code": "builtin",
    }
    staff_api.patch(f"/api/profiles/{brief.pk}/", {"instructions": "Changed: {transcript}"}, format="json")
    response = staff_api.post(f"/api/profiles/{brief.pk}/reset/")
    assert response.status_code == 200 and response.json() == profile_body(brief)
    assert brief.instructions == shipped
    response = staff_api.post(f"/api/profiles/{brief.pk}/duplicate/", {"name": "My brief"}, format="json")
    assert response.status_code == 201
    copy = CompactionProfile.objects.get(slug="my-brief")
    assert response.json() == profile_body(copy)
    assert (copy.is_builtin, copy.is_default, copy.instructions) == (False, False, shipped)


@pytest.mark.parametrize(
    ("method", "path", "doing", "labels"),
    [
        ("post", "/api/profiles/", "create", ["add"]),
        ("patch", "/api/profiles/{id}/", "change", ["change"]),
        ("delete", "/api/profiles/{id}/", "delete", ["delete"]),
        ("post", "/api/profiles/{id}/duplicate/", "duplicate", ["add"]),
        ("post", "/api/profiles/{id}/reset/", "reset", ["change"]),
        ("get", "/api/profiles/export/", "export", ["view"]),
        ("post", "/api/profiles/import/", "import", ["add", "change"]),
    ],
)
def test_staff_without_the_profile_permission_are_refused_saying_which(db, method, path, doing, labels):
    """Staff is not enough: each operation names the permission it needs (as the admin asks for it); nothing is
    written, no audit row."""
    from tests.chatcore.factories import UserFactory

    profile = CompactionProfileFactory(slug="team", name="Team")
    client = APIClient()
    client.force_authenticate(UserFactory(is_staff=True))
    before = list(CompactionProfile.objects.order_by("pk").values())
    response = getattr(client, method)(path.format(id=profile.pk), {"name": "X"}, format="json")
    assert response.status_code == 403
    assert response.json() == permission_missing(doing, *labels)
    assert list(CompactionProfile.objects.order_by("pk").values()) == before
    assert not AuditEntry.objects.filter(action__startswith="profile.").exists()


def test_profiles_export_and_import_round_trip(staff_api, api):
    persona = PersonaFactory(slug="analyst")
    CompactionProfileFactory(slug="analyst-notes", name="Analyst notes", persona=persona, is_default=True)
    assert api.get("/api/profiles/export/").status_code == 403
    response = staff_api.get("/api/profiles/export/")
    assert response.status_code == 200
    exported = response.json()
    assert exported["version"] == 1
    assert [p["slug"] for p in exported["profiles"]] == [
        "structured",
        "brief",
        "detailed",
        "actionable",
        "analyst-notes",
    ]
    assert exported["profiles"][-1] == {
        "slug": "analyst-notes",
        "name": "Analyst notes",
        "description": "A test profile.",
        "symbol": "🧪",
        "system_prompt": "You summarize conversations faithfully.",
        "instructions": PROFILE_TEMPLATE,
        "keep_recent": 2,
        "max_summary_tokens": 800,
        "temperature": 0.1,
        "keep_instructions_verbatim": False,
        "protect_first_n": 0,
        "model": None,
        "persona": "analyst",
        "team": None,
        "is_default": True,
    }
    CompactionProfile.objects.filter(slug="analyst-notes").delete()
    response = staff_api.post(
        "/api/profiles/import/", {"version": 1, "profiles": exported["profiles"][-2:]}, format="json"
    )
    assert response.status_code == 201
    restored = CompactionProfile.objects.get(slug="analyst-notes")
    copy = CompactionProfile.objects.get(slug="actionable-imported")
    assert response.json() == [profile_body(copy), profile_body(restored)]
    assert (restored.persona, restored.is_default, copy.is_builtin) == (persona, True, False)

    bad = {"profiles": [{"slug": "x", "name": "X", "system_prompt": "s", "instructions": "{nope}"}]}
    response = staff_api.post("/api/profiles/import/", bad, format="json")
    assert response.status_code == 400
    assert response.json()["errors"]["file"][0].startswith("profiles[0] (x): instructions:")
    assert not CompactionProfile.objects.filter(slug="x").exists()
