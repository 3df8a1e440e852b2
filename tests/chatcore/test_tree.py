"""The message tree: immutable messages, siblings from edits and
regenerations, cursors, and paths with and without a boundary."""

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext

from chatcore import conf, selectors, services
from chatcore.characters import NUL_MESSAGE, SURROGATE_MESSAGE
from chatcore.models import AuditEntry, Cursor, Message
from tests.chatcore.factories import ChannelFactory, UserFactory, build_path


def path_ids(leaf_id, **kwargs):
    return [m.pk for m in selectors.message_path(leaf_id=leaf_id, **kwargs)]


def cursor_leaf(channel, user=None):
    return Cursor.objects.get(channel=channel, user=user or channel.owner).leaf_id


@pytest.fixture
def channel(db):
    return ChannelFactory()


def test_append_sets_depth_and_running_totals(channel):
    u0, a1, u2 = build_path(channel, 3)
    assert [m.depth for m in (u0, a1, u2)] == [0, 1, 2]
    assert (u0.parent_id, a1.parent_id, u2.parent_id) == (None, u0.pk, a1.pk)
    assert u2.path_tokens == u0.tokens + a1.tokens + u2.tokens
    assert u2.path_chars == len(u0.content) + len(a1.content) + len(u2.content)
    assert u0.tokens == services.message_size(content=u0.content, metadata=None)[0]
    assert u0.author == channel.owner and a1.author is None
    assert cursor_leaf(channel) == u2.pk


def test_tool_calls_count_towards_size_and_allow_empty_content(channel):
    calls = [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}]
    message = services.message_append(
        channel=channel, user=channel.owner, role="assistant", content="", metadata={"tool_calls": calls}
    )
    assert message.tokens > conf.MESSAGE_OVERHEAD_TOKENS
    assert message.chars == len(services.json.dumps(calls, ensure_ascii=False))


def test_edit_creates_a_sibling_and_leaves_the_original_untouched(channel):
    u0, a1, u2, a3 = build_path(channel, 4)
    edited = services.message_append(
        channel=channel, user=channel.owner, role="user", content="Rephrased.", parent_id=a1.pk
    )
    assert edited.parent_id == a1.pk and edited.depth == 2
    assert edited.path_tokens == a1.path_tokens + edited.tokens
    assert cursor_leaf(channel) == edited.pk
    assert path_ids(edited.pk) == [u0.pk, a1.pk, edited.pk]
    original = Message.objects.get(pk=u2.pk)
    assert (original.content, original.parent_id, original.path_tokens) == (u2.content, a1.pk, u2.path_tokens)
    assert list(Message.objects.filter(parent=u2).values_list("pk", flat=True)) == [a3.pk]
    assert [m.pk for m in selectors.message_siblings(message=edited)] == [u2.pk, edited.pk]


def test_new_root_is_a_root_sibling(channel):
    u0, a1 = build_path(channel, 2)
    root = services.message_append(channel=channel, user=channel.owner, role="user", content="Start over.", root=True)
    assert root.parent_id is None and root.depth == 0 and root.path_tokens == root.tokens
    assert cursor_leaf(channel) == root.pk
    first = selectors.message_path(leaf_id=a1.pk, with_siblings=True)
    second = selectors.message_path(leaf_id=root.pk, with_siblings=True)
    assert [(m.pk, m.sibling_index, m.sibling_count) for m in first] == [(u0.pk, 1, 2), (a1.pk, 1, 1)]
    assert [(m.pk, m.sibling_index, m.sibling_count) for m in second] == [(root.pk, 2, 2)]
    assert [m.pk for m in selectors.message_siblings(message=u0)] == [u0.pk, root.pk]


def test_roots_of_other_channels_are_not_siblings(channel):
    (mine,) = build_path(channel, 1)
    build_path(ChannelFactory(owner=channel.owner), 1)
    (only,) = selectors.message_path(leaf_id=mine.pk, with_siblings=True)
    assert (only.sibling_index, only.sibling_count) == (1, 1)


