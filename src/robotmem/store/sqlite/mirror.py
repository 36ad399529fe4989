"""An in-process mirror of what recall reads, kept in step with the file through ``memory_changes``.

Recall used to ask SQLite, per query, for the rows that pass the filters (``json_extract`` on every
candidate) and for BM25 over every row sharing a query word. Both grow with the database: about
90 ms per query at 100k memories. The mirror keeps instead, per memory id,

* the record columns every recall filters on (active, collection, confidence, session), the
  real-world flag of the ranking, the creation time (episode order) and the event time (time windows),
  as numpy arrays;
* the pass/fail mask of every filter condition used recently, computed once by the same SQL the
  filter compiles to (so the semantics are SQLite's, not a re-implementation) and then only
  re-evaluated for memories that change;
* the BM25 postings of the FTS index (``robotmem.query.bm25``), with the terms FTS5 itself produced;
* once an object question asked for them, the object id and label each memory names (``objects_of``),
  read by the SQL of ``memories.OBJECT_COLUMNS`` and kept in step like the columns.

Every write to ``memories`` or ``memory_tags`` records the memory in ``memory_changes`` (triggers of
schema version 3), so a sync reads only what changed since the last one — from this process or any
other. ``fts.rebuild`` bumps ``meta.fts_epoch``, which makes the next sync reload everything.

What keeps the mirror right — check each when a change touches storage or filters
(``tests/store/sqlite/test_mirror_invariants.py`` checks each):

1. Trigger columns: every column of ``memories`` a recall reads (``_ROWS`` here, ``filters.RECORD_FIELDS``,
   ``context``) is in ``migrations._TRACKED``, so an UPDATE of it is logged. Adding a column that recall
   reads means a migration that recreates the update trigger with it.
2. Volatile fields: a filterable field written without a logged change (``access_count``, bumped by every
   recall) is in ``filters.VOLATILE_FIELDS``; conditions on it are evaluated afresh each recall, never cached
   (as are time windows on ``observed_at``, ``filters.UNCACHED_FIELDS``: a window relative to now is new
   every recall).
3. Filterable record fields: every key of ``filters.RECORD_FIELDS`` is either tracked (1), volatile (2),
   ``id`` (never changes) or ``tags`` (``memory_tags`` has insert and delete triggers).
4. Mirrored columns: every value ``_ROWS`` selects after ``id`` has its array in ``_COLUMNS`` (name, type
   and the value of a memory without a row), which ``_allocate`` creates, ``_reserve`` grows and ``_apply``
   resets for changed memories before reading their rows again. The object names (``_Names``) likewise:
   ``_reserve`` grows them, ``_apply`` clears and re-reads the changed memories', ``_load`` drops them.
   Each session's members (``_members``): ``_set_rows`` adds a memory to its session, ``_apply`` takes
   the changed memories out of theirs first, ``_load`` empties them.
5. Every FTS write is logged: rows of ``memories_fts`` change only through ``store/sqlite/text_index.py``, which
   records each memory it touches in ``memory_changes`` (or bumps ``fts_epoch`` for a rebuild).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import numpy.typing as npt

from robotmem.query.bm25 import FloatArray, LexicalIndex
from robotmem.query.filters import UNCACHED_FIELDS, All, Any_, Condition, Node, Not
from robotmem.query.regions import Region, in_frame
from robotmem.query.spatial import MAX_DIMENSIONS, coordinates_at, distances
from robotmem.store.shared.terms import Stemmer
from robotmem.store.sqlite import search
from robotmem.store.sqlite.filters import SqlBuilder, to_sql
from robotmem.store.sqlite.memories import OBJECT_COLUMNS

BoolArray = npt.NDArray[np.bool_]
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_BATCH = 4096  # FTS bodies per stemmer round trip

_ROWS = (
    "SELECT id, collection, status = 'active', confidence, session_id, "
    "json_extract(context, '$.env.sim_or_real') = 'real', julianday(created_at), observed_at FROM memories"
)
# The array of each value ``_ROWS`` selects after ``id``, in order: attribute, type, value of no memory.
_COLUMNS: tuple[tuple[str, type[np.generic], Any], ...] = (
    ("_collection", np.int32, -1),  # code in ``_collections``
    ("_active", np.bool_, False),
    ("_confidence", np.float64, 0.0),
    ("_session", np.int32, -1),  # code in ``_sessions``
    ("_real", np.bool_, False),
    ("_created", np.float64, 0.0),  # julianday(created_at)
    # observed_at in epoch microseconds (exact in an int64 for every year 1 to 9999; a float64 would round
    # them beyond 2255); _UNREADABLE: a text not in the stored form (windows then go to SQL, which compares
    # the text); _NO_TIME: no memory (the scope's mask leaves such ids out).
    ("_observed", np.int64, np.iinfo(np.int64).min),
)
_NO_TIME = int(np.iinfo(np.int64).min)
_UNREADABLE = _NO_TIME + 1
_MAX_CACHED_CONDITIONS = 32
_MAX_CACHED_POINTS = 8
_MAX_CACHED_VALUES = 16
_EXACT_INT = 2**53  # integers up to this size are exact as float64
_NULL, _NUMBER, _TEXT = 0, 1, 2
# Operators a value column answers exactly like SQLite (see ``_from_values``); others use SQL.
_VALUE_OPERATORS = frozenset({"$eq", "$ne", "$lt", "$lte", "$gt", "$gte", "$between", "$in", "$nin"})
# Operators of a time window the ``_observed`` column answers (``_from_observed``).
_WINDOW_OPERATORS = frozenset({"$lt", "$lte", "$gt", "$gte"})


def _stored_micros(value: Any) -> int | None:
    """Return the epoch microseconds of a time in the stored form (``2026-01-01T12:00:00.000000+00:00``),
    None for any other value. Stored-form texts order as their times do, so comparing these numbers
    gives what SQLite's text comparison gives."""
    if not isinstance(value, str) or len(value) != 32 or not value.endswith("+00:00") or value[10] != "T":
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.isoformat(timespec="microseconds") != value:
        return None
    return (moment - _EPOCH) // timedelta(microseconds=1)


