"""The search index and path segments, kept by the database itself.

Triggers rather than application code keep both in step with the message
table, so that every way a row arrives (the services, `chatcore.bulk`, a
benchmark's `bulk_create`, raw SQL) is indexed the same (on SQLite: noted in
the same transaction, indexed before the next search reads, see below), and a
purge (which blanks a message's content) drops its words.

- **Segment.** A message that is its parent's first child continues its
  parent's segment; a root, an edit or a regeneration (a later child) starts
  a segment of its own (`segment = id`). One segment holds at most one
  message per depth, so a path from the root is a handful of (segment, last
  depth) pairs, one per branch point, and "is this message on my path?" is
  an index lookup, not a walk of the whole path.
  The triggers work it out for a row that arrives without one (two index
  lookups per row); a writer that inserts many rows at once gives it
  (`chatcore.bulk` knows the whole tree it writes), because per-row lookups
  into a table growing inside the same statement made a bulk import slow
  down as it grew (PostgreSQL keeps the trigger's plan from when the table
  was small).
- **PostgreSQL.** A `search_vector tsvector` column on the message (content
  weighted A, the speaker's name B) with the configured text search
  configuration, and a GIN index. The column is a stored generated column,
  not a trigger's work: a row trigger made PostgreSQL run its function for
  every row and forced a COPY to insert row by row, a share of a bulk
  import's server time; a generated column is computed in the insert itself
  and again by any update of the row (a purge's blanked content drops its
  words). The only row trigger left works out the segment, and only for a
  row that arrives without one (`WHEN (NEW.segment IS NULL)`: the bulk
  import gives every segment, so no function runs for its rows). The
  language is part of the column's expression, so a change of it drops the
  column and adds it again.
- **SQLite.** An FTS5 table `chatcore_message_fts(content, speaker)` whose
  rowid is the message's id; the tokenizer is `porter unicode61` for English
  (stemming), plain `unicode61` for other languages (FTS5 ships no other
  stemmer). Its words are written late: FTS5 writes a new segment of its index
  at every commit or savepoint release that indexed something, whatever the
  number of rows, a fixed cost that was most of what the index added to an
  append (each is its own savepoint or transaction). So the AFTER
  INSERT/UPDATE triggers only note the message's id in
  `chatcore_message_fts_pending` (an update first removes the old words, so a
  purge's words go at once), the DELETE trigger removes both, and the pending
  rows are indexed together by the next search before it reads
  (`chatcore.search.engine.index_covering`): every search sees every
  committed message (and its own transaction's), as if
  each had been indexed by its own statement. An id is in the pending table
  exactly when its message's words are not in the index.

`install()` and `uninstall()` are used by the migration and by
`manage.py search_reindex`, which rebuilds everything after a change of
`CHATCORE_SEARCH_LANGUAGE`.
"""

from __future__ import annotations

import re

TABLE = "chatcore_message"
FTS_TABLE = "chatcore_message_fts"
PENDING_TABLE = "chatcore_message_fts_pending"  # SQLite: ids of the messages whose words are not yet in FTS_TABLE
PG_FUNCTION = "chatcore_message_index"
PG_INDEX = "chatcore_message_search_idx"

_LANGUAGE_RE = re.compile(r"^[a-z_]+$")


def _checked(language: str) -> str:
    if not _LANGUAGE_RE.match(language or ""):
        raise ValueError(f"Not a text search language name: {language!r}")
    return language


def sqlite_tokenizer(language: str) -> str:
    return "porter unicode61 remove_diacritics 2" if language == "english" else "unicode61 remove_diacritics 2"


_SEGMENT_CASE = f"""CASE WHEN NEW.parent_id IS NULL OR EXISTS (
            SELECT 1 FROM {TABLE} c WHERE c.parent_id = NEW.parent_id AND c.id < NEW.id)
        THEN NEW.id ELSE (SELECT p.segment FROM {TABLE} p WHERE p.id = NEW.parent_id) END"""


