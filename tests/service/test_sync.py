"""Two robots on their own SQLite files and one fleet store (a SQLite file, or a PostgreSQL database): offline
learning, sync, scoped recall, conflicts."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import FakeClock, has_tables

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
from robotmem.store.sqlite import regions
from robotmem.store.sqlite import schema as migrations

LOCAL = {"id", "access_count", "last_accessed", "superseded_by", "merged_ids", "embedding_model"}


def open_robot(tmp_path: Path, name: str, settings: Settings, clock: FakeClock) -> RobotMemory:
    return RobotMemory(
        tmp_path / f"{name}.db", embed_backend="hash", settings=settings.replace(robot_id=name), clock=clock
    )


@pytest.fixture
def robots(
    tmp_path: Path, locate: Callable[[str], Any], settings: Settings, clock: FakeClock
) -> Iterator[tuple[RobotMemory, RobotMemory, Any]]:
    """Two robots on SQLite files, and the location of a fleet store of the test's engine."""
    a, b = open_robot(tmp_path, "arm-a", settings, clock), open_robot(tmp_path, "arm-b", settings, clock)
    try:
        yield a, b, locate("fleet.db")
    finally:
        a.close()
        b.close()


def snapshot(mem: RobotMemory, path: Path) -> dict[str, Any]:
    """Every memory (by uid, local fields left out, vectors in) and session of ``mem``'s full export."""
    mem.export_memories(path, vectors=True)
    memories: dict[str, Any] = {}
    sessions: dict[str, Any] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        record = json.loads(line)
        if record["record"] == "session":
            sessions[record["session"]["id"]] = record["session"]
        else:
            fields = {k: v for k, v in record["memory"].items() if k not in LOCAL}
            memories[fields["uid"]] = {**record, "memory": fields}
    return {"memories": memories, "sessions": sessions}


def written(result: dict[str, Any]) -> int:
    return sum(
        counts[kind][name]
        for leg in ("pushed", "pulled")
        if (counts := result[leg]) is not None
        for kind in ("memories", "sessions")
        for name in ("created", "updated")
    )


def sync_until_quiet(fleet: Any, *mems: RobotMemory) -> None:
    for _ in range(3):
        for mem in mems:
            mem.sync(fleet)


def learn_offline(a: RobotMemory, b: RobotMemory, clock: FakeClock) -> None:
    episode = a.start_session(context={"task": "push"})
    a.learn("grip_force=12.5N yields the highest grasp success on mugs", context={"task": {"success": True}})
    clock.advance(seconds=1)
    a.save_perception("wrist camera frame of the mug before the grasp", data={"w": 64})
    a.end_session(episode["session_id"], outcome_score=0.8)
    clock.advance(seconds=1)
    b.learn("grip_force=8N crushed the paper cup", context={"task": {"success": False}})
    b.learn("the hallway door needs 0.6 m of clearance when navigating")


def test_two_robots_sync_through_the_fleet_and_converge(
    robots: tuple[RobotMemory, RobotMemory, Any], clock: FakeClock, tmp_path: Path
) -> None:
    a, b, fleet = robots
    learn_offline(a, b, clock)
    first = a.sync(fleet)
    assert first["pushed"]["memories"]["created"] == 2 and first["pushed"]["sessions"]["created"] == 1
    second = b.sync(fleet)
    assert second["pushed"]["memories"]["created"] == 2 and second["pulled"]["memories"]["created"] == 2
    a.sync(fleet)
    # Fleet-wide recall on either robot sees every robot's experience, each with its robot.
    for mem in (a, b):
        found = mem.recall("grip force", n=10, min_confidence=0.0)
        assert {(m["robot_id"], m["content"][:14]) for m in found["memories"]} >= {
            ("arm-a", "grip_force=12."),
            ("arm-b", "grip_force=8N "),
        }
    with RobotMemory(fleet, embed_backend="hash", settings=a.settings.replace(robot_id="")) as hub:
        assert hub.recall("", n=10, min_confidence=0.0)["total"] == 4
        view = snapshot(hub, tmp_path / "fleet.jsonl")
    views = [snapshot(mem, tmp_path / f"{i}.jsonl") for i, mem in enumerate((a, b))]
    assert views[0] == views[1] == view
    assert len(view["memories"]) == 4 and len(view["sessions"]) == 1
    assert all(record["vector"] for record in view["memories"].values())
    # Re-running sync writes nothing anywhere.
    assert [written(mem.sync(fleet)) for mem in (a, b, a, b)] == [0, 0, 0, 0]
    assert snapshot(a, tmp_path / "again.jsonl") == views[0]


