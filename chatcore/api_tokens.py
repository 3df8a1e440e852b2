"""Personal API tokens: create (the key is shown once), revoke.

Keys are made and hashed by chatcore/token_keys.py; the database keeps a
SHA-512 digest and the first characters only, so a lost key cannot be shown again:
the person revokes it and creates another.
"""

from datetime import timedelta

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from chatcore.models import ApiToken, Team, TeamMembership
from chatcore.services import audit_record
from chatcore.token_keys import key_make

# One person's live tokens: plenty for scripts and agents, few enough that a
# leaked session cannot mint an unbounded number.
MAX_TOKENS_PER_USER = 50
MAX_EXPIRY_DAYS = 3650


@transaction.atomic
def api_token_create(
    *, user: User, name: str, expires_in_days: int | None = None, team: Team | None = None
) -> tuple[ApiToken, str]:
    """Returns the token row and the key, which exists nowhere else afterwards. A token bound to `team` (one of
    the person's) acts in it: the channels and /v1 conversations it makes belong to the team."""
    name = (name or "").strip()
    errors: dict[str, str] = {}
    if not name:
        errors["name"] = "Give the token a name, such as the script or machine that will use it."
    elif len(name) > 100:
        errors["name"] = "At most 100 characters."
    if expires_in_days is not None and not 1 <= expires_in_days <= MAX_EXPIRY_DAYS:
        errors["expires_in_days"] = f"Between 1 and {MAX_EXPIRY_DAYS} days, or empty for a token that does not expire."
    if team is not None and not TeamMembership.objects.filter(team=team, user=user).exists():
        errors["team"] = "You can only bind a token to a team you belong to."
    if errors:
        raise ValidationError(errors)
    if ApiToken.objects.select_for_update().filter(user=user).count() >= MAX_TOKENS_PER_USER:
        raise ValidationError({"name": f"You have {MAX_TOKENS_PER_USER} tokens already: revoke one first."})
    expiry = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    key, lookup, digest = key_make()
    token = ApiToken.objects.create(user=user, token_key=lookup, digest=digest, expiry=expiry, name=name, team=team)
    audit_record(
        actor=user,
        action="token.create",
        resource=f"token:{token.pk}",
        details={
            "name": name,
            "prefix": token.prefix,
            "expiry": token.expiry.isoformat() if token.expiry else None,
            "team": team.pk if team else None,
        },
    )
    return token, key


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor: User) -> None:
    """The token stops working at once (its row is deleted)."""
    audit_record(
        actor=actor,
        action="token.revoke",
        resource=f"token:{token.pk}",
        details={"name": token.name, "prefix": token.prefix},
    )
    token.delete()