def _pg_document(language: str) -> str:
    """The message's document: its content's words weighted A and, for a message that names a speaker, the
    speaker's weighted B. For the others the speaker's part was the empty vector, which joined to the
    content's leaves it as it is, byte for byte, and its making and joining were a share of every row's
    indexing (a bulk import is bound by the server's work on its rows)."""
    config = f"'{_checked(language)}'::regconfig"
    content = f"setweight(to_tsvector({config}, coalesce(content, '')), 'A')"
    return (
        f"CASE WHEN metadata ? 'speaker' THEN {content} "
        f"|| setweight(to_tsvector({config}, coalesce(metadata->>'speaker', '')), 'B') ELSE {content} END"
    )


def _pg_function() -> str:
    """The segment of a row that arrives without one (the trigger's WHEN clause calls it for no other)."""
    return f"""CREATE OR REPLACE FUNCTION {PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.segment := {_SEGMENT_CASE};
            RETURN NEW;
        END $$"""


def _pg_function_before_generated(language: str) -> str:
    """The function as it was while it also computed the document (a plain column then): for the migrations
    written before the column was generated, and for going back past the one that made it so."""
    config = f"'{_checked(language)}'::regconfig"
    return f"""CREATE OR REPLACE FUNCTION {PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' AND NEW.segment IS NULL THEN
                NEW.segment := {_SEGMENT_CASE};
            END IF;
            NEW.search_vector := setweight(to_tsvector({config}, coalesce(NEW.content, '')), 'A');
            IF NEW.metadata ? 'speaker' THEN
                NEW.search_vector := NEW.search_vector
                    || setweight(to_tsvector({config}, coalesce(NEW.metadata->>'speaker', '')), 'B');
            END IF;
            RETURN NEW;
        END $$"""


def _sqlite_insert_trigger() -> str:
    # OR IGNORE: an id already noted (only raw SQL reusing the id of a deleted message could do that) stays noted.
    return f"""CREATE TRIGGER {FTS_TABLE}_insert AFTER INSERT ON {TABLE} BEGIN
            UPDATE {TABLE} SET segment = {_SEGMENT_CASE} WHERE id = NEW.id AND NEW.segment IS NULL;
            INSERT OR IGNORE INTO {PENDING_TABLE}(id) VALUES (NEW.id);
        END"""


def _sqlite_update_trigger() -> str:
    return f"""CREATE TRIGGER {FTS_TABLE}_update AFTER UPDATE OF content, metadata ON {TABLE} BEGIN
            DELETE FROM {FTS_TABLE} WHERE rowid = OLD.id;
            INSERT OR IGNORE INTO {PENDING_TABLE}(id) VALUES (NEW.id);
        END"""


def _sqlite_delete_trigger() -> str:
    return f"""CREATE TRIGGER {FTS_TABLE}_delete AFTER DELETE ON {TABLE} BEGIN
            DELETE FROM {FTS_TABLE} WHERE rowid = OLD.id;
            DELETE FROM {PENDING_TABLE} WHERE id = OLD.id;
        END"""


def sqlite_trigger_statements() -> list[str]:
    """SQLite: the pending table if missing and the three triggers made again, leaving the index's data alone."""
    return [
        f"CREATE TABLE IF NOT EXISTS {PENDING_TABLE} (id INTEGER PRIMARY KEY)",
        *(f"DROP TRIGGER IF EXISTS {FTS_TABLE}_{suffix}" for suffix in ("insert", "update", "delete")),
        _sqlite_insert_trigger(),
        _sqlite_update_trigger(),
        _sqlite_delete_trigger(),
    ]