def test_sibling_index_two_of_three(channel):
    u0, a1 = build_path(channel, 2)
    second = services.message_append(
        channel=channel, user=channel.owner, role="assistant", content="B", parent_id=u0.pk
    )
    third = services.message_append(channel=channel, user=channel.owner, role="assistant", content="C", parent_id=u0.pk)
    services.cursor_move(channel=channel, user=channel.owner, message_id=second.pk)
    path = selectors.message_path(leaf_id=cursor_leaf(channel), with_siblings=True)
    assert [(m.pk, m.sibling_index, m.sibling_count) for m in path] == [(u0.pk, 1, 1), (second.pk, 2, 3)]
    last = selectors.message_path(leaf_id=third.pk, with_siblings=True)[-1]
    assert (last.sibling_index, last.sibling_count) == (3, 3)


def test_cursor_move_goes_to_the_most_recent_descendant_leaf(channel):
    u0, a1, u2, a3, u4, a5 = build_path(channel, 6)
    # A regeneration of a3 (a sibling), continued for two more turns.
    b3 = services.message_append(
        channel=channel, user=channel.owner, role="assistant", content="Other answer.", parent_id=u2.pk
    )
    b4 = services.message_append(channel=channel, user=channel.owner, role="user", content="Go on.")
    assert cursor_leaf(channel) == b4.pk

    cursor = services.cursor_move(channel=channel, user=channel.owner, message_id=a3.pk)
    assert cursor.leaf_id == a5.pk  # the old branch's own leaf
    assert path_ids(cursor.leaf_id) == [u0.pk, a1.pk, u2.pk, a3.pk, u4.pk, a5.pk]

    cursor = services.cursor_move(channel=channel, user=channel.owner, message_id=u0.pk)
    assert cursor.leaf_id == b4.pk  # the newest leaf below the root
    assert selectors.message_latest_leaf(message_id=b3.pk) == b4.pk
    assert selectors.message_latest_leaf(message_id=a5.pk) == a5.pk

    # Growing the old branch makes it the most recent below their common ancestor.
    services.cursor_move(channel=channel, user=channel.owner, message_id=a5.pk)
    a6 = services.message_append(channel=channel, user=channel.owner, role="user", content="Back here.")
    assert services.cursor_move(channel=channel, user=channel.owner, message_id=u2.pk).leaf_id == a6.pk


def test_cursor_move_rejects_messages_of_other_channels(channel):
    (mine,) = build_path(channel, 1)
    (theirs,) = build_path(ChannelFactory(), 1)
    with pytest.raises(ValidationError) as error:
        services.cursor_move(channel=channel, user=channel.owner, message_id=theirs.pk)
    assert error.value.message_dict == {"message_id": ["No such message in this channel."]}
    assert cursor_leaf(channel) == mine.pk


def test_path_with_a_boundary_stops_there(channel):
    messages = build_path(channel, 8)
    leaf = messages[-1]
    assert path_ids(leaf.pk) == [m.pk for m in messages]
    assert path_ids(leaf.pk, after_depth=4) == [m.pk for m in messages[5:]]
    assert path_ids(leaf.pk, after_depth=7) == []
    mid = selectors.message_path(leaf_id=messages[3].pk, after_depth=1)
    assert [m.pk for m in mid] == [m.pk for m in messages[2:4]]
    assert mid[0].content == messages[2].content and mid[0].metadata == {}


