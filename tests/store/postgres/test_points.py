"""Nearest-first from this process's copy of the points gives the server's answer (the same memories,
every tie at the n-th distance, the same distances) and keeps up with other writers."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.query.filters import parse_filter
from robotmem.query.spatial import SpatialSort
from robotmem.store.postgres import candidates as pg_candidates
from robotmem.store.postgres.candidates import PgCandidates
from robotmem.store.postgres.points import SpatialPoints
from robotmem.store.postgres.store import PostgresStore
from robotmem.store.protocol import RecallScope

PATH = ("spatial", "object_position")


def _point(rng: random.Random, i: int) -> Any:
    """Mostly 3-D points on a coarse grid (so distances tie), and the odd shapes a context may hold."""
    kind = i % 10
    grid = [rng.randint(-4, 4) * 0.5 for _ in range(3)]
    if kind == 7:
        return {"value": grid, "unit": "m"}
    if kind == 8:
        return grid[:2]  # another dimension
    if kind == 9:
        return ["a", 1, 2] if i % 20 == 9 else [rng.choice([1e200, -3e199]), 0.0, 1]
    return [int(v) if v.is_integer() else v for v in grid] if i % 3 == 0 else grid


@pytest.fixture(scope="module")
def store(postgres_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RobotMemory]:
    dsn = postgres_server.create()
    mem = RobotMemory(dsn, embed_backend="none", settings=Settings(home=Path(tmp_path_factory.mktemp("pts"))))
    rng = random.Random(7)
    try:
        for i in range(320):
            mem.learn(
                f"placement {i} of the part on the fixture plate",
                context={"spatial": {"object_position": _point(rng, i)}, "lot": i % 4},
                collection="default" if i % 5 else "other",
            )
        yield mem
    finally:
        mem.close()
        postgres_server.drop(dsn)


def _nearest(
    mem: RobotMemory, scope: RecallScope, spatial: SpatialSort, n: int, points: Any
) -> dict[int, float]:
    return mem.engine.read(lambda tx: PgCandidates(tx.conn, scope, None, points).nearest(spatial, n))


CASES = [
    ((0.0, 0.0, 0.0), None, None),
    ((1.0, -0.5, 2.0), {"lot": 1}, None),
    ((0.5, 0.5, 0.5), None, 1.5),
    ((3e199, 0.0, 0.0), None, None),
    ((0.0, 0.0), {"lot": {"$in": [0, 2]}}, None),
    ((9.0, 9.0, 9.0), {"lot": 99}, None),
]


@pytest.mark.parametrize(("target", "context_filter", "reach"), CASES)
@pytest.mark.parametrize("n", [1, 5, 40])
def test_points_in_the_process_find_the_servers_nearest(
    store: RobotMemory,
    target: tuple[float, ...],
    context_filter: dict[str, Any] | None,
    reach: float | None,
    n: int,
) -> None:
    scope = RecallScope(
        collection="default",
        min_confidence=0.0,
        filter=parse_filter(context_filter) if context_filter is not None else None,
    )
    spatial = SpatialSort(PATH, target, reach)
    expected = _nearest(store, scope, spatial, n, None)
    points = SpatialPoints()
    found = _nearest(store, scope, spatial, n, points)
    assert points.stats()["paths"] == [PATH], "the process's points answered"
    assert found == expected  # the same memories and the same floats
    if context_filter != {"lot": 99}:
        assert len(expected) >= min(n, 5), "the case finds memories"


def test_when_the_filters_pass_few_the_server_answers(
    store: RobotMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    scope = RecallScope(collection="default", min_confidence=0.0, filter=parse_filter({"lot": 3}))
    spatial = SpatialSort(PATH, (0.0, 0.0, 0.0))
    expected = _nearest(store, scope, spatial, 5, None)
    monkeypatch.setattr(pg_candidates, "_MOST_CHECKED", 10)
    assert _nearest(store, scope, spatial, 5, SpatialPoints()) == expected
    assert expected


def test_other_writers_moves_reach_the_next_recall(postgres_server: Any, tmp_path: Path) -> None:
    dsn = postgres_server.create()
    reader = RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path / "a"))
    writer = RobotMemory(dsn, embed_backend="none", settings=Settings(home=tmp_path / "b"))
    spatial = {"field": "spatial.object_position", "target": [0, 0, 0]}
    try:
        ids = [
            writer.learn(
                f"cup {i} placed on the tray", context={"spatial": {"object_position": [i + 1, 0, 0]}}
            )["memory_id"]
            for i in range(6)
        ]

        def nearest() -> list[int]:
            return [m["id"] for m in reader.recall("", spatial_sort=spatial, n=3)["memories"]]

        assert nearest() == ids[:3]
        writer.update(
            ids[5], "cup 5 placed on the tray", context={"spatial": {"object_position": [0.1, 0, 0]}}
        )
        writer.forget(ids[0], "knocked over")
        moved = writer.learn(
            "cup 9 placed on the tray", context={"spatial": {"object_position": [0.2, 0, 0]}}
        )
        assert nearest() == [ids[5], moved["memory_id"], ids[1]]
        store = reader.engine.store
        assert isinstance(store, PostgresStore) and store.points is not None
        assert store.points.stats()["paths"] == [PATH], "the reader's points answered"
    finally:
        reader.close()
        writer.close()
        postgres_server.drop(dsn)
