"""What every API view does with its request: the signed-in user, typed, and
the body parsed by a serializer (a 400 with every field's error otherwise)."""

from typing import Any

from django.contrib.auth.models import User
from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request
from rest_framework.serializers import BaseSerializer

from chatcore.models import ApiToken, Team


def request_user(request: Request) -> User:
    """The user of a request that passed IsAuthenticated (NotAuthenticated otherwise)."""
    user = request.user
    if not user.is_authenticated:  # any user model: the anonymous user is the one that is not
        raise NotAuthenticated()
    return user


def request_team(request: Request) -> Team | None:
    """The team a request acts in when it came with an API token bound to one (None otherwise)."""
    token = request.auth
    return token.team if isinstance(token, ApiToken) and token.team_id is not None else None


def request_data(request: Request, serializer_class: type[BaseSerializer], *, partial: bool = False) -> Any:
    """The request body validated by `serializer_class`; ValidationError (400) when it is not valid."""
    serializer = serializer_class(data=request.data, partial=partial)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