# The pending rows' words, all at once, as one segment of the index (the trigger's expressions of old), then the
# pending table emptied: in one transaction, which holds SQLite's only write lock, so no row is noted in between.
SQLITE_INDEX_PENDING = [
    f"""INSERT INTO {FTS_TABLE}(rowid, content, speaker)
        SELECT m.id, m.content, coalesce(json_extract(m.metadata, '$.speaker'), '')
        FROM {PENDING_TABLE} p CROSS JOIN {TABLE} m ON m.id = p.id ORDER BY p.id""",  # noqa: S608 (constant names)
    f"DELETE FROM {PENDING_TABLE}",  # noqa: S608 (constant name)
]
# The first of them for when a pending message's words are in the index already (indexed by other means while
# pending, against the rule): replaced, so that they are there once. Only then: replacing looks each row up.
SQLITE_INDEX_PENDING_REPLACING = SQLITE_INDEX_PENDING[0].replace("INSERT INTO", "INSERT OR REPLACE INTO", 1)
# The words of channel %s's messages into a temporary index of the same name (chatcore.search.engine).
SQLITE_INDEX_CHANNEL = f"""INSERT INTO temp.{FTS_TABLE}(rowid, content, speaker)
    SELECT id, content, coalesce(json_extract(metadata, '$.speaker'), '') FROM main.{TABLE}
    WHERE channel_id = %s ORDER BY id"""  # noqa: S608 (constant names)
SQLITE_ANY_PENDING = f"SELECT EXISTS (SELECT 1 FROM {PENDING_TABLE})"  # noqa: S608 (constant name)
# Whether a message of channel %s is pending (a search that cannot index them covers that channel's apart).
SQLITE_CHANNEL_PENDING = f"""SELECT EXISTS (SELECT 1 FROM {PENDING_TABLE} p CROSS JOIN {TABLE} m
    ON m.id = p.id WHERE m.channel_id = %s)"""  # noqa: S608 (constant names)


_SQLITE_INSERT_TRIGGER = f"{FTS_TABLE}_insert"
# What the insert trigger indexes, for the rows with ids from %s to %s at once (chatcore.bulk, after a large import).
SQLITE_INDEX_IDS = f"""INSERT INTO {FTS_TABLE}(rowid, content, speaker)
    SELECT id, content, coalesce(json_extract(metadata, '$.speaker'), '') FROM {TABLE}
    WHERE id BETWEEN %s AND %s ORDER BY id"""  # noqa: S608 (constant names)


# FTS5 keeps its index as segments on numbered levels; a flush writes a new segment at level 0 and merging
# a level's segments writes one at the next, so a segment's level counts its merges, not its size. Appending
# one row at a time flushes a one-page segment per row (a savepoint or statement each), and a big segment
# only exists after many merges, at a high level. A set-based insert (SQLITE_INDEX_IDS) flushes the whole
# import as one segment at level 0, where the next writers' merges reach it at once: FTS5's automerge does
# merging in proportion to the pages written, and a one-row append writes a whole page, so the appends
# after an import paid for merging its segments, many times more per row than the import did. After its
# insert the writer therefore merges until FTS5 has nothing left to merge at `usermerge`, the number of
# segments on a level that makes it merge them: each level ends with fewer than that, and the import's rows
# move up to levels that the next appends' merges reach only after thousands of rows. At 2 (any two merged)
# the levels of an import in chunks act as a binary counter, each row rewritten about log2(chunks) times,
# the settling a share of every chunk that grew with the chunks before it; at 4, FTS5's own `automerge`,
# each row is rewritten about log4(chunks) times, half as often, while a search reads at most three
# segments a level (one at 2), and the first pending rows' indexing that brings a level to four segments
# merges that level (a one-off of some milliseconds after a large import, against half of its merging).
SQLITE_SETTLE_USERMERGE = 4
SQLITE_SETTLE_PAGES = 2_000  # pages merged by one 'merge' statement; the writer repeats it until one does nothing
# FTS5 counts a 'merge' that merged something as two or more changes, one that found nothing as fewer.
_MERGE_DID_WORK = 2


def sqlite_index_settle(connection) -> None:
    """Merge the full-text index's segments until nothing is left to merge (see SQLITE_SETTLE_USERMERGE),
    inside the caller's transaction; for a writer that indexed many rows at once (chatcore.bulk)."""
    raw = connection.connection
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT v FROM {FTS_TABLE}_config WHERE k = 'usermerge'")  # noqa: S608 (constant name)
        row = cursor.fetchone()
        if row is None or row[0] != SQLITE_SETTLE_USERMERGE:
            cursor.execute(
                f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('usermerge', %s)", [SQLITE_SETTLE_USERMERGE]
            )
        while True:
            before = raw.total_changes
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('merge', %s)", [SQLITE_SETTLE_PAGES])
            if raw.total_changes - before < _MERGE_DID_WORK:
                return


