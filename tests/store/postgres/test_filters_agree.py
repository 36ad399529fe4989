"""Generated filters pass exactly the same memories on SQLite and on PostgreSQL.

SQLite's comparison rules are the reference (``robotmem.query.filters``); ``store.postgres.filters`` compiles
the same tree for the server. Hypothesis writes the same memories into one store of each engine (record
fields and contexts with ints up to nanosecond stamps and beyond 64 bits, floats, non-ASCII text,
booleans, nulls, arrays and ``{"value", "unit"}`` parameters) and asks both candidate sources which of
them a generated filter passes: every operator, ``$and``/``$or``/``$not``, record fields, and operands of
the other type than the value they meet.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

from robotmem.errors import ValidationError
from robotmem.query.filters import SQLITE_MAX_INT, parse_filter
from robotmem.records import NewMemory
from robotmem.store.postgres.filters import PgFilter, sqlite_real_text
from robotmem.store.postgres.store import PostgresStore, PostgresTx
from robotmem.store.protocol import RecallScope, Store
from robotmem.store.sqlite.store import SqliteStore

NOW = "2026-01-01T00:00:00.000000+00:00"
STAMP = 1_700_000_000_123_456_789  # a nanosecond time stamp

# Numbers where the engines' rules part most easily: around a nanosecond stamp (above 2**53, where a
# double's shortest decimal is not its value), beyond 64 bits, and doubles whose 15-digit text differs.
SPECIAL_INTS = [0, 1, -1, 2, 10, STAMP, STAMP + 1, STAMP + 100, 1_700_000_000_000_000_000, 2**53 + 1,
                SQLITE_MAX_INT, -SQLITE_MAX_INT - 1]  # fmt: skip
SPECIAL_FLOATS = [1.7000000000000003e18, 1.2e-5, 0.1 + 0.2, 1e15, 123456789012345.6, 0.0, -0.0, 0.5, 1.0, 0.1, 0.3, 0.30000000000000004, 2.5, 1e16, 1.7e18, float(STAMP),
                  1.7000000000000003e18, 9.223372036854776e18, 1e-7, -12.5, 123456789.123456789]  # fmt: skip
TEXTS = [" 1e400", "-1e400", " .75 ", "5.", "+5", "1e", "\uff19", "x\0y", "a\0", ".0", "e+1", "", "a", "b", "abc", "é", "名字", "1", "10", "2.5", " 3 ", "1e3", "0x10", "true", "null",
         "[1,2]", '{"value":1}', "N", "cup", "Cup", "ß", "\u00e9", "e\u0301", "🤖"]  # fmt: skip
KEYS = ["a", "b", "é", "0", "value"]

ints = st.one_of(st.integers(-20, 20), st.sampled_from(SPECIAL_INTS), st.integers(-(2**63), 2**63 - 1))
floats = st.one_of(st.sampled_from(SPECIAL_FLOATS), st.floats(allow_nan=False, allow_infinity=False))
texts = st.one_of(st.sampled_from(TEXTS), st.text(max_size=6))
scalars = st.one_of(st.none(), st.booleans(), ints, floats, texts)
# Stored values may go past 64 bits (SQLite reads such a number as a REAL); filter operands may not.
# A stored text holds no NUL (the service refuses one in a context); an operand may.
stored_scalars = st.one_of(
    st.none(),
    st.booleans(),
    ints,
    floats,
    texts.filter(lambda text: "\0" not in text),
    st.sampled_from([2**63, 2**64 + 1, -(2**63) - 1, 10**30]),
)
parameters = st.fixed_dictionaries({"value": stored_scalars, "unit": st.sampled_from(["N", "m", "ns"])})
values = st.recursive(
    st.one_of(stored_scalars, parameters),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.sampled_from(KEYS), children, max_size=3)
    ),
    max_leaves=8,
)
contexts = st.dictionaries(st.sampled_from(KEYS), values, max_size=4)

CONTEXT_PATHS = ["a", "b", "é", "0", "a.b", "a.0", "a.1", "a.value", "b.a", "context.a", "a.é.0"]
RECORD_PATHS = ["confidence", "category", "created_at", "updated_at", "id", "access_count", "collection",
                "type", "perception_type", "session_id", "robot_id"]  # fmt: skip


def _orderable(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return False
    return not isinstance(value, int) or abs(value) <= SQLITE_MAX_INT


def _leaves(value: Any) -> Iterator[Any]:
    """Every value inside ``value``, itself included (lists and objects compare as JSON text)."""
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        yield from _leaves(child)


def _paths(value: Any, prefix: str = "") -> Iterator[str]:
    """The dotted path of every value inside a context (array elements by index)."""
    children = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    for key, child in children:
        path = f"{prefix}.{key}" if prefix else str(key)
        yield path
        yield from _paths(child, path)


def _neighbours(value: Any) -> list[Any]:
    """Operands where the engines' rules part for a held ``value``: the integers around a double and the
    doubles around an integer, the text SQLite writes for a number (and pieces of it), a text with a NUL."""
    out: list[Any] = []
    if isinstance(value, bool) or value is None:
        return out
    if isinstance(value, int):
        out += [value - 1, value + 1, float(value)]
        out += [math.nextafter(float(value), math.inf), math.nextafter(float(value), -math.inf)]
        out += [str(value), f" {value} "]
    elif isinstance(value, float):
        out += [math.nextafter(value, math.inf), math.nextafter(value, -math.inf)]
        if math.isfinite(value) and abs(value) < 2**63:
            whole = int(value)
            out += [whole, whole - 1, whole + 1, whole + 37, whole - 37]
        text = sqlite_real_text(value)
        out += [text, text[:3], text[-3:], ".0", "e+", repr(value)]
    elif isinstance(value, str):
        out += [value + "\0", value[:1] + "\0" + value[1:], value[:-1], value + "a"]
    return [v for v in out if not isinstance(v, int) or abs(v) <= SQLITE_MAX_INT]


def filters_for(rows: list[dict[str, Any]]) -> st.SearchStrategy[Any]:
    """Filters whose operands are often values the rows hold (or their neighbours), so they split them."""
    seen = [
        leaf
        for row in rows
        for leaf in [
            *_leaves(row["context"]),
            row["confidence"],
            row["category"],
            row["created_at"],
            row["robot_id"],
            *row["tags"],
        ]
    ]
    held = [v for v in seen if not isinstance(v, int) or isinstance(v, bool) or abs(v) <= SQLITE_MAX_INT]
    held += [near for v in seen for near in _neighbours(v)]
    scalar = st.one_of(
        scalars, st.sampled_from([v for v in held if not isinstance(v, (list, dict))] or [None])
    )
    nearby = st.sampled_from(held or [None])
    operand = st.one_of(
        scalar,
        nearby,
        nearby,
        st.lists(scalar, max_size=3),
        st.dictionaries(st.sampled_from(KEYS), scalar, max_size=2),
    )
    held_orderable = st.sampled_from([v for v in held if _orderable(v)] or [0])
    orderable = st.one_of(st.one_of(ints, floats, texts).filter(_orderable), held_orderable, held_orderable)

    def condition(path: str) -> st.SearchStrategy[Any]:
        tags = path == "tags"
        plain = st.one_of(
            st.tuples(st.sampled_from(["$eq", "$ne"]), scalar if tags else operand),
            st.tuples(st.sampled_from(["$in", "$nin"]), st.lists(scalar, min_size=1, max_size=4)),
            st.tuples(st.just("$exists"), st.booleans()),
            st.tuples(st.just("$contains"), scalar),
        )
        if not tags:
            plain = st.one_of(
                plain,
                st.tuples(st.sampled_from(["$lt", "$lte", "$gt", "$gte"]), orderable),
                st.tuples(st.just("$between"), st.lists(orderable, min_size=2, max_size=2)),
            )
        operator = plain.map(lambda pair: {pair[0]: pair[1]})
        negated = operator.map(lambda inner: {"$not": inner})
        return st.one_of(scalar if tags else operand, operator, negated).map(lambda c: {path: c})

    held_paths = sorted({path for row in rows for path in _paths(row["context"])})
    paths = [*CONTEXT_PATHS, *RECORD_PATHS, "tags", *(held_paths * 3)]
    conditions = st.sampled_from(paths).flatmap(condition)
    return st.recursive(
        conditions,
        lambda children: st.one_of(
            st.lists(children, min_size=1, max_size=3).map(lambda parts: {"$and": parts}),
            st.lists(children, min_size=1, max_size=3).map(lambda parts: {"$or": parts}),
            children.map(lambda part: {"$not": part}),
        ),
        max_leaves=5,
    )


memories = st.fixed_dictionaries(
    {
        "context": contexts,
        "confidence": st.one_of(
            st.sampled_from([0.0, 0.1, 0.3, 0.30000000000000004, 0.5, 0.85, 1.0]), st.floats(0.0, 1.0)
        ),
        "category": st.sampled_from(["observation", "parameter", "1", "2.5", "é", "a"]),
        "created_at": st.sampled_from([NOW, "2025-06-01T12:00:00.000000+00:00", "2026", "1", "é"]),
        "tags": st.lists(st.sampled_from(["grasp", "failure", "1", "2.5", "é", ""]), max_size=3),
        "perception": st.sampled_from([None, "visual", "tactile"]),
        "robot_id": st.sampled_from(["", "arm-a", "1"]),
    }
)


def row(context: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A memory of the strategy above with ``context`` and ``fields``."""
    base = {"confidence": 0.5, "category": "observation", "created_at": NOW, "tags": [], "perception": None,
            "robot_id": ""}  # fmt: skip
    return {**base, **fields, "context": context}


