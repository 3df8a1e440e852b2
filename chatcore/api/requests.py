"""The signed-in user of an API request, typed."""

from django.contrib.auth.models import User
from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request


def request_user(request: Request) -> User:
    """The user of a request that passed IsAuthenticated (NotAuthenticated otherwise)."""
    user = request.user
    if not isinstance(user, User):
        raise NotAuthenticated()
    return user
