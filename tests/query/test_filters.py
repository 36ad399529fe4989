"""context_filter parsing and its SQL, checked against real tables of each engine."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.strategies import examples

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
from robotmem.query.filters import parse_filter
from robotmem.store.postgres.filters import to_pg_sql
from robotmem.store.sqlite.filters import to_sql

ROWS = [
    (
        1,
        {
            "task": {"success": True, "steps": 38},
            "params": {"grip_force": {"value": 12.5, "unit": "N"}},
            "env": {"sim_or_real": "real"},
            "labels": ["cup", "glass"],
        },
        "parameter",
        0.9,
    ),
    (
        2,
        {
            "task": {"success": False, "steps": 50},
            "params": {"grip_force": {"value": 20, "unit": "N"}},
            "env": {"sim_or_real": "sim"},
            "note": "cup slipped",
        },
        "episode",
        0.8,
    ),
    (3, {"task": {"name": "push"}, "spatial": {"position": [1, 2, 3]}}, "observation", 0.4),
]


def _sqlite_rows() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.execute(
        "CREATE TABLE memories (id INTEGER PRIMARY KEY, context TEXT, category TEXT, confidence REAL, "
        "collection TEXT, type TEXT, perception_type TEXT, session_id TEXT, created_at TEXT, "
        "updated_at TEXT, access_count INTEGER)"
    )
    db.execute("CREATE TABLE memory_tags (memory_id INTEGER, tag TEXT)")
    for memory_id, context, category, confidence in ROWS:
        db.execute(
            "INSERT INTO memories (id, context, category, confidence) VALUES (?, ?, ?, ?)",
            (memory_id, json.dumps(context), category, confidence),
        )
    db.executemany("INSERT INTO memory_tags VALUES (?, ?)", TAGS)
    return db


TAGS = [(1, "grasping"), (2, "failure"), (2, "grasping")]


@pytest.fixture(scope="module")
def sqlite_rows() -> sqlite3.Connection:
    return _sqlite_rows()


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.fixture(scope="module")
def postgres_rows(postgres_server: Any) -> Iterator[Any]:
    """The rows above in a PostgreSQL store's own tables (its schema and functions)."""
    import psycopg

    from robotmem.store.postgres.store import PostgresStore

    dsn = postgres_server.create()
    PostgresStore(dsn, now=lambda: "2026-01-01T00:00:00.000000+00:00").close()  # creates the schema
    with psycopg.connect(dsn, autocommit=True) as db:
        for memory_id, context, category, confidence in ROWS:
            db.execute(
                "INSERT INTO memories (id, collection, type, content, category, confidence, base_confidence, "
                "context, context_text, created_at, updated_at, uid) VALUES (%s, 'default', 'fact', 'x', %s, %s, "
                "%s, %s, %s, '2026-01-01', '2026-01-01', %s)",
                # Compact, as the store writes every context (arrays compare as this text).
                (
                    memory_id,
                    category,
                    confidence,
                    confidence,
                    compact(context),
                    compact(context),
                    f"uid-{memory_id}",
                ),
            )
        db.cursor().executemany("INSERT INTO memory_tags (memory_id, tag) VALUES (%s, %s)", TAGS)
        yield db
    postgres_server.drop(dsn)


@pytest.fixture
def conn(engine: str, request: pytest.FixtureRequest) -> Any:
    """The table of ROWS on the test's engine."""
    return request.getfixturevalue(f"{engine}_rows")


def select_sql(conn: Any, raw: object) -> tuple[str, Any]:
    """The query selecting the ids that pass filter ``raw``, compiled for ``conn``'s engine."""
    node = parse_filter(raw)
    assert node is not None
    if isinstance(conn, sqlite3.Connection):
        sql, params = to_sql(node)
    else:
        sql, params = to_pg_sql(node)
    return f"SELECT m.id FROM memories m WHERE {sql} ORDER BY m.id", params


