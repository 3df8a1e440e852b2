import gc

import pytest

from chatcore import bulk
from chatcore.collector import collector_paused
from tests.chatcore.factories import ChannelFactory


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


def test_a_bulk_import_builds_its_rows_with_the_collector_paused_and_turns_it_back_on(db, monkeypatch):
    seen: list[bool] = []

    def counted(text: str) -> int:
        seen.append(gc.isenabled())
        return len(text)

    monkeypatch.setattr(bulk, "count_tokens", counted)
    channel = ChannelFactory()
    items = [bulk.NewMessage(role="user", content=f"line {i}", parent=i - 1 if i else None) for i in range(3)]
    built = bulk.messages_bulk_import(channel=channel, user=channel.owner, items=items)
    assert seen == [False, False, False]
    assert gc.isenabled()
    assert [m.tokens for m in built] == [len(f"line {i}") + bulk.conf.MESSAGE_OVERHEAD_TOKENS for i in range(3)]