def test_summary_boundary_is_the_deepest_active_summary_on_the_path(channel):
    messages = build_path(channel, 10)
    leaf = messages[-1]
    assert selectors.summary_boundary_for(leaf_id=leaf.pk) is None
    first = services.summary_write(
        channel=channel, through_message=messages[3], content="First part.", created_by=channel.owner
    )
    assert selectors.summary_boundary_for(leaf_id=leaf.pk) == first
    second = services.summary_write(
        channel=channel, through_message=messages[6], content="Up to six.", created_by=channel.owner
    )
    assert second.previous == first
    assert selectors.summary_boundary_for(leaf_id=leaf.pk) == second
    assert selectors.summary_boundary_for(leaf_id=messages[6].pk) == second
    assert selectors.summary_boundary_for(leaf_id=messages[5].pk) == first
    assert selectors.summary_boundary_for(leaf_id=messages[2].pk) is None
    services.summary_revert(summary=second, actor=channel.owner)
    assert selectors.summary_boundary_for(leaf_id=leaf.pk) == first


def test_summary_on_another_branch_does_not_apply(channel):
    u0, a1, u2, a3 = build_path(channel, 4)
    other = services.message_append(
        channel=channel, user=channel.owner, role="user", content="Other way.", parent_id=a1.pk
    )
    services.summary_write(channel=channel, through_message=u2, content="About u2.", created_by=None)
    assert selectors.summary_boundary_for(leaf_id=other.pk) is None
    assert selectors.summary_boundary_for(leaf_id=a3.pk).through_message == u2


def test_summary_write_rejects_a_message_of_another_channel(channel):
    build_path(channel, 2)
    (foreign,) = build_path(ChannelFactory(), 1)
    with pytest.raises(ValidationError) as error:
        services.summary_write(channel=channel, through_message=foreign, content="x", created_by=None)
    assert error.value.message_dict == {"through_message": ["The message is not in this channel."]}
    assert not channel.summaries.exists()


def test_summary_revert_twice_is_refused(channel):
    messages = build_path(channel, 3)
    summary = services.summary_write(channel=channel, through_message=messages[1], content="S.", created_by=None)
    services.summary_revert(summary=summary, actor=channel.owner)
    assert AuditEntry.objects.filter(action="summary.revert", resource=f"summary:{summary.pk}").count() == 1
    with pytest.raises(ValidationError):
        services.summary_revert(summary=summary, actor=channel.owner)
    assert AuditEntry.objects.filter(action="summary.revert").count() == 1


@pytest.mark.parametrize(
    ("kwargs", "errors"),
    [
        ({"role": "robot", "content": "x"}, {"role": ["Role must be one of: system, user, assistant, tool."]}),
        ({"role": "user", "content": "   "}, {"content": ["Content may not be empty."]}),
        ({"role": "user", "content": "a\x00b"}, {"content": [NUL_MESSAGE]}),
        ({"role": "user", "content": "a\ud800b"}, {"content": [SURROGATE_MESSAGE]}),
        ({"role": "user", "content": "x", "metadata": ["no"]}, {"metadata": ["Metadata must be an object."]}),
        ({"role": "user", "content": "x", "parent_id": 10**9}, {"parent_id": ["No such message in this channel."]}),
    ],
)
def test_bad_appends_write_nothing(channel, kwargs, errors):
    (leaf,) = build_path(channel, 1)
    channel.refresh_from_db()
    before = (Message.objects.count(), channel.context_tokens, channel.last_activity_at)
    with pytest.raises(ValidationError) as error:
        services.message_append(channel=channel, user=channel.owner, **kwargs)
    assert error.value.message_dict == errors
    channel.refresh_from_db()
    assert (Message.objects.count(), channel.context_tokens, channel.last_activity_at) == before
    assert cursor_leaf(channel) == leaf.pk


def test_overlong_content_is_refused(channel, settings):
    settings.CHATCORE_MAX_MESSAGE_CHARS = 10
    with pytest.raises(ValidationError) as error:
        services.message_append(channel=channel, user=channel.owner, role="user", content="x" * 11)
    assert error.value.message_dict == {"content": ["Content is longer than 10 characters."]}
    assert not Message.objects.exists()


def test_parent_in_another_channel_is_refused(channel):
    (foreign,) = build_path(ChannelFactory(), 1)
    with pytest.raises(ValidationError):
        services.message_append(channel=channel, user=channel.owner, role="user", content="x", parent_id=foreign.pk)
    assert not channel.messages.exists()