@pytest.fixture(scope="module")
def stores(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Store]]:
    """One empty store of each engine; every example writes the same memories into both, in one collection."""
    path = Path(tmp_path_factory.mktemp("agree")) / "reference.db"
    reference = SqliteStore(path, now=lambda: NOW, use_mirror=False)
    dsn = postgres_server.create()
    server = PostgresStore(dsn, now=lambda: NOW)
    try:
        yield reference, server
    finally:
        reference.close()
        server.close()
        postgres_server.drop(dsn)


_collections = itertools.count()


def _new(row: dict[str, Any], collection: str, index: int) -> NewMemory:
    return NewMemory(
        collection=collection,
        type="perception" if row["perception"] else "fact",
        content=f"memory {index}",
        content_hash=None,
        category=row["category"],
        confidence=row["confidence"],
        context=row["context"],
        scope_files=(),
        scope_entities=(),
        session_id=None,
        perception_type=row["perception"],
        tags=tuple(row["tags"]),
        index_body=f"memory {index}",
        created_at=row["created_at"],
        robot_id=row["robot_id"],
    )


def passing(stores: tuple[Store, Store], rows: list[dict[str, Any]], raw: Any) -> tuple[list[int], list[int]]:
    """The positions (in ``rows``) of the memories ``raw`` passes, on SQLite and on PostgreSQL."""
    try:
        node = parse_filter(raw)
    except ValidationError:
        reject()
    collection = f"c{next(_collections)}"
    news = [_new(row, collection, i) for i, row in enumerate(rows)]
    ids = [store.write(lambda tx: tx.memories.insert_many(news)) for store in stores]
    assert ids[0] == ids[1], "the stores must give the same ids (filters may name an id)"
    scope = RecallScope(collection=collection, min_confidence=0.0, filter=node)
    found = [store.read(lambda tx: tx.candidates(scope).listed(100, order="id")) for store in stores]
    return (
        [ids[0].index(m) for m in found[0]],
        [ids[1].index(m) for m in found[1]],
    )


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(data=st.data())
def test_a_generated_filter_passes_the_same_memories_on_both_engines(
    stores: tuple[Store, Store], data: st.DataObject
) -> None:
    rows = data.draw(st.lists(memories, min_size=3, max_size=8), label="rows")
    raw = data.draw(filters_for(rows), label="filter")
    reference, server = passing(stores, rows, raw)
    event("none pass" if not reference else ("all pass" if len(reference) == len(rows) else "some pass"))
    assert server == reference


