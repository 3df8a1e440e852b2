"""Full-text search over the active path (chatcore.search), on SQLite FTS5 and PostgreSQL alike."""

import dataclasses
import datetime as dt
import json
import random
import sqlite3
import time

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chatcore import services
from chatcore.bulk import SQLITE_INDEX_AFTER_ROWS, NewMessage, messages_bulk_import
from chatcore.data_control import summary_purge
from chatcore.errors import NotFound
from chatcore.models import Message
from chatcore.search import MAX_CONTEXT, engine, highlight, message_search, ranking, rows
from chatcore.search.highlight import snippet
from chatcore.search.query import parse_query
from chatcore.search.ranking import SPEAKER_BOOST
from chatcore.search.schema import FTS_TABLE, PENDING_TABLE, SQLITE_SETTLE_USERMERGE, TABLE, installed_language
from tests.chatcore.factories import ChannelFactory, UserFactory, build_path

FILLER = [
    "Let us look at the weather tomorrow.",
    "I think the weather will be fine.",
    "Sounds good, talk later.",
    "Sure, see you then.",
]


def say(channel, role, content, **kwargs):
    return services.message_append(channel=channel, user=channel.owner, role=role, content=content, **kwargs)


def ids(results):
    return [hit.message.pk for hit in results.hits]


def indexed(channel):
    """The messages still pending indexed (SQLite; chatcore.search.schema), as the next search would first."""
    with engine.index_covering(channel_id=channel.pk):
        pass


@pytest.fixture
def channel(db):
    return ChannelFactory()


