"""Rows of memories and sessions as both engines write and read them.

The columns a memory row is selected with and its mapping to ``Memory`` (and a session's to ``Session``),
the values a new or rewritten memory's row takes, compact JSON, the rules of ``get``/``get_active``, the
decay of one row, and the queue that keeps access counts off the read path: one piece of Python for both
engines, whose SQL (in each engine's ``memories.py``, ``sessions.py``, ``vectors.py``, ``jobs.py``) only
names the columns.
"""

from __future__ import annotations

import json
import math
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, TypeVar

from robotmem.errors import ConflictError, NotFoundError
from robotmem.formats import strict_json
from robotmem.formats.validation import read_timestamp
from robotmem.records import Memory, NewMemory, Session, SessionCounts, Sighting
from robotmem.rules.consolidation import decayed_confidence
from robotmem.store.shared.checks import Connection, Placeholders

T = TypeVar("T")

_MEMORY_COLUMNS = (
    "m.id, m.collection, m.type, m.content, m.human_summary, m.category, m.confidence, m.session_id, "
    "m.perception_type, m.created_at, m.updated_at, m.access_count, m.{context}, m.status, m.superseded_by, "
    "m.merged_ids, m.last_accessed, m.scope_files, m.scope_entities, m.invalidated_reason, m.embedding_model, "
    "m.robot_id, m.uid, m.observed_at"
)
SESSION_SELECT = (
    "SELECT s.id, s.collection, s.context, s.status, s.created_at, s.ended_at, o.outcome_score, s.summary "
    "FROM sessions s LEFT JOIN session_outcomes o ON o.session_id = s.id"
)
# The ``meta`` keys of the store's embedding model, and of the model a re-embedding stages vectors of.
MODEL_KEYS = ("embed_model_id", "embed_dim")
REINDEX_KEYS = ("reindex_model_id", "reindex_dim")


def dumps(value: Any) -> str:
    """Compact JSON text, as both engines store JSON columns of memories."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Yield ``items`` in lists of ``size`` (the last one shorter), so a long input is bound in pieces."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def memory_columns(context: str = "context") -> str:
    """Return the select list (over ``memories m``) of ``row_to_memory``; ``context`` names the column
    holding the context's JSON text."""
    return _MEMORY_COLUMNS.format(context=context)


def row_to_memory(
    row: Sequence[Any], tags: Iterable[str], repair: Callable[[Sequence[Any]], Sequence[Any]] | None = None
) -> Memory:
    """Return the ``Memory`` of a row selected with ``memory_columns``.

    ``repair`` serves an engine whose columns keep a value of any type (SQLite: a BLOB or text in a number
    column, written by another program and reported by ``check``): it returns the row with such values
    read as ``repair`` would rewrite them, so one odd row cannot break a recall or a listing.
    """
    if repair is not None:
        row = repair(row)
    return Memory(
        id=row[0],
        collection=row[1],
        type=row[2],
        content=row[3],
        human_summary=row[4],
        category=row[5],
        confidence=row[6],
        tags=tuple(tags),
        session_id=row[7],
        perception_type=row[8],
        created_at=row[9],
        updated_at=row[10],
        access_count=row[11],
        context=read_context(row[12]),
        status=row[13],
        superseded_by=row[14],
        merged_ids=_json_list(row[15]),
        last_accessed=row[16],
        scope_files=_json_list(row[17]),
        scope_entities=_json_list(row[18]),
        invalidated_reason=row[19],
        has_embedding=row[20] is not None,
        robot_id=row[21],
        uid=row[22],
        observed_at=row[23] or row[9],
    )


def _json_list(text: str | None) -> tuple[Any, ...]:
    """The items of a JSON array column (most rows hold none: read without parsing)."""
    return () if not text or text == "[]" else tuple(json.loads(text))


def row_to_sighting(row: Sequence[Any]) -> Sighting:
    """A ``Sighting`` from ``(id, object id, label, position JSON, frame, observed_at)``: an empty id or
    label counts as none, a position that is not JSON as none."""
    memory_id, object_id, label, position, frame, observed = row
    try:
        point = json.loads(position) if position is not None else None
    except ValueError:
        point = None
    return Sighting(
        int(memory_id),
        object_id or None,
        label or None,
        point if isinstance(point, list) else None,
        frame,
        str(observed),
    )


