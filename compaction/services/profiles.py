"""Profiles: resolution for a channel, and their management by staff."""

from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from chatcore.bounded_json import json_loads_bounded
from chatcore.characters import unstorable_field
from chatcore.errors import Conflict
from chatcore.models import Channel, LLMModel, Persona, Team
from chatcore.permissions import StaffRule
from chatcore.services import audit_record
from compaction import builtins, selectors
from compaction.models import CompactionProfile

EDITABLE_FIELDS = [
    *("name", "slug", "description", "symbol", "system_prompt", "instructions"),
    *builtins.OPTION_FIELDS,
    *("model", "persona", "team", "is_default"),
]
EXPORT_VERSION = 1
# The related rows a profile file names rather than numbers: field -> (model, the field naming it, what a miss says).
_NAMED_RELATIONS: dict[str, tuple[type[LLMModel] | type[Persona] | type[Team], str, str]] = {
    "model": (LLMModel, "name", "no model named"),
    "persona": (Persona, "slug", "no persona"),
    "team": (Team, "slug", "no team"),
}


# What each change needs: the profile model's own permissions, as the admin asks (chatcore.permissions).
_ADD, _CHANGE = "compaction.add_compactionprofile", "compaction.change_compactionprofile"
CREATE = StaffRule((_ADD,), "create compaction profiles")
CHANGE = StaffRule((_CHANGE,), "change compaction profiles")
RESET = StaffRule((_CHANGE,), "reset compaction profiles")
DELETE = StaffRule(("compaction.delete_compactionprofile",), "delete compaction profiles")
DUPLICATE = StaffRule((_ADD,), "duplicate compaction profiles")
IMPORT = StaffRule((_ADD, _CHANGE), "import compaction profiles")  # creates some, updates others
EXPORT = StaffRule(("compaction.view_compactionprofile",), "export compaction profiles")


def profile_resolve(*, channel: Channel, user: User | None, slug: str | None = None) -> CompactionProfile:
    """The profile asked for → the channel persona's default → its team's default → the global default.

    A slug that names no profile visible for this channel is an error rather
    than a silent fallback: the caller asked for something specific.
    """
    visible = selectors.profiles_visible(user=user, channel=channel)
    if slug:
        profile = visible.filter(slug=slug).first()
        if profile is None:
            raise ValidationError(
                {
                    "profile": f"No profile '{slug}' is available for this channel "
                    f"(global profiles and those of its persona are)."
                }
            )
        return profile
    defaults = [p for p in visible.filter(is_default=True)]
    for scoped in (lambda p: p.persona_id is not None, lambda p: p.team_id is not None, lambda p: True):
        for profile in defaults:
            if scoped(profile):
                return profile
    fallback = visible.filter(persona__isnull=True, team__isnull=True).order_by("-is_builtin", "pk").first()
    if fallback is not None:
        return fallback
    # Nothing configured at all (every profile deleted): the shipped default, unsaved.
    shipped = builtins.BUILTIN_BY_SLUG["structured"]
    return CompactionProfile(**{k: v for k, v in shipped.items() if k != "is_default"}, is_builtin=True)


def _clear_other_defaults(profile: CompactionProfile) -> None:
    if profile.is_default:
        (
            CompactionProfile.objects.filter(persona=profile.persona_id, team=profile.team_id, is_default=True)
            .exclude(pk=profile.pk)
            .update(is_default=False)
        )


def _save(profile: CompactionProfile) -> CompactionProfile:
    """Validate, then make it the only default of its scope if it is one."""
    if profile.persona_id is not None and profile.team_id is not None:
        raise ValidationError({"team": "A profile is global, a team's or a persona's: not a team's and a persona's."})
    profile.full_clean(validate_constraints=False)
    if profile.is_default:
        _clear_other_defaults(profile)
    profile.save()
    return profile


def _unique_slug(base: str) -> str:
    base = slugify(base)[:90] or "profile"
    slug, number = base, 2
    while CompactionProfile.objects.filter(slug=slug).exists():
        slug, number = f"{base}-{number}", number + 1
    return slug