def equalities_for(rows: list[dict[str, Any]]) -> st.SearchStrategy[Any]:
    """``$eq``/``$in`` conditions on the context paths the rows hold, with values they hold or their
    neighbours: the conditions ``PgFilter.index_hint`` turns into containment tests."""
    leaves = [leaf for row in rows for leaf in _leaves(row["context"]) if not isinstance(leaf, (list, dict))]
    held = [*leaves, *(near for leaf in leaves for near in _neighbours(leaf))]
    held = [v for v in held if not isinstance(v, int) or isinstance(v, bool) or abs(v) <= SQLITE_MAX_INT]
    value = st.one_of(st.sampled_from(held or [None]), st.sampled_from(held or [None]), scalars)
    operand = st.one_of(value, st.lists(value, min_size=1, max_size=3).map(lambda listed: {"$in": listed}))
    # Paths through an array have no containment form (nor a hint).
    named = {
        path
        for row in rows
        for path in _paths(row["context"])
        if not any(k.isdigit() for k in path.split("."))
    }
    paths = sorted(named) or ["a", "b.a"]
    return st.tuples(st.sampled_from(paths), operand).map(lambda pair: {pair[0]: pair[1]})


def hinted_passing(
    stores: tuple[Store, Store], rows: list[dict[str, Any]], raw: Any
) -> tuple[list[int], list[int]] | None:
    """The positions of the memories ``raw`` passes on SQLite, and on PostgreSQL with the filter's index
    hint joined to it, as the vector search joins it; None when the filter has no hint."""
    node = parse_filter(raw)
    assert node is not None
    builder = PgFilter()
    where, hint = builder.compile(node), builder.index_hint(node)
    if hint is None:
        return None
    collection = f"c{next(_collections)}"
    news = [_new(row, collection, i) for i, row in enumerate(rows)]
    ids = [store.write(lambda tx: tx.memories.insert_many(news)) for store in stores]
    scope = RecallScope(collection=collection, min_confidence=0.0, filter=node)
    reference = stores[0].read(lambda tx: tx.candidates(scope).listed(100, order="id"))
    sql = f"SELECT m.id FROM memories m WHERE m.collection = %(c)s AND {where} AND {hint}"
    params = {**builder.params, "c": collection}
    hinted = stores[1].read(lambda tx: cast(PostgresTx, tx).conn.execute(sql, params).fetchall())
    return sorted(ids[0].index(m) for m in reference), sorted(ids[1].index(r[0]) for r in hinted)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_the_index_hint_keeps_every_memory_the_filter_passes(
    stores: tuple[Store, Store], data: st.DataObject
) -> None:
    """``PgFilter.index_hint`` (a containment test the GIN index answers) is as wide as the filter."""
    rows = data.draw(st.lists(memories, min_size=3, max_size=8), label="rows")
    parts = st.lists(st.one_of(equalities_for(rows), filters_for(rows)), min_size=1, max_size=3)
    raw = data.draw(parts.map(lambda listed: {"$and": listed}), label="filter")
    try:
        found = hinted_passing(stores, rows, raw)
    except ValidationError:
        reject()
    event("no hint" if found is None else "hinted")
    if found is not None:
        assert found[1] == found[0]


