"""Context assembly: its cost must not grow with the history (docs/design.md, invariant 5).

For active paths of 100, 1,000, 10,000 and 100,000 messages (times the
scale, at least 100), each with a summary a few messages before the leaf,
measure `context_assemble` (the cursor, then the messages after the
boundary: one recursive query that stops there) against loading the whole
path root to leaf. The goal: the 10,000 / 100 ratio of the context
time stays under 2.

All channels are built first; the sizes are then measured in turn, several
rounds over, keeping each size's best median (see `measure_rounds`).
"""

from chatcore import selectors, services
from chatcore.context import context_assemble
from devtools.benchmarks.data import bench_data, measure, measure_rounds, time_budget

SIZES = (100, 1_000, 10_000, 100_000)
AFTER_SUMMARY = 20  # messages between the summary's boundary and the leaf
GOAL = 2.0
ROUNDS = 5


def sizes_for(scale: float) -> list[int]:
    return sorted({max(100, int(size * scale)) for size in SIZES})


def run(*, scale: float, stdout) -> dict:
    rows = []
    budget = time_budget(scale)
    with bench_data("context") as data:
        built = {}
        for size in sizes_for(scale):
            channel, messages = data.chain(size, title=f"context benchmark {size}")
            boundary = messages[max(0, size - AFTER_SUMMARY - 1)]
            services.summary_write(
                channel=channel,
                through_message=boundary,
                created_by=None,
                content="Earlier: the deploy failures were traced to the migration holding "
                "every pooled connection; migrations now run as a job first.",
            )
            built[size] = (selectors.channel_get(user=data.user, channel_id=channel.pk), messages[-1].pk)

        def assemble(channel):
            return lambda: context_assemble(channel=channel, user=data.user)

        contexts = measure_rounds(
            {size: assemble(channel) for size, (channel, _) in built.items()},
            rounds=ROUNDS if scale >= 0.1 else 1,
            budget_seconds=budget,
        )
        for size, (channel, leaf_id) in built.items():
            large = size >= 50_000
            full_ms, full_queries = measure(
                lambda leaf_id=leaf_id: selectors.message_path(leaf_id=leaf_id),
                budget_seconds=budget,
                min_runs=1 if large else 3,
                warmups=0 if large else 1,
            )
            context_ms, context_queries = contexts[size]
            rows.append(
                {
                    "messages": size,
                    "context_ms": round(context_ms, 3),
                    "context_queries": context_queries,
                    "context_messages_loaded": len(context_assemble(channel=channel, user=data.user).path),
                    "full_path_ms": round(full_ms, 3),
                    "full_path_queries": full_queries,
                }
            )

    base = rows[0]
    for row in rows:
        row["context_ratio"] = round(row["context_ms"] / base["context_ms"], 3)
        row["full_path_ratio"] = round(row["full_path_ms"] / base["full_path_ms"], 3)
    figures: dict = {"rows": rows, "goal_ratio": GOAL}
    by_size = {row["messages"]: row for row in rows}
    if 10_000 in by_size and 100 in by_size:
        figures["ratio_10000_vs_100"] = by_size[10_000]["context_ratio"]
        figures["meets_goal"] = figures["ratio_10000_vs_100"] < GOAL
    figures["ratio_largest_vs_smallest"] = rows[-1]["context_ratio"]

    stdout.write(
        f"context: assembly with a summary {AFTER_SUMMARY} messages before the leaf, against loading "
        f"the whole path (ms)\n"
    )
    stdout.write(
        f"  {'messages':>9} {'context ms':>11} {'queries':>8} {'loaded':>7} {'ratio':>7} "
        f"{'full path ms':>13} {'queries':>8} {'ratio':>9}\n"
    )
    for row in rows:
        stdout.write(
            f"  {row['messages']:>9,} {row['context_ms']:>11.3f} {row['context_queries']:>8} "
            f"{row['context_messages_loaded']:>7} {row['context_ratio']:>6.2f}× "
            f"{row['full_path_ms']:>13.3f} {row['full_path_queries']:>8} {row['full_path_ratio']:>8.2f}×\n"
        )
    if "ratio_10000_vs_100" in figures:
        verdict = "meets" if figures["meets_goal"] else "MISSES"
        stdout.write(
            f"  context time 10,000 vs 100 messages: {figures['ratio_10000_vs_100']:.2f}× "
            f"({verdict} the goal of < {GOAL:g}×)\n"
        )
    return figures
