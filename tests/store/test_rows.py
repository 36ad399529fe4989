"""``store/shared/rows.py``: what both engines read and write the same way, checked without an engine."""

from __future__ import annotations

import threading
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from robotmem.store.shared import rows


def test_a_context_that_is_not_an_object_reads_as_repair_rewrites_it() -> None:
    assert rows.read_context(None) == {} and rows.read_context("") == {}
    assert rows.read_context('{"task": {"success": true}}') == {"task": {"success": True}}
    assert rows.read_context("[1]") == {"value": [1]}
    assert rows.read_context("grip was fine") == {"unreadable": "grip was fine"}


@given(st.lists(st.integers()), st.integers(1, 7))
def test_batches_keep_every_item_in_order_none_longer_than_asked(items: list[int], size: int) -> None:
    pieces = list(rows.batches(iter(items), size))
    assert [item for piece in pieces for item in piece] == items
    assert all(0 < len(piece) <= size for piece in pieces)
    assert all(len(piece) == size for piece in pieces[:-1])


def test_merged_ids_keep_their_order_and_each_id_once() -> None:
    assert rows.merged_with(None, [4, 2]) == "[4,2]"
    assert rows.merged_with("[3,4]", [4, 5]) == "[3,4,5]"


def test_decay_leaves_an_unusable_value_to_its_row() -> None:
    now = "2026-01-11T00:00:00.000000+00:00"
    decayed = rows.decayed(0.8, "2026-01-01T00:00:00.000000+00:00", now, 0.01)
    assert decayed is not None and decayed < 0.8
    assert rows.decayed(0.8, "garbage", now, 0.01) is None
    assert rows.decayed(float("nan"), "2026-01-01", now, 0.01) is None
    assert rows.decayed(True, "2026-01-01", now, 0.01) is None


def test_access_counts_from_many_threads_are_written_once_each() -> None:
    written: Counter[int] = Counter()
    guard = threading.Lock()

    def write(counts: dict[int, int]) -> None:
        with guard:
            written.update(counts)

    queue = rows.AccessQueue(write, interval_s=0.01)

    def use() -> None:
        for _ in range(200):
            queue.record([1, 2, 2])

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    queue.close()
    assert written == {1: 1600, 2: 3200}


def test_a_flush_hands_what_is_queued_to_the_writer_it_is_given() -> None:
    background: list[dict[int, int]] = []
    settled: list[dict[int, int]] = []
    queue = rows.AccessQueue(background.append, interval_s=60)
    queue.record([7, 7, 9])
    queue.flush(settled.append)
    queue.flush(settled.append)  # nothing left: nothing handed over
    queue.close()
    assert settled == [{7: 2, 9: 1}] and background == []