def test_each_user_has_their_own_cursor(channel):
    guest = UserFactory()
    u0, a1 = build_path(channel, 2)
    services.cursor_move(channel=channel, user=guest, message_id=u0.pk)
    assert cursor_leaf(channel, guest) == a1.pk
    reply = services.message_append(channel=channel, user=guest, role="user", content="Guest branch.", parent_id=u0.pk)
    assert cursor_leaf(channel, guest) == reply.pk
    assert cursor_leaf(channel) == a1.pk


def _loaded(message: Message) -> tuple:
    """Everything an instance holds: its fields and extra attributes, and where it was loaded from."""
    values = {key: value for key, value in vars(message).items() if key != "_state"}
    return values, message._state.adding, message._state.db, message._state.fields_cache


@pytest.mark.parametrize("with_siblings", [False, True])
def test_a_path_is_loaded_as_the_orm_loads_its_rows(channel, with_siblings):
    u0, a1, u2 = build_path(channel, 3)
    services.message_append(
        channel=channel, user=channel.owner, role="assistant", content="B", parent_id=u0.pk, metadata={"k": [1, "é"]}
    )
    leaf = services.message_append(channel=channel, user=channel.owner, role="user", content="Go on.")
    sql = selectors._path_sql(with_siblings)
    for leaf_id in (u2.pk, leaf.pk):
        expected = list(Message.objects.raw(sql, [leaf_id, -1, -1]))
        path = selectors.message_path(leaf_id=leaf_id, with_siblings=with_siblings)
        assert [_loaded(m) for m in path] == [_loaded(m) for m in expected]
        assert all(type(m) is Message for m in path) and path[1].parent.pk == path[0].pk


@pytest.mark.parametrize("with_siblings", [False, True])
def test_a_path_read_with_only_some_fields_holds_those_as_the_orm_loads_them(channel, with_siblings):
    """The fields named (and the id, channel, parent and depth the statement reads) hold what `QuerySet.only`
    would load; the others are deferred, and read from the database when used."""
    build_path(channel, 3)
    leaf = services.message_append(
        channel=channel, user=channel.owner, role="user", content="Go on.", metadata={"speaker": "Ann"}
    )
    only = ("role", "metadata", "created_at", "tokens")
    path = selectors.message_path(leaf_id=leaf.pk, with_siblings=with_siblings, only=only)
    full = selectors.message_path(leaf_id=leaf.pk, with_siblings=with_siblings)
    loaded = {"id", "channel_id", "parent_id", "depth", *only}
    queryset = Message.objects.filter(pk__in=[m.pk for m in full]).only(*only, "channel", "parent", "depth")
    expected = {m.pk: m for m in queryset}
    assert [m.pk for m in path] == [m.pk for m in full]
    for message, whole in zip(path, full, strict=True):
        assert message.get_deferred_fields() == expected[message.pk].get_deferred_fields()
        assert {name: getattr(message, name) for name in loaded} == {
            name: getattr(expected[message.pk], name) for name in loaded
        }
        if with_siblings:
            assert (message.sibling_index, message.sibling_count) == (whole.sibling_index, whole.sibling_count)
    assert path[-1].metadata == {"speaker": "Ann"}
    with CaptureQueriesContext(connection) as queries:
        assert path[-1].chain_hash == full[-1].chain_hash  # deferred: read when used
    assert len(queries) == 1


def test_a_path_is_made_through_the_model_when_its_init_is_listened_to(channel):
    build_path(channel, 2)
    seen = []

    def listener(sender, instance, **kwargs):
        seen.append(instance.pk)

    post_init.connect(listener, sender=Message)
    try:
        path = selectors.message_path(leaf_id=cursor_leaf(channel))
    finally:
        post_init.disconnect(listener, sender=Message)
    assert seen == [m.pk for m in path] and len(path) == 2
