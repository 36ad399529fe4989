"""A varied database the mirror and candidate tests share, and helpers to query it directly."""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.store.protocol import VectorQuery
from robotmem.store.sqlite.store import SqliteStore
from robotmem.store.sqlite.vectors import MirroredIndex

OBJECTS = ["mug", "paper cup", "glass bottle", "sponge", "banana", "cardboard box", "tennis ball"]
SURFACES = ["wet", "glossy", "rough", "dusty"]
CHINESE = ["机器人抓取杯子时打滑", "夹爪力度太大压坏了纸杯", "湿滑表面需要更大的抓取力", "推动方块到目标位置"]


def fill(mem: RobotMemory, count: int, seed: int) -> None:
    """Store ``count`` varied memories: English and Chinese, facts and perceptions, three robots, two
    collections, numbers, positions and labels in the context."""
    rng = random.Random(seed)
    for i in range(count):
        thing = rng.choice(OBJECTS)
        force = round(rng.uniform(1, 30), 1)
        text = (
            f"grip_force={force}N on the {thing}, {rng.choice(SURFACES)} surface, "
            f"{'grasped' if rng.random() < 0.6 else 'slipped'} after {rng.randint(1, 9)} tries #{i}"
        )
        if rng.random() < 0.2:
            text = rng.choice(CHINESE) + f" 第{i}次"
        if i % 9 == 0:
            text += " naïve café x² ½ Ⅻ"  # diacritics and compatibility forms
        context: dict[str, Any] = {
            "params": {"grip_force": {"value": force, "unit": "N"}},
            "task": {"success": rng.random() < 0.6, "name": rng.choice(["grasp", "push", "place"])},
            "robot": {"id": rng.choice(["franka-01", "franka-02", "ur5-01"])},
            "env": {"sim_or_real": rng.choice(["sim", "sim", "real"])},
            "spatial": {"object_position": [rng.uniform(0, 2), rng.uniform(0, 1), 0.4]},
        }
        if rng.random() < 0.3:
            context["labels"] = rng.sample(["fragile", "heavy", "wet", "soft"], k=2)
        collection = rng.choice(["manipulation", "manipulation", "navigation"])
        if rng.random() < 0.15:
            mem.save_perception(text, perception_type="tactile", metadata=context, collection=collection)
        else:
            mem.learn(text, context=context, collection=collection)


@pytest.fixture(scope="session")
def filled_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database of 160 varied memories, written once per run; each test gets a copy (``filled``)."""
    home = tmp_path_factory.mktemp("mirror")
    with RobotMemory(home / "mirror.db", settings=Settings(home=home), embed_backend="hash") as mem:
        fill(mem, 160, seed=3)
    assert not (home / "mirror.db-wal").exists()  # closed: the file alone holds every memory
    return home / "mirror.db"


@pytest.fixture
def filled(tmp_path: Path, settings: Settings, filled_file: Path) -> Iterator[RobotMemory]:
    shutil.copyfile(filled_file, tmp_path / "mirror.db")
    mem = RobotMemory(tmp_path / "mirror.db", settings=settings, embed_backend="hash")
    yield mem
    mem.close()


def vector_index(mem: RobotMemory, conn: sqlite3.Connection) -> tuple[SqliteStore, MirroredIndex]:
    """The store of ``mem`` and its vector index of the database's model, synced on ``conn``."""
    store = mem.engine.store
    assert isinstance(store, SqliteStore)
    model, _ = mem.engine.vector_model()
    assert model is not None
    index = store.vector_index(*model)
    index.sync(conn)
    return store, index


def query_vector(mem: RobotMemory, query: str) -> VectorQuery:
    """The query embedding of ``query`` by ``mem``'s embedder."""
    model, _ = mem.engine.vector_model()
    assert model is not None
    return VectorQuery(mem.embedder.embed_one(query, is_query=True), *model)
