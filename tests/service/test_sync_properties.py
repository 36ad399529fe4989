"""Random interleavings of learn, update, forget and sync on two robots always converge, losing nothing.

Robot arm-a keeps a SQLite file; arm-b and the fleet store are of the test's engine, so on PostgreSQL a
SQLite robot and a PostgreSQL one sync through a PostgreSQL fleet store.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import FakeClock
from tests.service.test_sync import snapshot, sync_until_quiet
from tests.strategies import examples

from robotmem import RobotMemError, RobotMemory
from robotmem.config import Settings

ROBOTS = ("arm-a", "arm-b")
steps = st.lists(
    st.one_of(
        st.tuples(st.just("learn"), st.sampled_from(ROBOTS), st.just(0)),
        st.tuples(st.just("update"), st.sampled_from(ROBOTS), st.integers(0, 20)),
        st.tuples(st.just("forget"), st.sampled_from(ROBOTS), st.integers(0, 20)),
        st.tuples(st.just("sync"), st.sampled_from(ROBOTS), st.just(0)),
        st.tuples(st.just("tick"), st.just(""), st.integers(0, 3)),
    ),
    min_size=1,
    max_size=24,
)


def run(script: list[tuple[str, str, int]], root: Path, locate: Callable[[str], Any]) -> None:
    clock = FakeClock()
    base = Settings(home=root / "home")
    fleet = locate("fleet.db")
    places = {"arm-a": root / "arm-a.db", "arm-b": locate("arm-b.db")}
    mems = {
        name: RobotMemory(
            places[name], embed_backend="hash", settings=base.replace(robot_id=name), clock=clock
        )
        for name in ROBOTS
    }
    learned: set[str] = set()
    forgotten: set[str] = set()
    counter = itertools.count()
    try:
        for action, robot, pick in script:
            mem = mems.get(robot)
            if action == "tick":
                clock.advance(microseconds=pick)
            elif action == "sync":
                assert mem is not None
                mem.sync(fleet)
            elif action == "learn":
                assert mem is not None
                k = next(counter)
                result = mem.learn(f"{robot} trial {k}: grip_force={k}.25N held for {k + 3} s")
                learned.add(mem.get_memory(result["memory_id"])["uid"])
            else:
                assert mem is not None
                rows: list[dict[str, Any]] = mem.list_memories(status="any", limit=100)["memories"]
                if not rows:
                    continue
                row = rows[pick % len(rows)]
                k = next(counter)
                try:
                    if action == "update":
                        mem.update(row["id"], f"revised trial {k}: grip_force={k}.75N held for {k + 5} s")
                    else:
                        mem.forget(row["id"], "wrong")
                        forgotten.add(row["uid"])
                except RobotMemError:
                    pass  # no longer active here: the store refuses, as it should
        sync_until_quiet(fleet, *mems.values())
        views = [snapshot(mem, root / f"{name}.jsonl") for name, mem in mems.items()]
        with RobotMemory(fleet, embed_backend="hash", settings=base) as hub:
            views.append(snapshot(hub, root / "fleet.jsonl"))
        assert views[0] == views[1] == views[2]
        assert set(views[0]["memories"]) == learned
        for uid in forgotten:
            assert views[0]["memories"][uid]["memory"]["status"] == "invalidated"
        # Converged: one more round writes nothing.
        for mem in mems.values():
            result = mem.sync(fleet)
            assert all(
                result[leg][kind][name] == 0
                for leg in ("pushed", "pulled")
                for kind in ("memories", "sessions")
                for name in ("created", "updated")
            )
    finally:
        for mem in mems.values():
            mem.close()


@settings(
    max_examples=examples(15),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(script=steps)
def test_random_interleavings_on_two_robots_converge(
    script: list[tuple[str, str, int]], locate: Callable[[str], Any]
) -> None:
    with tempfile.TemporaryDirectory() as root:
        run(script, Path(root), locate)