def sqlite_insert_trigger_drop(cursor) -> str | None:
    """Drop SQLite's insert trigger; returns the statement that makes it again as it was (None: not installed).
    For a writer that indexes its rows itself (SQLITE_INDEX_IDS) and restores the trigger in the same
    transaction, so that no other writer ever runs without it."""
    cursor.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = %s", [_SQLITE_INSERT_TRIGGER])
    row = cursor.fetchone()
    if row is None:
        return None
    cursor.execute(f"DROP TRIGGER {_SQLITE_INSERT_TRIGGER}")
    return row[0]


# The trigger fires whatever the session's replication role: a large import switches the role to replica to
# skip the foreign keys' per-row triggers (chatcore.bulk checks the keys itself), and the index must still be
# kept (a logical replication subscriber computes the same document from the same row).
PG_TRIGGER_ALWAYS = f"ALTER TABLE {TABLE} ENABLE ALWAYS TRIGGER {PG_FUNCTION}"


def _postgresql(language: str) -> list[str]:
    """The generated column (made again: its expression holds the language), its index and the segment's
    trigger. Adding the column rewrites the table once, computing every row's document."""
    return [
        f"DROP INDEX IF EXISTS {PG_INDEX}",
        f"ALTER TABLE {TABLE} DROP COLUMN IF EXISTS search_vector",
        f"ALTER TABLE {TABLE} ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({_pg_document(language)}) STORED",
        _pg_function(),
        f"COMMENT ON FUNCTION {PG_FUNCTION}() IS '{_checked(language)}'",
        f"DROP TRIGGER IF EXISTS {PG_FUNCTION} ON {TABLE}",
        f"""CREATE TRIGGER {PG_FUNCTION} BEFORE INSERT ON {TABLE}
            FOR EACH ROW WHEN (NEW.segment IS NULL) EXECUTE FUNCTION {PG_FUNCTION}()""",
        PG_TRIGGER_ALWAYS,
        f"CREATE INDEX {PG_INDEX} ON {TABLE} USING gin (search_vector)",
    ]


def postgresql_before_generated_statements(language: str) -> list[str]:
    """The index as it was before its column was generated (a plain column kept by the trigger), made from
    the installed one: for going back past the migration that made it generated."""
    config = f"'{_checked(language)}'::regconfig"
    return [
        f"DROP INDEX IF EXISTS {PG_INDEX}",
        f"ALTER TABLE {TABLE} DROP COLUMN IF EXISTS search_vector",
        f"ALTER TABLE {TABLE} ADD COLUMN search_vector tsvector",
        _pg_function_before_generated(language),
        f"COMMENT ON FUNCTION {PG_FUNCTION}() IS '{language}'",
        f"DROP TRIGGER IF EXISTS {PG_FUNCTION} ON {TABLE}",
        f"""CREATE TRIGGER {PG_FUNCTION} BEFORE INSERT OR UPDATE OF content, metadata ON {TABLE}
            FOR EACH ROW EXECUTE FUNCTION {PG_FUNCTION}()""",
        PG_TRIGGER_ALWAYS,
        f"""UPDATE {TABLE} SET search_vector =
            setweight(to_tsvector({config}, coalesce(content, '')), 'A')
            || setweight(to_tsvector({config}, coalesce(metadata->>'speaker', '')), 'B')""",
        f"CREATE INDEX {PG_INDEX} ON {TABLE} USING gin (search_vector)",
    ]


_PG_GENERATED = """SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = %s::regclass
    AND attname = 'search_vector' AND attgenerated = 's' AND NOT attisdropped)"""


