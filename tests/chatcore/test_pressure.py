"""The channel's context pressure columns follow the owner's active path
through every kind of change, in the same transaction as the change."""

import itertools

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from chatcore import conf, selectors, services
from chatcore.bulk import NewMessage, messages_bulk_import
from chatcore.locks import channel_lock
from chatcore.models import Channel, Cursor, ModelRole
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, ModelRoleFactory, UserFactory, build_path


def walked_pressure(channel: Channel) -> tuple[int, int]:
    """Ground truth the slow way: walk the owner's whole path and add up."""
    cursor = Cursor.objects.filter(channel=channel, user=channel.owner).first()
    if cursor is None:
        return 0, 0
    path = selectors.message_path(leaf_id=cursor.leaf_id)
    summary = None
    for message in reversed(path):
        summary = channel.summaries.filter(through_message=message, reverted_at__isnull=True).order_by("-id").first()
        if summary:
            break
    if summary is None:
        return sum(m.tokens for m in path), len(path)
    after = [m for m in path if m.depth > summary.through_message.depth]
    return sum(m.tokens for m in after) + summary.tokens, len(after)


def assert_pressure(channel: Channel, tokens: int | None = None, messages: int | None = None) -> None:
    channel.refresh_from_db()
    expected_tokens, expected_messages = walked_pressure(channel)
    assert (channel.context_tokens, channel.context_messages) == (expected_tokens, expected_messages)
    if tokens is not None:
        assert channel.context_tokens == tokens
    if messages is not None:
        assert channel.context_messages == messages
    assert channel.context_ratio == pytest.approx(channel.context_tokens / channel.context_budget)


@pytest.fixture
def channel(db):
    return ChannelFactory(model=LLMModelFactory(context_window=2_000))


def test_new_channel_has_no_pressure_and_its_models_budget(channel):
    channel.refresh_from_db()
    assert (channel.context_tokens, channel.context_messages, channel.context_budget, channel.context_ratio) == (
        0,
        0,
        2_000,
        0.0,
    )


def test_budget_chain_channel_model_then_utility_then_default(db):
    assert ChannelFactory().context_budget == conf.DEFAULT_CONTEXT_BUDGET == 128_000
    ModelRoleFactory(role=ModelRole.Role.UTILITY, primary=LLMModelFactory(context_window=32_000))
    assert ChannelFactory().context_budget == 32_000
    assert ChannelFactory(model=LLMModelFactory(context_window=4_000)).context_budget == 4_000


def test_append_on_the_active_leaf(channel):
    messages = build_path(channel, 5)
    assert_pressure(channel, tokens=messages[-1].path_tokens, messages=5)
    assert channel.context_ratio == pytest.approx(messages[-1].path_tokens / 2_000)


def test_append_without_moving_the_cursor_leaves_pressure(channel):
    messages = build_path(channel, 3)
    channel.refresh_from_db()
    before = channel.context_tokens
    services.message_append(
        channel=channel,
        user=channel.owner,
        role="user",
        content="Side note.",
        parent_id=messages[0].pk,
        move_cursor=False,
    )
    assert_pressure(channel, tokens=before, messages=3)


def test_append_elsewhere_follows_the_new_branch(channel):
    u0, a1, u2, a3 = build_path(channel, 4)
    branch = services.message_append(
        channel=channel, user=channel.owner, role="user", content="Instead.", parent_id=u0.pk
    )
    assert_pressure(channel, tokens=u0.tokens + branch.tokens, messages=2)


def test_append_elsewhere_below_a_summary_keeps_the_boundary(channel):
    messages = build_path(channel, 6)
    summary = services.summary_write(
        channel=channel, through_message=messages[2], content="Early part.", created_by=None
    )
    branch = services.message_append(
        channel=channel, user=channel.owner, role="user", content="Instead.", parent_id=messages[3].pk
    )
    assert_pressure(channel, tokens=messages[3].tokens + branch.tokens + summary.tokens, messages=2)
    again = services.message_append(channel=channel, user=channel.owner, role="assistant", content="Sure.")
    assert_pressure(channel, tokens=messages[3].tokens + branch.tokens + again.tokens + summary.tokens, messages=3)


def _imported_under(channel: Channel, under, texts: list[str]) -> Cursor:
    """`texts` imported under `under` without moving the cursor, then the cursor following them (as the
    gateway appends a resent history's new turns), under the channel's lock."""
    items = [
        NewMessage(role="user", content=text, parent=index - 1 if index else None) for index, text in enumerate(texts)
    ]
    with transaction.atomic():
        locked = channel_lock(channel_id=channel.pk)
        built = messages_bulk_import(channel=locked, user=channel.owner, items=items, under=under, move_cursor=False)
        locked.last_activity_at = built[-1].created_at
        return services.cursor_follow(channel=locked, user=channel.owner, leaf=built[-1], under=under)


def test_cursor_follow_keeps_the_boundary_of_the_cursor_s_leaf(channel):
    messages = build_path(channel, 6)
    summary = services.summary_write(channel=channel, through_message=messages[2], content="Early.", created_by=None)

    cursor = _imported_under(channel, messages[-1], ["Next.", "And then."])

    cursor.refresh_from_db()
    assert (cursor.leaf.content, cursor.leaf.depth, cursor.summary) == ("And then.", 7, summary)
    assert_pressure(channel, messages=5)
    assert channel.last_activity_at == cursor.leaf.created_at


