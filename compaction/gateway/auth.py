"""Who is calling: `Authorization: Bearer <the user's API token>`.

The one place that knows how API tokens are stored, so that the gateway
follows the project's token model: today DRF's token table (the same keys
as `Authorization: Token <key>` on /api/), read here with the `Bearer`
keyword that OpenAI clients send.
"""

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from compaction.gateway.protocol import ProtocolError


class BearerTokenAuthentication(TokenAuthentication):
    keyword = "Bearer"


def gateway_user(request: HttpRequest) -> AbstractBaseUser:
    """The token's active user; ProtocolError 401 (as OpenAI words it) otherwise."""
    try:
        found = BearerTokenAuthentication().authenticate(request)
    except AuthenticationFailed:
        found = None
        reason = "Incorrect API key provided. Create one under your account or ask staff for one."
    else:
        reason = (
            "You didn't provide an API key. Send it in the Authorization header as 'Bearer YOUR_KEY' "
            "(the OpenAI clients do this with api_key=...)."
        )
    if found is None:
        raise ProtocolError(reason, status=401, code="invalid_api_key")
    return found[0]
