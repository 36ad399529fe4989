"""The PostgreSQL spatial index (``store/postgres/regions.py``): built by its migration from the stored
contexts, kept by its trigger, asked through the GiST index, and stated in SQL with the same exact test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.query.filters import parse_filter
from robotmem.query.regions import parse_region
from robotmem.store.postgres import regions, schema
from robotmem.store.postgres.candidates import PgCandidates
from robotmem.store.protocol import ChannelQuery, RecallScope
from robotmem.text.tokens import query_tokens


def _positions(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return [
            tuple(r)
            for r in conn.execute("SELECT memory_id, frame, dims, x, y, z FROM memory_positions ORDER BY 1")
        ]


def test_a_store_of_the_previous_version_gains_the_index(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            mem.learn("the forklift parks at bay three", context={"spatial": {"position": [7.0, 1.0]}})
            mem.learn(
                "the forklift parks in the yard",
                context={"spatial": {"position": [7, 1, 2], "frame": "yard"}},
            )
            mem.learn("the forklift has no position", context={"spatial": {"position": [7.0, "x"]}})
        with psycopg.connect(dsn) as conn:  # back to the version before the index
            for statement in schema.OBJECT_IDS_DROP:  # the index of object ids
                conn.execute(statement)
            for statement in regions.DROP:
                conn.execute(statement)
            conn.execute(
                "UPDATE meta SET value = %s WHERE key = 'schema_version'",
                (str(schema.MIGRATIONS.index(schema._migrate_spatial_index)),),
            )
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            assert _positions(dsn) == [(1, "map", 2, 7.0, 1.0, None), (2, "yard", 3, 7.0, 1.0, 2.0)]
            assert [m["id"] for m in mem.recall("", region={"center": [7, 1], "radius": 0})["memories"]] == [
                1
            ]
            found = mem.recall("", region={"min": [7, 1, 2], "max": [7, 1, 2], "frame": "yard"})["memories"]
            assert [m["id"] for m in found] == [2]
            mem.forget(2, "moved")
        assert [row[0] for row in _positions(dsn)] == [1]
        with psycopg.connect(dsn) as conn:
            conn.execute("SET enable_seqscan = off")  # a table this small is scanned otherwise
            plan = "\n".join(
                str(r[0])
                for r in conn.execute(
                    "EXPLAIN SELECT memory_id FROM memory_positions WHERE box && "
                    "cube(ARRAY[0, 0, 0, 0]::float8[], ARRAY[0, 1, 1, 1]::float8[])"
                )
            )
        assert "idx_memory_positions_box" in plan  # the region's box is an index condition
    finally:
        postgres_server.drop(dsn)


def _scattered(mem: RobotMemory) -> list[tuple[int, str, list[float]]]:
    """Positions around the origin in two frames, 2-D and 3-D, some exactly on the regions' edges below."""
    rng = np.random.default_rng(5)
    points: list[tuple[str, list[float]]] = [
        ("map", [1.0, 0.0, 0.0]),  # on the unit sphere
        ("map", [0.0, 1.0]),  # on the unit circle
        ("map", [1.0, 1.0, 1.0]),  # a corner of the unit box
        ("map", [0.5, 0.5]),  # 2-D: outside every 3-D region
        ("yard", [0.1, 0.1, 0.1]),  # another frame
    ]
    for _ in range(150):
        dims = int(rng.integers(2, 4))
        frame = "map" if rng.random() < 0.8 else "yard"
        points.append((frame, [round(float(v), 3) for v in rng.uniform(-2, 2, dims)]))
    stored = mem.save_perceptions(
        [
            {
                "description": f"sighting {k} of the pallet",
                "perception_type": "visual",
                "context": {"spatial": {"position": p, "frame": f}},
            }
            for k, (f, p) in enumerate(points)
        ]
    )
    return [(int(s["memory_id"]), f, p) for s, (f, p) in zip(stored, points, strict=True)]