def test_sync_is_incremental_from_the_cursor(
    robots: tuple[RobotMemory, RobotMemory, Any], clock: FakeClock
) -> None:
    a, b, fleet = robots
    for i in range(30):
        a.learn(f"episode {i}: reward={i * 3} after {i + 10} steps")
    sync_until_quiet(fleet, a)
    a.learn("episode 99: reward=7 after 12 steps")
    result = a.sync(fleet)
    examined = sum(result["pushed"]["memories"].values())
    assert result["pushed"]["memories"]["created"] == 1 and examined == 1
    assert sum(result["pulled"]["memories"].values()) == 1  # the one just pushed, seen once and unchanged
    full = a.sync(fleet, full=True)
    assert full["pushed"]["memories"] == {
        "created": 0,
        "updated": 0,
        "unchanged": 31,
        "kept": 0,
        "refused": 0,
    }
    assert full["pulled"]["memories"] == {
        "created": 0,
        "updated": 0,
        "unchanged": 31,
        "kept": 0,
        "refused": 0,
    }


def test_a_later_edit_wins_and_forget_wins_over_any_edit(
    robots: tuple[RobotMemory, RobotMemory, Any], clock: FakeClock, tmp_path: Path
) -> None:
    a, b, fleet = robots
    one = a.learn("grip_force=10N holds the mug")["memory_id"]
    two = a.learn("approach speed 0.3 m/s avoids slipping")["memory_id"]
    sync_until_quiet(fleet, a, b)
    uid_one, uid_two = (a.get_memory(m)["uid"] for m in (one, two))
    on_b = {m["uid"]: m["id"] for m in b.recall("", n=10, min_confidence=0.0)["memories"]}
    # Concurrent edits of one memory: b edits later, so b's text wins on both robots.
    a.update(one, "grip_force=11N holds the mug")
    clock.advance(seconds=5)
    b.update(on_b[uid_one], "grip_force=12N holds the mug")
    # A forget on a against a later edit on b: the forget wins.
    a.forget(two, "measured with a broken sensor")
    clock.advance(seconds=5)
    b.update(on_b[uid_two], "approach speed 0.35 m/s avoids slipping")
    sync_until_quiet(fleet, a, b)
    for mem, ids in ((a, {uid_one: one, uid_two: two}), (b, on_b)):
        assert mem.get_memory(ids[uid_one])["content"] == "grip_force=12N holds the mug"
        forgotten = mem.get_memory(ids[uid_two])
        assert forgotten["status"] == "invalidated" and forgotten["content"].startswith("approach speed 0.3 ")
        assert "approach" not in json.dumps(mem.recall("approach speed", min_confidence=0.0)["memories"])
    assert snapshot(a, tmp_path / "a.jsonl") == snapshot(b, tmp_path / "b.jsonl")


def test_edits_at_the_same_instant_have_one_winner_everywhere(
    robots: tuple[RobotMemory, RobotMemory, Any], tmp_path: Path
) -> None:
    a, b, fleet = robots
    memory_id = a.learn("grip_force=10N holds the mug")["memory_id"]
    sync_until_quiet(fleet, a, b)
    uid = a.get_memory(memory_id)["uid"]
    on_b = {m["uid"]: m["id"] for m in b.recall("", n=5, min_confidence=0.0)["memories"]}[uid]
    a.update(memory_id, "grip_force=11N holds the mug")  # the shared fake clock has not moved
    b.update(on_b, "grip_force=13N holds the mug")
    sync_until_quiet(fleet, b, a)
    assert a.get_memory(memory_id)["content"] == b.get_memory(on_b)["content"]
    assert snapshot(a, tmp_path / "a.jsonl") == snapshot(b, tmp_path / "b.jsonl")


def test_consolidation_lineage_and_sessions_travel(
    robots: tuple[RobotMemory, RobotMemory, Any], clock: FakeClock
) -> None:
    a, b, fleet = robots
    a.settings = a.settings.replace(dedup_jaccard=1.5)  # each wording stored: end_session merges them
    episode = a.start_session(context={"task": "grasp"})
    for text in (
        "the cup slipped when the gripper closed too fast on the wet handle",
        "Basically, the cup really slipped when the gripper closed too fast on the wet handle, as expected, of course",
        "Note: the cup actually just slipped when the gripper closed too fast on the wet handle, as usual, honestly",
    ):
        assert a.learn(text)["status"] == "created"
    ended = a.end_session(episode["session_id"], outcome_score=0.4)
    assert ended["consolidated"]["superseded_count"] == 2
    sync_until_quiet(fleet, a, b)
    session = b.get_session(episode["session_id"])
    assert session["status"] == "ended" and session["outcome_score"] == 0.4
    rows = b.list_memories(status="any", limit=10)["memories"]
    by_status = {m["status"]: m for m in rows}
    superseded = [m for m in rows if m["status"] == "superseded"]
    assert len(superseded) == 2 and by_status["active"]["session_id"] == episode["session_id"]
    assert {m["superseded_by"] for m in superseded} == {by_status["active"]["id"]}
    detail = b.get_memory(by_status["active"]["id"])
    assert sorted(detail["merged_ids"]) == sorted(m["id"] for m in superseded)