def matching(conn: Any, raw: object) -> list[int]:
    return [int(r[0]) for r in conn.execute(*select_sql(conn, raw)).fetchall()]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"task.success": True}, [1]),
        ('{"task.success": false}', [2]),
        ({"params.grip_force": {"$lt": 15}}, [1]),
        ({"params.grip_force.value": {"$gte": 12.5}}, [1, 2]),
        ({"params.grip_force": {"$between": [10, 25]}}, [1, 2]),
        ({"task.steps": {"$gt": 40, "$lte": 50}}, [2]),
        ({"task.success": {"$ne": True}}, [2, 3]),
        ({"env.sim_or_real": {"$in": ["real", "hardware"]}}, [1]),
        ({"env.sim_or_real": {"$nin": ["real"]}}, [2, 3]),
        ({"spatial.position": {"$exists": True}}, [3]),
        ({"spatial.position": {"$exists": False}}, [1, 2]),
        ({"labels": {"$contains": "glass"}}, [1]),
        ({"note": {"$contains": "slip"}}, [2]),
        ({"spatial.position": [1, 2, 3]}, [3]),
        ({"spatial.position.0": 1}, [3]),
        ({"category": "episode"}, [2]),
        ({"confidence": {"$lt": 0.5}}, [3]),
        ({"tags": "grasping"}, [1, 2]),
        ({"tags": {"$nin": ["failure"]}}, [1, 3]),
        ({"$or": [{"task.success": True}, {"task.name": "push"}]}, [1, 3]),
        ({"$and": [{"tags": "grasping"}, {"$not": {"task.success": True}}]}, [2]),
        ({"task.steps": {"$not": {"$gt": 40}}}, [1, 3]),
        ({"context.category": {"$exists": True}}, []),
    ],
)
def test_filter_selects_expected_rows(conn: Any, raw: object, expected: list[int]) -> None:
    assert matching(conn, raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"task.success": {"$less": 3}}, "unknown operator '$less'; expected one of $eq"),
        ({"$xor": []}, "unknown logical operator"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ({"a..b": 1}, "dot-separated"),
        ({"x": {"$in": "abc"}}, "$in takes a non-empty list"),
        ({"x": {"$between": [1]}}, "$between takes a list of two"),
        ({"x": {"$lt": [1]}}, "$lt takes a number or a string"),
        ({"x": {"$exists": "yes"}}, "$exists takes true or false"),
        ({"x": {"a": 1}}, "dot path"),
        ({"x": {}}, "empty object"),
        ({"tags": {"$lt": 3}}, "does not apply to tags"),
        ({"$or": [{}]}, "non-empty filter objects"),
    ],
)
def test_malformed_filters_name_the_problem(raw: object, message: str) -> None:
    with pytest.raises(ValidationError, match="context_filter") as error:
        parse_filter(raw)
    assert message in str(error.value)


def test_filter_size_is_capped() -> None:
    with pytest.raises(ValidationError, match="the limit is 100"):
        parse_filter({"x": "y" * 200}, max_bytes=100)


def test_deep_filters_are_refused() -> None:
    raw: dict[str, object] = {"x": 1}
    for _ in range(40):
        raw = {"$not": raw}
    with pytest.raises(ValidationError, match="nests deeper"):
        parse_filter(raw)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=examples(300), deadline=None)
@given(json_values)
def test_parse_filter_fails_only_with_validation_error(raw: object) -> None:
    with contextlib.suppress(ValidationError):
        parse_filter(raw)


@settings(
    max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    raw=st.dictionaries(
        st.sampled_from(["task.success", "params.grip_force", "tags", "category", "x.y"]),
        json_values,
        max_size=3,
    )
)
def test_every_accepted_filter_compiles_to_valid_sql(conn: Any, raw: dict[str, object]) -> None:
    try:
        node = parse_filter(raw)
    except ValidationError:
        return
    if node is None:
        return
    conn.execute(*select_sql(conn, raw)).fetchall()


@pytest.mark.parametrize("raw", [{"x": 10**30}, {"x": {"$lt": -(10**20)}}, {"x": {"$in": [2**64]}}])
def test_integers_beyond_sqlite_range_are_refused(raw: object) -> None:
    with pytest.raises(ValidationError, match="integers within"):
        parse_filter(raw)


