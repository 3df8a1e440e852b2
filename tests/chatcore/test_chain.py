"""Content chain hashes and roots, set at insert by every way a message is stored."""

import json

import pytest

from chatcore import conf, services
from chatcore.bulk import TreeBuilder, messages_bulk_import
from chatcore.chain import chain_hash, chain_hashes, chain_seed
from chatcore.context import context_assemble
from chatcore.models import Message
from chatcore.tokens import count_tokens
from tests.chatcore.factories import ChannelFactory, UserFactory, build_path

CALL = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}


@pytest.fixture
def channel(db):
    return ChannelFactory()


def test_each_message_hashes_its_parent_role_content_and_tool_fields(channel):
    u0, a1, u2 = build_path(channel, 3)
    expected = chain_hashes(owner_id=channel.owner_id, messages=[(m.role, m.content, m.metadata) for m in (u0, a1, u2)])
    assert [m.chain_hash for m in (u0, a1, u2)] == expected
    assert len(set(expected)) == 3 and all(len(h) == 32 for h in expected)
    assert Message.objects.get(pk=u2.pk).chain_hash == expected[2]


def test_equal_content_under_different_parents_or_owners_hashes_differently(channel):
    other = ChannelFactory(owner=UserFactory())
    first = services.message_append(channel=channel, user=channel.owner, role="user", content="Hello")
    same_owner = services.message_append(
        channel=ChannelFactory(owner=channel.owner), user=channel.owner, role="user", content="Hello"
    )
    other_owner = services.message_append(channel=other, user=other.owner, role="user", content="Hello")
    child = services.message_append(channel=channel, user=channel.owner, role="user", content="Hello")
    assert first.chain_hash == same_owner.chain_hash  # the same opening of one user: found in either channel
    assert first.chain_hash != other_owner.chain_hash
    assert child.chain_hash != first.chain_hash


@pytest.mark.parametrize(
    "variant",
    [
        {"content": "  Read it.\n"},  # surrounding whitespace
        {"tool_calls": [{**CALL, "function": {"name": "read_file", "arguments": '{ "path" : "a.txt" }'}}]},
        {"tool_calls": [{**CALL, "function": {"name": "read_file", "arguments": {"path": "a.txt"}}}]},
        {"tool_calls": [{"id": "call_1", "function": {"name": "read_file", "arguments": '{"path":"a.txt"}'}}]},
    ],
)
def test_a_client_s_respelling_of_the_same_message_hashes_the_same(variant):
    stored = chain_hash(parent_hash="p", role="assistant", content="Read it.", metadata={"tool_calls": [CALL]})
    content = variant.pop("content", "Read it.")
    resent = chain_hash(parent_hash="p", role="assistant", content=content, metadata={"tool_calls": [CALL], **variant})
    assert resent == stored


@pytest.mark.parametrize(
    "change",
    [
        {"role": "user"},
        {"content": "Read that."},
        {"metadata": {"tool_calls": [{**CALL, "id": "call_2"}]}},
        {"metadata": {"tool_calls": [{**CALL, "function": {"name": "read_file", "arguments": '{"path": "b"}'}}]}},
        {"metadata": {"tool_call_id": "call_1"}},
        {"metadata": {"content_parts": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]}},
        {"parent_hash": "q"},
    ],
)
def test_any_change_of_role_content_tool_fields_parts_or_parent_changes_the_hash(change):
    base = {"parent_hash": "p", "role": "assistant", "content": "Read it.", "metadata": {"tool_calls": [CALL]}}
    assert chain_hash(**{**base, **change}) != chain_hash(**base)


def test_a_chain_continues_from_the_hash_of_the_message_before():
    path = [("system", "Be brief.", None), ("user", "Hi", {}), ("assistant", "", {"tool_calls": [CALL]})]

    whole = chain_hashes(owner_id=3, messages=path)

    assert chain_hashes(owner_id=3, messages=path[2:], after=whole[1]) == whole[2:]
    assert chain_hashes(owner_id=3, messages=path[1:], after=whole[0]) == whole[1:]


