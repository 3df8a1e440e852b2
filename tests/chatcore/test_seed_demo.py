"""The demo data command and the bulk importer under it."""

import io
import itertools
from datetime import UTC, datetime

import pytest
from django.contrib.auth import authenticate
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import RequestFactory

from chatcore import demo, selectors, services
from chatcore.bulk import SQLITE_INDEX_AFTER_ROWS, NewMessage, TreeBuilder, messages_bulk_import
from chatcore.models import Channel, Cursor, LLMModel, Message, ModelRole, Persona
from chatcore.search import message_search
from tests.chatcore.factories import ChannelFactory, build_path
from tests.chatcore.test_pressure import walked_pressure

LATE = SQLITE_INDEX_AFTER_ROWS + 300  # a bad item after this many good ones


def seed() -> str:
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def _row_counts() -> tuple[int, ...]:
    return tuple(model.objects.count() for model in (Channel, Message, Persona, LLMModel, ModelRole, Cursor))


def test_seed_demo_creates_everything_once(db):
    first = seed()
    counts = _row_counts()
    second = seed()
    assert counts == _row_counts()
    assert "3 conversation(s) created" in first and "0 conversation(s) created" in second
    # As the log-in form does: django-axes' backend checks the request's address first.
    user = authenticate(RequestFactory().post("/login/"), username="demo", password="demo-password")
    assert user is not None and user.is_staff
    assert sorted(Channel.objects.filter(owner=user).values_list("title", flat=True)) == [
        "Reading list: consensus protocols",
        demo.LONG_TITLE,
        "Weekend in Lisbon",
    ]
    assert ModelRole.objects.get(role="chat").primary.provider == LLMModel.Provider.OFFLINE


def test_long_conversation_is_realistic_branched_and_under_pressure(db):
    seed()
    channel = Channel.objects.get(title=demo.LONG_TITLE)
    messages = list(channel.messages.order_by("id"))
    assert len(messages) >= 300
    cursor = Cursor.objects.get(channel=channel, user=channel.owner)
    path = selectors.message_path(leaf_id=cursor.leaf_id, with_siblings=True)
    assert len(path) >= 290 and path[-1].pk == messages[-1].pk
    assert sum(1 for m in path if m.sibling_count > 1) >= 3  # an edit, a regeneration, an abandoned side branch
    assert len(messages) - len(path) >= 6
    roles = {m.role for m in path}
    assert roles == {"user", "assistant", "tool"}
    calls = [m for m in path if m.metadata.get("tool_calls")]
    results = {m.metadata["tool_call_id"] for m in path if m.role == "tool"}
    assert len(calls) >= 40 and {m.metadata["tool_calls"][0]["id"] for m in calls} == results
    text = "\n".join(m.content for m in path)
    for fact in (
        "src/invoice_relay/webhooks.py",
        "https://docs.example.net/adr/0007-idempotency-keys",
        "psycopg 3.2.1",
        "1.0.0",
        "Decision",
        "docs/OPEN_QUESTIONS.md",
    ):
        assert fact in text
    assert any(m.role == "tool" and len(m.content) > 4_000 for m in path)  # pruned in the context
    channel.refresh_from_db()
    assert (channel.context_tokens, channel.context_messages) == walked_pressure(channel)
    assert 0.75 < channel.context_ratio < 1.0
    assert channel.context_budget == 16_000 and channel.model.name == "offline"
    assert channel.settings == {"auto_compaction": False}  # stays above the warning line until compacted by hand


def test_demo_text_is_deterministic():
    start = datetime(2024, 6, 11, 9, 0, tzinfo=UTC)
    one, two = demo.long_conversation(start), demo.long_conversation(start)
    assert [(i.role, i.content, i.parent, i.metadata) for i in one] == [
        (i.role, i.content, i.parent, i.metadata) for i in two
    ]


