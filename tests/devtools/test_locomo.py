"""Finding the LoCoMo sample, and the tests that need it skipping with the reason when it is absent."""

import pytest

from devtools import locomo
from tests.locomo import locomo_required


def test_the_variable_names_the_folder_and_its_files_are_read_in_order(tmp_path, monkeypatch):
    for name in ("conv-2.json", "conv-1.json", "notes.txt"):
        (tmp_path / name).write_text("{}")
    monkeypatch.setenv(locomo.ENV_VAR, str(tmp_path))

    assert locomo.locomo_dir() == tmp_path
    assert locomo.locomo_files() == [tmp_path / "conv-1.json", tmp_path / "conv-2.json"]
    assert locomo_required() == [tmp_path / "conv-1.json", tmp_path / "conv-2.json"]


def test_an_explicit_folder_comes_before_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(locomo.ENV_VAR, str(tmp_path / "elsewhere"))

    assert locomo.locomo_dir(tmp_path) == tmp_path


def test_without_the_sample_a_test_that_needs_it_skips_saying_where_it_looked(tmp_path, monkeypatch):
    missing = tmp_path / "no-locomo"
    monkeypatch.setenv(locomo.ENV_VAR, str(missing))

    assert locomo.locomo_files() == []
    with pytest.raises(pytest.skip.Exception) as skipped:
        locomo_required()
    assert (
        str(skipped.value)
        == f"the LoCoMo sample is not at {missing} (set COMPACTION_BENCH_LOCOMO to the folder that holds it)"
    )