def _as_sqlite_orders(value: Any) -> float:
    """Return a stored number as a float; text or a BLOB (another program wrote it; ``robotmem check``
    reports it) as infinity, since SQLite orders text and BLOBs after every number, so the mirror
    compares it as ``m.confidence >= :min`` does."""
    if isinstance(value, (int, float)):
        return float(value)
    return math.inf


class _Values:
    """The value a condition at one context path compares, per memory id: kind, number, text code."""

    def __init__(self, size: int) -> None:
        self.kind: npt.NDArray[np.int8] = np.zeros(size, dtype=np.int8)
        self.number: FloatArray = np.zeros(size, dtype=np.float64)
        self.text: npt.NDArray[np.int32] = np.full(size, -1, dtype=np.int32)  # code of the text
        self.codes: dict[str, int] = {}
        self.inexact = False  # an integer too large for float64 was seen: use SQL for this path

    def grow(self, size: int) -> None:
        extra = size - len(self.kind)
        self.kind = np.concatenate([self.kind, np.zeros(extra, dtype=np.int8)])
        self.number = np.concatenate([self.number, np.zeros(extra)])
        self.text = np.concatenate([self.text, np.full(extra, -1, dtype=np.int32)])

    def set(self, memory_id: int, value: Any) -> None:
        if isinstance(value, (int, float)):
            if isinstance(value, int) and abs(value) > _EXACT_INT:
                self.inexact = True
            self.kind[memory_id], self.number[memory_id] = _NUMBER, float(value)
        elif isinstance(value, str):
            code = self.codes.setdefault(value, len(self.codes))
            self.kind[memory_id], self.text[memory_id] = _TEXT, code
        else:
            self.kind[memory_id] = _NULL


class _Names:
    """The object id and label each memory names (``OBJECT_COLUMNS``), as codes of their texts by id; -1:
    none (no text there, an empty one, or no memory)."""

    def __init__(self, size: int) -> None:
        self.object_id: npt.NDArray[np.int32] = np.full(size, -1, dtype=np.int32)
        self.label: npt.NDArray[np.int32] = np.full(size, -1, dtype=np.int32)
        self.texts: list[str] = []
        self._codes: dict[str, int] = {}

    def grow(self, size: int) -> None:
        extra = np.full(size - len(self.label), -1, dtype=np.int32)
        self.object_id = np.concatenate([self.object_id, extra])
        self.label = np.concatenate([self.label, extra])

    def clear(self, ids: Sequence[int]) -> None:
        known = [m for m in ids if m < len(self.label)]
        self.object_id[known] = -1
        self.label[known] = -1

    def read(self, rows: Iterable[tuple[int, Any, Any]]) -> None:
        for memory_id, object_id, label in rows:
            if memory_id < len(self.label):
                self.object_id[memory_id] = self._code(object_id)
                self.label[memory_id] = self._code(label)

    def _code(self, text: Any) -> int:
        if not text:
            return -1
        code = self._codes.get(text)
        if code is None:
            code = self._codes[text] = len(self.texts)
            self.texts.append(text)
        return code

    def text(self, code: int) -> str | None:
        return None if code < 0 else self.texts[code]