def test_recall_scoped_to_robots_and_the_own_robot_boost(
    robots: tuple[RobotMemory, RobotMemory, Any],
) -> None:
    a, b, fleet = robots
    a.learn("the mug handle faces left on shelf 2")
    b.learn("the mug handle faces left on shelf 3")
    sync_until_quiet(fleet, a, b)
    assert {m["robot_id"] for m in a.recall("mug handle", robots="self")["memories"]} == {"arm-a"}
    assert {m["robot_id"] for m in a.recall("mug handle", robots=["arm-b"])["memories"]} == {"arm-b"}
    assert {m["robot_id"] for m in a.recall("mug handle", robots="arm-a,arm-b")["memories"]} == {
        "arm-a",
        "arm-b",
    }
    assert a.recall("mug handle", robots=["arm-z"])["total"] == 0
    # The boost multiplies the own robot's fused score: the ratio of the two scores moves by exactly 1.2.
    boosted = {m["robot_id"]: m["score"] for m in a.recall("mug handle")["memories"]}
    a.settings = a.settings.replace(own_robot_boost=1.0)
    plain = {m["robot_id"]: m["score"] for m in a.recall("mug handle")["memories"]}
    assert boosted["arm-a"] / boosted["arm-b"] == pytest.approx(
        1.2 * plain["arm-a"] / plain["arm-b"], rel=1e-4
    )
    assert a.recall("mug handle", robots="self")["memories"][0]["score"] == 1.0


