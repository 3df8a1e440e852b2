"""What every API view does with its request: the signed-in user, typed, and
the body parsed by a serializer (a 400 with every field's error otherwise)."""

from typing import Any

from django.contrib.auth.models import User
from rest_framework.exceptions import NotAuthenticated
from rest_framework.fields import Field, empty
from rest_framework.request import Request
from rest_framework.serializers import BaseSerializer, Serializer
from rest_framework.utils.serializer_helpers import BindingDict

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


# The bound fields of the plain serializers that validate request bodies, by class and partial flag.
_BOUND_FIELDS: dict[tuple[type[BaseSerializer], bool], BindingDict | None] = {}


def _shareable(serializer_class: type[BaseSerializer]) -> bool:
    """Whether a serializer's instances build their fields as DRF does: a plain Serializer without an `__init__`
    or a `get_fields` of its own that could change them per instance."""
    return (
        issubclass(serializer_class, Serializer)
        and serializer_class.__init__ is BaseSerializer.__init__
        and serializer_class.get_fields is Serializer.get_fields
    )


# Defaults a field can hand to every request as they are: values nobody can change in place. DRF gave each
# request a deep copy of a field's default; a list or a dict shared by every request could be changed by one.
IMMUTABLE_DEFAULTS = (str, bytes, int, float, bool, frozenset, type(None))


def _field_shareable(field: Any) -> bool:
    """Whether one instance of `field` may validate every request: a plain field (not a nested serializer, nor
    one inside a list's or a dict's `child`) whose default is absent, made anew by a callable, or immutable."""
    if isinstance(field, BaseSerializer) or not isinstance(field, Field):
        return False
    default = field.default
    if not (default is empty or callable(default) or isinstance(default, IMMUTABLE_DEFAULTS)):
        return False
    child = getattr(field, "child", None)
    return child is None or _field_shareable(child)


def _bound_fields(serializer_class: type[BaseSerializer], partial: bool) -> BindingDict | None:
    """The class's fields, built and bound once (to an instance without data, with the same `partial`, the one
    thing of its root a plain field reads while validating); None when the class is not `_shareable` or one of
    its fields is not `_field_shareable` (a nested serializer keeps an instance of its own).

    Why: DRF builds every field again (a deep copy of the declared ones) for each serializer made, which cost
    several times the validation itself for every request body. A plain field keeps nothing of one validation
    for the next, so one set serves every request, in every thread."""
    key = (serializer_class, partial)
    try:
        return _BOUND_FIELDS[key]
    except KeyError:
        pass
    fields: BindingDict | None = None
    built = serializer_class(partial=partial) if _shareable(serializer_class) else None
    if isinstance(built, Serializer):
        fields = built.fields
        if not all(_field_shareable(field) for field in fields.values()):
            fields = None
    _BOUND_FIELDS[key] = fields
    return fields


def request_data(request: Request, serializer_class: type[BaseSerializer], *, partial: bool = False) -> Any:
    """The request body validated by `serializer_class`; ValidationError (400) when it is not valid."""
    serializer = serializer_class(data=request.data, partial=partial)
    fields = _bound_fields(serializer_class, partial)
    if fields is not None:
        serializer.__dict__["fields"] = fields  # DRF's `fields` is a cached property: the built set, lent
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data
