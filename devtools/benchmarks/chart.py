"""One PNG that summarizes the scenarios a benchmark run measured.

Each scenario that ran gets a panel. Scenarios whose figures this module
knows (context, path, scanner, throughput, compaction, tokens) are drawn on
purpose; any other is drawn from its `rows` (the first numeric column
against the timing columns, on log scales). matplotlib is needed only
here, and only when a chart is asked for.
"""

import math
from pathlib import Path

from django.core.management.base import CommandError

from devtools.calibration import CAL_SUFFIX

TIME_HINTS = ("_ms", "_s", "seconds", "per_s", "rate")


def _pyplot():
    try:
        import matplotlib
    except ImportError as error:
        raise CommandError(
            "Drawing the chart needs matplotlib, which is not installed: `pip install -e '.[bench]'` "
            "(the bench extra in pyproject.toml; the test command installs it), or pass --no-chart."
        ) from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _rows(figures: dict) -> list[dict]:
    rows = figures.get("rows")
    if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows):
        return rows
    for value in figures.values():
        if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
            return value
    return []


def _generic(ax, name: str, figures: dict) -> None:
    rows = _rows(figures)
    if not rows:
        _text_panel(ax, name, figures)
        return
    keys = [k for k in rows[0] if not k.endswith(CAL_SUFFIX) and all(_number(r.get(k)) for r in rows)]
    if not keys:
        _text_panel(ax, name, figures)
        return
    x_key = keys[0]
    y_keys = [k for k in keys[1:] if any(h in k for h in TIME_HINTS)] or keys[1:3]
    xs = [r[x_key] for r in rows]
    for key in y_keys:
        ys = [r[key] for r in rows]
        ax.plot(xs, ys, marker="o", label=key)
    if min(xs) > 0 and max(xs) / max(min(xs), 1e-12) >= 20:
        ax.set_xscale("log")
    positives = [r[k] for r in rows for k in y_keys]
    if positives and min(positives) > 0 and max(positives) / min(positives) >= 20:
        ax.set_yscale("log")
    ax.set_xlabel(x_key)
    ax.set_title(name)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)


def _text_panel(ax, name: str, figures: dict) -> None:
    lines = [
        f"{k}: {v:.4g}" if _number(v) else f"{k}: {v}"
        for k, v in figures.items()
        if not k.endswith(CAL_SUFFIX) and (_number(v) or isinstance(v, (str, bool)))
    ][:14]
    ax.axis("off")
    ax.set_title(name)
    ax.text(0.0, 1.0, "\n".join(lines), va="top", family="monospace", fontsize=7, transform=ax.transAxes)


def _tokens(ax, figures: dict) -> None:
    labels = [f"tokenizer\n({figures.get('tokenizer', '?')})", "estimate\n(4 bytes/token)"]
    values = [figures["tokenizer_mb_per_s"], figures["estimate_mb_per_s"]]
    bars = ax.bar(labels, values, color=["tab:blue", "tab:orange"])
    ax.set_yscale("log")
    ax.set_ylabel("MB/s (one call per message)")
    for bar, value in zip(bars, values, strict=True):
        ax.annotate(f"{value:,.1f}", (bar.get_x() + bar.get_width() / 2, value), ha="center", va="bottom", fontsize=8)
    ax.set_title(
        f"tokens: estimate error per message mean {figures['message_error_mean']:.0%}, "
        f"max {figures['message_error_max']:.0%};\nper conversation max "
        f"{figures['conversation_error_max']:.0%}",
        fontsize=9,
    )