@pytest.mark.parametrize(
    ("robots", "message"),
    [
        ([], "robots: give at least one robot id"),
        ("", "robots: give at least one robot id"),
        (["arm a"], r"robots\[0\]: 'arm a' has spaces"),
        ([""], r"robots\[0\]: a robot id is a string of 1..200"),
        (["x"] * 1001, "robots: 1001 robot ids; the limit is 1000"),
    ],
)
def test_bad_robot_scopes_are_refused(memory: RobotMemory, robots: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        memory.recall("mug", robots=robots)


def test_bad_fleet_arguments_are_refused_and_write_nothing(
    robots: tuple[RobotMemory, RobotMemory, Any], tmp_path: Path
) -> None:
    a, _, fleet = robots
    with pytest.raises(ValidationError, match="direction: 'sideways'"):
        a.sync(fleet, direction="sideways")
    with pytest.raises(ValidationError, match="this robot's own store"):
        a.sync(a.path)
    with pytest.raises(ValidationError, match="fleet: the directory of"):
        a.sync(tmp_path / "missing" / "fleet.db")
    with pytest.raises(ValidationError, match="fleet: mysql:// stores need an engine"):
        a.sync("mysql://fleet.example/robots")
    assert not has_tables(fleet)


def test_robot_id_setting_is_checked(settings: Settings) -> None:
    with pytest.raises(
        ValidationError, match="setting 'robot_id' is 'arm 1'; accepted: at most 200 printable"
    ):
        settings.replace(robot_id="arm 1")
    with pytest.raises(
        ValidationError, match="setting 'own_robot_boost' is 0.0; accepted: a finite number within"
    ):
        settings.replace(own_robot_boost=0)


def test_without_a_setting_the_robot_id_is_derived_once_per_file(
    locate: Callable[[str], Any], settings: Settings
) -> None:
    store = locate("r.db")
    with RobotMemory(store, embed_backend="none", settings=settings) as mem:
        memory_id = mem.learn("the charger is behind the blue door")["memory_id"]
        derived = mem.get_memory(memory_id)["robot_id"]
    with RobotMemory(store, embed_backend="none", settings=settings) as mem:
        again = mem.learn("the dock is next to the charger")["memory_id"]
        assert mem.get_memory(again)["robot_id"] == derived
    with RobotMemory(locate("other.db"), embed_backend="none", settings=settings) as other:
        elsewhere = other.learn("the charger is behind the blue door")["memory_id"]
        assert other.get_memory(elsewhere)["robot_id"] != derived


def test_a_version_3_file_gains_robot_ids_and_syncs_all_its_memories(
    tmp_path: Path, locate: Callable[[str], Any], settings: Settings, clock: FakeClock
) -> None:
    """An old robot file (SQLite) is migrated, then pushes every memory to the fleet store."""
    db = tmp_path / "v3.db"
    with RobotMemory(db, embed_backend="hash", settings=settings, clock=clock) as mem:
        for i in range(3):
            mem.learn(f"episode {i}: reward={i}")
    conn = sqlite3.connect(db)
    # Back to version 3: drop what versions 5 and 4 added, and the change rows version 2 files never had.
    for statement in (
        *migrations.OBJECT_IDS_DROP,  # the later index of object ids
        *regions.DROP,  # and the later spatial index
        *(
            f"DROP TRIGGER {name}"
            for name in ("context_values_insert", "context_values_update", "context_values_delete")
        ),
        "DROP TABLE context_values",
        "DROP TABLE memory_episode_vectors",
        "DROP TABLE sync_peers",
        *(
            f"DROP TRIGGER {name}"
            for name in (
                "sessions_logged_insert",
                "sessions_logged_update",
                "session_outcomes_logged_insert",
                "session_outcomes_logged_update",
            )
        ),
        "DROP TABLE session_changes",
        "DROP INDEX idx_mem_robot",
        "DROP TRIGGER memories_logged_update",
        "DROP INDEX idx_mem_observed",
        "DROP INDEX idx_mem_observed_in",
        "ALTER TABLE memories DROP COLUMN observed_at",
        "ALTER TABLE memories DROP COLUMN robot_id",
        "DELETE FROM meta WHERE key IN ('store_id', 'robot_id')",
        "DELETE FROM memory_changes WHERE memory_id = 1",
        f"CREATE TRIGGER memories_logged_update AFTER UPDATE OF {migrations._TRACKED_V3} ON memories BEGIN "
        f"{migrations._LOG_CHANGE.format('NEW.id')}; END",
        "PRAGMA user_version = 3",
    ):
        conn.execute(statement)
    conn.commit()
    conn.close()
    with RobotMemory(db, embed_backend="hash", settings=settings, clock=clock) as mem:
        records = mem.recall("", n=10, min_confidence=0.0)["memories"]
        assert len({m["robot_id"] for m in records}) == 1 and records[0]["robot_id"]
        assert mem.integrity_report()["ok"]
        assert mem.sync(locate("fleet.db"))["pushed"]["memories"]["created"] == 3


def test_vectors_travel_only_to_a_robot_whose_embedder_made_them(
    robots: tuple[RobotMemory, RobotMemory, Any], tmp_path: Path, settings: Settings
) -> None:
    a, _, fleet = robots
    a.learn("the charger is behind the blue door")
    a.sync(fleet)
    with RobotMemory(tmp_path / "plain.db", embed_backend="none", settings=settings) as plain:
        result = plain.sync(fleet)
        assert result["pulled"]["memories"]["created"] == 1 and result["without_vector"] == 1
        assert plain.embedding_status()["database_model"] is None
    with RobotMemory(tmp_path / "hashed.db", embed_backend="hash", settings=settings) as hashed:
        result = hashed.sync(fleet)
        assert result["pulled"]["memories"]["created"] == 1 and result["without_vector"] == 0
        assert hashed.recall("blue door charger")["mode"] == "hybrid"
        assert hashed.embedding_status()["without_vector"] == 0


def test_an_edit_is_later_than_what_it_edits_even_with_a_clock_behind(
    memory: RobotMemory, clock: FakeClock
) -> None:
    memory_id = memory.learn("grip_force=10N holds the mug")["memory_id"]
    before = memory.get_memory(memory_id)["updated_at"]
    clock.advance(hours=-2)
    memory.update(memory_id, "grip_force=11N holds the mug")
    after = memory.get_memory(memory_id)["updated_at"]
    assert after > before and after.startswith(before[:20])  # one microsecond later, same format


def test_a_memory_beyond_this_robots_limits_is_left_out_and_named(
    robots: tuple[RobotMemory, RobotMemory, Any], caplog: pytest.LogCaptureFixture
) -> None:
    a, b, fleet = robots
    a.learn("the cup slipped when the gripper closed too fast on the wet handle")
    a.learn("lidar misses glass doors")
    a.sync(fleet)
    b.settings = b.settings.replace(max_insight_chars=40)
    result = b.sync(fleet)
    assert result["pulled"]["memories"]["created"] == 1 and result["pulled"]["memories"]["refused"] == 1
    assert "is left out" in caplog.text and "memory.content: is 66 characters; the limit is 40" in caplog.text
    assert [m["content"] for m in b.recall("", n=5, min_confidence=0.0)["memories"]] == [
        "lidar misses glass doors"
    ]
