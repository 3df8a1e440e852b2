"""Request bodies validated with fields built once (chatcore.api.requests): the same data and the same errors
as a serializer made for the request, for the plain serializers that can lend their fields, and DRF's own
behaviour for the others."""

import pytest
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from chatcore.api import requests as api_requests
from chatcore.api import serializers as s
from chatcore.api.requests import request_data


class Body:
    """A request's parsed body: all `request_data` reads."""

    def __init__(self, data: object) -> None:
        self.data = data


class WithItsOwnInit(serializers.Serializer):
    name = serializers.CharField()

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"] = serializers.CharField(max_length=3)


def _drf(serializer_class: type[serializers.BaseSerializer], data: object, *, partial: bool = False):
    serializer = serializer_class(data=data, partial=partial)
    if serializer.is_valid():
        return serializer.validated_data
    return serializer.errors


def _ours(serializer_class: type[serializers.BaseSerializer], data: object, *, partial: bool = False):
    try:
        return request_data(Body(data), serializer_class, partial=partial)
    except ValidationError as error:
        return error.detail


@pytest.mark.parametrize(
    "data",
    [
        {"content": "  And now?  ", "stream": True},
        {"parent_id": 7},
        {},
        {"content": "x", "parent_id": 0, "stream": "perhaps"},
        {"content": None, "parent_id": "seven"},
        ["not", "an", "object"],
    ],
)
def test_the_reply_body_validates_as_a_serializer_made_for_it(data):
    assert _ours(s.ReplySerializer, data) == _drf(s.ReplySerializer, data)
    assert _ours(s.ReplySerializer, data) == _drf(s.ReplySerializer, data)  # again, with the fields lent


@pytest.mark.parametrize(
    "data", [{"title": "Renamed"}, {}, {"title": ""}, {"title": "x" * 201, "archived": "maybe"}, {"persona": "none"}]
)
def test_a_partial_body_validates_as_partial_and_the_whole_one_as_whole(db, data):
    for partial in (True, False, True):
        assert _ours(s.ChannelUpdateSerializer, data, partial=partial) == _drf(
            s.ChannelUpdateSerializer, data, partial=partial
        )


def test_the_fields_are_built_once_per_class_and_partial_flag(monkeypatch):
    monkeypatch.setattr(api_requests, "_BOUND_FIELDS", {})
    request_data(Body({"content": "a"}), s.ReplySerializer)
    built = api_requests._BOUND_FIELDS[(s.ReplySerializer, False)]
    request_data(Body({"content": "b"}), s.ReplySerializer)
    request_data(Body({"content": "c"}), s.ReplySerializer, partial=True)
    assert api_requests._BOUND_FIELDS[(s.ReplySerializer, False)] is built
    assert set(api_requests._BOUND_FIELDS) == {(s.ReplySerializer, False), (s.ReplySerializer, True)}
    assert built["content"].root.partial is False
    assert api_requests._BOUND_FIELDS[(s.ReplySerializer, True)]["content"].root.partial is True


def test_a_serializer_that_changes_its_fields_per_instance_builds_them_each_time():
    assert not api_requests._shareable(WithItsOwnInit)
    assert not api_requests._shareable(s.MessageSerializer)  # a ModelSerializer: its fields come from the model
    with pytest.raises(ValidationError) as refused:
        request_data(Body({"name": "long"}), WithItsOwnInit)
    assert refused.value.detail == _drf(WithItsOwnInit, {"name": "long"})


class WithAMutableDefault(serializers.Serializer):
    tags = serializers.ListField(child=serializers.CharField(), default=[])


class Pair(serializers.Serializer):
    left = serializers.IntegerField()


class WithANestedChild(serializers.Serializer):
    counts = serializers.ListField(child=serializers.DictField(child=serializers.IntegerField()))
    pairs = serializers.ListField(child=Pair())


class WithSafeDefaults(serializers.Serializer):
    tags = serializers.ListField(child=serializers.CharField(), default=list)
    name = serializers.CharField(default="anon")
    count = serializers.IntegerField(default=None, allow_null=True)


def test_fields_with_a_mutable_default_or_a_nested_serializer_child_are_built_for_each_request(monkeypatch):
    monkeypatch.setattr(api_requests, "_BOUND_FIELDS", {})
    first = request_data(Body({}), WithAMutableDefault)
    first["tags"].append("changed by the first request")
    assert request_data(Body({}), WithAMutableDefault) == {"tags": []}
    assert api_requests._BOUND_FIELDS[(WithAMutableDefault, False)] is None

    assert api_requests._bound_fields(WithANestedChild, False) is None
    assert api_requests._bound_fields(WithSafeDefaults, False) is not None
    assert request_data(Body({}), WithSafeDefaults) == _drf(WithSafeDefaults, {})