def _compaction(ax, figures: dict) -> None:
    rows = figures["rows"]
    xs = [r["messages"] for r in rows]
    ax.plot(xs, [r["offline_total_ms"] for r in rows], marker="o", label="offline: total")
    ax.plot(xs, [r["offline_overhead_ms"] for r in rows], marker="o", label="offline: minus summarizer")
    ax.plot(xs, [r["loopback_total_ms"] for r in rows], marker="s", linestyle="--", label="loopback: total")
    ax.plot(
        xs, [r["loopback_overhead_ms"] for r in rows], marker="s", linestyle="--", label="loopback: minus model call"
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("messages summarized")
    ax.set_ylabel("ms per compaction")
    queries = sorted({r["offline_queries"] for r in rows} | {r["loopback_queries"] for r in rows})
    ax.set_title(f"compaction overhead; queries: {', '.join(map(str, queries))}", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)


def _ours_vs_baseline(
    ax, rows: list[dict], x: str, ours: list[tuple[str, str]], baseline: list[tuple[str, str]], title: str, xlabel: str
) -> None:
    xs = [r[x] for r in rows]
    for key, label in ours:
        ax.plot(xs, [r[key] for r in rows], marker="o", label=label)
    for key, label in baseline:
        ax.plot(xs, [r[key] for r in rows], marker="s", linestyle="--", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("ms")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)


def _context(ax, figures: dict) -> None:
    rows = figures["rows"]
    ratio = rows[-1]["context_ms"] / rows[0]["context_ms"]
    _ours_vs_baseline(
        ax,
        rows,
        "messages",
        [("context_ms", "ours: after the summary")],
        [("full_path_ms", "baseline: whole path")],
        f"context assembly vs path length (ours {rows[-1]['messages']:,} / {rows[0]['messages']:,}: {ratio:.2f}×)",
        "messages on the active path",
    )


def _path(ax, figures: dict) -> None:
    _ours_vs_baseline(
        ax,
        figures["rows"],
        "messages",
        [("cte_ms", "ours: one recursive query"), ("cte_with_siblings_ms", "ours: with sibling counts")],
        [("walk_ms", "baseline: parent by parent")],
        "leaf-to-root path load",
        "messages on the path",
    )


def _scanner(ax, figures: dict) -> None:
    runs = [figures["small"], figures["large"]]
    labels = [f"{r['messages']:,} msgs" for r in runs]
    width = 0.38
    positions = range(len(runs))
    ours = ax.bar([p - width / 2 for p in positions], [r["ours_ms"] for r in runs], width, label="ours: pressure index")
    base = ax.bar(
        [p + width / 2 for p in positions],
        [r["baseline_ms"] for r in runs],
        width,
        label="baseline: aggregate over messages",
    )
    for bars in (ours, base):
        for bar in bars:
            ax.annotate(
                f"{bar.get_height():,.1f}",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=7,
            )
    ax.set_xticks(list(positions), labels)
    ax.set_yscale("log")
    ax.set_ylabel("ms per candidate selection")
    ax.set_title(
        f"scanner at {runs[-1]['channels']:,} channels: speed-up {runs[-1]['speedup']:,.0f}×, "
        f"ours grows {figures['growth']:.2f}×",
        fontsize=9,
    )
    ax.legend(fontsize=7)


def _throughput(ax, figures: dict) -> None:
    rows = figures.get("rounds") or figures["rows"]
    key_x = "concurrency" if "concurrency" in rows[0] else next(iter(rows[0]))
    xs = [r[key_x] for r in rows]
    measured = next(k for k in ("per_second", "compactions_per_s", "rate", "throughput") if k in rows[0])
    limit = next(k for k in ("limit", "limit_per_second", "limit_per_s") if k in rows[0])
    ax.plot(xs, [r[limit] for r in rows], marker="s", linestyle="--", label="limit: concurrency / latency")
    ax.plot(xs, [r[measured] for r in rows], marker="o", label="measured")
    ax.set_xlabel(key_x)
    ax.set_ylabel("compactions per second")
    shares = [r.get("share_of_limit") for r in rows]
    share_text = ", ".join(f"{share:.0%}" for share in shares if isinstance(share, (int, float)))
    ax.set_title(f"throughput through qcluster workers vs the limit ({share_text} of it)", fontsize=9)
    ax.set_xticks(xs)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)


def _serving(ax, figures: dict) -> None:
    """Requests/s against c/L per server, and the p99 time added to the first token on a second axis."""
    rows = figures["rows"]
    servers = sorted({r["server"] for r in rows}, key=lambda name: name != "uvicorn")
    xs = sorted({r["concurrency"] for r in rows})
    ax.plot(xs, [x / figures["latency"] for x in xs], marker="s", linestyle="--", color="grey", label="limit c / L")
    added = ax.twinx()
    for server in servers:
        mine = [r for r in rows if r["server"] == server]
        line = ax.plot([r["concurrency"] for r in mine], [r["per_second"] for r in mine], marker="o", label=server)
        first = [r["added_first_ms"]["p99"] for r in mine]
        added.plot([r["concurrency"] for r in mine], first, linestyle=":", color=line[0].get_color())
    ax.set_xlabel("concurrent streaming conversations (c)")
    ax.set_ylabel("replies per second (solid)")
    added.set_ylabel("p99 ms added to the first token (dotted)")
    added.set_yscale("log")
    loads = ", ".join(f"{r['load_before']:.0f}" for r in rows)
    ax.set_title(f"serving: uvicorn vs runserver, L = {figures['latency']:g} s (load avg {loads})", fontsize=9)
    ax.set_xticks(xs)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, alpha=0.3)


PLOTTERS = {
    "serving": _serving,
    "tokens": _tokens,
    "compaction": _compaction,
    "context": _context,
    "path": _path,
    "scanner": _scanner,
    "throughput": _throughput,
}


def chart_write(*, results: dict[str, dict], path: Path) -> Path:
    """Draw one panel per scenario in `results` into the PNG at `path`."""
    plt = _pyplot()
    names = [n for n, figures in results.items() if isinstance(figures, dict)]
    if not names:
        raise CommandError("No scenario produced figures to chart.")
    columns = 2 if len(names) > 1 else 1
    rows = math.ceil(len(names) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(7 * columns, 4.6 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        figures = results[name]
        plotter = PLOTTERS.get(name)
        try:
            if plotter is None:
                raise KeyError(name)
            plotter(ax, figures)
        except (KeyError, TypeError, ValueError, IndexError):
            ax.clear()
            _generic(ax, name, figures)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    fig.suptitle("compaction_bench", fontsize=11)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
