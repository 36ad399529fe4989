"""What recall's scoring reads from memories' contexts: the episode a context value groups a memory in, and
the day it happened.

Episodes are robotmem sessions. A log stored memory by memory without sessions may still say which
episode each memory belongs to in its context (a conversation's ``session`` number, a run's ``episode``
id): with ``episode_field`` set to that path, the memories of the scope that carry no session and share
the value there form an episode, in learn order (``created_at``, then id), for the same episode structure
(``neighbour_share``, ``episode_share``, ``direction_share``).

Both reads go through the store contract as it is (records by id, and the candidates of a narrower
scope), so every engine answers them; they run only when their setting is on.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from robotmem.query.filters import All, parse_filter
from robotmem.query.ranking import group_in_order
from robotmem.records import Memory
from robotmem.store.protocol import RecallScope, StoreTx
from robotmem.text.dates import written_date

# Values asked for in one narrower scope each: far below max_filter_bytes even for long strings.
_MAX_VALUES = 64
_SCALARS = (str, int, float)


@dataclass(frozen=True, slots=True)
class ContextReader:
    """The recall's transaction and scope, for the steps that read records."""

    tx: StoreTx
    scope: RecallScope


def value_at(context: dict[str, Any], path: Sequence[str]) -> Any:
    """The value at the dot-path ``path`` of ``context`` (None when absent)."""
    value: Any = context
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def context_episodes(reader: ContextReader, field: str, ids: Sequence[int]) -> list[list[int]]:
    """Return the episodes that the value at context ``field`` makes of the memories of ``ids`` that have no
    session: for each value one of them carries, every memory of the scope without a session carrying it,
    in ``created_at`` order (ties by id); episodes in order of their smallest id.

    A value that is not a string or a number (booleans, lists, objects) groups nothing.
    """
    if not ids:
        return []
    path = field.split(".")
    loose = [m for m in reader.tx.memories.fetch(list(ids)).values() if m.session_id is None]
    values = list(dict.fromkeys(v for m in loose if _groups(v := value_at(m.context, path))))[:_MAX_VALUES]
    # One narrower scope per value: its members come in time order without reading their records.
    return group_in_order(
        [(m, index) for index, value in enumerate(values) for m in _carriers(reader, field, value)]
    )


def _carriers(reader: ContextReader, field: str, value: Any) -> list[int]:
    """The memories of the scope without a session carrying ``value`` at context ``field``, in time order."""
    condition = parse_filter({f"context.{field}": value, "session_id": {"$exists": False}})
    scope = reader.scope
    narrower = RecallScope(
        collection=scope.collection,
        min_confidence=scope.min_confidence,
        session_id=scope.session_id,
        exclude_session=scope.exclude_session,
        filter=condition if scope.filter is None or condition is None else All((scope.filter, condition)),
    )
    return reader.tx.candidates(narrower).listed(None, order="oldest")


def _groups(value: Any) -> bool:
    return isinstance(value, _SCALARS) and not isinstance(value, bool)


def memory_dates(reader: ContextReader, ids: Sequence[int], field: str = "date") -> dict[int, dt.date]:
    """Return id → the day each memory of ``ids`` happened: the date written in its context's ``field``
    (``text.dates.written_date``), else the day of its ``created_at``. Memories without either are left
    out."""
    found: dict[int, dt.date] = {}
    for memory_id, memory in reader.tx.memories.fetch(list(ids)).items():
        day = _day_of(memory, field.split("."))
        if day is not None:
            found[memory_id] = day
    return found


def _day_of(memory: Memory, path: Sequence[str]) -> dt.date | None:
    value = value_at(memory.context, path)
    if isinstance(value, str):
        day = written_date(value)
        if day is not None:
            return day
    return written_date(memory.created_at[:10])