def test_sixteen_nested_not_and_a_thousand_terms_run_in_the_store(
    tmp_path: Path, locate: Callable[[str], Any], recall_mirror: bool
) -> None:
    for mirror in (recall_mirror,):
        config = Settings(home=tmp_path, recall_mirror=mirror)
        with RobotMemory(locate("n.db"), embed_backend="none", settings=config) as memory:
            memory.learn(
                "the gripper holds wet mugs", context={"task": {"success": True}, "params": {"f": 3}, "f": 3}
            )
            for depth in (15, 16):
                condition: dict[str, Any] = {"task.success": True}
                operator: dict[str, Any] = {"$gt": 1}
                for _ in range(depth):
                    condition, operator = {"$not": condition}, {"$not": operator}
                expected = 1 if depth % 2 == 0 else 0
                for query in ("gripper", ""):
                    assert memory.recall(query, context_filter=condition)["total"] == expected
                    assert memory.recall(query, context_filter={"params.f": operator})["total"] == expected
            many = {"$or": [{"f": n} for n in range(1100)]}
            assert memory.recall("", context_filter=json.dumps(many, separators=(",", ":")))["total"] == 1


UNREACHABLE_KEYS = {
    "a.b": 'contains "."',
    "": "is empty",
    "$x": 'starts with "$"',
    "0": "is all digits",
    'say"hi': "double quote",
}


@pytest.mark.parametrize("key", list(UNREACHABLE_KEYS))
def test_context_keys_no_path_could_reach_are_refused_on_every_write(tmp_path: Path, key: str) -> None:
    """learn, update and start_session refuse a key (at any depth) that a filter path could not name."""
    problem = re.escape(UNREACHABLE_KEYS[key])
    with RobotMemory(tmp_path / "k.db", embed_backend="none", settings=Settings(home=tmp_path)) as memory:
        created = memory.learn("a lesson about keys", context={"task": {"name": "keys"}})
        before = memory.stats()
        for context, where in (({key: 1}, "context"), ({"task": [{"ok": {key: 1}}]}, "context.task.0.ok")):
            with pytest.raises(ValidationError, match=rf"^{re.escape(where)}: key .*{problem}"):
                memory.learn("another lesson about keys", context=context)
            with pytest.raises(ValidationError, match=problem):
                memory.update(created["memory_id"], "a lesson about keys", context=context)
            with pytest.raises(ValidationError, match=problem):
                memory.start_session(context=context)
        assert memory.stats() == before
        assert memory.get_memory(created["memory_id"])["task"] == {"name": "keys"}


def test_a_dotted_parameter_in_the_text_is_stored_under_a_name_a_filter_reaches(tmp_path: Path) -> None:
    with RobotMemory(tmp_path / "p.db", embed_backend="none", settings=Settings(home=tmp_path)) as memory:
        created = memory.learn("set arm.speed=0.5 m/s for the pick, it works")
        assert created["auto_inferred"]["params"] == {"arm_speed": {"value": 0.5, "unit": "m/s"}}
        found = memory.recall("", context_filter={"params.arm_speed": {"$lt": 1}})["memories"]
        assert [m["id"] for m in found] == [created["memory_id"]]


def test_context_keys_with_a_double_quote_are_refused(tmp_path: Path, locate: Callable[[str], Any]) -> None:
    with RobotMemory(locate("q.db"), embed_backend="none", settings=Settings(home=tmp_path)) as memory:
        for context in ({'say"hi': 1}, {"task": [{'x"': 1}]}):
            with pytest.raises(ValidationError, match="double quote"):
                memory.learn("a lesson about quotes", context=context)
        created = memory.learn("a lesson about quotes", context={"task": {"name": 'say "hi"'}})
        with pytest.raises(ValidationError, match="double quote"):
            memory.update(created["memory_id"], "a lesson about quotes", context={'a"': 1})
        with pytest.raises(ValidationError, match="double quote"):
            memory.recall("", context_filter={'task.say"hi': 1})
        with pytest.raises(ValidationError, match="spatial_sort"):
            memory.recall("", spatial_sort={"field": 'spatial."p', "target": [0]})
        assert memory.recall("", context_filter={"task.name": 'say "hi"'})["total"] == 1
