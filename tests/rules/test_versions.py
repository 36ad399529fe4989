"""The merge rule: one total order over versions, so any exchange order picks the same winner."""

from __future__ import annotations

import itertools
from functools import reduce
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from robotmem.rules.versions import incoming_wins, memory_rank, session_rank

versions = st.fixed_dictionaries(
    {
        "memory": st.fixed_dictionaries(
            {
                "uid": st.just("0" * 32),
                "status": st.sampled_from(["active", "superseded", "invalidated"]),
                "updated_at": st.sampled_from(
                    ["2026-01-01T00:00:00.000000+00:00", "2026-01-01T00:00:01.000000+00:00"]
                ),
                "content": st.sampled_from(["grip 10N", "grip 12N"]),
                "access_count": st.integers(0, 3),
                "confidence": st.sampled_from([0.5, 0.8]),
            }
        ),
        "tags": st.lists(
            st.fixed_dictionaries({"tag": st.sampled_from(["a", "b"]), "source": st.just("auto")})
        ),
        "perception": st.none(),
    }
)


def winner(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return b if incoming_wins(memory_rank(b), memory_rank(a)) else a


@given(st.lists(versions, min_size=1, max_size=5))
def test_every_exchange_order_keeps_the_same_version(found: list[dict[str, Any]]) -> None:
    results = {str(memory_rank(reduce(winner, order))) for order in itertools.permutations(found)}
    assert len(results) == 1


@given(versions, versions)
def test_a_forget_beats_any_edit_and_local_bookkeeping_is_no_change(
    a: dict[str, Any], b: dict[str, Any]
) -> None:
    forgotten = {**a, "memory": {**a["memory"], "status": "invalidated", "updated_at": "2000-01-01"}}
    if b["memory"]["status"] != "invalidated":
        assert incoming_wins(memory_rank(forgotten), memory_rank(b)) is True
    recounted = {**a, "memory": {**a["memory"], "access_count": 99, "confidence": 0.1}}
    assert incoming_wins(memory_rank(recounted), memory_rank(a)) is None


def test_an_ended_session_beats_the_active_one() -> None:
    active = {"id": "s", "status": "active", "created_at": "2026-01-02", "ended_at": None}
    ended = {"id": "s", "status": "ended", "created_at": "2026-01-02", "ended_at": "2026-01-01"}
    assert incoming_wins(session_rank(ended), session_rank(active)) is True
    assert incoming_wins(session_rank(active), session_rank(ended)) is False
    assert incoming_wins(session_rank(active), session_rank(dict(active))) is None