def object_track(
    conn: Connection,
    mark: Placeholders,
    collection: str,
    object_id: str,
    since: str | None,
    until: str | None,
) -> tuple[int, int] | None:
    """``MemoryTable.object_track`` in either dialect (``mark``): the newest active sighting's id
    (``observed_at``, then id) and the count, None when there is none, both from the index on
    ``(collection, object_id, observed_at)`` that each engine's schema keeps (``object_id`` is the text at
    ``context.object.id``)."""
    window = "".join(
        f" AND observed_at {op} {mark(name)}" for name, op, at in (("since", ">=", since), ("until", "<=", until))
        if at is not None
    )  # fmt: skip
    where = (
        f"FROM memories WHERE collection = {mark('collection')} AND object_id = {mark('object_id')} "
        f"AND status = 'active'{window}"
    )
    newest = f"SELECT id {where} ORDER BY observed_at DESC, id DESC LIMIT 1"
    params = {"collection": collection, "object_id": object_id, "since": since, "until": until}
    found = conn.execute(f"SELECT ({newest}), (SELECT count(*) {where})", params).fetchone()
    return None if found is None or found[0] is None else (int(found[0]), int(found[1]))


def latest_by_object(
    conn: Connection, mark: Placeholders, collection: str, since: str | None, most: int
) -> list[tuple[str, int]] | None:
    """``MemoryTable.latest_by_object`` in either dialect (``mark``): each object id's newest active
    sighting observed at or after ``since``, read from the index on ``(collection, object_id,
    observed_at)`` one seek per id (the ids walked in order, each the least above the last), so the
    cost follows the number of objects, not of sightings; None past ``most`` ids."""
    active = f"m.collection = {mark('collection')} AND m.status = 'active'"
    window = f" AND m.observed_at >= {mark('since')}" if since is not None else ""
    first = (
        f"SELECT m.object_id FROM memories m WHERE {active} AND m.object_id IS NOT NULL ORDER BY m.object_id"
    )
    following = f"SELECT m.object_id FROM memories m WHERE {active} AND m.object_id > o.object_id ORDER BY m.object_id"
    newest = (
        f"SELECT m.id FROM memories m WHERE {active} AND m.object_id = o.object_id{window} "
        "ORDER BY m.observed_at DESC, m.id DESC"
    )
    found = conn.execute(
        f"WITH RECURSIVE o(object_id) AS (SELECT ({first} LIMIT 1) UNION ALL SELECT ({following} LIMIT 1) "
        f"FROM o WHERE o.object_id IS NOT NULL) SELECT o.object_id, ({newest} LIMIT 1) FROM o "
        f"WHERE o.object_id IS NOT NULL LIMIT {mark('most')}",
        {"collection": collection, "since": since, "most": most + 1},
    ).fetchall()
    if len(found) > most:
        return None
    return [(str(object_id), int(memory_id)) for object_id, memory_id in found if memory_id is not None]


def named_objects(pairs: Iterable[tuple[Any, Any]]) -> set[tuple[str | None, str | None]]:
    """The objects of ``(object id, label)`` text pairs, keyed as ``row_to_sighting`` reads them: ``(id,
    None)``, or ``(None, label)`` without an id; a pair with neither names none."""
    keys: set[tuple[str | None, str | None]] = set()
    for named, label in pairs:
        if named:
            keys.add((str(named), None))
        elif label:
            keys.add((None, str(label)))
    return keys


def read_context(text: str | None) -> dict[str, Any]:
    """Return the context object of JSON ``text`` (empty for none).

    Text of another JSON value reads as ``{"value": ...}`` and text that is no JSON as ``{"unreadable":
    text}``: what ``repair`` rewrites such a context to (only SQLite keeps whatever a program writes).
    """
    if not text:
        return {}
    try:
        value = strict_json.loads(text)
    except ValueError:
        return {"unreadable": text}
    return value if isinstance(value, dict) else {"value": value}


def row_to_session(row: Sequence[Any]) -> Session:
    """Return the ``Session`` of a row whose first eight columns are those of ``SESSION_SELECT``."""
    return Session(
        id=row[0],
        collection=row[1],
        context=json.loads(row[2] or "{}"),
        status=row[3],
        created_at=row[4],
        ended_at=row[5],
        outcome_score=row[6],
        summary=json.loads(row[7]) if row[7] else None,
    )


