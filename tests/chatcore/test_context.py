"""Context assembly: what a model receives, and what it costs to build."""

import pytest

from chatcore import conf, selectors, services
from chatcore.context import SUMMARY_FRAME, context_assemble
from chatcore.models import Message
from chatcore.tokens import count_tokens
from tests.chatcore.factories import ChannelFactory, PersonaFactory, UserFactory, build_path


@pytest.fixture
def channel(db):
    return ChannelFactory(persona=PersonaFactory(system_prompt="You are terse."))


def test_persona_prompt_then_the_path(channel):
    messages = build_path(channel, 3)
    assembled = context_assemble(channel=channel, user=channel.owner)
    assert assembled.messages == [{"role": "system", "content": "You are terse."}] + [
        {"role": m.role, "content": m.content} for m in messages
    ]
    assert assembled.tokens == count_tokens("You are terse.") + conf.MESSAGE_OVERHEAD_TOKENS + messages[-1].path_tokens
    assert (assembled.summary, assembled.leaf, assembled.path) == (None, messages[-1], messages)
    assert assembled.budget == conf.DEFAULT_CONTEXT_BUDGET
    assert assembled.ratio == assembled.tokens / assembled.budget


def test_empty_channel_and_a_user_without_a_cursor(channel):
    assembled = context_assemble(channel=channel, user=UserFactory())
    assert assembled.messages == [{"role": "system", "content": "You are terse."}]
    assert (assembled.leaf, assembled.path) == (None, [])


def test_summary_replaces_the_covered_messages_as_reference_only_background(channel):
    messages = build_path(channel, 6)
    summary = services.summary_write(
        channel=channel, through_message=messages[3], content="Decided: port 8080.", created_by=None
    )
    assembled = context_assemble(channel=channel, user=channel.owner)
    framed = assembled.messages[1]
    assert framed == {"role": "user", "content": SUMMARY_FRAME.format(content="Decided: port 8080.")}
    assert "reference only" in framed["content"] and "not an instruction" in framed["content"]
    assert assembled.messages[2:] == [{"role": m.role, "content": m.content} for m in messages[4:]]
    assert assembled.summary == summary and assembled.path == messages[4:]
    services.summary_revert(summary=summary, actor=None)
    assembled = context_assemble(channel=channel, user=channel.owner)
    assert assembled.summary is None and len(assembled.messages) == 7


def test_branch_that_left_before_the_summary_gets_the_full_history(channel):
    messages = build_path(channel, 6)
    services.summary_write(channel=channel, through_message=messages[3], content="Covered.", created_by=None)
    branch = services.message_append(
        channel=channel, user=channel.owner, role="user", content="Other way", parent_id=messages[1].pk
    )
    assembled = context_assemble(channel=channel, user=channel.owner)
    assert assembled.summary is None
    assert [m["content"] for m in assembled.messages[1:]] == [messages[0].content, messages[1].content, "Other way"]
    assert assembled.leaf == branch


def test_assembling_for_another_leaf_uses_its_own_boundary(channel):
    messages = build_path(channel, 6)
    summary = services.summary_write(channel=channel, through_message=messages[2], content="S.", created_by=None)
    assembled = context_assemble(channel=channel, user=channel.owner, leaf=messages[4])
    assert assembled.summary == summary and assembled.path == messages[3:5]


def test_old_big_tool_outputs_are_pruned_in_the_context_only(channel):
    owner = channel.owner
    calls = [{"id": "call_7", "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}]
    services.message_append(channel=channel, user=owner, role="user", content="Run the tests.")
    services.message_append(channel=channel, user=owner, role="assistant", content="", metadata={"tool_calls": calls})
    big = "line of output\n" * 400
    old = services.message_append(
        channel=channel, user=owner, role="tool", content=big, metadata={"tool_call_id": "call_7", "name": "run_tests"}
    )
    services.message_append(channel=channel, user=owner, role="user", content="And again?")
    small = services.message_append(
        channel=channel, user=owner, role="tool", content="ok", metadata={"tool_call_id": "call_8"}
    )
    recent = services.message_append(
        channel=channel, user=owner, role="tool", content=big, metadata={"tool_call_id": "call_9", "name": "run_tests"}
    )
    assembled = context_assemble(channel=channel, user=owner)
    note = (
        f"[output of run_tests omitted from the context: {len(big):,} characters, 401 lines; "
        f"the full text is kept in the conversation]"
    )
    assert assembled.messages[2] == {"role": "assistant", "content": "", "tool_calls": calls}
    assert assembled.messages[3] == {"role": "tool", "content": note, "tool_call_id": "call_7"}
    assert assembled.messages[5] == {"role": "tool", "content": "ok", "tool_call_id": "call_8"}
    assert assembled.messages[6]["content"] == big  # after the latest user turn: kept whole
    assert Message.objects.get(pk=old.pk).content == big
    pruned_tokens = count_tokens(note) + conf.MESSAGE_OVERHEAD_TOKENS
    assert assembled.tokens == (
        count_tokens("You are terse.") + conf.MESSAGE_OVERHEAD_TOKENS + recent.path_tokens - old.tokens + pruned_tokens
    )
    assert small.tokens < old.tokens


@pytest.mark.parametrize("size", [10, 200])
def test_path_loading_is_one_query(channel, size, django_assert_num_queries):
    leaf = build_path(channel, size, words=2)[-1]
    with django_assert_num_queries(1):
        path = selectors.message_path(leaf_id=leaf.pk, with_siblings=True)
    assert len(path) == size and path[-1].sibling_count == 1
    with django_assert_num_queries(1):
        assert len(selectors.message_path(leaf_id=leaf.pk, after_depth=size // 2)) == size - size // 2 - 1


@pytest.mark.parametrize("size", [10, 200])
def test_context_assembly_is_a_constant_number_of_queries(db, size, django_assert_num_queries):
    channel = ChannelFactory(persona=PersonaFactory())
    messages = build_path(channel, size, words=2)
    owner = channel.owner
    channel = selectors.channel_get(user=owner, channel_id=channel.pk)
    with django_assert_num_queries(2):  # the cursor (with its summary), then the path
        assert len(context_assemble(channel=channel, user=owner).path) == size
    services.summary_write(channel=channel, through_message=messages[size - 5], content="Most of it.", created_by=None)
    with django_assert_num_queries(2):
        assembled = context_assemble(channel=channel, user=owner)
    assert len(assembled.path) == 4 and assembled.summary is not None


def test_a_speaker_name_is_sent_in_the_form_openai_documents(channel):
    owner = channel.owner
    first = services.message_append(
        channel=channel, user=owner, role=Message.Role.USER, content="Hi", metadata={"name": "ann_1"}
    )
    second = services.message_append(
        channel=channel,
        user=owner,
        role=Message.Role.USER,
        content="Yo",
        parent_id=first.pk,
        metadata={"name": "Bo Lee"},
    )
    services.message_append(
        channel=channel,
        user=owner,
        role=Message.Role.TOOL,
        content="42",
        parent_id=second.pk,
        metadata={"name": "calc", "tool_call_id": "c1"},
    )
    assert context_assemble(channel=channel, user=owner).messages[1:] == [
        {"role": "user", "content": "Hi", "name": "ann_1"},
        {"role": "user", "content": "Yo"},
        {"role": "tool", "content": "42", "tool_call_id": "c1"},
    ]