def pg_document_generated(cursor) -> bool:
    """Whether the installed index's column is generated (the migrations before that one leave it alone)."""
    cursor.execute(_PG_GENERATED, [TABLE])
    return bool(cursor.fetchone()[0])


def _sqlite(language: str) -> list[str]:
    return [
        f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(content, speaker, tokenize = '{sqlite_tokenizer(language)}')",
        *sqlite_trigger_statements(),
        f"""INSERT INTO {FTS_TABLE}(rowid, content, speaker)
            SELECT id, content, coalesce(json_extract(metadata, '$.speaker'), '') FROM {TABLE}""",
        f"DELETE FROM {PENDING_TABLE}",
    ]


def install_statements(vendor: str, language: str) -> list[str]:
    if vendor == "postgresql":
        return _postgresql(language)
    if vendor == "sqlite":
        return _sqlite(language)
    return []


def installed_language(cursor, vendor: str, default: str) -> str:
    """The language the installed index was built with (PostgreSQL keeps it in its function's comment)."""
    if vendor != "postgresql":
        return default
    cursor.execute("SELECT obj_description(%s::regproc, 'pg_proc')", [PG_FUNCTION])
    row = cursor.fetchone()
    return row[0] if row and row[0] else default


def segment_trigger_statements(vendor: str, language: str) -> list[str]:
    """The insert triggers again, as the migrations before the generated column made them, leaving the
    index's data alone (SQLite: all three, and the pending table they write). On PostgreSQL only for an
    index whose column is not generated (`pg_document_generated`): the caller checks."""
    if vendor == "postgresql":
        return [_pg_function_before_generated(language)]
    if vendor == "sqlite":
        return sqlite_trigger_statements()
    return []


def uninstall_statements(vendor: str) -> list[str]:
    if vendor == "postgresql":
        return [
            f"DROP TRIGGER IF EXISTS {PG_FUNCTION} ON {TABLE}",
            f"DROP FUNCTION IF EXISTS {PG_FUNCTION}()",
            f"DROP INDEX IF EXISTS {PG_INDEX}",
            f"ALTER TABLE {TABLE} DROP COLUMN IF EXISTS search_vector",
        ]
    if vendor == "sqlite":
        return [
            f"DROP TRIGGER IF EXISTS {FTS_TABLE}_insert",
            f"DROP TRIGGER IF EXISTS {FTS_TABLE}_update",
            f"DROP TRIGGER IF EXISTS {FTS_TABLE}_delete",
            f"DROP TABLE IF EXISTS {FTS_TABLE}",
            f"DROP TABLE IF EXISTS {PENDING_TABLE}",
        ]
    return []


UPDATE_BATCH = 1_000  # rows written per executemany: memory stays flat however many messages there are


def segments_backfill(cursor) -> None:
    """Segments of the messages that existed before the triggers: in id order,
    a parent's first child continues its segment, everyone else starts one."""
    cursor.execute(f"SELECT id, parent_id FROM {TABLE} ORDER BY id")  # noqa: S608 (constant table name)
    segment: dict[int, int] = {}
    first_child_seen: set[int] = set()
    rows = []
    for message_id, parent_id in cursor.fetchall():
        if parent_id is None or parent_id in first_child_seen or parent_id not in segment:
            segment[message_id] = message_id
        else:
            segment[message_id] = segment[parent_id]
        if parent_id is not None:
            first_child_seen.add(parent_id)
        rows.append((segment[message_id], message_id))
    for start in range(0, len(rows), UPDATE_BATCH):
        batch = rows[start : start + UPDATE_BATCH]
        cursor.executemany(f"UPDATE {TABLE} SET segment = %s WHERE id = %s", batch)  # noqa: S608


def reindex_statements(vendor: str, language: str) -> list[str]:
    """Rebuild with `language`: PostgreSQL makes the generated column again with the language's expression
    (which computes every row's document) and replaces the trigger; SQLite's tokenizer is fixed when the FTS5
    table is made, so the table is made again."""
    if vendor == "postgresql":
        return install_statements(vendor, language)
    return uninstall_statements(vendor) + install_statements(vendor, language)