def existing_memory(memory_id: int, memory: Memory | None) -> Memory:
    """Return ``memory`` (the one read for ``memory_id``); raises ``NotFoundError`` when none was."""
    if memory is None:
        raise NotFoundError(f"memory_id {memory_id}: no memory with this id")
    return memory


def active_memory(memory: Memory) -> Memory:
    """Return ``memory`` if it is active; raises ``ConflictError`` naming its status otherwise."""
    if memory.status != "active":
        detail = f" by memory {memory.superseded_by}" if memory.superseded_by else ""
        raise ConflictError(
            f"memory_id {memory.id}: the memory is {memory.status}{detail}; only active memories change"
        )
    return memory


def existing_session(session_id: str, row: Sequence[Any] | None) -> Session:
    """Return the session of ``row`` (read with ``SESSION_SELECT``); raises ``NotFoundError`` for no row."""
    if row is None:
        raise NotFoundError(f"session_id {session_id!r}: no session with this id")
    return row_to_session(row)


def active_session(session: Session) -> Session:
    """Return ``session`` if it is still active; raises ``ConflictError`` otherwise."""
    if session.status != "active":
        raise ConflictError(
            f"session_id {session.id!r}: the session ended at {session.ended_at}; start a new one"
        )
    return session


def new_session(session_id: str, collection: str, context: Mapping[str, Any], now: str) -> dict[str, Any]:
    """Return the parameters of the statement of ``SessionTable.create``: ``id``, ``collection``,
    ``context`` (JSON text), ``now``."""
    return {
        "id": session_id,
        "collection": collection,
        "context": json.dumps(context, ensure_ascii=False),
        "now": now,
    }


def ended_session(
    session_id: str, outcome_score: float | None, summary: Mapping[str, Any], now: str
) -> dict[str, Any]:
    """Return the parameters of the statements of ``SessionTable.end``: ``id``, ``score``, ``count``,
    ``summary`` (JSON text), ``now``."""
    return {
        "id": session_id,
        "score": outcome_score,
        "count": summary.get("memory_count", 0),
        "summary": json.dumps(dict(summary), ensure_ascii=False),
        "now": now,
    }


def new_memory_row(new: NewMemory) -> dict[str, Any]:
    """Return column → value of the ``memories`` row that inserts ``new`` (its id left to the engine)."""
    return {
        "collection": new.collection,
        "type": new.type,
        "content": new.content,
        "human_summary": new.human_summary,
        "content_hash": new.content_hash,
        "category": new.category,
        "confidence": new.confidence,
        "base_confidence": new.confidence,
        "context": dumps(new.context),
        "scope_files": dumps(list(new.scope_files)) if new.scope_files else "[]",
        "scope_entities": dumps(list(new.scope_entities)) if new.scope_entities else "[]",
        "session_id": new.session_id,
        "perception_type": new.perception_type,
        "created_at": new.created_at,
        "updated_at": new.created_at,
        "observed_at": new.observed_at or new.created_at,
        "uid": uuid.uuid4().hex,
        "robot_id": new.robot_id,
    }


def new_tags(ids: Sequence[int], news: Sequence[NewMemory]) -> list[tuple[int, str]]:
    """Return the ``(memory id, tag)`` rows of new memories' automatic tags, each tag of a memory once."""
    return [
        (memory_id, tag) for memory_id, new in zip(ids, news, strict=True) for tag in dict.fromkeys(new.tags)
    ]


def new_payloads(ids: Sequence[int], news: Sequence[NewMemory]) -> list[tuple[int, str | None, str | None]]:
    """Return the ``(memory id, data, metadata)`` payload rows of the perceptions among new memories."""
    return [
        (memory_id, new.data_json, new.metadata_json)
        for memory_id, new in zip(ids, news, strict=True)
        if new.type == "perception"
    ]