HINT_EDGES = [
    # A parameter compares by its value; true equals 1; an integer equals the double of its exact value.
    ([row({"a": {"value": 1, "unit": "N"}}), row({"a": True}), row({"a": 1.0})], {"a": 1}, [0, 1, 2]),
    ([row({"a": 2**60}), row({"a": {"value": 2**60}})], {"a": 1.152921504606847e18}, [0, 1]),
    # Past 64 bits a stored integer is, to SQLite, the double nearest it.
    ([row({"a": 2**64 + 1}), row({"a": 10**30})], {"a": {"$in": [1.8446744073709552e19, 1e30]}}, [0, 1]),
]


@pytest.mark.parametrize(("rows", "raw", "expected"), HINT_EDGES)
def test_the_index_hint_keeps_the_edges_of_sqlites_equality(
    stores: tuple[Store, Store], rows: list[dict[str, Any]], raw: Any, expected: list[int]
) -> None:
    assert hinted_passing(stores, rows, raw) in (None, (expected, expected))


EDGES = [
    # A nanosecond stamp (an integer) against doubles near it, and a double against integers near it.
    ([row({"a": STAMP}), row({"a": 1.7e18})], {"a": {"$lt": 1.7000000000000003e18}}, [1]),
    ([row({"a": 1_700_000_000_000_000_100})], {"a": {"$lt": 1.7000000000000003e18}}, [0]),
    ([row({"a": 1.7000000000000003e18})], {"a": {"$gt": 1_700_000_000_000_000_290}}, []),
    ([row({"a": 1.7000000000000003e18})], {"a": {"$lt": 1_700_000_000_000_000_290}}, [0]),
    ([row({"a": 1.7000000000000003e18})], {"a": 1_700_000_000_000_000_256}, [0]),
    ([row({"a": 2**53 + 1}), row({"a": float(2**53)})], {"a": {"$gt": 9007199254740992.0}}, [0]),
    # Past 64 bits an integer is a REAL.
    ([row({"a": 2**64 + 1}), row({"a": 2**63})], {"a": {"$gte": 1.8446744073709552e19}}, [0]),
    ([row({"a": 2**63})], {"a": 9.223372036854776e18}, [0]),
    # Doubles compare as doubles, not as their 15-digit text.
    ([row({"a": 0.30000000000000004}, confidence=0.30000000000000004)], {"confidence": 0.3}, []),
    ([row({"a": 0.30000000000000004})], {"a": 0.3}, []),
    # $contains reads a REAL as SQLite writes it (5.0, 1.0e+16) and an array by its elements.
    ([row({"a": 1e16}), row({"a": 5.0}), row({"a": 5})], {"a": {"$contains": ".0"}}, [0, 1]),
    ([row({}, confidence=1.0), row({}, confidence=0.25)], {"confidence": {"$contains": "."}}, [0, 1]),
    ([row({"a": [1, 2.0, "2", True]}), row({"a": [3]})], {"a": {"$contains": 2}}, [0]),
    ([row({"a": [True]}), row({"a": [2]})], {"a": {"$contains": 1}}, [0]),
    # A {"value", "unit"} parameter compares by its value; a text operand sorts after every number.
    ([row({"a": {"value": 12.5, "unit": "N"}})], {"a": {"$between": [10, "1"]}}, [0]),
    ([row({"a": "b"}), row({"a": 3})], {"a": {"$gt": "a"}}, [0]),
    # A numeric field reads numeric text as a number (1e400 as infinity); a text field reads numbers as text.
    ([row({}, confidence=0.5)], {"confidence": {"$gt": "-1e400"}}, [0]),
    ([row({}, confidence=0.5)], {"confidence": {"$lt": " .75 "}}, [0]),
    ([row({}, confidence=0.5)], {"confidence": {"$lt": "\uff19"}}, [0]),  # full-width 9: text
    ([row({}, category="2.5"), row({}, category="1")], {"category": 2.5}, [0]),
    # An operand holding a NUL matches no stored text, and orders after its part before the NUL.
    ([row({"a": "x"}), row({"a": "x\u0001"})], {"a": {"$lt": "x\u0000y"}}, [0]),
    ([row({"a": "x"})], {"a": {"$ne": "x\u0000"}}, [0]),
    ([row({"a": "x"}, tags=["x"])], {"tags": {"$in": ["x\u0000", "y"]}}, []),
]


