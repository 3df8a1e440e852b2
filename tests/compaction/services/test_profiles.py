"""Profile resolution for a channel, and the profile services' rules."""

import pytest
from django.core.exceptions import ValidationError

from chatcore.errors import Conflict, PermissionDenied
from compaction.models import CompactionProfile
from compaction.services import profiles as profile_services
from tests.chatcore.factories import ChannelFactory, PersonaFactory, UserFactory
from tests.compaction.factories import CompactionProfileFactory


def test_resolution_order_asked_for_then_persona_default_then_global_default(db):
    persona = PersonaFactory()
    channel = ChannelFactory(persona=persona)
    assert profile_services.profile_resolve(channel=channel, user=channel.owner).slug == "structured"
    persona_default = CompactionProfileFactory(persona=persona, is_default=True)
    assert profile_services.profile_resolve(channel=channel, user=channel.owner) == persona_default
    assert profile_services.profile_resolve(channel=channel, user=channel.owner, slug="brief").slug == "brief"
    assert (
        profile_services.profile_resolve(channel=channel, user=channel.owner, slug=persona_default.slug)
        == persona_default
    )
    plain = ChannelFactory(owner=channel.owner)
    assert profile_services.profile_resolve(channel=plain, user=plain.owner).slug == "structured"


def test_a_profile_of_another_persona_is_not_visible(db):
    mine, theirs = PersonaFactory(), PersonaFactory()
    other = CompactionProfileFactory(persona=theirs, slug="theirs", is_default=True)
    channel = ChannelFactory(persona=mine)
    with pytest.raises(ValidationError) as caught:
        profile_services.profile_resolve(channel=channel, user=channel.owner, slug=other.slug)
    assert caught.value.message_dict["profile"] == [
        "No profile 'theirs' is available for this channel (global profiles and those of its persona are)."
    ]
    assert profile_services.profile_resolve(channel=channel, user=channel.owner).slug == "structured"


def test_with_no_profiles_at_all_the_shipped_default_is_used(db):
    CompactionProfile.objects.all().delete()
    channel = ChannelFactory()
    profile = profile_services.profile_resolve(channel=channel, user=channel.owner)
    assert (profile.pk, profile.slug, profile.is_builtin) == (None, "structured", True)


def test_create_as_default_clears_the_previous_default_of_its_scope(staff_user):
    profile = profile_services.profile_create(
        actor=staff_user, name="Team default", system_prompt="S", instructions="{transcript}", is_default=True
    )
    assert profile.slug == "team-default"
    assert list(CompactionProfile.objects.filter(is_default=True, persona__isnull=True)) == [profile]
    persona = PersonaFactory()
    scoped = profile_services.profile_create(
        actor=staff_user,
        name="Scoped",
        system_prompt="S",
        instructions="{transcript}",
        persona=persona,
        is_default=True,
    )
    assert CompactionProfile.objects.filter(is_default=True).count() == 2 and scoped.is_default


def test_the_global_default_cannot_be_unset_or_deleted(staff_user):
    structured = CompactionProfile.objects.get(slug="structured")
    with pytest.raises(ValidationError) as caught:
        profile_services.profile_update(profile=structured, actor=staff_user, is_default=False)
    assert "There must be a global default" in caught.value.message_dict["is_default"][0]
    custom = profile_services.profile_create(
        actor=staff_user, name="X", system_prompt="S", instructions="{transcript}", is_default=True
    )
    with pytest.raises(Conflict) as caught:
        profile_services.profile_delete(profile=custom, actor=staff_user)
    assert caught.value.code == "default"
    assert CompactionProfile.objects.get(slug="structured").is_default is False


def test_builtin_rules(staff_user):
    brief = CompactionProfile.objects.get(slug="brief")
    with pytest.raises(Conflict):
        profile_services.profile_delete(profile=brief, actor=staff_user)
    with pytest.raises(ValidationError):
        profile_services.profile_update(profile=brief, actor=staff_user, slug="short")
    custom = CompactionProfileFactory()
    with pytest.raises(ValidationError):
        profile_services.profile_reset(profile=custom, actor=staff_user)


ADD, CHANGE, DELETE = (f"compaction.{action}_compactionprofile" for action in ("add", "change", "delete"))


@pytest.mark.parametrize(
    ("call", "needed"),
    [
        (
            lambda p, u: profile_services.profile_create(
                actor=u, name="N", system_prompt="S", instructions="{transcript}"
            ),
            [ADD],
        ),
        (lambda p, u: profile_services.profile_update(profile=p, actor=u, name="N"), [CHANGE]),
        (lambda p, u: profile_services.profile_delete(profile=p, actor=u), [DELETE]),
        (lambda p, u: profile_services.profile_duplicate(profile=p, actor=u), [ADD]),
        (lambda p, u: profile_services.profile_reset(profile=p, actor=u), [CHANGE]),
        (lambda p, u: profile_services.profile_import(data={"profiles": []}, actor=u), [ADD, CHANGE]),
    ],
    ids=["create", "update", "delete", "duplicate", "reset", "import"],
)
def test_profile_changes_need_staff_with_the_model_permission(user, call, needed):
    """Not staff, staff without permissions, staff with every other profile permission, and a user holding the
    permission without being staff are all refused, before anything is written; staff with it get through."""
    profile = CompactionProfileFactory(slug="mine", name="Mine")
    others = [p for p in (ADD, CHANGE, DELETE) if p not in needed] + ["compaction.view_compactionprofile"]
    refused = [None, user, UserFactory(is_staff=True), UserFactory(is_staff=True, permissions=others)]
    refused.append(UserFactory(permissions=needed))
    before = list(CompactionProfile.objects.order_by("pk").values())
    for actor in refused:
        with pytest.raises(PermissionDenied):
            call(profile, actor)
    assert list(CompactionProfile.objects.order_by("pk").values()) == before
    granted = UserFactory(is_staff=True, permissions=needed)
    try:
        call(profile, granted)
    except (ValidationError, Conflict):
        pass  # past the permission check: what the operation itself says of a custom profile (reset: built-ins only)


def test_import_is_all_or_nothing_and_updates_custom_profiles(staff_user):
    custom = CompactionProfileFactory(slug="notes", name="Notes")
    document = profile_services.profile_export(profiles=[custom])
    document["profiles"][0]["name"] = "Notes v2"
    document["profiles"].append({"slug": "broken", "name": "B", "system_prompt": "S", "instructions": "{0}"})
    with pytest.raises(ValidationError):
        profile_services.profile_import(data=document, actor=staff_user)
    custom.refresh_from_db()
    assert custom.name == "Notes" and not CompactionProfile.objects.filter(slug="broken").exists()
    document["profiles"].pop()
    [updated] = profile_services.profile_import(data=document, actor=staff_user)
    assert updated.pk == custom.pk and updated.name == "Notes v2"
    with pytest.raises(ValidationError) as caught:
        profile_services.profile_import(
            data={
                "profiles": [
                    {"slug": "p", "name": "P", "system_prompt": "S", "instructions": "{transcript}", "persona": "ghost"}
                ]
            },
            actor=staff_user,
        )
    assert caught.value.message_dict["file"] == ["profiles[0]: no persona 'ghost'."]
