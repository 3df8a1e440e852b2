import gc

import pytest

from compaction.collector import collector_paused


def test_the_collector_is_off_in_the_block_and_on_after_it():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_pauses_keep_it_off_until_the_outer_one_ends():
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_it_comes_back_on_when_the_block_raises():
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