@pytest.mark.parametrize(("rows", "raw", "expected"), EDGES)
def test_edges_of_sqlites_rules_agree(
    stores: tuple[Store, Store], rows: list[dict[str, Any]], raw: Any, expected: list[int]
) -> None:
    reference, server = passing(stores, rows, raw)
    assert reference == expected  # what SQLite answers, written out
    assert server == reference


stored_numbers = st.one_of(
    ints,
    floats,
    st.sampled_from([2**63, 2**64 + 1, 10**30]),
    st.integers(2**53, 2**62).map(float),
    st.integers(2**53, 2**63 - 1),
)
number_operators = ["$eq", "$ne", "$lt", "$lte", "$gt", "$gte", "$between", "$in", "$nin", "$contains"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), operator=st.sampled_from(number_operators), field=st.sampled_from(["a", "confidence"]))
def test_a_number_compares_alike_with_the_numbers_around_it(
    stores: tuple[Store, Store], data: st.DataObject, operator: str, field: str
) -> None:
    """Stored numbers against operands next to them: the cases exact comparison decides."""
    if field == "a":
        held = data.draw(st.lists(stored_numbers, min_size=2, max_size=6), label="stored")
        rows = [row({"a": value}) for value in held]
    else:
        held = data.draw(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=6), label="confidences")
        rows = [row({}, confidence=value) for value in held]
    near = [n for value in held for n in _neighbours(value) if "\0" not in str(n)]
    one = st.one_of(st.sampled_from(near), ints.filter(_orderable), floats)
    if operator == "$between":
        operand: Any = data.draw(st.lists(one, min_size=2, max_size=2), label="bounds")
    elif operator in ("$in", "$nin"):
        operand = data.draw(st.lists(one, min_size=1, max_size=3), label="listed")
    else:
        operand = data.draw(one, label="operand")
    reference, server = passing(stores, rows, {field: {operator: operand}})
    event("none pass" if not reference else ("all pass" if len(reference) == len(rows) else "some pass"))
    assert server == reference


REAL_TEXTS = [0.1, 0.3, 1.0, -2.5, 1e15, 1e16, 123456789012345.6, 1.7000000000000003e18, 1e100,
              1.4264480502972e191, -2.5e-300, 5e-324, 1.7976931348623157e308, 1.2e-5, 0.0001]  # fmt: skip


def test_a_double_is_written_as_sqlite_writes_a_real(postgres_server: Any) -> None:
    """rm_real_text (the server) and sqlite_real_text (here) give SQLite's own text of a REAL."""
    import sqlite3

    import psycopg

    dsn = postgres_server.create()
    try:
        PostgresStore(dsn, now=lambda: NOW).close()
        reference = sqlite3.connect(":memory:")
        with psycopg.connect(dsn) as conn:
            for value in REAL_TEXTS:
                (expected,) = reference.execute("SELECT CAST(? AS TEXT)", (value,)).fetchone()
                (server,) = conn.execute("SELECT rm_real_text(%s::float8)", (value,)).fetchone()
                assert (server, sqlite_real_text(value)) == (expected, expected), value
    finally:
        postgres_server.drop(dsn)
