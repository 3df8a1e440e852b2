"""API authentication by personal token (chatcore.models.ApiToken, hashed at rest).

`Authorization: Token <key>` (the scheme this API always had) and
`Authorization: Bearer <key>` (what OpenAI-style clients send) are the same
token. Used by the REST API and by the OpenAI-compatible gateway (/v1/).
"""

from datetime import timedelta
from hmac import compare_digest

from django.contrib.auth.models import User
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from chatcore.compiled import FixedQuery
from chatcore.models import ApiToken
from chatcore.observability.context import work_note
from chatcore.token_keys import key_digest, key_lookup

SCHEMES = (b"token", b"bearer")
# How stale "last used" may get before an authentication writes it again:
# a busy client costs one UPDATE a minute, not one per request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


# The tokens with a key's lookup prefix, with their users: a statement built once (chatcore.compiled), as every
# API and gateway request sends it.
_CANDIDATES = FixedQuery(
    ApiToken,
    lambda using, lookup: ApiToken.objects.using(using).filter(token_key=lookup).select_related("user"),
    lookup=str,
)


class TokenAuthentication(BaseAuthentication):
    """The token check with both header schemes, one query per request
    (the token with its user), expiry enforced and the last use recorded."""

    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[User, ApiToken] | None:
        auth = get_authorization_header(request).split()
        if not auth or auth[0].lower() not in SCHEMES:
            return None
        if len(auth) == 1:
            raise exceptions.AuthenticationFailed("Invalid token header. No credentials provided.")
        if len(auth) > 2:
            raise exceptions.AuthenticationFailed("Invalid token header. Token string should not contain spaces.")
        return self.authenticate_credentials(auth[1])

    def authenticate_credentials(self, token: bytes) -> tuple[User, ApiToken]:
        try:
            key = token.decode("utf-8")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        digest = key_digest(key)
        now = timezone.now()
        for candidate in _CANDIDATES.fetch(lookup=key_lookup(key)):
            if not compare_digest(digest, candidate.digest):
                continue
            if candidate.expiry is not None and candidate.expiry <= now:
                raise exceptions.AuthenticationFailed("Token expired.")
            if not candidate.user.is_active:
                raise exceptions.AuthenticationFailed("User inactive or deleted.")
            work_note(user_id=candidate.user_id)  # log lines from here on say who
            if candidate.last_used_at is None or now - candidate.last_used_at > LAST_USED_RESOLUTION:
                ApiToken.objects.filter(pk=candidate.pk).update(last_used_at=now)
                candidate.last_used_at = now
            return candidate.user, candidate
        raise exceptions.AuthenticationFailed("Invalid token.")

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class TokenAuthenticationScheme(OpenApiAuthenticationExtension):
    """How the schema (and the docs' Authorize button) describe the token."""

    target_class = TokenAuthentication
    name = "tokenAuth"

    def get_security_definition(self, auto_schema) -> dict:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A personal API token (create one at /account/tokens/ or POST /api/tokens/), sent as "
            "`Authorization: Bearer <key>` or `Authorization: Token <key>`.",
        }
