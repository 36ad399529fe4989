"""``store/shared/rows.py``: what both engines read and write the same way, checked without an engine."""

from __future__ import annotations

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
