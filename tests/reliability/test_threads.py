"""One RobotMemory shared by many threads: reads do not queue behind writes, and nothing is lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import write_lock_held

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.query.vectors import VectorIndex


def test_recall_does_not_wait_for_a_write_stuck_on_the_lock(
    tmp_path: Path, locate: Callable[[str], Any]
) -> None:
    with RobotMemory(locate("memory.db"), embed_backend="hash", settings=Settings(home=tmp_path)) as mem:
        mem.learn("grip_force=12.5N lifted the mug")
        with write_lock_held(mem):  # another process holds the write lock
            writer = threading.Thread(target=mem.learn, args=("grip_force=13N lifted the kettle",))
            writer.start()
            time.sleep(0.3)  # the learn is now waiting for the lock inside this instance
            done: dict[str, float] = {}

            def recall() -> None:
                started = time.perf_counter()
                mem.recall("mug grip force")
                done["seconds"] = time.perf_counter() - started

            reader = threading.Thread(target=recall)
            reader.start()
            reader.join(timeout=2.0)
            finished_while_locked = not reader.is_alive()
        reader.join()
        writer.join()
        assert finished_while_locked, "recall waited for another thread's write"
        assert done["seconds"] < 2.0
        assert any("kettle" in m["content"] for m in mem.recall("kettle", n=5)["memories"])


def test_vector_index_ranks_consistently_while_another_thread_grows_it() -> None:
    import numpy as np

    index = VectorIndex(8, capacity=4)
    rng = np.random.default_rng(0)
    failures: list[BaseException] = []
    stop = threading.Event()

    def grow() -> None:
        for i in range(20_000):
            vector = rng.standard_normal(8).astype(np.float32)
            index.upsert(i, vector / np.linalg.norm(vector))
            if i % 3 == 0:
                index.remove(i // 2)
        stop.set()

    def rank() -> None:
        query = np.ones(8, dtype=np.float32) / np.sqrt(8)
        while not stop.is_set():
            try:
                ranked = list(index.ranked(query, first=10))
                assert all(memory_id >= 0 for memory_id, _ in ranked)
            except BaseException as exc:  # any error in this thread fails the test
                failures.append(exc)
                return

    threads = [threading.Thread(target=grow), threading.Thread(target=rank), threading.Thread(target=rank)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[0]
