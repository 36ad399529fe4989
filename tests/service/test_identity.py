"""One robot identity and the session's context on its memories; recall over every collection.

Both engines (and SQLite's two recall sources): the robot id of a memory comes from the write's own
``robot_id``, else the context of the session it is written in, else the ``robot_id`` setting, else the
store's own id; the session's context is
stored under the memory's own, so filters on it find the session's memories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings


@pytest.fixture
def fleet(locate: Callable[[str], Any], settings: Settings, recall_mirror: bool) -> Iterator[RobotMemory]:
    chosen = settings.replace(recall_mirror=recall_mirror, robot_id="fleet-default")
    with RobotMemory(locate("identity.db"), embed_backend="hash", settings=chosen) as mem:
        yield mem


def contents(result: Any) -> list[str]:
    return sorted(m["content"] for m in result["memories"])


def test_the_session_names_the_robot_and_its_context_reaches_filters(fleet: RobotMemory) -> None:
    session = fleet.start_session(context={"robot_id": "arm-01", "task": {"name": "pick", "success": False}})
    fleet.learn("grip the mug at 12 N", context={"task": {"success": True}})
    fleet.save_perception("camera: mug on the left edge", perception_type="visual")
    during = fleet.recall("", robots="self", n=10)  # "self" is the robot the current session names
    assert contents(during) == ["camera: mug on the left edge", "grip the mug at 12 N"]
    fleet.end_session(session["session_id"])
    fleet.learn("outside any session the instance's robot writes")

    arm = fleet.recall("", robots=["arm-01"], n=10)
    assert contents(arm) == ["camera: mug on the left edge", "grip the mug at 12 N"]
    assert {m["robot_id"] for m in arm["memories"]} == {"arm-01"}
    own = fleet.recall("", robots="self", n=10)
    assert contents(own) == ["outside any session the instance's robot writes"]
    assert own["memories"][0]["robot_id"] == "fleet-default"

    picked = fleet.recall("", context_filter={"task.name": "pick"}, n=10)
    assert contents(picked) == ["camera: mug on the left edge", "grip the mug at 12 N"]
    # The memory's own value wins where both hold one; the session's fills the rest.
    grip = next(m for m in picked["memories"] if m["content"].startswith("grip"))
    assert grip["task"] == {"name": "pick", "success": True}
    assert "robot_id" not in grip["context"]  # the record's robot_id, not a context key
    succeeded = fleet.recall("", context_filter={"task.success": True}, n=10)
    assert contents(succeeded) == ["grip the mug at 12 N"]


def test_the_writes_own_robot_id_comes_first(fleet: RobotMemory) -> None:
    fleet.start_session(context={"robot_id": "arm-01"})
    fleet.learn("arm-02 saw the mug slip", robot_id="arm-02")
    fleet.save_perception("arm-03 camera: mug on the shelf", robot_id="arm-03")
    fleet.save_perceptions([{"description": "arm-04 lidar: shelf 2 m ahead", "robot_id": "arm-04"}])
    fleet.learn("the session's robot writes this one")
    found = {m["content"]: m["robot_id"] for m in fleet.recall("", n=10)["memories"]}
    assert found == {
        "arm-02 saw the mug slip": "arm-02",
        "arm-03 camera: mug on the shelf": "arm-03",
        "arm-04 lidar: shelf 2 m ahead": "arm-04",
        "the session's robot writes this one": "arm-01",
    }
    assert contents(fleet.recall("", robots=["arm-03"], n=10)) == ["arm-03 camera: mug on the shelf"]


@pytest.mark.parametrize("bad", ["arm 01", "", "a,b", "x" * 201])
def test_a_write_robot_id_that_is_not_one_is_refused(fleet: RobotMemory, bad: str) -> None:
    with pytest.raises(ValidationError, match=r"^robot_id: "):
        fleet.learn("never stored", robot_id=bad)
    with pytest.raises(ValidationError, match=r"^items\[1\]\.robot_id: "):
        fleet.save_perceptions(
            [{"description": "fine one"}, {"description": "never stored", "robot_id": bad}]
        )
    assert fleet.recall("", n=10)["total"] == 0


def test_robot_dot_id_names_the_robot_too(fleet: RobotMemory) -> None:
    fleet.start_session(context={"robot": {"id": "arm-02", "type": "UR5"}})
    fleet.learn("the UR5 slows down near the shelf")
    found = fleet.recall("", context_filter={"robot.type": "UR5"}, robots="arm-02")
    assert [m["robot_id"] for m in found["memories"]] == ["arm-02"]


def test_without_a_robot_setting_the_store_names_the_robot(
    locate: Callable[[str], Any], settings: Settings
) -> None:
    with RobotMemory(locate("derived.db"), embed_backend="hash", settings=settings) as mem:
        mem.learn("no session, no setting")
        mem.start_session(context={"task": {"name": "place"}})
        mem.learn("a session without a robot id")
        robots = {m["robot_id"] for m in mem.recall("", n=10)["memories"]}
        assert len(robots) == 1 and robots.pop() == mem.engine.robot_id != ""


def test_a_session_robot_id_that_is_not_one_is_refused(fleet: RobotMemory) -> None:
    for context, path in (
        ({"robot_id": "arm 01"}, "context.robot_id"),
        ({"robot": {"id": 7}}, "context.robot.id"),
    ):
        with pytest.raises(ValidationError, match=path.replace(".", r"\.")):
            fleet.start_session(context=context)
    assert fleet.recall("", n=10)["total"] == 0
    assert fleet.collections()["collections"] == []


def test_update_keeps_the_session_context_under_a_new_context(fleet: RobotMemory) -> None:
    fleet.start_session(context={"robot_id": "arm-01", "task": {"name": "pick"}})
    memory_id = fleet.learn("hold the cup at 10 N", context={"params": {"force": 10}})["memory_id"]
    fleet.update(memory_id, "hold the cup at 11 N", context={"params": {"force": 11}})
    found = fleet.recall("", context_filter={"task.name": "pick", "params.force": 11})
    assert [m["id"] for m in found["memories"]] == [memory_id]
    assert found["memories"][0]["robot_id"] == "arm-01"


def test_recall_over_every_collection(fleet: RobotMemory) -> None:
    fleet.learn("the gripper slipped on the wet bowl", collection="kitchen")
    fleet.learn("the gripper held the dry bowl", collection="lab")
    fleet.learn("the conveyor stopped")
    every = fleet.recall("gripper bowl", collection="*", n=5)
    assert every["collections"] == ["default", "kitchen", "lab"]
    assert sorted(m["collection"] for m in every["memories"]) == ["default", "kitchen", "lab"]
    assert every["memories"][0]["score"] == 1.0
    one = fleet.recall("gripper bowl", collection="lab")
    assert one["collections"] == ["lab"] and {m["collection"] for m in one["memories"]} == {"lab"}
    default = fleet.recall("gripper bowl")
    assert default["collections"] == ["default"]
    newest = fleet.recall("", collection="*", n=2)
    assert [m["content"] for m in newest["memories"]] == [
        "the conveyor stopped",
        "the gripper held the dry bowl",
    ]
    oldest = fleet.recall("", collection="*", order="time", n=2)
    assert [m["collection"] for m in oldest["memories"]] == ["kitchen", "lab"]
    near = fleet.recall(
        "", collection="*", spatial_sort={"field": "spatial.p", "target": [0, 0]}, n=3
    )  # no memory has the field: every collection's memories still come back
    assert near["total"] == 3


def test_no_write_goes_to_the_collection_named_every_collection(fleet: RobotMemory) -> None:
    for write in (
        lambda: fleet.learn("a lesson", collection="*"),
        lambda: fleet.save_perception("a camera frame", collection="*"),
        lambda: fleet.start_session(collection="*"),
    ):
        with pytest.raises(ValidationError, match=r"collection: '\*' means every collection"):
            write()
    assert fleet.recall("", collection="*")["total"] == 0