def test_cursor_follow_finds_the_boundary_of_another_branch(channel):
    messages = build_path(channel, 6)
    summary = services.summary_write(channel=channel, through_message=messages[2], content="Early.", created_by=None)
    services.cursor_move(channel=channel, user=channel.owner, message_id=messages[1].pk, exact=True)

    below = _imported_under(channel, messages[3], ["Instead."])
    above = _imported_under(channel, messages[0], ["Before it."])

    assert (below.summary, above.summary) == (summary, None)
    assert Cursor.objects.get(pk=above.pk).leaf.content == "Before it."
    assert_pressure(channel, messages=2)
    assert _imported_under(channel, None, ["A new root."]).summary is None
    assert_pressure(channel, messages=1)


def test_cursor_move_switches_the_measured_path(channel):
    u0, a1, u2, a3 = build_path(channel, 4)
    short = services.message_append(
        channel=channel, user=channel.owner, role="assistant", content="Short.", parent_id=u0.pk
    )
    assert_pressure(channel, tokens=short.path_tokens, messages=2)
    services.cursor_move(channel=channel, user=channel.owner, message_id=a1.pk)
    assert_pressure(channel, tokens=a3.path_tokens, messages=4)
    services.cursor_move(channel=channel, user=channel.owner, message_id=short.pk)
    assert_pressure(channel, tokens=short.path_tokens, messages=2)


def test_summary_write_and_revert(channel):
    messages = build_path(channel, 8)
    leaf = messages[-1]
    first = services.summary_write(
        channel=channel, through_message=messages[3], content="Up to three.", created_by=channel.owner
    )
    assert_pressure(channel, tokens=leaf.path_tokens - messages[3].path_tokens + first.tokens, messages=4)
    second = services.summary_write(
        channel=channel, through_message=messages[5], content="Up to five, longer.", created_by=channel.owner
    )
    assert_pressure(channel, tokens=leaf.path_tokens - messages[5].path_tokens + second.tokens, messages=2)
    assert Cursor.objects.get(channel=channel).summary == second
    services.summary_revert(summary=second, actor=channel.owner)
    assert_pressure(channel, tokens=leaf.path_tokens - messages[3].path_tokens + first.tokens, messages=4)
    services.summary_revert(summary=first, actor=channel.owner)
    assert_pressure(channel, tokens=leaf.path_tokens, messages=8)
    assert Cursor.objects.get(channel=channel).summary is None


def test_summary_on_a_branch_that_is_not_active(channel):
    u0, a1, u2, a3 = build_path(channel, 4)
    other = services.message_append(channel=channel, user=channel.owner, role="user", content="Other.", parent_id=a1.pk)
    channel.refresh_from_db()
    before = channel.context_tokens
    services.summary_write(channel=channel, through_message=a3, content="Old branch.", created_by=None)
    assert_pressure(channel, tokens=before, messages=3)
    services.cursor_move(channel=channel, user=channel.owner, message_id=a3.pk)
    assert_pressure(channel, messages=0)
    services.cursor_move(channel=channel, user=channel.owner, message_id=other.pk)
    assert_pressure(channel, tokens=other.path_tokens, messages=3)


def test_branch_that_left_before_the_summary_sees_everything(channel):
    messages = build_path(channel, 6)
    services.summary_write(channel=channel, through_message=messages[4], content="Most of it.", created_by=None)
    early = services.message_append(
        channel=channel, user=channel.owner, role="user", content="Back then.", parent_id=messages[1].pk
    )
    assert_pressure(channel, tokens=early.path_tokens, messages=3)


def test_guest_changes_do_not_move_the_owners_pressure(channel):
    guest = UserFactory()
    messages = build_path(channel, 4)
    channel.refresh_from_db()
    before = (channel.context_tokens, channel.context_messages, channel.context_ratio)
    services.cursor_move(channel=channel, user=guest, message_id=messages[0].pk)
    services.message_append(
        channel=channel, user=guest, role="user", content="A guest's long aside " * 20, parent_id=messages[0].pk
    )
    channel.refresh_from_db()
    assert (channel.context_tokens, channel.context_messages, channel.context_ratio) == before
    assert_pressure(channel)


def test_failed_summary_write_changes_nothing(channel):
    messages = build_path(channel, 4)
    channel.refresh_from_db()
    before = (channel.context_tokens, channel.context_messages)
    with pytest.raises(ValidationError):
        services.summary_write(channel=channel, through_message=messages[1], content="  ", created_by=None)
    channel.refresh_from_db()
    assert (channel.context_tokens, channel.context_messages) == before
    assert not channel.summaries.exists()


def test_changing_the_model_moves_budget_and_ratio(channel):
    build_path(channel, 4)
    channel.refresh_from_db()
    services.channel_update(channel=channel, actor=channel.owner, model=LLMModelFactory(context_window=500))
    channel.refresh_from_db()
    assert channel.context_budget == 500
    assert channel.context_ratio == pytest.approx(channel.context_tokens / 500)


def test_the_watched_channels_are_one_rule_in_sql_and_in_memory(db):
    owner = UserFactory()
    for kind, archived, ephemeral, deleted in itertools.product(Channel.Type.values, *[(False, True)] * 3):
        Channel.objects.create(
            owner=owner,
            title="c",
            type=kind,
            archived=archived,
            ephemeral=ephemeral,
            deleted_at=timezone.now() if deleted else None,
        )
    watched = set(Channel.objects.pressure_watched().values_list("pk", flat=True))
    assert watched == {channel.pk for channel in Channel.objects.all() if channel.is_pressure_watched}
    assert [Channel.objects.get(pk=pk).type for pk in watched] == [Channel.Type.DIRECT]
