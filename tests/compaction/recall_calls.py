"""A channel whose older part a summary stands in for, and the model's recall_history calls, for the
recall tool's tests (whole, streamed and gateway replies)."""

import json

from chatcore import services
from chatcore.models import Channel
from tests.chatcore.factories import ChannelFactory

PORT_FACT = "And the kiwi deployment uses port 8443."


def recall_call(query: str, limit: int = 3, call_id: str = "c1") -> dict:
    arguments = json.dumps({"query": query, "limit": limit})
    return {"id": call_id, "type": "function", "function": {"name": "recall_history", "arguments": arguments}}


def summarized_channel(*, user, model, opening: int = 0) -> Channel:
    """Two exchanges (after `opening` filler exchanges) covered by a summary in force on the owner's path."""
    channel = ChannelFactory(owner=user)
    Channel.objects.filter(pk=channel.pk).update(model=model)
    channel.refresh_from_db()

    def say(role: str, text: str):
        return services.message_append(channel=channel, user=user, role=role, content=text)

    for index in range(opening):
        say("user", f"Filler question {index} about the weather in Lisbon.")
        say("assistant", f"Filler answer {index}: mild and sunny.")
    say("user", "Our staging database password rotation happens on the 3rd of each month.")
    say("assistant", "Noted: rotation on the 3rd.")
    covered = say("user", PORT_FACT)
    say("assistant", "Understood.")
    services.summary_write(channel=channel, through_message=covered, content="We talked about ops.", created_by=None)
    return channel
