"""Edits make siblings (or a new root), never rewrites; ‹ › steps between siblings."""

import pytest
from django.core.exceptions import ValidationError

from chatcore import branching, selectors, services
from chatcore.models import Message
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, build_path


@pytest.fixture
def channel(chat_model, user):
    return ChannelFactory(owner=user)


def test_an_edited_later_turn_becomes_a_sibling_and_is_answered(channel, llm_server):
    first, answer, second, _ = build_path(channel, 4)
    llm_server.default = Reply(content="Answer to the edit.")

    reply = branching.message_edit(channel=channel, user=channel.owner, original=second, content="Edited turn.")

    edited = reply.parent
    assert (edited.parent_id, edited.role, edited.content) == (answer.pk, "user", "Edited turn.")
    assert (reply.role, reply.content) == ("assistant", "Answer to the edit.")
    assert Message.objects.get(pk=second.pk).content == second.content  # the original is untouched
    assert selectors.cursor_get(channel=channel, user=channel.owner).leaf_id == reply.pk


def test_an_edited_first_turn_becomes_a_new_root(channel, llm_server):
    first, _ = build_path(channel, 2)
    llm_server.default = Reply(content="Fresh start.")

    reply = branching.message_edit(channel=channel, user=channel.owner, original=first, content="Start over.")

    root = reply.parent
    assert (root.parent_id, root.depth, root.content) == (None, 0, "Start over.")
    assert list(Message.objects.filter(parent__isnull=True).order_by("pk").values_list("pk", flat=True)) == [
        first.pk,
        root.pk,
    ]


def test_only_a_user_turn_can_be_edited_and_nothing_is_written_otherwise(channel):
    _, answer = build_path(channel, 2)
    with pytest.raises(ValidationError) as error:
        branching.message_edit(channel=channel, user=channel.owner, original=answer, content="No.")
    assert error.value.message_dict == {"message_id": ["Only a user message of this channel can be edited."]}
    assert Message.objects.count() == 2


def test_sibling_steps_stay_within_the_first_and_last(channel):
    first, answer = build_path(channel, 2)
    siblings = [answer] + [
        services.message_append(
            channel=channel, user=channel.owner, role="assistant", content=f"Other {n}", parent_id=first.pk
        )
        for n in range(2)
    ]
    middle = siblings[1]
    assert selectors.message_sibling_step(message=middle, step=-1) == answer.pk
    assert selectors.message_sibling_step(message=middle, step=1) == siblings[2].pk
    assert selectors.message_sibling_step(message=siblings[2], step=1) == siblings[2].pk
    assert selectors.message_sibling_step(message=answer, step=-1) == answer.pk
    assert selectors.message_sibling_step(message=middle, step=0) == middle.pk