class RecallMirror:
    """Record columns, cached condition masks and BM25 postings of one database, by memory id."""

    _collection: npt.NDArray[np.int32]
    _active: BoolArray
    _confidence: FloatArray
    _session: npt.NDArray[np.int32]
    _real: BoolArray
    _created: FloatArray
    _observed: npt.NDArray[np.int64]

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._stemmer = Stemmer()
        self.lexical = LexicalIndex()
        self._seen = -1
        self._epoch: str | None = None
        self._collections: dict[str, int] = {}
        self._sessions: dict[str, int] = {}
        self._members: dict[int, set[int]] = {}  # session code → the ids of its memories (any status)
        # Cached condition masks: key → (sql, params, mask by memory id).
        self._conditions: OrderedDict[tuple[Any, ...], tuple[str, dict[str, Any], BoolArray]] = OrderedDict()
        # Cached compared values by context path (numeric and text conditions answered without SQL).
        self._values: OrderedDict[tuple[str, ...], _Values] = OrderedDict()
        # Cached coordinates by context path: (dimensions by id, 0 = none, negative = under "value"; points by id).
        self._points: OrderedDict[tuple[str, ...], tuple[npt.NDArray[np.int8], FloatArray]] = OrderedDict()
        # The objects memories name, read on the first object question (``objects_of``).
        self._names: _Names | None = None
        self._allocate(0)

    # ---- keeping in step ---------------------------------------------------------------------

    def _allocate(self, size: int) -> None:
        for name, kind, empty in _COLUMNS:
            setattr(self, name, np.full(size, empty, dtype=kind))

    @property
    def capacity(self) -> int:
        """One more than the largest memory id the arrays can hold."""
        return len(self._active)

    def _reserve(self, memory_id: int) -> None:
        size = self.capacity
        if memory_id < size:
            return
        grown = max(1024, memory_id + 1, 2 * size)

        def pad(array: npt.NDArray[Any], fill: Any) -> npt.NDArray[Any]:
            return np.concatenate([array, np.full(grown - size, fill, dtype=array.dtype)])

        for name, _, empty in _COLUMNS:
            setattr(self, name, pad(getattr(self, name), empty))
        for key, (sql, params, mask) in self._conditions.items():
            self._conditions[key] = (sql, params, pad(mask, False))
        for values in self._values.values():
            values.grow(grown)
        for path, (dims, points) in self._points.items():
            extra = np.full((grown - size, points.shape[1]), np.nan)
            self._points[path] = (pad(dims, 0), np.concatenate([points, extra]))
        if self._names is not None:
            self._names.grow(grown)

    def sync(self, conn: sqlite3.Connection) -> None:
        """Apply every change committed since the last sync (call inside the reading transaction)."""
        with self._lock:
            epoch_row = conn.execute("SELECT value FROM meta WHERE key = 'fts_epoch'").fetchone()
            epoch = str(epoch_row[0]) if epoch_row else "0"
            head = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memory_changes").fetchone()[0])
            if self._seen < 0 or epoch != self._epoch:
                self._load(conn)
            elif head <= self._seen:
                return  # nothing new, or this snapshot is older than one another thread applied
            else:
                changed = [
                    int(r[0])
                    for r in conn.execute(
                        "SELECT memory_id FROM memory_changes WHERE seq > :seen", {"seen": self._seen}
                    )
                ]
                if len(changed) > max(2048, self.lexical.documents // 8):
                    self._load(conn)
                else:
                    self._apply(conn, changed)
            self._seen, self._epoch = head, epoch

    def _set_rows(self, rows: Iterable[Sequence[Any]]) -> None:
        for memory_id, collection, active, confidence, session, real, created, observed in rows:
            self._reserve(memory_id)
            code = self._collections.setdefault(collection, len(self._collections))
            self._collection[memory_id] = code
            self._active[memory_id] = bool(active)
            self._confidence[memory_id] = _as_sqlite_orders(confidence)
            if session is None:
                self._session[memory_id] = -1
            else:
                code = self._sessions.setdefault(session, len(self._sessions))
                self._session[memory_id] = code
                self._members.setdefault(code, set()).add(memory_id)
            self._real[memory_id] = bool(real)
            self._created[memory_id] = float(created) if created is not None else 0.0
            micros = _stored_micros(observed)
            self._observed[memory_id] = _UNREADABLE if micros is None else micros

    def _load(self, conn: sqlite3.Connection) -> None:
        self._allocate(0)
        self._members.clear()
        self._conditions.clear()
        self._values.clear()
        self._points.clear()
        self._names = None
        self._reserve(int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM memories").fetchone()[0]))
        self._set_rows(conn.execute(_ROWS))  # streamed: no list of every row
        cursor = conn.execute("SELECT rowid, body FROM memories_fts")
        batches = iter(lambda: cursor.fetchmany(_BATCH), [])  # streamed: no list of every body
        self.lexical.build_ids(lambda index: self._term_ids(index, batches))

    def _term_ids(
        self, index: LexicalIndex, batches: Iterable[Sequence[tuple[int, str]]]
    ) -> Iterable[tuple[int, list[int]]]:
        """Yield ``(id, term ids)`` for batches of FTS bodies, asking the stemmer once per batch of new tokens."""
        single: dict[str, int] = {}
        odd: set[str] = set()  # tokens FTS5 makes into no term or several
        for rows in batches:
            batch = [(int(doc), (body or "").split()) for doc, body in rows]
            terms = self._stemmer.terms({t for _, tokens in batch for t in tokens if t not in single})
            odd.update(t for t, found in terms.items() if len(found) != 1)
            single.update((t, index.term_id(found[0])) for t, found in terms.items() if len(found) == 1)
            for doc, tokens in batch:
                if odd.isdisjoint(tokens):
                    yield doc, list(map(single.__getitem__, tokens))
                else:
                    yield doc, [index.term_id(term) for t in tokens for term in self._stemmer.terms([t])[t]]

    def _apply(self, conn: sqlite3.Connection, changed: Sequence[int]) -> None:
        known = [memory_id for memory_id in changed if memory_id < self.capacity]
        for memory_id in known:
            if (code := int(self._session[memory_id])) >= 0:
                self._members[code].discard(memory_id)
        for name, _, empty in _COLUMNS:  # a memory whose row is gone keeps none of its old values
            getattr(self, name)[known] = empty
        bodies: list[tuple[int, str]] = []
        for marks, keyed in search.id_chunks(changed):
            self._set_rows(conn.execute(f"{_ROWS} WHERE id IN ({marks})", keyed).fetchall())
            bodies += conn.execute(
                f"SELECT rowid, body FROM memories_fts WHERE rowid IN ({marks})", keyed
            ).fetchall()
        for memory_id in changed:
            self.lexical.remove(memory_id)
        for doc, term_ids in self._term_ids(self.lexical, [bodies]):
            self.lexical.add_ids(doc, term_ids)
        if self.lexical.needs_merge():
            self.lexical.merge()
        for sql, params, mask in self._conditions.values():
            passed = search.passing(conn, changed, sql, params)
            for memory_id in changed:
                if memory_id < len(mask):
                    mask[memory_id] = memory_id in passed
        for path, values in self._values.items():
            for memory_id in changed:
                if memory_id < len(values.kind):
                    values.set(memory_id, None)
            self._read_values(conn, path, values, changed)
        for path, (dims, points) in self._points.items():
            dims[[m for m in changed if m < len(dims)]] = 0
            self._points[path] = self._read_points(conn, path, dims, points, changed)
        if self._names is not None:
            self._names.clear(changed)
            for marks, keyed in search.id_chunks(changed):
                self._names.read(conn.execute(f"{OBJECT_COLUMNS} WHERE m.id IN ({marks})", keyed))

    # ---- reading -------------------------------------------------------------------------------

    @staticmethod
    def _read_values(
        conn: sqlite3.Connection, path: tuple[str, ...], values: _Values, ids: Sequence[int] | None
    ) -> None:
        builder = SqlBuilder("v")
        value = builder.context_value(path)
        sql = f"SELECT m.id, {value} FROM memories m"
        batches: Iterable[tuple[str, dict[str, Any]]] = [("", {})] if ids is None else search.id_chunks(ids)
        for marks, keyed in batches:
            query = sql if not marks else f"{sql} WHERE m.id IN ({marks})"
            for memory_id, found in conn.execute(query, {**builder.params, **keyed}):
                if memory_id < len(values.kind):
                    values.set(memory_id, found)

    def _from_values(self, conn: sqlite3.Connection, node: Condition) -> BoolArray | None:
        """Answer a comparison on a context path from the path's cached values, or None to use SQL.

        SQLite's rules, reproduced: NULL fails every comparison but ``IS``/``IS NOT`` (``$ne`` and
        ``$nin`` pass it); numbers compare numerically whatever their type; any number is less than
        any text; texts compare for equality byte by byte (``str`` equality on UTF-8 text).
        """
        op, operand = node.operator, node.operand
        if node.path[0] != "context" or op not in _VALUE_OPERATORS:
            return None
        listed = list(operand) if op in ("$in", "$nin", "$between") else [operand]
        if op == "$nin" and None in listed:
            return None  # NOT IN with a NULL in the list is never true: leave that to SQL
        if op in ("$lt", "$lte", "$gt", "$gte", "$between") and not all(_is_number(v) for v in listed):
            return None  # text order (collation) stays with SQL
        if not all(v is None or _is_number(v) or isinstance(v, str) for v in listed):
            return None
        if any(_is_number(v) and isinstance(v, int) and abs(v) > _EXACT_INT for v in listed):
            return None
        path = node.path[1:]
        values = self._values.get(path)
        if values is None:
            values = self._values[path] = _Values(self.capacity)
            self._read_values(conn, path, values, None)
            if len(self._values) > _MAX_CACHED_VALUES:
                self._values.popitem(last=False)
        self._values.move_to_end(path)
        if values.inexact:
            return None
        kind, number, text = values.kind, values.number, values.text
        is_number: BoolArray = kind == _NUMBER
        is_text: BoolArray = kind == _TEXT

        def equal(v: Any) -> BoolArray:
            found: BoolArray
            if v is None:
                found = kind == _NULL  # only from $eq/$ne null, which SQL tests as IS NULL, NOT (.. IS NULL)
            elif isinstance(v, str):
                code = values.codes.get(v)
                found = np.zeros(len(kind), dtype=np.bool_) if code is None else is_text & (text == code)
            else:
                found = is_number & (number == float(v))
            return found

        if op == "$eq":
            return equal(operand)
        if op == "$ne":
            return ~equal(operand)
        if op == "$in":
            out = np.zeros(len(kind), dtype=np.bool_)
            for v in listed:
                if v is not None:
                    out |= equal(v)
            return out
        if op == "$nin":
            hit = np.zeros(len(kind), dtype=np.bool_)
            for v in listed:
                hit |= equal(v)
            return equal(None) | ~hit
        if op == "$between":
            low, high = (float(v) for v in listed)
            return is_number & (number >= low) & (number <= high)
        bound = float(operand)
        if op == "$lt":
            return is_number & (number < bound)
        if op == "$lte":
            return is_number & (number <= bound)
        if op == "$gt":
            return (is_number & (number > bound)) | is_text
        return (is_number & (number >= bound)) | is_text

    def _from_observed(self, node: Condition) -> BoolArray | None:
        """Answer a time-window comparison on ``observed_at`` from the ``_observed`` column, or None to use
        SQL (another operator, an operand not in the stored form, or a stored value not in it)."""
        if node.path != ("observed_at",) or node.operator not in _WINDOW_OPERATORS:
            return None
        bound = _stored_micros(node.operand)
        observed = self._observed
        if bound is None or (observed == _UNREADABLE).any():
            return None
        if node.operator == "$lt":
            return observed < bound
        if node.operator == "$lte":
            return observed <= bound
        if node.operator == "$gt":
            return observed > bound
        return observed >= bound

    def _condition(self, conn: sqlite3.Connection, node: Condition) -> BoolArray:
        answered = self._from_observed(node)
        if answered is not None:
            return answered
        answered = self._from_values(conn, node)
        if answered is not None:
            return answered
        sql, params = to_sql(node, prefix="c")
        key = (sql, tuple(sorted((name, type(v).__name__, v) for name, v in params.items())))
        cached = self._conditions.get(key)
        if cached is not None:
            self._conditions.move_to_end(key)
            return cached[2]
        mask = np.zeros(self.capacity, dtype=np.bool_)
        every = conn.execute(f"SELECT m.id FROM memories m WHERE {sql}", params)
        passed = [int(r[0]) for r in every if r[0] < self.capacity]
        mask[passed] = True
        if node.path[0] not in UNCACHED_FIELDS:
            self._conditions[key] = (sql, params, mask)
            if len(self._conditions) > _MAX_CACHED_CONDITIONS:
                self._conditions.popitem(last=False)
        return mask

    def _filter(self, conn: sqlite3.Connection, node: Node) -> BoolArray:
        # SQL's NULL fails AND/OR exactly like False, and ``Not`` compiles to ``(..) IS NOT 1``,
        # so boolean masks (NULL → False) pass the same rows as the SQL predicate.
        if isinstance(node, All):
            out = np.ones(self.capacity, dtype=np.bool_)
            for part in node.parts:
                out &= self._filter(conn, part)
            return out
        if isinstance(node, Any_):
            out = np.zeros(self.capacity, dtype=np.bool_)
            for part in node.parts:
                out |= self._filter(conn, part)
            return out
        if isinstance(node, Not):
            return ~self._filter(conn, node.part)
        return self._condition(conn, node)

    def allowed(
        self,
        conn: sqlite3.Connection,
        *,
        collection: str,
        min_confidence: float,
        session_id: str | None = None,
        exclude_session: str | None = None,
        filter: Node | None = None,
    ) -> BoolArray:
        """Return the mask (by memory id) of the memories a recall with these conditions may return."""
        with self._lock:
            code = self._collections.get(collection)
            if code is None:
                return np.zeros(self.capacity, dtype=np.bool_)
            mask: BoolArray = self._active & (self._collection == code) & (self._confidence >= min_confidence)
            if session_id is not None:
                wanted = self._sessions.get(session_id)
                if wanted is None:
                    return np.zeros(self.capacity, dtype=np.bool_)
                mask &= self._session == wanted
            if exclude_session is not None and (skip := self._sessions.get(exclude_session)) is not None:
                mask &= self._session != skip
            if filter is not None:
                mask &= self._filter(conn, filter)
            return mask

    @staticmethod
    def _read_points(
        conn: sqlite3.Connection,
        path: tuple[str, ...],
        dims: npt.NDArray[np.int8],
        points: FloatArray,
        ids: Sequence[int] | None,
    ) -> tuple[npt.NDArray[np.int8], FloatArray]:
        """Read the points at ``path`` of ``ids`` (None = every memory) into ``dims``/``points`` (negative
        dimensions: a point under ``value``, not a list).

        ``points`` is as wide as the longest point seen (3 for x, y, z): a wider one widens it, so the
        arrays returned may be new ones.
        """
        parts: Iterable[tuple[str, dict[str, int]]] = (
            [("1", {})]
            if ids is None
            else ((f"m.id IN ({marks})", keyed) for marks, keyed in search.id_chunks(ids))
        )
        for where, keyed in parts:
            for memory_id, raw in search.coordinates(conn, path, where, keyed).items():
                point = coordinates_at({"v": raw}, ("v",))
                if point is None or len(point) > MAX_DIMENSIONS or memory_id >= len(dims):
                    continue
                if len(point) > points.shape[1]:
                    wider = np.full((len(points), len(point)), np.nan)
                    wider[:, : points.shape[1]] = points
                    points = wider
                # A point given as {"value": [...]} counts as negative dimensions: a distance measures
                # it, a region (which indexes lists alone) does not hold it.
                dims[memory_id] = len(point) if isinstance(raw, list) else -len(point)
                points[memory_id, : len(point)] = point
        return dims, points

    def _cached_points(
        self, conn: sqlite3.Connection, path: tuple[str, ...]
    ) -> tuple[npt.NDArray[np.int8], FloatArray]:
        """The coordinates at context ``path`` (dimensions by id, 0 = none, negative = under ``value``;
        points by id), read once
        (``coordinates_at`` on each context) and then kept in step like the other columns."""
        cached = self._points.get(path)
        if cached is None:
            empty = (np.zeros(self.capacity, dtype=np.int8), np.full((self.capacity, 3), np.nan))
            cached = self._points[path] = self._read_points(conn, path, *empty, None)
            if len(self._points) > _MAX_CACHED_POINTS:
                self._points.popitem(last=False)
        self._points.move_to_end(path)
        return cached

    def within(self, conn: sqlite3.Connection, region: Region, among: BoolArray) -> BoolArray:
        """The mask (by memory id) of the memories of ``among`` whose position lies in ``region``, exactly:
        the same memories as the spatial index's ``regions.within``, from the cached points and the frame's
        mask (only the points ``among`` allows are tested)."""
        with self._lock:
            frame = self._filter(conn, in_frame(region.path, region.frame))
            dims, points = self._cached_points(conn, region.path)
            size = min(len(frame), len(dims), len(among))
            rows = np.flatnonzero(among[:size] & frame[:size] & ((dims[:size] == 2) | (dims[:size] == 3)))
            # Only the points in the region's bounding box (widened past any rounding) are tested exactly:
            # one axis at a time, each read for the rows the axes before it kept.
            for axis, (low, high) in enumerate(zip(*region.bounds, strict=True)):
                margin = 1e-9 * (1.0 + abs(low) + abs(high))
                coordinate = points[rows, axis]
                rows = rows[(coordinate >= low - margin) & (coordinate <= high + margin)]
            table = np.full((len(rows), 3), np.nan)
            width = min(points.shape[1], 3)
            table[:, :width] = points[rows, :width]
            table[dims[rows] == 2, 2] = np.nan  # a point that lost its z keeps none
            mask = np.zeros(self.capacity, dtype=np.bool_)
            mask[rows[region.contains(table)]] = True
            return mask

    def distances(
        self, conn: sqlite3.Connection, path: tuple[str, ...], target: Sequence[float]
    ) -> tuple[npt.NDArray[np.int64], FloatArray]:
        """Return ``(ids, distance)`` of every memory with a ``len(target)``-d point at context ``path``
        (``_cached_points``); the distances are one vectorised computation."""
        with self._lock:
            dims, points = self._cached_points(conn, path)
            ids = np.flatnonzero(np.abs(dims) == len(target))
            if len(target) > points.shape[1]:  # no point is that long
                return ids.astype(np.int64), np.zeros(0, dtype=np.float64)
            # Scaled by the largest offset before squaring, so 1e200 stays finite; a distance that
            # still overflows is dropped, as spatial.distance gives None.
            far = distances(points[ids, : len(target)], target)
            keep = np.isfinite(far)
            return ids[keep].astype(np.int64), far[keep]

    def session_members(self, ids: Iterable[int], allowed: BoolArray) -> list[list[int]]:
        """Return the ids ``allowed`` passes of each session holding one of ``ids``, each in
        ``created_at`` order (ties by id), sessions in order of their smallest id (as
        ``search.session_members``): read from each session's own members, not the whole store."""
        with self._lock:
            wanted = [m for m in ids if 0 <= m < self.capacity]
            codes = np.unique(self._session[wanted]) if wanted else np.zeros(0, dtype=np.int32)
            size = min(self.capacity, len(allowed))
            groups = []
            for code in codes[codes >= 0].tolist():
                members = np.fromiter(self._members[code], dtype=np.int64)
                members = members[members < size]
                members = members[allowed[members]]
                if len(members):
                    members = members[np.lexsort((members, self._created[members]))]
                    groups.append(members.tolist())
            return sorted(groups, key=min)

    def collection_size(self, collection: str) -> int:
        """Return how many memories (any status) ``collection`` holds."""
        with self._lock:
            code = self._collections.get(collection)
            return 0 if code is None else int(np.count_nonzero(self._collection == code))

    def by_observed(
        self, ids: npt.NDArray[np.int64], limit: int | None = None
    ) -> npt.NDArray[np.int64] | None:
        """``ids`` newest observed first (ties: larger id first), as ``ORDER BY observed_at DESC, id DESC``
        gives, the first ``limit`` of them when given; None when one of them has no time in the stored form
        (SQL must order it then)."""
        with self._lock:
            wanted = ids[ids < self.capacity]
            if len(wanted) < len(ids):
                return None
            observed = self._observed[wanted]
            if (observed == _UNREADABLE).any():
                return None
            if limit is not None and limit < len(wanted):
                # Only the memories at or after the limit-th newest time can be among the first.
                nth = np.partition(observed, len(observed) - limit)[len(observed) - limit]
                keep = observed >= nth
                wanted, observed = wanted[keep], observed[keep]
            return wanted[np.lexsort((-wanted, ~observed))][:limit]  # ~t orders as -t, never overflowing

    def _named_by(self, conn: sqlite3.Connection, ids: Sequence[int]) -> tuple[_Names, npt.NDArray[np.int64]]:
        """The object names (read from ``conn`` on the first call, then kept in step) and the memories of
        ``ids`` the mirror holds."""
        if self._names is None:
            self._names = _Names(self.capacity)
            self._names.read(conn.execute(OBJECT_COLUMNS))  # streamed: no list of every row
        wanted = np.fromiter(ids, dtype=np.int64, count=len(ids))
        wanted = wanted[(wanted >= 0) & (wanted < self.capacity)]
        return self._names, wanted[self._collection[wanted] >= 0]  # memories, not ids without a row

    def objects_of(
        self, conn: sqlite3.Connection, ids: Sequence[int]
    ) -> dict[int, tuple[str | None, str | None]]:
        """``MemoryTable.objects_of`` from the mirror: id → ``(object id, label)`` of each memory of ``ids``."""
        with self._lock:
            names, wanted = self._named_by(conn, ids)
            object_ids, labels = names.object_id[wanted].tolist(), names.label[wanted].tolist()
            return {
                memory_id: (names.text(object_id), names.text(label))
                for memory_id, object_id, label in zip(wanted.tolist(), object_ids, labels, strict=True)
            }

    def objects_named(
        self, conn: sqlite3.Connection, ids: Sequence[int]
    ) -> set[tuple[str | None, str | None]]:
        """``MemoryTable.objects_named`` from the mirror: ``(id, None)``, or ``(None, label)`` without an id,
        of the memories of ``ids``, each object once (one ``unique`` over the codes of all of them)."""
        with self._lock:
            names, wanted = self._named_by(conn, ids)
            object_ids = names.object_id[wanted].astype(np.int64)
            labels = np.where(object_ids >= 0, -1, names.label[wanted]).astype(np.int64)
            pairs = np.unique(((object_ids + 1) << 32) | (labels + 1))
            return {
                (names.text((pair >> 32) - 1), names.text((pair & 0xFFFFFFFF) - 1))
                for pair in pairs.tolist()
                if pair != 0
            }

    def real_world(self, ids: Iterable[int]) -> set[int]:
        """Return the ids among ``ids`` whose context says ``env.sim_or_real`` = ``"real"``."""
        with self._lock:
            wanted = np.fromiter(ids, dtype=np.int64)
            wanted = wanted[(wanted >= 0) & (wanted < self.capacity)]
            return set(wanted[self._real[wanted]].tolist())

    def bm25(
        self, tokens: Sequence[str], min_coverage: float = 0.0, k1: float = 1.2, b: float = 0.75
    ) -> tuple[FloatArray, BoolArray] | None:
        """Return FTS5 BM25 ``(scores, matched)`` by id for the OR of the quoted ``tokens``.

        None when a token is not one FTS5 term (FTS5 would treat it as a phrase): use FTS5 then.
        """
        with self._lock:
            terms = self._stemmer.terms(tokens)
            if any(len(terms[t]) != 1 for t in tokens):
                return None
            return self.lexical.score([terms[t][0] for t in tokens], min_coverage, k1, b)

    def coverage(self, tokens: Sequence[str], ids: npt.NDArray[np.int64]) -> FloatArray | None:
        """``LexicalIndex.coverage`` of the quoted ``tokens`` for ``ids``; None as ``bm25`` (use SQL then)."""
        with self._lock:
            terms = self._stemmer.terms(tokens)
            if any(len(terms[t]) != 1 for t in tokens):
                return None
            return self.lexical.coverage([terms[t][0] for t in tokens], ids)

    def close(self) -> None:
        self._stemmer.close()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float))  # a bool is bound as 1/0, as SQLite's JSON gives it
