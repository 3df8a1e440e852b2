"""The LoCoMo sample for the tests that measure on it. It lies beside the checkout, never in it
(devtools/locomo.py says where it is looked for), so a fresh clone has none: such a test skips,
naming the folder and the variable that points elsewhere, and the project's own fixtures carry
what must always run."""

from pathlib import Path

import pytest

from devtools.locomo import ENV_VAR, locomo_dir, locomo_files


def locomo_required() -> list[Path]:
    """The sample's files, or the calling test is skipped with the reason."""
    files = locomo_files()
    if not files:
        pytest.skip(f"the LoCoMo sample is not at {locomo_dir()} (set {ENV_VAR} to the folder that holds it)")
    return files