REGIONS: list[dict[str, Any]] = [
    {"center": [0, 0, 0], "radius": 1},
    {"center": [0, 0], "radius": 1},
    {"center": [0.1, 0.1, 0.1], "radius": 0.5, "frame": "yard"},
    {"min": [0, 0, 0], "max": [1, 1, 1]},
    {"min": [-1, -0.5], "max": [0.5, 2]},
    {"center": [5, 5, 5], "radius": 0.1},
]


def test_the_sql_region_test_agrees_with_the_exact_one(postgres_server: Any, tmp_path: Path) -> None:
    """``regions.predicate`` (with the GiST box or without) passes exactly the memories ``Region.contains``
    and ``within`` keep, edges included."""
    dsn = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            stored = _scattered(mem)
        with psycopg.connect(dsn) as conn:
            for raw in REGIONS:
                region = parse_region({"field": "spatial.position", **raw})
                assert region is not None
                expected = set()
                for memory_id, frame, position in stored:
                    row = np.full((1, 3), np.nan)
                    row[0, : len(position)] = position
                    if frame == region.frame and region.contains(row)[0]:
                        expected.add(memory_id)
                assert {int(m) for m in regions.within(conn, region)} == expected, raw
                for indexed in (True, False):
                    sql, params = regions.predicate(region, indexed=indexed)
                    found = {
                        int(r[0]) for r in conn.execute(f"SELECT m.id FROM memories m WHERE {sql}", params)
                    }
                    assert found == expected, (raw, indexed)
                sql, params = regions.listing(region, [(">=", "2000-01-01"), ("<", "9999")])
                assert {int(r[0]) for r in conn.execute(sql, params)} == expected, raw
                sql, params = regions.listing(region, [("<", "2000-01-01")])
                assert conn.execute(sql, params).fetchall() == [], raw
                assert raw.get("radius") != 1 or expected  # the edge points are in the unit regions
    finally:
        postgres_server.drop(dsn)


