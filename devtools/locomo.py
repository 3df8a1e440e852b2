"""Where the LoCoMo sample lies: the directory named by COMPACTION_BENCH_LOCOMO, else
`shared/bench/locomo` beside the checkout (from a git worktree, the nearest ancestor that has one).

The sample is never copied into the project, so a fresh clone has none: every reader asks here and
works without it (the commands say where they looked; the tests that need it skip with that reason).
No Django import, so that the test corpora can ask before Django is set up.
"""

import os
from pathlib import Path

ENV_VAR = "COMPACTION_BENCH_LOCOMO"
CHECKOUT = Path(__file__).resolve().parent.parent


def locomo_dir(data: str | os.PathLike | None = None) -> Path:
    """Where the LoCoMo files are: explicit, then the environment, then beside the checkout."""
    if data:
        return Path(data)
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    for ancestor in CHECKOUT.parents:
        candidate = ancestor / "shared" / "bench" / "locomo"
        if candidate.is_dir():
            return candidate
    return CHECKOUT.parent / "shared" / "bench" / "locomo"


def locomo_files(directory: Path | None = None) -> list[Path]:
    """The sample's conversations (one JSON file each), in name order; empty when it is absent."""
    folder = directory if directory is not None else locomo_dir()
    return sorted(folder.glob("*.json")) if folder.is_dir() else []
