"""The cut between summarized and kept messages falls before a user's message, for every trigger."""

import json

import pytest
from django.core.exceptions import ValidationError

from chatcore import services
from chatcore.errors import Unprocessable
from chatcore.models import Message, Summary
from compaction.services import channel_compact
from tests.chatcore.factories import ChannelFactory

# A request answered through a tool call, requests answered in two replies, a user's follow-up.
ROLES = ["user", "assistant", "user", "call", "tool", "assistant", "user", "assistant", "assistant", "user", "user"]
ROLES += ["assistant", "user", "assistant"]


def _conversation(channel):
    messages = []
    for index, role in enumerate(ROLES):
        metadata = None
        content = f"Turn {index} about item {index * 7}."
        if role == "call":
            role, content = "assistant", ""
            metadata = {"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
        elif role == "tool":
            metadata = {"tool_call_id": "c1", "name": "f"}
        messages.append(
            services.message_append(channel=channel, user=channel.owner, role=role, content=content, metadata=metadata)
        )
    return messages


@pytest.mark.parametrize("trigger", Summary.Trigger.values)
@pytest.mark.parametrize("keep_recent", range(0, len(ROLES) - 3))
def test_the_kept_part_opens_with_a_user_message(db, trigger, keep_recent):
    channel = ChannelFactory()
    messages = _conversation(channel)
    try:
        result = channel_compact(
            channel=channel, actor=channel.owner, trigger=trigger, keep_recent=keep_recent, dry_run=True
        )
    except Unprocessable as refused:
        # Too few left before the nearest user message: nothing is summarized, and the reply says why.
        assert refused.extra["would_summarize"] < 4
        return
    cut = next(i for i, m in enumerate(messages) if m.pk == result.through_message_id) + 1
    kept = messages[cut:]
    assert len(kept) >= keep_recent
    assert not kept or kept[0].role == Message.Role.USER
    # The least that had to be kept: no more than needed to reach that user message.
    assert all(m.role != Message.Role.USER for m in messages[cut + 1 : len(messages) - keep_recent])


def test_an_explicit_cut_between_a_request_and_its_answer_is_refused(db):
    channel = ChannelFactory()
    messages = _conversation(channel)
    with pytest.raises(ValidationError) as caught:
        channel_compact(channel=channel, actor=channel.owner, content="Edited.", through_message_id=messages[6].pk)
    assert list(caught.value.message_dict) == ["through_message_id"]
    assert not Summary.objects.exists()
    written = channel_compact(
        channel=channel, actor=channel.owner, content="Edited.", through_message_id=messages[8].pk
    )
    assert written.summary.through_message_id == messages[8].pk
    assert json.dumps(written.summary.content) == '"Edited."'