@pytest.fixture
def conversation(channel):
    messages = [say(channel, "user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(FILLER)]
    messages.append(say(channel, "user", "The database migration failed with a deadlock on the orders table."))
    messages.append(say(channel, "assistant", "Run the migration again with a lock timeout; deadlocks are retried."))
    messages += [say(channel, "user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(FILLER)]
    return messages


def test_ranks_the_message_with_more_and_rarer_words_first(channel, conversation):
    found = message_search(channel=channel, user=channel.owner, query="deadlock migration orders", limit=5, context=0)
    assert ids(found)[:2] == [conversation[4].pk, conversation[5].pk]
    assert found.hits[0].score > found.hits[1].score > 0
    assert [hit.rank for hit in found.hits] == list(range(1, len(found.hits) + 1))
    assert found.searched == len(conversation)


def test_stems_words_as_the_engine_does(channel, conversation):
    found = message_search(channel=channel, user=channel.owner, query="deadlocked migrations", limit=5, context=0)
    assert set(ids(found)) == {conversation[4].pk, conversation[5].pk}


def test_natural_question_finds_the_answer_and_its_neighbours(channel, conversation):
    found = message_search(
        channel=channel, user=channel.owner, query="Why did the migration fail on the orders table?", limit=1
    )
    hit = found.hits[0]
    assert hit.message == conversation[4]
    assert [m.pk for m in hit.window] == [m.pk for m in conversation[3:6]]


def test_highlights_matched_words_in_escaped_html(channel, conversation):
    text = "<b>The</b> migrations failed: deadlock & retry"
    assert snippet(text, parse_query("migration deadlocks").units) == (
        "&lt;b&gt;The&lt;/b&gt; <mark>migrations</mark> failed: <mark>deadlock</mark> &amp; retry"
    )
    long = " ".join(f"w{i}" for i in range(100)) + " deadlock " + " ".join(f"v{i}" for i in range(100))
    cut = snippet(long, ("deadlock",))
    assert cut.startswith("… ") and cut.endswith(" …") and "<mark>deadlock</mark>" in cut
    assert len(cut.split()) < 40


def test_a_message_on_another_branch_is_not_found(channel):
    u0, a1 = build_path(channel, 2)
    old = say(channel, "user", "Tell me about the kangaroo exhibit.")
    say(channel, "assistant", "The kangaroo exhibit opens at nine.")
    # Edit the question: a sibling branch; the kangaroo messages are now off the active path.
    edited = say(channel, "user", "Tell me about the penguin exhibit.", parent_id=a1.pk)
    say(channel, "assistant", "The penguin exhibit opens at ten.")
    assert Message.objects.get(pk=edited.pk).segment == edited.pk
    assert Message.objects.get(pk=a1.pk).segment == u0.pk
    found = message_search(channel=channel, user=channel.owner, query="kangaroo", limit=5)
    assert found.hits == []
    assert len(message_search(channel=channel, user=channel.owner, query="penguin exhibit").hits) == 2
    services.cursor_move(channel=channel, user=channel.owner, message_id=old.pk)
    assert ids(message_search(channel=channel, user=channel.owner, query="kangaroo", context=0))[0] in {
        old.pk,
        old.pk + 1,
    }
    assert message_search(channel=channel, user=channel.owner, query="penguin").hits == []


def test_only_the_owner_may_search(channel, conversation):
    with pytest.raises(NotFound):
        message_search(channel=channel, user=UserFactory(), query="deadlock")


def test_other_channels_are_never_searched(channel, conversation):
    other = ChannelFactory(owner=channel.owner)
    say(other, "user", "A deadlock in another channel.")
    found = message_search(channel=channel, user=channel.owner, query="deadlock", context=0)
    assert set(ids(found)) == {conversation[4].pk, conversation[5].pk}


def test_summarized_scope_searches_only_what_the_summary_covers(channel, conversation):
    services.summary_write(channel=channel, through_message=conversation[4], content="Summary.", created_by=None)
    found = message_search(channel=channel, user=channel.owner, query="migration", scope="summarized", context=1)
    assert ids(found) == [conversation[4].pk]
    assert found.hits[0].summarized is True
    assert [m.pk for m in found.hits[0].window] == [conversation[3].pk, conversation[4].pk]
    everything = message_search(channel=channel, user=channel.owner, query="migration", context=0)
    assert {hit.message.pk: hit.summarized for hit in everything.hits} == {
        conversation[4].pk: True,
        conversation[5].pk: False,
    }


def test_summarized_scope_without_a_summary_finds_nothing(channel, conversation):
    assert message_search(channel=channel, user=channel.owner, query="migration", scope="summarized").hits == []


def test_filters_by_role_and_date(channel):
    day = dt.datetime(2023, 5, 8, 12, tzinfo=dt.UTC)
    first = say(channel, "user", "Pottery class on Monday.", created_at=day)
    second = say(channel, "assistant", "Pottery sounds lovely.", created_at=day + dt.timedelta(days=40))
    owner = channel.owner
    assert ids(message_search(channel=channel, user=owner, query="pottery", roles=("assistant",), context=0)) == [
        second.pk
    ]
    since = day + dt.timedelta(days=1)
    assert ids(message_search(channel=channel, user=owner, query="pottery", since=since, context=0)) == [second.pk]
    assert ids(message_search(channel=channel, user=owner, query="pottery", until=since, context=0)) == [first.pk]


def test_a_date_in_the_query_ranks_messages_of_that_time_first(channel):
    may = say(channel, "user", "We went camping by the lake.", created_at=dt.datetime(2023, 5, 8, tzinfo=dt.UTC))
    june = say(channel, "user", "We went camping by the lake.", created_at=dt.datetime(2023, 6, 8, tzinfo=dt.UTC))
    owner = channel.owner
    assert ids(message_search(channel=channel, user=owner, query="camping in May 2023", context=0)) == [may.pk, june.pk]
    assert ids(message_search(channel=channel, user=owner, query="camping 8 June 2023", context=0)) == [june.pk, may.pk]


def test_phrases_match_as_a_whole(channel):
    together = say(channel, "user", "The support group met on Tuesday.")
    say(channel, "assistant", "Group work needs support from everyone.")
    found = message_search(channel=channel, user=channel.owner, query='"support group"', context=0)
    assert ids(found) == [together.pk]


def test_common_words_alone_fall_back_to_the_most_recent_messages(channel, settings):
    settings.CHATCORE_SEARCH_TERM_CAP = 2
    messages = [say(channel, "user", f"Weather report number {i}.") for i in range(5)]
    found = message_search(channel=channel, user=channel.owner, query="weather", limit=2, context=0)
    assert ids(found) == [messages[4].pk, messages[3].pk]


def test_a_common_word_counts_for_the_rare_words_candidates_it_matches(channel, settings):
    settings.CHATCORE_SEARCH_TERM_CAP = 2
    for i in range(3):
        say(channel, "user", f"Weather report number {i}.")
    both = say(channel, "user", "The zeppelin weather.")
    alone = say(channel, "user", "The zeppelin hovered.")  # as long, more recent: first if weather did not count
    found = message_search(channel=channel, user=channel.owner, query="zeppelin weather", context=0)
    assert ids(found) == [both.pk, alone.pk]
    assert found.hits[0].score > found.hits[1].score


def test_a_common_words_arm_sends_back_its_count_alone(channel):
    """Counting each word, a word at the limit sends one row (its count), a rarer one its matches, each with
    the candidate's columns as `candidates` reads them (the speaker too)."""
    weather = [say(channel, "user", f"Weather report number {i}.") for i in range(4)]
    named = say(channel, "user", "The zeppelin weather.", metadata={"speaker": "Ana"})
    plain = say(channel, "user", "The zeppelin hovered.")
    segments = engine.path_segments(leaf_id=plain.pk)
    filters = engine.Filters(channel_id=channel.pk, segments=segments, id_range=(weather[0].pk, plain.pk))
    with engine.index_covering(channel_id=channel.pk):
        with CaptureQueriesContext(connection) as captured:
            each = engine.candidates_each(units=("weather", "zeppelin", "absent"), filters=filters, limit=3)
        rows, _members = engine.candidates(units=("zeppelin",), operator="AND", filters=filters, limit=3, flagged=False)
    assert len(captured) == 1
    assert each.counts == {"weather": 3, "zeppelin": 2, "absent": 0}
    assert set(each.found) == {"zeppelin", "absent"}
    assert sorted(row[: engine.CANDIDATE_COLUMNS] for row in each.found["zeppelin"]) == sorted(rows)
    assert {row[engine.ID]: row[engine.SPEAKER] for row in rows} == {named.pk: "Ana", plain.pk: ""}
    assert each.found["absent"] == []


def test_common_words_alone_that_never_meet_rank_the_messages_holding_either(channel, settings):
    settings.CHATCORE_SEARCH_TERM_CAP = 2
    weather = [say(channel, "user", f"Weather report number {i}.") for i in range(3)]
    sunshine = [say(channel, "user", f"Sunshine report number {i}.") for i in range(3)]
    found = message_search(channel=channel, user=channel.owner, query="weather sunshine", limit=10, context=0)
    assert set(ids(found)) == {m.pk for m in weather + sunshine}
    assert all(hit.score > 0 for hit in found.hits)


def test_common_words_alone_that_meet_count_every_one_without_another_query(
    channel, settings, django_assert_num_queries
):
    """The candidates of common words alone are the messages holding all of them: each holds every word, so
    the ranking counts them all with no query asking which (the cursor, the counts, the candidates, the
    neighbours)."""
    settings.CHATCORE_SEARCH_TERM_CAP = 2
    for i in range(3):
        say(channel, "user", f"Weather report {i}.")
        say(channel, "user", f"Sunshine report {i}.")
    both = say(channel, "user", "Weather sunshine report.")
    indexed(channel)
    with django_assert_num_queries(4):
        found = message_search(channel=channel, user=channel.owner, query="weather sunshine", context=0)
    assert ids(found) == [both.pk]
    alone = message_search(channel=channel, user=channel.owner, query="weather", context=0)
    # Both words are over the cap, so they weigh the same: twice what one of them gives the same message.
    assert found.hits[0].score == pytest.approx(2 * next(h.score for h in alone.hits if h.message.pk == both.pk))


def test_bulk_imports_and_purges_keep_the_index_in_step(channel):
    u0 = say(channel, "user", "Start.")
    items = [NewMessage(role="assistant", content="The zeppelin landed.")]
    items += [NewMessage(role="user", content=f"Line {i}.", parent=i) for i in range(3)]
    built = messages_bulk_import(channel=channel, user=channel.owner, items=items, under=u0)
    assert {m.segment for m in Message.objects.filter(channel=channel)} == {u0.pk}
    assert ids(message_search(channel=channel, user=channel.owner, query="zeppelin", context=0)) == [built[0].pk]
    summary = services.summary_write(channel=channel, through_message=built[1], content="Landed.", created_by=None)
    summary_purge(summary=summary, actor=channel.owner, confirm=True)
    assert message_search(channel=channel, user=channel.owner, query="zeppelin").hits == []


def test_invalid_input_says_what_is_wrong(channel, conversation):
    with pytest.raises(ValidationError) as error:
        message_search(channel=channel, user=channel.owner, query="the of and", limit=0, roles=("robot",))
    assert set(error.value.message_dict) == {"q", "limit", "role"}


def test_path_segments_follow_branch_points(channel):
    u0, a1, u2, a3 = build_path(channel, 4)
    edit = say(channel, "user", "Edited.", parent_id=a1.pk)
    leaf = say(channel, "assistant", "Answer.")
    segments = engine.path_segments(leaf_id=leaf.pk)
    assert segments == (engine.Segment(edit.pk, 2, 3), engine.Segment(u0.pk, 0, 1))


def test_query_count_does_not_grow_with_the_path(channel):
    build_path(channel, 10)
    say(channel, "user", "A quokka appeared.")
    indexed(channel)
    with CaptureQueriesContext(connection) as short:
        message_search(channel=channel, user=channel.owner, query="quokka word3-1")
    build_path(channel, 60, start=20)
    indexed(channel)
    with CaptureQueriesContext(connection) as long:
        message_search(channel=channel, user=channel.owner, query="quokka word3-1")
    assert len(short.captured_queries) == len(long.captured_queries) <= 6


def test_the_boundary_and_the_windows_are_loaded_as_the_orm_loads_them(
    channel, conversation, django_assert_num_queries
):
    """They are read with plain SQL (chatcore.search.rows): dates, JSON and the author must come back converted."""
    say(channel, "user", "The migration is done.", metadata={"speaker": "Ana"}, author=channel.owner)
    services.summary_write(channel=channel, through_message=conversation[5], content="Summary.", created_by=None)
    found = message_search(channel=channel, user=channel.owner, query="migration", context=1)
    stored = Message.objects.get(pk=conversation[5].pk)
    assert found.boundary == stored
    assert (found.boundary.created_at, found.boundary.metadata, found.boundary.path_tokens) == (
        stored.created_at,
        stored.metadata,
        stored.path_tokens,
    )
    shown = {m.pk: m for hit in found.hits for m in hit.window}
    expected = {m.pk: m for m in Message.objects.filter(pk__in=shown).select_related("author")}
    assert set(shown) == set(expected) and len(shown) >= 4
    with django_assert_num_queries(0):
        loaded = {pk: (m.created_at, m.metadata, m.author, m.content, m.depth) for pk, m in shown.items()}
    assert loaded == {pk: (m.created_at, m.metadata, m.author, m.content, m.depth) for pk, m in expected.items()}
    assert ({"speaker": "Ana"}, channel.owner) in [(metadata, author) for _at, metadata, author, *_ in loaded.values()]


def test_the_windows_empty_metadata_is_a_new_dict_each_without_parsing(channel, conversation, monkeypatch):
    """Most messages' metadata is the empty object: each window message gets a new empty dict of its own, as the
    JSON parser would give, without the parser (chatcore.search.rows); other metadata is parsed as before."""
    parsed: list[str] = []
    loads = json.loads

    def spy(text, **kwargs):
        parsed.append(text)
        return loads(text, **kwargs)

    say(channel, "user", "The migration is done.", metadata={"speaker": "Ana"})
    monkeypatch.setattr(json, "loads", spy)
    found = message_search(channel=channel, user=channel.owner, query="migration", context=1)
    window = {m.pk: m for hit in found.hits for m in hit.window}
    empty = [m.metadata for m in window.values() if m.metadata == {}]
    assert len(empty) >= 2 and len({id(metadata) for metadata in empty}) == len(empty)
    assert all(type(metadata) is dict for metadata in empty)
    assert {"speaker": "Ana"} in [m.metadata for m in window.values()]
    assert "{}" not in parsed and any("Ana" in text for text in parsed)


def test_the_windows_authors_carry_their_key_and_name_and_read_the_rest_when_asked(
    channel, conversation, django_assert_num_queries
):
    """The author's other columns are not read with every row; the name is there, the rest comes on use."""
    say(channel, "user", "The migration is done.", author=channel.owner)
    found = message_search(channel=channel, user=channel.owner, query="migration", context=0)
    (author,) = {id(m.author): m.author for hit in found.hits for m in hit.window if m.author_id}.values()
    with django_assert_num_queries(0):
        assert (author.pk, author.get_username()) == (channel.owner.pk, channel.owner.get_username())
    assert "date_joined" in author.get_deferred_fields()
    with django_assert_num_queries(1):
        assert author.date_joined == channel.owner.date_joined


def expected_segments(channel) -> dict[int, int]:
    """The rule of chatcore.search.schema worked out from the stored tree: in id order, a parent's first
    child continues its segment, every other message starts its own."""
    segment: dict[int, int] = {}
    parents_with_a_child: set[int] = set()
    for message_id, parent_id in Message.objects.filter(channel=channel).order_by("id").values_list("id", "parent"):
        first = parent_id is not None and parent_id not in parents_with_a_child
        segment[message_id] = segment[parent_id] if first else message_id
        if parent_id is not None:
            parents_with_a_child.add(parent_id)
    return segment


def test_a_bulk_import_gives_the_segments_the_triggers_would(channel):
    u0, a1 = build_path(channel, 2)
    say(channel, "user", "An earlier reply to the answer.", parent_id=a1.pk)
    # Under a1, which has a child already: the import's first message starts a segment; under its own
    # items, a first child continues its parent's segment and a second one (an edit) starts one.
    items = [NewMessage(role="user", content="Second try.")]
    items += [NewMessage(role="assistant", content="Answer.", parent=0)]
    items += [NewMessage(role="assistant", content="Regenerated answer.", parent=0)]
    items += [NewMessage(role="user", content="Go on.", parent=2), NewMessage(role="user", content="Again.", parent=1)]
    built = messages_bulk_import(channel=channel, user=channel.owner, items=items, under=a1)
    # Under a leaf (no child yet): the first imported message continues its segment.
    more = messages_bulk_import(
        channel=channel, user=channel.owner, items=[NewMessage(role="assistant", content="Fine.")], under=built[3]
    )
    stored = dict(Message.objects.filter(channel=channel).values_list("id", "segment"))
    assert stored == expected_segments(channel)
    # Given by the import itself (the rows it returns carry them), not left to the triggers' lookups.
    assert [m.segment for m in built + more] == [stored[m.pk] for m in built + more]
    assert [stored[m.pk] for m in built] == [built[0].pk, built[0].pk, built[2].pk, built[2].pk, built[0].pk]
    assert stored[more[0].pk] == built[2].pk and stored[u0.pk] == u0.pk
    # The imported roots of a new channel start their own segments too.
    other = ChannelFactory(owner=channel.owner)
    roots = messages_bulk_import(
        channel=other,
        user=other.owner,
        items=[NewMessage(role="user", content="One."), NewMessage(role="user", content="Two.")],
    )
    assert [Message.objects.get(pk=m.pk).segment for m in roots] == [roots[0].pk, roots[1].pk]


def test_a_large_bulk_import_leaves_the_full_text_index_nothing_to_merge(channel):
    """On SQLite a large import merges the index's segments as far as they go (SQLITE_SETTLE_USERMERGE on a
    level), so that the appends after it are not left its merging: FTS5's 'merge' then finds nothing to do."""
    if connection.vendor != "sqlite":
        pytest.skip("FTS5's segments: SQLite only")
    leaf = None
    imports = SQLITE_SETTLE_USERMERGE + 1  # enough segments for at least one level's merge
    for _ in range(imports):
        items = [
            NewMessage(role="user", content=f"Line {i} about the weather.", parent=i - 1 if i else None)
            for i in range(SQLITE_INDEX_AFTER_ROWS)
        ]
        leaf = messages_bulk_import(channel=channel, user=channel.owner, items=items, under=leaf)[-1]
    raw = connection.connection
    with connection.cursor() as cursor:
        usermerge = SQLITE_SETTLE_USERMERGE
        cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('usermerge', %s)", [usermerge])
        before = raw.total_changes
        cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('merge', 1000)")
        assert raw.total_changes - before < 2
        cursor.execute(f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH 'weather'")
        assert cursor.fetchone()[0] == imports * SQLITE_INDEX_AFTER_ROWS


def test_a_large_bulk_import_is_indexed_as_the_triggers_index_one_message(channel):
    """From SQLITE_INDEX_AFTER_ROWS rows the import indexes its rows in one statement on SQLite (the
    triggers otherwise): the same words, speakers and rows, the trigger back in place afterwards, and
    the messages it returns are those the ORM loads."""
    u0 = say(channel, "user", "Start.")
    count = SQLITE_INDEX_AFTER_ROWS + 5
    items = [
        NewMessage(
            role="user" if i % 2 == 0 else "assistant",
            content=f"Line {i} about the {'walrus' if i == 7 else 'weather'}.",
            parent=i - 1 if i else None,
            metadata={"speaker": "Ana"} if i % 3 == 0 else {},
        )
        for i in range(count)
    ]
    built = messages_bulk_import(channel=channel, user=channel.owner, items=items, under=u0)
    found = message_search(channel=channel, user=channel.owner, query="walrus", context=0)
    assert ids(found) == [built[7].pk]
    assert ids(message_search(channel=channel, user=channel.owner, query="ana walrus", limit=1, context=0)) == [
        built[7].pk
    ]
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"SELECT rowid, content, speaker FROM {FTS_TABLE} WHERE rowid >= %s ORDER BY rowid", [u0.pk])
            speakers = [(m.pk, m.content, m.metadata.get("speaker", "")) for m in [u0, *built]]
            assert cursor.fetchall() == speakers
        else:
            config = f"'{installed_language(cursor, 'postgresql', 'english')}'::regconfig"
            cursor.execute(
                # Byte for byte what the document was when the speaker's part was joined to every message's.
                f"SELECT id FROM {TABLE} WHERE channel_id = %s AND tsvectorsend(search_vector) = tsvectorsend("
                f"setweight(to_tsvector({config}, content), 'A') "
                f"|| setweight(to_tsvector({config}, coalesce(metadata->>'speaker', '')), 'B'))",
                [channel.pk],
            )
            assert len(cursor.fetchall()) == count + 1
    after = say(channel, "user", "The walrus again.")
    assert set(ids(message_search(channel=channel, user=channel.owner, query="walrus", context=0))) == {
        built[7].pk,
        after.pk,
    }
    loaded = {m.pk: m for m in Message.objects.filter(pk__in=[m.pk for m in built])}
    fields = [f.attname for f in Message._meta.concrete_fields]
    assert [[getattr(m, f) for f in fields] for m in built] == [
        [getattr(loaded[m.pk], f) for f in fields] for m in built
    ]
    assert all(not m._state.adding and m._state.db == "default" for m in built)
    sizes = [services.message_size(content=item.content, metadata=item.metadata) for item in items]
    assert [(m.tokens, m.chars) for m in built] == sizes
    assert [m.author for m in built[:2]] == [channel.owner, None]


def test_a_word_naming_the_speaker_counts_as_the_speaker_not_the_text(channel):
    """The speaker is read from the index (SQLite: only for messages whose metadata names one)."""
    build_path(channel, 4)
    plain = say(channel, "user", "The quokka escaped again.")
    named = say(channel, "user", "The quokka escaped again.", metadata={"speaker": "Ana"})
    found = message_search(channel=channel, user=channel.owner, query="ana quokka", limit=5, context=0)
    assert ids(found) == [named.pk, plain.pk]
    assert found.hits[0].score == pytest.approx(found.hits[1].score * SPEAKER_BOOST, rel=1e-3)
    assert Message.objects.get(pk=named.pk).metadata == {"speaker": "Ana"}


def test_a_search_is_three_statements(channel, conversation, django_assert_num_queries):
    """The cursor with its path's segments, the engine's matches, the hits with their neighbours (on SQLite, once
    the messages appended since the last search are indexed: see the deferred indexing's tests)."""
    indexed(channel)
    with django_assert_num_queries(3):
        message_search(channel=channel, user=channel.owner, query="migration")
    with django_assert_num_queries(3):
        message_search(channel=channel, user=channel.owner, query="migration deadlock timeout")


def test_neighbouring_hits_are_shown_with_all_their_turns(channel):
    messages = [say(channel, "user", text) for text in ("Start.", "Zeppelin one.", "Zeppelin two.", "End.")]
    found = message_search(channel=channel, user=channel.owner, query="zeppelin", context=1)
    windows = {hit.message.pk: [m.pk for m in hit.window] for hit in found.hits}
    assert windows == {messages[1].pk: [m.pk for m in messages[:3]], messages[2].pk: [m.pk for m in messages[1:]]}


def _shown(found) -> list:
    return [(hit.message.pk, hit.score, [(m.pk, m.created_at, m.author_id) for m in hit.window]) for hit in found.hits]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_the_cursor_and_the_neighbours_are_read_with_one_plan_for_all_values(channel, conversation, monkeypatch):
    """chatcore.prepared: after a few searches PostgreSQL keeps one plan for each of the two reads, and the
    results are those of the ordinary statements. (psycopg prepares a statement at its 5th run, PostgreSQL
    plans its first 5 runs as prepared each on its own, then keeps one plan if that one costs no more.)"""
    queries = ["migration", "deadlock", "weather", "migration deadlock", "timeout", "lock", "weather tomorrow"]
    queries += [f"{query} Sure" for query in queries]
    prepared = [_shown(message_search(channel=channel, user=channel.owner, query=q)) for q in queries]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans FROM pg_prepared_statements")
        plans = cursor.fetchall()
    assert [generic > 0 for statement, generic in plans if "WITH RECURSIVE" in statement] == [True]
    assert [generic > 0 for statement, generic in plans if "unnest" in statement] == [True]
    monkeypatch.setattr(connection.connection, "prepare_threshold", None)
    assert [_shown(message_search(channel=channel, user=channel.owner, query=q)) for q in queries] == prepared


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_the_words_matches_are_read_with_one_plan_for_all_values(channel, conversation, monkeypatch):
    """The statement that counts and reads each word's matches (engine.candidates_each) is prepared too, and
    PostgreSQL keeps one plan for it however rare or common the words (only the full-text index can drive it:
    a plan made without the values is the one made with them); the results are those of the ordinary statement."""
    # Each shape of the statement (two words, three) sent a dozen times: psycopg prepares it at its 5th run,
    # and PostgreSQL plans the first 5 runs of a prepared statement with their values before it compares.
    words = ["migration", "deadlock", "weather", "timeout", "lock", "orders", "table", "retried", "database"]
    words += ["tomorrow", "sure", "rain", "failed"]
    queries = [f"{first} {second}" for first, second in zip(words, words[1:], strict=False)]
    queries += [f"{query} tonight" for query in queries]
    prepared = [_shown(message_search(channel=channel, user=channel.owner, query=q)) for q in queries]
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans FROM pg_prepared_statements")
        plans = cursor.fetchall()
    counting = [generic for statement, generic in plans if "count(*) OVER ()" in statement]
    assert len(counting) == 2  # one statement for two words, one for three
    assert all(generic > 0 for generic in counting)
    monkeypatch.setattr(connection.connection, "prepare_threshold", None)
    assert [_shown(message_search(channel=channel, user=channel.owner, query=q)) for q in queries] == prepared


def _with_neighbours_one_by_one(scores, depth_of, context, limit):
    """chatcore.search.ranking.with_neighbours as it first was: every candidate's neighbours looked up."""
    by_depth = {depth_of[i]: s for i, s in scores.items()}
    steps = [step for step in range(-context, context + 1) if step]
    ranked = []
    for message_id, score in scores.items():
        around = 0.0
        for step in steps:
            around += by_depth.get(depth_of[message_id] + step, 0.0)
        ranked.append((score + ranking.NEIGHBOUR_SHARE * around, depth_of[message_id], message_id))
    return sorted(ranked, reverse=True)[:limit]


def test_only_candidates_with_neighbours_get_their_share_and_the_ranking_is_unchanged():
    rng = random.Random(5)
    scores = {message_id: rng.random() * 5 for message_id in range(1, 600)}
    depth_of = dict(zip(scores, rng.sample(range(3_000), len(scores)), strict=True))
    for context in range(MAX_CONTEXT + 1):
        for limit in (1, 10, 50):
            expected = _with_neighbours_one_by_one(scores, depth_of, context, limit)
            assert ranking.with_neighbours(scores=scores, depth_of=depth_of, context=context, limit=limit) == expected


def _base_scores_one_by_one(query, candidates, matched, weights, average_tokens):
    """chatcore.search.ranking.base_scores as it first was: each candidate's units summed in turn."""
    scores = {}
    average = max(average_tokens, 1.0)
    for candidate in candidates:
        message_id, _depth, tokens, _created, speaker = candidate[:5]
        names = ranking._speaker_words(speaker) if speaker else frozenset()
        length = ranking.K1 * (1 - ranking.B + ranking.B * tokens / average)
        score, named = 0.0, False
        for unit in query.units:
            if message_id not in matched.get(unit, ()):
                continue
            if unit in names:
                named = True
                continue
            score += weights.get(unit, 0.0) * (ranking.K1 + 1) / (1 + length)
        if score <= 0:
            continue
        if named:
            score *= SPEAKER_BOOST
        when = engine.created_at(candidate)
        if query.periods and when is not None and any(p.holds(when.date()) for p in query.periods):
            score *= ranking.PERIOD_BOOST
        scores[message_id] = score
    return scores


@pytest.mark.parametrize("text", ["deploy", "deploy caroline rollback", "caroline May 2023", "rollback 2024 deploy"])
def test_base_scores_by_unit_are_the_scores_summed_candidate_by_candidate(text):
    rng = random.Random(text)
    query = parse_query(text)
    start = dt.datetime(2023, 4, 20, tzinfo=dt.UTC)
    candidates = [
        (
            message_id,
            message_id * 2,
            rng.randint(0, 120),
            start + dt.timedelta(days=rng.randint(0, 60)) if query.periods else None,
            rng.choice(["", "", "", None, "Caroline", "Bob Rollback"]),
            "trailing flag",
        )
        for message_id in range(1, 700)
    ]
    ids = [candidate[0] for candidate in candidates]
    matched = {unit: set(rng.sample(ids, rng.randint(1, len(ids)))) | {10_000} for unit in query.units}
    weights = {unit: rng.random() * 4 for unit in query.units}
    if len(query.units) > 1:
        del weights[query.units[-1]]  # a unit that weighs nothing: its candidates alone score nothing
    expected = _base_scores_one_by_one(query, candidates, matched, weights, 31.7)
    found = ranking.base_scores(
        query=query, candidates=iter(candidates), matched=matched, weights=weights, average_tokens=31.7
    )
    assert found == expected
    assert len(expected) > 100


def test_a_converter_is_skipped_for_null_only_when_it_gives_null_back():
    assert rows._keeps_null([lambda value, column, db: value], None, None)
    assert not rows._keeps_null([lambda value, column, db: "none" if value is None else value], None, None)
    assert not rows._keeps_null([lambda value, column, db: value.upper()], None, None)


def test_snippets_find_their_words_when_the_remembered_stems_are_forgotten(channel, monkeypatch):
    monkeypatch.setattr(highlight, "STEMS_KEPT", 2)
    marked = "<mark>Deadlock</mark> again, a <mark>deadlock</mark>."
    assert snippet("Deadlock again, a deadlock.", ("deadlock",)) == marked
    retried = "<mark>Deadlocks</mark> were <mark>retried</mark>."
    assert snippet("Deadlocks were retried.", ("deadlock", "retry")) == retried


def _path_filters(channel) -> engine.Filters:
    """The filters of the channel's active path, its pending messages indexed (as a search does first)."""
    indexed(channel)
    state = rows.path_state(channel_id=channel.pk, user_id=channel.owner.pk)
    return engine.Filters(
        channel_id=channel.pk,
        segments=state.segments,
        id_range=(min(s.segment for s in state.segments), state.leaf_id),
    )


@pytest.mark.skipif(connection.vendor != "postgresql", reason="spans of ids: PostgreSQL")
@pytest.mark.parametrize(
    ("limit", "keys_per_fetch"),
    [
        (3, 32),  # the probe holds them all
        (8, 32),  # the probe's rate sizes a second span that holds the rest
        (22, 32),  # the second span falls short by one: the rest of the path below it
        (40, 32),  # more than the probe's rate says the path holds: the rest below the probe
        (22, 0.001),  # the span's keys would cost more than the matches it leaves unread: the same
    ],
)
def test_the_newest_matches_read_in_spans_of_ids_are_the_newest_of_all(channel, monkeypatch, limit, keys_per_fetch):
    """A common word's most recent matches, read from the newest ids down (the probe, a span sized by the
    probe's rate, the rest of the path), are those of one query over the whole path, in the same order, whichever
    step ends it, in one statement; another channel's messages between them are never among them."""
    other = ChannelFactory()
    for i in range(30):
        say(channel, "user", f"Weather report number {i}." if i % 3 == 0 or i >= 12 else f"Calm day {i}.")
        say(other, "user", f"Weather elsewhere {i}.")
    monkeypatch.setattr(engine, "RECENT_PROBE_IDS", 12)  # the path's last six messages, all matching
    monkeypatch.setattr(engine, "RECENT_KEYS_PER_FETCH", keys_per_fetch)
    filters = _path_filters(channel)
    unbounded = dataclasses.replace(filters, id_range=None)
    expected, _ = engine.candidates(
        units=("weather",), operator="AND", filters=unbounded, limit=limit, recent_first=True, flagged=False
    )
    with CaptureQueriesContext(connection) as spans:
        found, _ = engine.candidates(
            units=("weather",), operator="AND", filters=filters, limit=limit, recent_first=True, flagged=False
        )
    assert found == expected
    assert len(found) == min(limit, 22)
    assert len(spans.captured_queries) == 1
    # Any of several words, with their flags and dates: the same as the whole path's query too.
    either = {"units": ("weather", "calm"), "operator": "OR", "limit": limit, "recent_first": True, "dated": True}
    assert engine.candidates(filters=filters, **either) == engine.candidates(filters=unbounded, **either)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="spans of ids: PostgreSQL")
def test_a_word_the_probe_does_not_find_is_read_from_the_rest_of_the_path(channel, monkeypatch):
    """No match in the probe gives no rate to size a span by: the rest of the path comes at once, in the
    probe's own statement (which changes no setting of the connection)."""
    rare = say(channel, "user", "The zeppelin hovered.")
    for i in range(10):
        say(channel, "user", f"Calm day {i}.")
    monkeypatch.setattr(engine, "RECENT_PROBE_IDS", 4)
    filters = _path_filters(channel)
    with CaptureQueriesContext(connection) as spans:
        found, _ = engine.candidates(units=("zeppelin",), operator="AND", filters=filters, limit=5, recent_first=True)
    assert [c[engine.ID] for c in found] == [rare.pk]
    assert len(spans.captured_queries) == 1
    with connection.cursor() as cursor:
        cursor.execute("SHOW enable_indexscan")
        assert cursor.fetchone()[0] == "on"


def _pending_ids() -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {PENDING_TABLE}")
        return {row[0] for row in cursor.fetchall()}


def _indexed_ids(among: list[int]) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid FROM {FTS_TABLE} WHERE rowid IN ({', '.join(['%s'] * len(among))})", among)
        return {row[0] for row in cursor.fetchall()}


def test_a_message_is_found_right_after_its_append_and_its_new_words_after_an_update(channel, conversation):
    """Whenever its words are indexed (on SQLite the next search indexes them), a search finds a message as soon
    as it is written, and the words it has now, not those it had."""
    fresh = say(channel, "user", "A narwhal surfaced.")
    assert ids(message_search(channel=channel, user=channel.owner, query="narwhal", context=0)) == [fresh.pk]
    later = say(channel, "assistant", "The axolotl and the narwhal.")
    twin = say(channel, "assistant", "The axolotl and the narwhal.")
    Message.objects.filter(pk=fresh.pk).update(content="A manatee surfaced.")
    assert ids(message_search(channel=channel, user=channel.owner, query="narwhal", context=0)) == [twin.pk, later.pk]
    assert ids(message_search(channel=channel, user=channel.owner, query="manatee", context=0)) == [fresh.pk]
    Message.objects.filter(pk=later.pk).update(metadata={"speaker": "Ondine"})
    found = message_search(channel=channel, user=channel.owner, query="ondine axolotl", context=0)
    assert ids(found) == [later.pk, twin.pk]
    assert found.hits[0].score == pytest.approx(found.hits[1].score * SPEAKER_BOOST, rel=1e-3)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="deferred indexing: SQLite")
def test_sqlite_notes_a_written_message_as_pending_until_a_search_indexes_it(channel, conversation):
    """An id is pending exactly while its message's words are not in the index: an append notes it, an update
    removes the old words at once (a purge's words go with its statement) and notes it again, a delete removes
    both, and a search indexes every pending message, of every channel."""
    indexed(channel)
    other = ChannelFactory()
    first = say(channel, "user", "A narwhal surfaced.")
    elsewhere = services.message_append(channel=other, user=other.owner, role="user", content="Narwhal elsewhere.")
    dropped = say(channel, "user", "A walrus too.", move_cursor=False)
    assert _pending_ids() == {first.pk, elsewhere.pk, dropped.pk}
    assert _indexed_ids([first.pk, elsewhere.pk, dropped.pk]) == set()
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE id = %s", [dropped.pk])
    assert _pending_ids() == {first.pk, elsewhere.pk}
    assert ids(message_search(channel=channel, user=channel.owner, query="narwhal", context=0)) == [first.pk]
    assert _pending_ids() == set()
    assert _indexed_ids([first.pk, elsewhere.pk]) == {first.pk, elsewhere.pk}
    Message.objects.filter(pk=first.pk).update(content="")
    assert _indexed_ids([first.pk]) == set()
    assert _pending_ids() == {first.pk}
    assert message_search(channel=channel, user=channel.owner, query="narwhal").hits == []
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH 'walrus'")
        assert cursor.fetchone()[0] == 0


@pytest.mark.skipif(connection.vendor != "sqlite", reason="deferred indexing: SQLite")
@pytest.mark.django_db(transaction=True)
def test_sqlite_a_search_that_cannot_write_still_finds_the_pending_messages(monkeypatch):
    """Another connection holds the write lock past PENDING_LOCK_WAIT_MS: the search finds the channel's pending
    messages all the same (a temporary index of the channel), leaves them pending and its connection as it was;
    once the lock is free, the next search indexes them."""
    channel = ChannelFactory()
    build_path(channel, 4)
    fresh = say(channel, "user", "A narwhal surfaced.")
    monkeypatch.setattr(engine, "PENDING_LOCK_WAIT_MS", 20)
    other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        found = message_search(channel=channel, user=channel.owner, query="narwhal surfaced", context=0)
        assert ids(found) == [fresh.pk]
        assert fresh.pk in _pending_ids()
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM temp.sqlite_master")
            assert cursor.fetchone()[0] == 0
            cursor.execute("PRAGMA busy_timeout")
            assert cursor.fetchone()[0] == int(connection.settings_dict["OPTIONS"]["timeout"] * 1000)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert ids(message_search(channel=channel, user=channel.owner, query="narwhal surfaced", context=0)) == [fresh.pk]
    assert _pending_ids() == set()


@pytest.mark.skipif(connection.vendor != "sqlite", reason="deferred indexing: SQLite")
def test_sqlite_a_pending_message_already_indexed_is_indexed_once(channel, conversation):
    """A message indexed by other means while still noted as pending (a writer indexing its own rows) does not
    make the next search fail, and its words are in the index once, as they are now."""
    fresh = say(channel, "user", "A narwhal surfaced.")
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {FTS_TABLE}(rowid, content, speaker) VALUES (%s, 'An old walrus.', '')", [fresh.pk]
        )
    assert ids(message_search(channel=channel, user=channel.owner, query="narwhal", context=0)) == [fresh.pk]
    assert message_search(channel=channel, user=channel.owner, query="walrus").hits == []
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {FTS_TABLE} WHERE rowid = %s", [fresh.pk])
        assert cursor.fetchone()[0] == 1
        cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('integrity-check')")


@pytest.mark.skipif(connection.vendor != "sqlite", reason="deferred indexing: SQLite")
@pytest.mark.django_db(transaction=True)
def test_sqlite_a_search_does_not_wait_for_the_lock_when_only_other_channels_are_pending(monkeypatch):
    """Another connection holds the write lock: a search whose channel has nothing pending goes on at once (the
    others' pending messages are not its concern) and finds what it would find; they stay pending."""
    channel, other = ChannelFactory(), ChannelFactory()
    build_path(channel, 2)
    mine = say(channel, "user", "A narwhal surfaced.")
    indexed(channel)
    theirs = say(other, "user", "Another narwhal.")
    monkeypatch.setattr(engine, "PENDING_LOCK_WAIT_MS", 5_000)
    locker = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    try:
        locker.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        found = message_search(channel=channel, user=channel.owner, query="narwhal", context=0)
        assert time.monotonic() - started < 2.5
        assert ids(found) == [mine.pk]
        assert _pending_ids() == {theirs.pk}
    finally:
        locker.execute("ROLLBACK")
        locker.close()
