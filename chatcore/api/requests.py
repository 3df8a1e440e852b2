"""What every API view does with its request: the signed-in user, typed, and
the body parsed by a serializer (a 400 with every field's error otherwise)."""

from typing import Any

from django.contrib.auth.models import User
from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request
from rest_framework.serializers import BaseSerializer


def request_user(request: Request) -> User:
    """The user of a request that passed IsAuthenticated (NotAuthenticated otherwise)."""
    user = request.user
    if not isinstance(user, User):
        raise NotAuthenticated()
    return user


def request_data(request: Request, serializer_class: type[BaseSerializer], *, partial: bool = False) -> Any:
    """The request body validated by `serializer_class`; ValidationError (400) when it is not valid."""
    serializer = serializer_class(data=request.data, partial=partial)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
