"""What staff must hold to act beyond their own data: the admin's rule, kept by every interface.

Being staff only opens the door (the admin lets staff in and shows them what
their permissions allow); each operation on other people's data or on what
everyone's summaries depend on needs a Django permission of its own, granted
per person or group. The services check it (so a command, an admin action and
the API refuse alike) and the API's permission class asks the same question
first, so that a refusal is a 403 before any body is read.

The permissions are model permissions (`compaction.add_compactionprofile`) and
a few of the apps' own, declared in `Meta.permissions`:
`chatcore.export_channel` (any person's channel, every branch, audited) and
`compaction.view_usage_dashboard` (every person's usage, channel titles
included). Superusers hold every permission.
"""

import dataclasses
from collections.abc import Iterable

from django.contrib.auth.models import AnonymousUser, Permission, User

from chatcore.errors import PermissionDenied

EXPORT_CHANNEL = "chatcore.export_channel"


def _labels(permissions: Iterable[str]) -> list[str]:
    """Each permission as the admin's group and user pages show it ("Can add compaction profile"), with its
    name for settings and code; a permission the database lacks (its migration not run) by name alone."""
    wanted = [name.split(".", 1) for name in permissions]
    found = {
        (app, codename): label
        for app, codename, label in Permission.objects.filter(
            codename__in=[codename for _app, codename in wanted]
        ).values_list("content_type__app_label", "codename", "name")
    }
    return [
        f"“{found[(app, codename)]}” ({app}.{codename})" if (app, codename) in found else f"{app}.{codename}"
        for app, codename in wanted
    ]


def staff_permission_check(*, actor: User | AnonymousUser | None, permissions: Iterable[str], doing: str) -> None:
    """PermissionDenied (403), saying what is missing, unless `actor` is active staff holding every one of
    `permissions`; `doing` ends the sentence "Only staff (holding …) can …"."""
    if actor is None or not actor.is_active or not actor.is_staff:
        raise PermissionDenied(f"Only staff can {doing}.")
    missing = [name for name in permissions if not actor.has_perm(name)]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise PermissionDenied(
            f"Only staff holding the permission{plural} {' and '.join(_labels(missing))} can {doing}; "
            "a superuser grants permissions in the admin (Users or Groups).",
            extra={"permissions": missing},
        )


@dataclasses.dataclass(frozen=True)
class StaffRule:
    """What one staff operation needs, said once for the service that checks it and the API view that asks first."""

    permissions: tuple[str, ...]
    doing: str

    def check(self, actor: User | AnonymousUser | None) -> None:
        staff_permission_check(actor=actor, permissions=self.permissions, doing=self.doing)


EXPORT_ANY_CHANNEL = StaffRule((EXPORT_CHANNEL,), "export any person's channel in full")
