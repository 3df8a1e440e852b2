"""Statements built once (chatcore.compiled): each call sends the same text with its own values, and its rows
are the instances the query set itself returns."""

import pytest
from django.db.models import Exists, OuterRef

from chatcore.compiled import FixedQuery
from chatcore.models import Message
from tests.chatcore.factories import ChannelFactory, PersonaFactory, build_path


def _children(using: str, channel_id: int, hashes: list[str]):
    return (
        Message.objects.using(using)
        .filter(channel_id=channel_id, chain_hash__in=hashes)
        .select_related("channel__persona", "root")
        .annotate(has_children=Exists(Message.objects.filter(parent_id=OuterRef("pk"))))
        .order_by("-depth")
    )


def test_the_rows_are_the_query_set_s_instances_with_their_related_objects_and_annotations(user):
    channel = ChannelFactory(owner=user, persona=PersonaFactory())
    messages = build_path(channel, 4)
    hashes = [m.chain_hash for m in messages[1:3]]
    query = FixedQuery(Message, _children, channel_id=int, hashes=list)

    fetched = query.fetch(channel_id=channel.pk, hashes=hashes)
    expected = list(_children("default", channel.pk, hashes))

    assert fetched == expected == [messages[2], messages[1]]
    for got, want in zip(fetched, expected, strict=True):
        assert got.__dict__.keys() == want.__dict__.keys()
        assert {k: v for k, v in got.__dict__.items() if k != "_state"} == {
            k: v for k, v in want.__dict__.items() if k != "_state"
        }
        assert (got.channel.persona, got.root, got.has_children) == (channel.persona, messages[0], True)
        assert not got._state.adding and got._state.db == "default"


def test_the_statement_is_built_once_for_each_length_of_a_list(user, django_assert_num_queries):
    channel = ChannelFactory(owner=user)
    messages = build_path(channel, 3)
    built = []

    def build(using: str, channel_id: int, hashes: list[str]):
        built.append(len(hashes))
        return _children(using, channel_id, hashes)

    query = FixedQuery(Message, build, channel_id=int, hashes=list)
    query.fetch(channel_id=channel.pk, hashes=[messages[0].chain_hash])
    with django_assert_num_queries(3):
        assert query.fetch(channel_id=channel.pk, hashes=[messages[1].chain_hash]) == [messages[1]]
        assert query.fetch(channel_id=channel.pk, hashes=[m.chain_hash for m in messages]) == messages[::-1]
        assert query.fetch(channel_id=channel.pk + 1, hashes=[messages[1].chain_hash]) == []
    assert built == [0, 1, 3]  # the first: which database it reads (a locking read takes the write one)


def test_values_list_rows_come_back_as_tuples(user):
    channel = ChannelFactory(owner=user)
    first, second = build_path(channel, 2)
    query = FixedQuery(
        Message,
        lambda using, channel_id: Message.objects.using(using).filter(channel_id=channel_id).values_list("id", "depth"),
        channel_id=int,
    )
    assert sorted(query.rows(channel_id=channel.pk)) == [(first.pk, 0), (second.pk, 1)]


def test_a_value_the_field_changes_on_its_way_is_refused(user):
    channel = ChannelFactory(owner=user)
    build_path(channel, 1)
    query = FixedQuery(
        Message, lambda using, text: Message.objects.using(using).filter(content__icontains=text), text=str
    )
    with pytest.raises(ValueError, match="text did not reach"):
        query.fetch(text="turn")