class _Recording:
    """A connection that keeps the text of every statement it runs."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.statements: list[str] = []

    def execute(self, sql: str, params: Any = None) -> Any:
        self.statements.append(sql)
        return self.conn.execute(sql, params)

    def pipeline(self) -> Any:
        return self.conn.pipeline()


def test_a_region_reaches_the_server_as_a_condition(postgres_server: Any, tmp_path: Path) -> None:
    """A recall's region is SQL in the scope's predicate (no list of ids read first): offered to the GiST
    index alone, probed by memory id within a time window; a full listing of an object's sightings finds
    them through the context's index, and a limited one walks its order only when some memory holds the
    value."""
    dsn = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            stored = _scattered(mem)
        region = parse_region({"field": "spatial.position", "center": [0, 0, 0], "radius": 1})
        window = parse_filter({"observed_at": {"$gte": "2000-01-01T00:00:00+00:00"}})
        with psycopg.connect(dsn) as conn:
            recording = _Recording(conn)
            alone = PgCandidates(recording, RecallScope("default", 0.0, region=region))  # type: ignore[arg-type]
            windowed = PgCandidates(recording, RecallScope("default", 0.0, filter=window, region=region))  # type: ignore[arg-type]
            assert recording.statements == []  # nothing read before a channel asks
            assert "p.box &&" in alone.where and "p.box &&" not in windowed.where
            assert alone.listed(None, order="id") == windowed.listed(None, order="id")
            inside = alone.listed(None, order="id")
            assert inside == sorted(
                m for m, f, p in stored if f == "map" and len(p) == 3 and sum(v * v for v in p) <= 1
            )

            sighting = parse_filter({"spatial.frame": "yard"})
            yard = PgCandidates(recording, RecallScope("default", 0.0, filter=sighting))  # type: ignore[arg-type]
            recording.statements.clear()
            assert yard.listed(None, order="id") == sorted(m for m, f, _ in stored if f == "yard")
            assert "@>" in recording.statements[-1]  # the context index's containment test rides along
            recording.statements.clear()
            assert yard.listed(1, order="recent") == [max(m for m, f, _ in stored if f == "yard")]
            # With a limit the time order's index walks, once the index says some memory holds the value.
            assert "AND m.context @>" not in recording.statements[-1]
            assert "EXISTS (SELECT 1 FROM memories m WHERE" in recording.statements[-1]
            nowhere = parse_filter({"spatial.frame": "nowhere"})
            unknown = PgCandidates(recording, RecallScope("default", 0.0, filter=nowhere))  # type: ignore[arg-type]
            assert unknown.listed(1, order="recent") == [] and unknown.listed(None, order="id") == []
            anywhere = parse_filter({"$or": [{"spatial.frame": "nowhere"}, {"spatial.frame": "yard"}]})
            either = PgCandidates(recording, RecallScope("default", 0.0, filter=anywhere))  # type: ignore[arg-type]
            assert either.listed(2, order="id") == sorted(m for m, f, _ in stored if f == "yard")[:2]
    finally:
        postgres_server.drop(dsn)


def test_a_limited_listing_walks_a_wide_region_and_boxes_a_small_one(
    postgres_server: Any, tmp_path: Path
) -> None:
    """Listed newest first with a limit, a region that holds a good share of the collection is walked in
    the order's index with each position probed; a small one is found through the GiST box. Both give the
    first memories of the full listing."""
    dsn = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path)) as mem:
            stored = _scattered(mem)
        wide = parse_region({"field": "spatial.position", "center": [0, 0, 0], "radius": 2})
        small = parse_region({"field": "spatial.position", "min": [0.9, -0.1, -0.1], "max": [1.1, 0.1, 0.1]})
        with psycopg.connect(dsn) as conn:
            recording = _Recording(conn)
            for region, walked in ((wide, True), (small, False)):
                source = PgCandidates(recording, RecallScope("default", 0.0, region=region))  # type: ignore[arg-type]
                everything = source.listed(None, order="recent")
                assert everything, region
                for order in ("recent", "newest", "id"):
                    full = source.listed(None, order=order)
                    recording.statements.clear()
                    assert source.listed(3, order=order) == full[:3]
                    assert ("p.box &&" not in recording.statements[-1]) is walked, (region, order)
        assert len(stored) > 100
    finally:
        postgres_server.drop(dsn)


def test_a_store_of_version_7_gives_its_positions_their_times(postgres_server: Any, tmp_path: Path) -> None:
    """Schema 8 copies each memory's ``observed_at`` into its position (the migration for stored rows, the
    trigger for every later write, a changed time included) and indexes them by frame and time."""
    dsn = postgres_server.create()
    settings = Settings(home=tmp_path)
    try:
        with RobotMemory(dsn, embed_backend="none", settings=settings) as mem:
            early = mem.learn(
                "the pallet waits at bay one",
                context={"spatial": {"position": [1.0, 1.0, 0.0]}},
                observed_at="2026-01-01T08:00:00Z",
            )["memory_id"]
            late = mem.learn(
                "the crate waits at bay two",
                context={"spatial": {"position": [1.5, 1.0, 0.0]}},
                observed_at="2026-01-01T12:00:00Z",
            )["memory_id"]
        with psycopg.connect(dsn) as conn:  # back to the version before the positions' times
            for statement in regions.TIMED_DROP:
                conn.execute(statement)
            conn.execute(
                "UPDATE meta SET value = %s WHERE key = 'schema_version'",
                (str(schema.MIGRATIONS.index(schema._migrate_timed_positions)),),
            )
        region = {"center": [1, 1, 0], "radius": 1}
        with RobotMemory(dsn, embed_backend="none", settings=settings) as mem:
            assert _times(dsn) == {
                early: "2026-01-01T08:00:00.000000+00:00",
                late: "2026-01-01T12:00:00.000000+00:00",
            }
            found = mem.recall("", region=region, since="2026-01-01T10:00:00Z")["memories"]
            assert [m["id"] for m in found] == [late]
            mem.update(early, "the pallet waits at bay one again", observed_at="2026-01-01T13:00:00Z")
            assert _times(dsn)[early] == "2026-01-01T13:00:00.000000+00:00"
            found = mem.recall("bay", region=region, since="2026-01-01T10:00:00Z")["memories"]
            assert {m["id"] for m in found} == {early, late}
            assert mem.recall("", region=region, until="2026-01-01T10:00:00Z")["memories"] == []
        with psycopg.connect(dsn) as conn:
            conn.execute("SET enable_seqscan = off")  # a table this small is scanned otherwise
            conn.execute("SET enable_bitmapscan = off")
            plan = "\n".join(
                str(r[0])
                for r in conn.execute(
                    "EXPLAIN SELECT memory_id FROM memory_positions WHERE frame = 'map' "
                    "AND observed_at >= '2026-01-01T10' AND observed_at <= '2026-01-01T14'"
                )
            )
        assert "idx_memory_positions_time" in plan
    finally:
        postgres_server.drop(dsn)


def _times(dsn: str) -> dict[int, str]:
    with psycopg.connect(dsn) as conn:
        return {
            int(r[0]): str(r[1]) for r in conn.execute("SELECT memory_id, observed_at FROM memory_positions")
        }


@pytest.mark.parametrize(
    "window",
    [
        {"observed_at": {"$gte": "2026-01-01T00:30:00.000000+00:00", "$lte": "2026-01-01T02:00:00+00:00"}},
        {"observed_at": {"$gte": "2026-01-01T00:30:00.000000+00:00"}},  # one condition, not a conjunction
        {"observed_at": {"$lt": "2026-01-01T02:00:00+00:00"}, "colour": "red"},  # beside a context condition
        {
            "observed_at": {"$gte": "2026-01-01T00:30:00+00:00", "$lte": "2026-01-01T02:00:00+00:00"},
            "colour": "x",
        },
    ],
)
def test_a_region_within_a_window_is_listed_once_and_ranked_exactly(
    postgres_server: Any, tmp_path: Path, window: dict[str, Any]
) -> None:
    """A region within a time window is listed with each memory's cosine in one statement; both channels
    rank only those memories, and give what the same channels give over the scope's predicate, whatever
    else the filter asks beside the window (the window bounds the positions, the rest the memories)."""
    dsn = postgres_server.create()
    try:
        with RobotMemory(dsn, embed_backend="hash", settings=Settings(home=tmp_path)) as mem:
            rng = np.random.default_rng(3)
            colours = [str(rng.choice(["red", "blue", "green"])) for _ in range(200)]
            mem.save_perceptions(
                [
                    {
                        "description": f"{colours[k]} box number {k} on the floor",
                        "perception_type": "visual",
                        "context": {
                            "colour": colours[k],
                            "spatial": {"position": [float(v) for v in rng.uniform(-3, 3, 3)]},
                        },
                        "observed_at": 1_767_225_600 + 60 * k,
                    }
                    for k in range(200)
                ]
            )
            vector = mem.engine.embed("a red box", is_query=True)
        region = parse_region({"field": "spatial.position", "center": [0, 0, 0], "radius": 2.5})
        scope = RecallScope("default", 0.0, filter=parse_filter(window), region=region)
        with psycopg.connect(dsn) as conn, conn.transaction():
            register_vector(conn)
            listed = PgCandidates(conn, scope)
            assert listed._lists_scope()  # noqa: SLF001
            ids = listed._listed_scope(vector)  # noqa: SLF001
            assert ids is not None
            rows = conn.execute(f"SELECT m.id FROM memories m WHERE {listed.where}", listed.params)
            expected = {int(r[0]) for r in rows}
            assert set(ids.tolist()) == expected and len(expected) < 200
            assert listed.listed(3, order="id") == sorted(expected)[:3]  # from the listing, no server
            assert listed.listed(None, order="id", exclude=set(sorted(expected)[:1])) == sorted(expected)[1:]
            query = ChannelQuery(words=tuple(query_tokens("red")), vector=vector, depth=10)
            answer = listed.ranked(query)
            probed = PgCandidates(conn, scope)
            probed._listing = False  # noqa: SLF001  the same scope through its predicate
            reference = probed.ranked(query)
        assert answer.text == reference.text and answer.vectors == reference.vectors
        assert {m for m, _ in answer.vectors} <= expected
        assert bool(answer.vectors) == bool(expected) == (window.get("colour") != "x")
    finally:
        postgres_server.drop(dsn)
