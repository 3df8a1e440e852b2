"""Edits: an edited user turn is never a rewrite but a new sibling of the
original (a new root when the original was the first message), answered by
the model; the cursor follows it, so the old branch stays one ‹ away."""

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from chatcore.models import Channel, Message
from chatcore.replies import ReplyPlan, reply_generate, reply_prepare
from chatcore.services import message_append


def _edit_reply_arguments(*, channel: Channel, user: User, original: Message, content: str) -> dict:
    """Check that `original` is a user turn of this channel and say how to answer its edit: a first
    message's edit is stored here as a new root (the reply then answers the active leaf); any other
    edit is appended under the original's parent by the reply itself."""
    if original.channel_id != channel.pk or original.role != Message.Role.USER:
        raise ValidationError({"message_id": "Only a user message of this channel can be edited."})
    if original.parent_id is None:
        message_append(channel=channel, user=user, role=Message.Role.USER, content=content, root=True)
        return {"channel": channel, "user": user}
    return {"channel": channel, "user": user, "content": content, "parent_id": original.parent_id}


def message_edit_prepare(*, channel: Channel, user: User, original: Message, content: str) -> ReplyPlan:
    """Store `content` as a sibling of the user turn `original` and get its reply ready to ask for
    (the pages then stream it: chatcore.streaming).

    ValidationError when `original` is not a user turn of this channel.
    """
    return reply_prepare(**_edit_reply_arguments(channel=channel, user=user, original=original, content=content))


def message_edit(*, channel: Channel, user: User, original: Message, content: str) -> Message:
    """Store `content` as a sibling of the user turn `original`, then answer it; returns the reply.

    ValidationError when `original` is not a user turn of this channel.
    """
    return reply_generate(**_edit_reply_arguments(channel=channel, user=user, original=original, content=content))