@transaction.atomic
def profile_create(*, actor: User | None, **fields: Any) -> CompactionProfile:
    CREATE.check(actor)
    unknown = set(fields) - set(EDITABLE_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown profile field(s): {', '.join(sorted(unknown))}.")
    if not fields.get("slug"):
        fields["slug"] = _unique_slug(fields.get("name") or "profile")
    profile = _save(CompactionProfile(**fields))
    audit_record(actor=actor, action="profile.create", resource=f"profile:{profile.slug}")
    return profile


@transaction.atomic
def profile_update(*, profile: CompactionProfile, actor: User | None, **changes: Any) -> CompactionProfile:
    """Built-ins may be edited too (reset puts them back), but keep their slug."""
    CHANGE.check(actor)
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise ValidationError(f"Unknown profile field(s): {', '.join(sorted(unknown))}.")
    if profile.is_builtin and "slug" in changes and changes["slug"] != profile.slug:
        raise ValidationError({"slug": "The slug of a built-in profile cannot change."})
    was_global_default = profile.is_default and profile.persona_id is None and profile.team_id is None
    for name, value in changes.items():
        setattr(profile, name, value)
    if was_global_default and not (profile.is_default and profile.persona_id is None and profile.team_id is None):
        raise ValidationError(
            {"is_default": "There must be a global default: make another profile the global default instead."}
        )
    _save(profile)
    audit_record(
        actor=actor, action="profile.update", resource=f"profile:{profile.slug}", details={"fields": sorted(changes)}
    )
    return profile


@transaction.atomic
def profile_delete(*, profile: CompactionProfile, actor: User | None) -> None:
    DELETE.check(actor)
    if profile.is_builtin:
        raise Conflict(
            "Built-in profiles cannot be deleted; edit it, reset it, or duplicate it instead.", code="builtin"
        )
    if profile.is_default and profile.persona_id is None:
        raise Conflict("This is the global default profile: make another profile the default first.", code="default")
    slug = profile.slug
    profile.delete()
    audit_record(actor=actor, action="profile.delete", resource=f"profile:{slug}")


@transaction.atomic
def profile_duplicate(*, profile: CompactionProfile, actor: User | None, name: str | None = None) -> CompactionProfile:
    """An editable copy (never built-in, never a default)."""
    DUPLICATE.check(actor)
    name = (name or f"{profile.name} (copy)")[:100]
    copy = CompactionProfile(**{field: getattr(profile, field) for field in EDITABLE_FIELDS if field != "slug"})
    copy.name, copy.slug, copy.is_default = name, _unique_slug(name), False
    _save(copy)
    audit_record(
        actor=actor, action="profile.duplicate", resource=f"profile:{copy.slug}", details={"source": profile.slug}
    )
    return copy


@transaction.atomic
def profile_reset(*, profile: CompactionProfile, actor: User | None) -> CompactionProfile:
    """Put a built-in back to the text it shipped with (scope and default flag are kept)."""
    RESET.check(actor)
    shipped = builtins.BUILTIN_BY_SLUG.get(profile.slug)
    if not profile.is_builtin or shipped is None:
        raise ValidationError("Only built-in profiles can be reset to their shipped text.")
    for field in builtins.SHIPPED_FIELDS:
        setattr(profile, field, shipped[field])
    profile.model = None
    _save(profile)
    audit_record(actor=actor, action="profile.reset", resource=f"profile:{profile.slug}")
    return profile


def profile_export(*, profiles) -> dict:
    """A JSON-ready document; models and personas are named, never numbered."""
    items = []
    for profile in profiles:
        item = {name: getattr(profile, name) for name in EDITABLE_FIELDS}
        item["model"] = profile.model.name if profile.model else None
        item["persona"] = profile.persona.slug if profile.persona else None
        items.append({"slug": item.pop("slug"), **item})
    return {"version": EXPORT_VERSION, "profiles": items}


def _import_item(index: int, item: Any) -> dict:
    where = f"profiles[{index}]"
    if not isinstance(item, dict):
        raise ValidationError({"file": f"{where} must be an object."})
    allowed = set(EDITABLE_FIELDS)
    unknown = set(item) - allowed
    if unknown:
        raise ValidationError({"file": f"{where} has unknown field(s): {', '.join(sorted(unknown))}."})
    fields = dict(item)
    if not fields.get("slug") or not isinstance(fields["slug"], str):
        raise ValidationError({"file": f"{where} needs a slug."})
    for field, (related, lookup, missing) in _NAMED_RELATIONS.items():
        name = fields.get(field)
        found = related.objects.filter(**{lookup: name}).first() if name else None
        if name and found is None:
            raise ValidationError({"file": f"{where}: {missing} '{name}'."})
        fields[field] = found
    fields["is_default"] = bool(fields.get("is_default", False))
    return fields


@transaction.atomic
def profile_import(*, data: Any, actor: User | None) -> list[CompactionProfile]:
    """Create or update profiles from an export; all or nothing.

    A slug that exists is updated, except a built-in's, which is imported as
    a new copy so that shipped profiles only change through edits and reset.
    """
    IMPORT.check(actor)
    if isinstance(data, (str, bytes)):
        try:
            data = json_loads_bounded(data)
        except ValueError as error:
            raise ValidationError({"file": f"Not valid JSON: {error}."}) from None
    if not isinstance(data, dict) or not isinstance(data.get("profiles"), list):
        raise ValidationError({"file": "Expected an object with a 'profiles' list, as produced by export."})
    if (found := unstorable_field(data)) is not None:  # a NUL or a lone surrogate, wherever the file holds one
        where, message = found
        raise ValidationError({"file": f"{where}: {message}"})
    if data.get("version", EXPORT_VERSION) != EXPORT_VERSION:
        raise ValidationError({"file": f"Unsupported export version {data.get('version')!r}."})
    imported = []
    for index, item in enumerate(data["profiles"]):
        fields = _import_item(index, item)
        existing = CompactionProfile.objects.filter(slug=fields["slug"]).first()
        try:
            if existing is not None and not existing.is_builtin:
                for name, value in fields.items():
                    setattr(existing, name, value)
                profile = _save(existing)
            else:
                if existing is not None:
                    fields["slug"] = _unique_slug(fields["slug"] + "-imported")
                profile = _save(CompactionProfile(**fields))
        except ValidationError as error:
            messages = "; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())
            raise ValidationError({"file": f"profiles[{index}] ({fields['slug']}): {messages}"}) from None
        imported.append(profile)
    audit_record(
        actor=actor, action="profile.import", resource="profiles", details={"slugs": [p.slug for p in imported]}
    )
    return imported
