"""Path loading: leaf to root in one recursive query against a parent-by-parent walk.

Chains of 1,000 and 10,000 messages (times the scale, at least 100). The
walk is what an ORM loop over `message.parent` does: one query per message.
"""

from chatcore import selectors
from chatcore.models import Message
from devtools.benchmarks.data import bench_data, measure, time_budget

SIZES = (1_000, 10_000)


def sizes_for(scale: float) -> list[int]:
    return sorted({max(100, int(size * scale)) for size in SIZES})


def walk(leaf_id: int) -> list[Message]:
    """The slow way, on purpose: follow parent_id one query at a time."""
    message = Message.objects.get(pk=leaf_id)
    path = [message]
    while message.parent_id is not None:
        message = Message.objects.get(pk=message.parent_id)
        path.append(message)
    path.reverse()
    return path


def run(*, scale: float, stdout) -> dict:
    rows = []
    with bench_data("path") as data:
        for size in sizes_for(scale):
            _, messages = data.chain(size, title=f"path benchmark {size}")
            leaf_id = messages[-1].pk
            assert len(selectors.message_path(leaf_id=leaf_id)) == len(walk(leaf_id)) == size
            budget = time_budget(scale)

            def path_cte(leaf_id: int = leaf_id) -> object:
                return selectors.message_path(leaf_id=leaf_id, with_siblings=False)

            def path_with_siblings(leaf_id: int = leaf_id) -> object:
                return selectors.message_path(leaf_id=leaf_id, with_siblings=True)

            def path_walk(leaf_id: int = leaf_id) -> object:
                return walk(leaf_id)

            cte_ms, cte_queries = measure(path_cte, budget_seconds=budget)
            siblings_ms, _ = measure(path_with_siblings, min_runs=3, budget_seconds=budget)
            walk_ms, walk_queries = measure(path_walk, min_runs=3, budget_seconds=2 * budget)
            rows.append(
                {
                    "messages": size,
                    "cte_ms": round(cte_ms, 3),
                    "cte_queries": cte_queries,
                    "cte_with_siblings_ms": round(siblings_ms, 3),
                    "walk_ms": round(walk_ms, 3),
                    "walk_queries": walk_queries,
                    "speedup": round(walk_ms / cte_ms, 1),
                }
            )

    stdout.write("path: leaf-to-root load, one recursive query against a parent-by-parent walk (median ms)\n")
    stdout.write(
        f"  {'messages':>9} {'CTE ms':>9} {'queries':>8} {'CTE+siblings ms':>16} {'walk ms':>10} "
        f"{'queries':>8} {'speed-up':>9}\n"
    )
    for row in rows:
        stdout.write(
            f"  {row['messages']:>9,} {row['cte_ms']:>9.2f} {row['cte_queries']:>8} "
            f"{row['cte_with_siblings_ms']:>16.2f} {row['walk_ms']:>10.1f} {row['walk_queries']:>8,} "
            f"{row['speedup']:>8.1f}×\n"
        )
    return {"rows": rows}