def new_content(memory_id: int, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Return the parameters of the statement of ``MemoryTable.replace_content`` (whose keywords are
    ``fields``): ``id``, ``content``, ``hash``, ``category``, ``confidence``, ``context``, ``files``,
    ``entities``, ``now``, ``observed`` (None: keep the stored one), JSON columns as text."""
    return {
        "id": memory_id,
        "content": fields["content"],
        "hash": fields["digest"],
        "category": fields["category"],
        "confidence": fields["confidence"],
        "context": dumps(fields["context"]),
        "files": dumps(list(fields["scope_files"])),
        "entities": dumps(list(fields["scope_entities"])),
        "now": fields["now"],
        "observed": fields.get("observed_at"),
    }


def merged_with(stored: str | None, merged: Sequence[int]) -> str:
    """Return the ``merged_ids`` text of a memory that held ``stored`` and now also merges ``merged``."""
    return dumps(list(dict.fromkeys([*json.loads(stored or "[]"), *merged])))


def decayed(base: Any, since: Any, now: Any, rate: Any) -> float | None:
    """Return the confidence ``base`` decays to from ``since`` to ``now`` at ``rate`` a day, or None (the
    row keeps its confidence) when a stored value is unusable.

    One odd row — a time that is not ISO 8601, a confidence that is not a finite number — must not fail
    the decay of every other memory; ``robotmem check`` reports such rows.
    """
    start, end = read_timestamp(since), read_timestamp(now)
    if start is None or end is None:
        return None
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base):
        return None
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate):
        return None
    return decayed_confidence(float(base), (end - start).total_seconds() / 86400.0, float(rate))


def read_payload(data: str | None, metadata: str | None) -> tuple[Any, Any]:
    """Return the parsed ``(data, metadata)`` of a perception's payload row."""
    return (
        strict_json.loads(data) if data is not None else None,
        strict_json.loads(metadata) if metadata is not None else None,
    )


def count_session(rows: Iterable[tuple[str, str, int]]) -> SessionCounts:
    """Return the ``SessionCounts`` of ``(type, category, count)`` rows of a session's memories."""
    by_type: dict[str, int] = {}
    by_category: dict[str, int] = {}
    total = 0
    for memory_type, category, count in rows:
        total += int(count)
        by_type[memory_type] = by_type.get(memory_type, 0) + int(count)
        by_category[category] = by_category.get(category, 0) + int(count)
    return SessionCounts(memory_count=total, by_type=by_type, by_category=by_category)


def recorded_model(meta: Mapping[str, Any], keys: tuple[str, str]) -> tuple[str, int] | None:
    """Return the ``(model_id, dim)`` that ``meta`` (key → value rows) records under ``keys`` (``MODEL_KEYS``
    or ``REINDEX_KEYS``), or None when it records none."""
    model_key, dim_key = keys
    if model_key not in meta:
        return None
    return str(meta[model_key]), int(meta.get(dim_key, 0))


def model_meta(keys: tuple[str, str], model_id: str, dim: int) -> dict[str, str]:
    """Return the ``meta`` rows that record ``(model_id, dim)`` under ``keys``."""
    model_key, dim_key = keys
    return {model_key: model_id, dim_key: str(dim)}


class AccessQueue:
    """Access counts kept off the read path: ``record`` queues one access per id, and a background thread
    hands what is queued to ``write`` every ``interval_s``, so a recall never waits for a write.

    ``write`` reports its own failures (an access count is not worth failing anything for).
    """

    def __init__(self, write: Callable[[dict[int, int]], None], interval_s: float = 0.5) -> None:
        self._write = write
        self._interval_s = interval_s
        self._pending: dict[int, int] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    def record(self, ids: Iterable[int]) -> None:
        """Queue one access for each id."""
        with self._lock:
            for memory_id in ids:
                self._pending[memory_id] = self._pending.get(memory_id, 0) + 1
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._loop, name="robotmem-access", daemon=True)
                self._thread.start()

    def flush(self, write: Callable[[dict[int, int]], None] | None = None) -> None:
        """Hand what is queued to ``write`` (by default the queue's own) now, instead of at the next tick."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if pending:
            (write or self._write)(pending)

    def close(self) -> None:
        """Stop the thread and write what is still queued."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None:
            self._wake.set()
            thread.join(timeout=10)
        self.flush()

    def _loop(self) -> None:
        while True:
            self._wake.wait(self._interval_s)
            self._wake.clear()
            self.flush()
            if self._closed:
                return
