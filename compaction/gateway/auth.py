"""Who is calling: `Authorization: Bearer <the user's API token>`.

The gateway's one entry to the apps' personal API tokens (hashed at rest,
with expiry: chatcore.api.authentication): the same
keys as on /api/, read with the `Bearer` keyword that OpenAI clients send.
Sessions are not credentials here: a browser's cookie never authorises a
/v1 call (no CSRF exposure).
"""

from django.contrib.auth.models import User
from django.http import HttpRequest
from rest_framework.exceptions import AuthenticationFailed

from chatcore.api.authentication import TokenAuthentication
from chatcore.models import ApiToken
from compaction.gateway.protocol import ProtocolError

MISSING = (
    "You didn't provide an API key. Send it in the Authorization header as 'Bearer YOUR_KEY' "
    "(the OpenAI clients do this with api_key=...)."
)
WRONG = "Incorrect API key provided. It may have expired or been revoked: create one under your API tokens."


def gateway_user(request: HttpRequest) -> User:
    """The token's active user; ProtocolError 401 (as OpenAI words it) otherwise."""
    return gateway_token(request).user


def gateway_token(request: HttpRequest) -> ApiToken:
    """The request's API token, with its active user (and its team, when bound to one); ProtocolError 401
    otherwise."""
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ProtocolError(MISSING, status=401, code="invalid_api_key")
    try:
        _user, token = TokenAuthentication().authenticate_credentials(key.strip().encode())
    except AuthenticationFailed:
        raise ProtocolError(WRONG, status=401, code="invalid_api_key") from None
    return token
