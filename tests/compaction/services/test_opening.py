"""A profile's protect_first_n: the opening exchange stays word for word in every summary, never summarised."""

from compaction.services import channel_compact
from compaction.services.opening import EXTRACTS_KEY, TITLE
from tests.chatcore.factories import ChannelFactory
from tests.compaction.factories import CompactionProfileFactory, converse


def test_the_first_messages_stay_verbatim_through_iterative_updates(db):
    channel = ChannelFactory()
    from chatcore import services

    owner = channel.owner
    first = services.message_append(
        channel=channel, user=owner, role="user", content="You review our payments service.\nNever touch production."
    )
    second = services.message_append(channel=channel, user=owner, role="assistant", content="Understood: review only.")
    converse(channel, 14, start=2)
    profile = CompactionProfileFactory(slug="guarded", protect_first_n=2, keep_recent=2)

    result = channel_compact(channel=channel, actor=owner, profile_slug="guarded")
    text = result.summary.content
    assert text.startswith(
        f"## {TITLE}\n**User:**\n> You review our payments service.\n> Never touch production.\n"
        f"**Assistant:**\n> Understood: review only.\n\n"
    )
    assert result.summary.extracts[EXTRACTS_KEY] == [first.pk, second.pk]
    assert result.summary.content.count(TITLE) == 1

    converse(channel, 12, start=20)
    update = channel_compact(channel=channel, actor=owner, profile_slug="guarded").summary
    assert update.content.startswith(f"## {TITLE}\n**User:**\n> You review our payments service.\n")
    assert update.content.count(TITLE) == 1 and update.content.count("Never touch production.") == 1
    assert update.extracts[EXTRACTS_KEY] == [first.pk, second.pk]
    assert len(update.content) and update.tokens <= profile.max_summary_tokens + 10


def test_off_by_default(db):
    channel = ChannelFactory()
    converse(channel, 12)
    summary = channel_compact(channel=channel, actor=channel.owner).summary
    assert TITLE not in summary.content and EXTRACTS_KEY not in summary.extracts
