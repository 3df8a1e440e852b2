"""Every profile change leaves an audit row naming the staff member who made it."""

from chatcore.models import AuditEntry
from compaction.models import CompactionProfile
from compaction.services import profiles as profile_services


def test_each_profile_change_is_audited_with_its_actor(staff_user):
    structured = CompactionProfile.objects.get(slug="structured")
    created = profile_services.profile_create(
        actor=staff_user, name="Audit me", system_prompt="Summarize.", instructions="Summarize this:\n{transcript}"
    )
    profile_services.profile_update(profile=created, actor=staff_user, description="changed")
    copy = profile_services.profile_duplicate(profile=structured, actor=staff_user)
    profile_services.profile_update(profile=structured, actor=staff_user, description="edited built-in")
    profile_services.profile_reset(profile=structured, actor=staff_user)
    exported = profile_services.profile_export(profiles=CompactionProfile.objects.filter(pk=created.pk))
    profile_services.profile_delete(profile=copy, actor=staff_user)
    profile_services.profile_delete(profile=created, actor=staff_user)
    profile_services.profile_import(data=exported, actor=staff_user)

    rows = list(
        AuditEntry.objects.filter(action__startswith="profile.")
        .order_by("id")
        .values_list("action", "resource", "actor_id", "actor_label")
    )
    label = f"user:{staff_user.pk}"
    assert rows == [
        ("profile.create", f"profile:{created.slug}", staff_user.pk, label),
        ("profile.update", f"profile:{created.slug}", staff_user.pk, label),
        ("profile.duplicate", f"profile:{copy.slug}", staff_user.pk, label),
        ("profile.update", "profile:structured", staff_user.pk, label),
        ("profile.reset", "profile:structured", staff_user.pk, label),
        ("profile.delete", f"profile:{copy.slug}", staff_user.pk, label),
        ("profile.delete", f"profile:{created.slug}", staff_user.pk, label),
        ("profile.import", "profiles", staff_user.pk, label),
    ]