def test_bulk_import_stores_what_appending_would(db):
    appended_channel = ChannelFactory()
    appended = build_path(appended_channel, 6)
    bulk_channel = ChannelFactory(owner=appended_channel.owner)
    tree = TreeBuilder()
    for message in appended:
        tree.add(message.role, message.content)
    tree.goto(1)
    tree.add("user", "A side branch.")
    tree.goto(5)
    imported = messages_bulk_import(channel=bulk_channel, user=bulk_channel.owner, items=tree.items)
    fields = ("role", "content", "depth", "tokens", "chars", "path_tokens", "path_chars")
    assert [tuple(getattr(m, f) for f in fields) for m in imported[:6]] == [
        tuple(getattr(m, f) for f in fields) for m in appended
    ]
    stored = list(Message.objects.filter(channel=bulk_channel).order_by("id"))
    assert [m.pk for m in stored] == [m.pk for m in imported]
    assert stored[6].parent_id == stored[1].pk and stored[6].depth == 2
    assert all(later.pk > earlier.pk for earlier, later in itertools.pairwise(stored))
    # The cursor follows the last item; pressure is as after appending.
    bulk_channel.refresh_from_db()
    appended_channel.refresh_from_db()
    assert Cursor.objects.get(channel=bulk_channel).leaf_id == stored[6].pk
    assert bulk_channel.context_tokens == stored[6].path_tokens
    services.cursor_move(channel=bulk_channel, user=bulk_channel.owner, message_id=stored[5].pk)
    bulk_channel.refresh_from_db()
    assert bulk_channel.context_tokens == appended_channel.context_tokens
    # Ordinary appends continue after the imported ids.
    after = services.message_append(channel=bulk_channel, user=bulk_channel.owner, role="user", content="More.")
    assert after.pk > stored[-1].pk and after.parent_id == stored[5].pk


def test_bulk_import_under_an_existing_message(db):
    channel = ChannelFactory()
    first, second = build_path(channel, 2)
    (added,) = messages_bulk_import(
        channel=channel, user=channel.owner, under=second, items=[NewMessage(role="user", content="Continued.")]
    )
    assert (added.parent_id, added.depth, added.path_tokens) == (second.pk, 2, second.path_tokens + added.tokens)


@pytest.mark.parametrize(
    ("items", "errors"),
    [
        (
            [NewMessage(role="bot", content="x")],
            {"role": ["Item 0: role must be one of: system, user, assistant, tool."]},
        ),
        ([NewMessage(role="user", content="x", parent=0)], {"parent": ["Item 0: the parent must be an earlier item."]}),
        # Found after rows already went to the database (streamed into PostgreSQL's COPY; on SQLite with the
        # full-text trigger set aside for a large import).
        (
            [NewMessage(role="user", content=f"Line {i} of a long import.") for i in range(LATE)]
            + [NewMessage(role="bot", content="x")],
            {"role": [f"Item {LATE}: role must be one of: system, user, assistant, tool."]},
        ),
    ],
)
def test_bulk_import_refuses_bad_items_and_writes_nothing(db, items, errors):
    channel = ChannelFactory()
    with pytest.raises(ValidationError) as error:
        messages_bulk_import(channel=channel, user=channel.owner, items=items)
    assert error.value.message_dict == errors
    assert not Message.objects.exists()
    # The index's triggers are as before: a message written now is found.
    added = services.message_append(channel=channel, user=channel.owner, role="user", content="A zeppelin.")
    assert [hit.message.pk for hit in message_search(channel=channel, user=channel.owner, query="zeppelin").hits] == [
        added.pk
    ]


def test_bulk_import_under_a_message_of_another_channel(db):
    (foreign,) = build_path(ChannelFactory(), 1)
    channel = ChannelFactory()
    with pytest.raises(ValidationError):
        messages_bulk_import(
            channel=channel, user=channel.owner, under=foreign, items=[NewMessage(role="user", content="x")]
        )
    assert not channel.messages.exists()
