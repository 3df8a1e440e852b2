from chatcore import services
from chatcore.context import context_assemble
from tests.chatcore.factories import ChannelFactory, build_path


def test_append_keeps_running_totals_and_pressure(db):
    channel = ChannelFactory()
    messages = build_path(channel, 5)
    leaf = messages[-1]
    assert leaf.depth == 4
    assert leaf.path_tokens == sum(m.tokens for m in messages)
    channel.refresh_from_db()
    assert channel.context_tokens == leaf.path_tokens
    assert channel.context_messages == 5
    assembled = context_assemble(channel=channel, user=channel.owner)
    assert [m["content"] for m in assembled.messages] == [m.content for m in messages]
    summary = services.summary_write(
        channel=channel, through_message=messages[2], content="Earlier: greetings.", created_by=channel.owner
    )
    channel.refresh_from_db()
    assert channel.context_messages == 2
    assert channel.context_tokens == leaf.path_tokens - messages[2].path_tokens + summary.tokens
    assembled = context_assemble(channel=channel, user=channel.owner)
    assert [m["content"] for m in assembled.messages[1:]] == [m.content for m in messages[3:]]
