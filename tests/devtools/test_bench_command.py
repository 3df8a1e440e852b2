"""The benchmark command runs its scenarios, prints figures, and leaves no data behind.

Timings are not asserted (speed goals live in the command's output); what
is checked is that the figures are there, the query counts hold, and the
throwaway rows are gone.
"""

import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection

from chatcore.models import AuditEntry, Channel, Cursor, Message, Summary
from devtools import benchmarks
from tests.chatcore.factories import ChannelFactory, build_path
from tests.helpers import row_counts


def run_bench(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("compaction_bench", *args, "--no-chart", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def counts():
    return row_counts(Channel, Message, Summary, Cursor, AuditEntry, get_user_model())


def test_registry_lists_our_scenarios():
    assert {"context", "path"} <= set(benchmarks.scenarios_available())
    assert set(benchmarks.scenarios_available()) <= set(benchmarks.REGISTRY)


def test_context_and_path_scenarios_print_tables_and_clean_up(db):
    keep = ChannelFactory()
    build_path(keep, 3)
    before = counts()
    out, err = run_bench("--scenario", "context", "--scenario", "path", "--scale", "0.01")
    assert err == ""
    assert "context: assembly with a summary 20 messages before the leaf" in out
    assert "path: leaf-to-root load, one recursive query" in out
    assert counts() == before
    assert Message.objects.filter(channel=keep).count() == 3


def test_json_figures(db):
    out, err = run_bench("--scenario", "context", "--scenario", "path", "--scale", "0.01", "--json")
    figures = json.loads(out)
    assert figures["scale"] == 0.01 and set(figures["scenarios"]) == {"context", "path"}
    # The benchmark pages show when, from which code and on which database.
    assert set(figures["run"]) == {"date", "commit", "database"}
    assert figures["run"]["database"] == connection.vendor
    context = figures["scenarios"]["context"]
    assert [row["messages"] for row in context["rows"]] == [100, 1_000]
    for row in context["rows"]:
        assert (row["context_queries"], row["context_messages_loaded"], row["full_path_queries"]) == (2, 20, 1)
    path = figures["scenarios"]["path"]
    assert [(row["messages"], row["cte_queries"], row["walk_queries"]) for row in path["rows"]] == [(100, 1, 100)]
    assert "context:" in err  # the tables went to stderr
    for scenario in (context, path):
        assert scenario["calibration_ms"] > 0 and scenario["load_average"] >= 0
        assert scenario["calibration_ms_start"] > 0 and scenario["calibration_ms_end"] > 0
    for row in path["rows"]:
        assert row["cte_ms_cal"] == round(row["cte_ms"] / path["calibration_ms"], 5)
    assert "calibration: " in err and "rows[0].cte_ms_cal: " in err


def test_sizes_follow_the_scale():
    from devtools.benchmarks import context, path

    assert context.sizes_for(1) == [100, 1_000, 10_000, 100_000]
    assert context.sizes_for(0.1) == [100, 1_000, 10_000]
    assert path.sizes_for(1) == [1_000, 10_000]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scale", "0"], "--scale must be a positive number."),
        (["--scale", "-1"], "--scale must be a positive number."),
    ],
)
def test_bad_arguments_are_errors(db, args, message):
    with pytest.raises(CommandError, match=message):
        run_bench(*args)


def test_search_scenario_prints_both_goals_against_the_like_baseline(db):
    before = counts()
    out, _ = run_bench("--scenario", "search", "--scale", "0.005", "--json")
    figures = json.loads(out)["scenarios"]["search"]
    assert figures["messages"] == 501 and figures["queries"] == 60
    assert figures["queries_with_results"] >= 50
    for key in ("search_p95_ms", "recall_p95_ms", "like_p95_ms", "append_upkeep", "bulk_upkeep"):
        assert key in figures
    assert figures["append_ms_with_index"] > 0 and figures["append_ms_without_index"] > 0
    # SQLite indexes the appended messages when the next search comes (chatcore.search.schema), timed apart.
    assert (figures["append_indexed_later_ms"] > 0) == (connection.vendor == "sqlite")
    assert figures["import_ms_per_message_first"] > 0 and figures["import_ms_per_message_last"] > 0
    assert figures["import_growth"] > 0 and figures["build_seconds_cal"] >= 0
    assert figures["import_growth_cpu"] > 0
    assert counts() == before
    table, _ = run_bench("--scenario", "search", "--scale", "0.005")
    assert "LIKE %word% scan (baseline)" in table and "index upkeep: message_append" in table
    assert "import of the channel: " in table and " ms per message at its start, " in table
    # the index's triggers came back after the rounds without them
    chatcore_channel = ChannelFactory()
    message = build_path(chatcore_channel, 1)[0]
    from chatcore.search import message_search

    found = message_search(channel=chatcore_channel, user=chatcore_channel.owner, query="word0")
    assert [hit.message.pk for hit in found.hits] == [message.pk]


def test_a_large_run_leaves_sqlite_s_full_text_index_without_its_words(db):
    """The words of a run's removed messages leave SQLite's full-text index with the run (rewritten as
    one segment), so that the next run's import does not settle against them."""
    if connection.vendor != "sqlite":
        pytest.skip("FTS5's segments: SQLite only")
    from chatcore.search.schema import FTS_TABLE
    from devtools.benchmarks.data import SQLITE_COMPACT_FROM_MESSAGES, bench_data

    def index_rows() -> int:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {FTS_TABLE}_data")
            return cursor.fetchone()[0]

    empty = index_rows()
    with bench_data("fts") as data:
        data.chain(SQLITE_COMPACT_FROM_MESSAGES)
        assert index_rows() > empty
    assert index_rows() <= empty
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH 'pool'")
        assert cursor.fetchone()[0] == 0
