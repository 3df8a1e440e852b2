"""Branching into a new channel (compaction/services/branch.py): the summary, then copies of the kept messages.

Invariant 9 of docs/design.md: the source path is exactly the summary's covered
messages plus what was copied, each copy pointing at its original.
"""

import pytest
from django.core.exceptions import ValidationError

from chatcore import selectors
from chatcore import services as chatcore_services
from chatcore.context import context_assemble
from chatcore.errors import NotFound
from chatcore.models import AuditEntry, Channel, Message
from compaction.models import CompactionProfile
from compaction.services import channel_compact, summary_branch
from compaction.services.branch import BRANCH_SUMMARY_KIND
from tests.chatcore.factories import ChannelFactory
from tests.compaction.factories import converse


def _path(channel: Channel) -> list[Message]:
    cursor = selectors.cursor_get(channel=channel, user=channel.owner)
    return selectors.message_path(leaf_id=cursor.leaf_id)


def assert_branch_carries_everything(source: Channel, branch: Channel, through: Message) -> list[Message]:
    """Source path == the summary's covered messages + the originals of the copies, in order."""
    source_path = _path(source)
    branch_path = _path(branch)
    covered = [m.pk for m in source_path if m.depth <= through.depth]
    assert covered[-1] == through.pk and len(covered) == through.depth + 1
    opening, copies = branch_path[0], branch_path[1:]
    assert opening.metadata["kind"] == BRANCH_SUMMARY_KIND
    assert opening.metadata["source_through_message"] == through.pk
    originals = [copy.metadata["copied_from"]["message"] for copy in copies]
    assert [m.pk for m in source_path] == covered + originals
    by_pk = {m.pk: m for m in source_path}
    for copy in copies:
        original = by_pk[copy.metadata["copied_from"]["message"]]
        assert copy.metadata["copied_from"] == {"channel": source.pk, "message": original.pk}
        assert (copy.role, copy.content, copy.created_at) == (original.role, original.content, original.created_at)
        assert {k: v for k, v in copy.metadata.items() if k != "copied_from"} == original.metadata
    return copies


def test_branch_from_a_stored_summary_copies_the_kept_messages_in_order(db):
    source = ChannelFactory(title="Invoice relay")
    messages = converse(source, 14)
    result = channel_compact(channel=source, actor=source.owner, keep_recent=4)
    branch = summary_branch(channel=source, actor=source.owner, summary=result.summary)

    copies = assert_branch_carries_everything(source, branch, result.summary.through_message)
    assert [c.metadata["copied_from"]["message"] for c in copies] == [m.pk for m in messages[-4:]]
    opening = _path(branch)[0]
    assert opening.metadata == {
        "kind": "branch_summary",
        "source_channel": source.pk,
        "source_summary": result.summary.pk,
        "source_through_message": result.summary.through_message_id,
        "source_title": "Invoice relay",
        "messages_covered": 10,
    }
    assert opening.content.endswith(result.summary.content)
    branch.refresh_from_db()
    assert (branch.branched_from, branch.branched_from_summary, branch.context_messages) == (
        source,
        result.summary,
        5,
    )
    # What the model of the new channel receives: the summary, then the kept messages as they were.
    context = context_assemble(channel=branch, user=branch.owner)
    assert [m["content"] for m in context.messages[1:]] == [m.content for m in messages[-4:]]
    audit = AuditEntry.objects.get(action="channel.branch")
    assert audit.details == {
        "source_channel": source.pk,
        "source_summary": result.summary.pk,
        "through_message": result.summary.through_message_id,
        "copied": 4,
    }


def test_branch_after_an_iterative_update_and_with_tool_turns(db):
    source = ChannelFactory()
    converse(source, 10)
    owner = source.owner
    call = {"id": "call_1", "type": "function", "function": {"name": "run_command", "arguments": '{"cmd": "ls"}'}}
    chatcore_services.message_append(
        channel=source, user=owner, role="assistant", content="", metadata={"tool_calls": [call]}
    )
    chatcore_services.message_append(
        channel=source, user=owner, role="tool", content="README.md", metadata={"tool_call_id": "call_1"}
    )
    converse(source, 8, start=10)
    channel_compact(channel=source, actor=owner, keep_recent=2)
    converse(source, 9, start=18)
    second = channel_compact(channel=source, actor=owner, keep_recent=5)
    branch = summary_branch(channel=source, actor=owner, summary=second.summary)
    copies = assert_branch_carries_everything(source, branch, second.summary.through_message)
    assert len(copies) == 5


def test_branch_from_a_summary_whose_branch_is_not_active_follows_its_newest_leaf(db):
    source = ChannelFactory()
    messages = converse(source, 12, start=1)  # the newest 3 start with a user's message
    summary = channel_compact(channel=source, actor=source.owner, keep_recent=3).summary
    # The owner goes back to a message the summary covers and starts another branch there.
    chatcore_services.message_append(
        channel=source, user=source.owner, role="user", content="Another direction.", parent_id=messages[3].pk
    )
    branch = summary_branch(channel=source, actor=source.owner, summary=summary)
    copies = _path(branch)[1:]
    assert [c.metadata["copied_from"]["message"] for c in copies] == [m.pk for m in messages[-3:]]


def test_branch_from_a_draft_without_its_message_uses_the_cut_a_compaction_would_make(db):
    source = ChannelFactory()
    messages = converse(source, 12)
    branch = summary_branch(channel=source, actor=source.owner, content="My notes.")
    keep = CompactionProfile.objects.get(slug="structured").keep_recent
    copies = _path(branch)[1:]
    assert [c.metadata["copied_from"]["message"] for c in copies] == [m.pk for m in messages[-keep:]]
    assert branch.branched_from_summary is None


def test_branch_from_a_draft_with_its_message(db):
    source = ChannelFactory()
    messages = converse(source, 12)
    draft = channel_compact(channel=source, actor=source.owner, keep_recent=6, dry_run=True)
    branch = summary_branch(
        channel=source, actor=source.owner, content=draft.content, through_message_id=draft.through_message_id
    )
    copies = assert_branch_carries_everything(source, branch, Message.objects.get(pk=draft.through_message_id))
    assert [c.metadata["copied_from"]["message"] for c in copies] == [m.pk for m in messages[-6:]]


def test_a_message_of_another_channel_is_refused_and_nothing_is_written(db):
    source, other = ChannelFactory(), ChannelFactory()
    converse(source, 8)
    foreign = converse(other, 2)[0]
    before = Channel.objects.count()
    with pytest.raises(ValidationError) as raised:
        summary_branch(channel=source, actor=source.owner, content="Notes.", through_message_id=foreign.pk)
    assert raised.value.message_dict == {"through_message_id": ["No such message in this channel."]}
    assert Channel.objects.count() == before


def test_a_summary_of_another_channel_is_not_found(db):
    source, other = ChannelFactory(), ChannelFactory()
    converse(source, 8)
    converse(other, 12)
    summary = channel_compact(channel=other, actor=other.owner).summary
    with pytest.raises(NotFound):
        summary_branch(channel=source, actor=source.owner, summary=summary)
    assert Channel.objects.count() == 2