def test_roots_point_nowhere_and_descendants_at_their_root(channel):
    system = services.message_append(channel=channel, user=channel.owner, role="system", content="Be brief.")
    u1, a2 = build_path(channel, 2)
    other_root = services.message_append(channel=channel, user=channel.owner, role="user", content="Hi", root=True)
    assert system.root_id is None and other_root.root_id is None
    assert (u1.root_id, a2.root_id) == (system.pk, system.pk)
    assert system.chain_hash == chain_hash(
        parent_hash=chain_seed(channel.owner_id), role="system", content="Be brief.", metadata={}
    )


def test_bulk_import_stores_what_appending_one_by_one_stores(channel):
    tree = TreeBuilder()
    tree.add("system", "Be brief.")
    tree.add("user", "Read a.txt")
    tree.add("assistant", "", metadata={"tool_calls": [CALL]})
    tree.add("tool", "contents", metadata={"tool_call_id": "call_1", "name": "read_file"})
    built = messages_bulk_import(channel=channel, user=channel.owner, items=tree.items)
    appended_channel = ChannelFactory(owner=channel.owner)
    appended = [
        services.message_append(
            channel=appended_channel, user=channel.owner, role=i.role, content=i.content, metadata=i.metadata
        )
        for i in tree.items
    ]
    stored = list(Message.objects.filter(channel=channel).order_by("depth"))
    assert [m.chain_hash for m in stored] == [m.chain_hash for m in appended] == [m.chain_hash for m in built]
    assert [m.root_id for m in stored] == [None, built[0].pk, built[0].pk, built[0].pk]
    tree_fields = ("depth", "tokens", "chars", "path_tokens", "path_chars")
    expected = [[getattr(m, f) for f in tree_fields] for m in appended]
    assert [[getattr(m, f) for f in tree_fields] for m in stored] == expected
    assert [[getattr(m, f) for f in tree_fields] for m in built] == expected


def test_a_summarised_system_root_is_still_sent_before_the_summary(channel):
    system = services.message_append(channel=channel, user=channel.owner, role="system", content="Answer in French.")
    path = build_path(channel, 6)
    summary = services.summary_write(
        channel=channel, through_message=path[3], content="Earlier: greetings.", created_by=None
    )
    assembled = context_assemble(channel=channel, user=channel.owner)
    assert [m["role"] for m in assembled.messages] == ["system", "user", "user", "assistant"]
    assert assembled.messages[0]["content"] == "Answer in French."
    assert "Earlier: greetings." in assembled.messages[1]["content"]
    assert assembled.summary == summary
    framed = count_tokens(assembled.messages[1]["content"]) + conf.MESSAGE_OVERHEAD_TOKENS
    expected = system.tokens + framed + path[4].tokens + path[5].tokens
    assert assembled.tokens == expected


def test_image_parts_are_sent_as_they_came_and_counted_flat(channel, settings):
    parts = [{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": "data:,x"}}]
    message = services.message_append(
        channel=channel,
        user=channel.owner,
        role="user",
        content="What is this?\n[image]",
        metadata={"content_parts": parts},
    )
    text_only = services.message_size(content="What is this?\n[image]", metadata=None)[0]
    assert message.tokens == text_only + 765
    assembled = context_assemble(channel=channel, user=channel.owner)
    assert assembled.messages == [{"role": "user", "content": parts}]
    assert assembled.tokens == message.tokens
    assert json.loads(json.dumps(assembled.messages)) == assembled.messages


def test_exact_cursor_move_stays_on_the_message(channel):
    u0, a1, u2, a3 = build_path(channel, 4)
    cursor = services.cursor_move(channel=channel, user=channel.owner, message_id=a1.pk, exact=True)
    assert cursor.leaf_id == a1.pk
    assert services.cursor_move(channel=channel, user=channel.owner, message_id=a1.pk).leaf_id == a3.pk
