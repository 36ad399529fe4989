"""Export and import as JSON Lines: what goes into the file, what comes back, and every refusal."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.conftest import table_counts, without_vector

from robotmem import RobotMemory, ValidationError
from robotmem.adapters.cli import main
from robotmem.config import Settings
from robotmem.embedders.hashing import HashingEmbedder
from robotmem.embedders.none import NullEmbedder

QUERIES = ("cup slipped gripper", "lidar glass doors", "grip force newton", "camera frame cube", "wet handle")


def fill(mem: RobotMemory) -> dict[str, Any]:
    """An episode with consolidation (lineage), a forgotten memory, a perception and an open session."""
    session = mem.start_session(context={"robot": {"id": "arm-01"}, "task": "grasp"})["session_id"]
    texts = [
        "the cup slipped when the gripper closed too fast on the wet handle",
        "Basically, the cup really slipped when the gripper closed too fast on the wet handle, as expected, of course",
        "Note: the cup actually just slipped when the gripper closed too fast on the wet handle, as usual, honestly",
        "lidar misses glass doors in the hallway",
        "grip_force=12.5N works best because the sensor was calibrated",
        "never exceed 20 N on glass",
    ]
    usual = mem.settings
    mem.settings = usual.replace(dedup_jaccard=1.5)  # each wording stored: end_session merges them
    ids = [mem.learn(t, context={"task": {"name": "grasp", "success": True}})["memory_id"] for t in texts]
    mem.settings = usual
    perception = mem.save_perception(
        "camera frame of the red cube before the grasp",
        perception_type="visual",
        data={"pixels": [[1, 2], [3, 4]], "note": "größe 红色"},
        metadata={"camera": "wrist"},
    )["memory_id"]
    mem.forget(ids[5], reason="limit was wrong")
    ended = mem.end_session(session, outcome_score=0.75)
    assert ended["consolidated"]["superseded_count"] == 2
    other = mem.start_session(context={"task": "push"}, collection="lab")["session_id"]
    mem.learn("push the block 3 cm left of the marker", collection="lab", session_id=other)
    mem.learn("episode 4 failed, reward=-50, 50 steps", collection="lab", session_id=other)
    return {"session": session, "ids": ids, "perception": perception}


def records(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return lines[0], lines[1:]


def ranked(mem: RobotMemory, collection: str = "default") -> list[list[tuple[int, float]]]:
    return [
        [(m["id"], round(m["score"], 6)) for m in mem.recall(q, n=10, collection=collection)["memories"]]
        for q in QUERIES
    ]


# ---- export and import ----------------------------------------------------------------------------


@pytest.mark.parametrize("with_vectors", [True, False])
def test_export_then_import_into_an_empty_database_recalls_the_same(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings, hash64: RobotMemory, with_vectors: bool
) -> None:
    fill(hash64)
    exported = hash64.export_memories(tmp_path / "out.jsonl", vectors=with_vectors)
    assert exported["memories"] == 9 and exported["sessions"] == 2
    assert exported["vectors"] == (6 if with_vectors else 0)
    header, lines = records(tmp_path / "out.jsonl")
    assert header["format"] == "robotmem-export" and header["version"] == 1
    assert (header["embedding_model"], header["dim"], header["vectors"]) == ("hash-64", 64, with_vectors)

    with RobotMemory(locate("copy.db"), settings=settings, embedder=HashingEmbedder(dim=64)) as copy:
        result = copy.import_memories(tmp_path / "out.jsonl")
        assert result["memories"] == {"created": 9, "updated": 0, "skipped": 0}
        assert result["sessions"] == {"created": 2, "updated": 0, "skipped": 0}
        assert result["vectors"] == {
            "from_file": 6 if with_vectors else 0,
            "embedded": 0 if with_vectors else 6,
        }
        assert result["without_vector"] == 0
        # Every field, tag, session, outcome and lineage link survived.
        copy.export_memories(tmp_path / "again.jsonl", vectors=with_vectors)
        header2, lines2 = records(tmp_path / "again.jsonl")
        assert lines2 == lines
        assert {k: v for k, v in header2.items() if k != "exported_at"} == {
            k: v for k, v in header.items() if k != "exported_at"
        }
        assert ranked(copy) == ranked(hash64)
        assert ranked(copy, "lab") == ranked(hash64, "lab")
        assert copy.recall("cup slipped gripper")["mode"] == "hybrid"
        assert copy.doctor()["ok"]

        before = table_counts(copy)
        again = copy.import_memories(tmp_path / "out.jsonl")
        assert again["memories"] == {"created": 0, "updated": 0, "skipped": 9}
        assert again["sessions"]["created"] == 0
        assert table_counts(copy) == before


def test_an_export_of_a_sqlite_robot_imports_into_any_engine_and_back(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings
) -> None:
    """Every field, vector and lineage link crosses engines both ways, and recall ranks alike."""
    with RobotMemory(tmp_path / "robot.db", settings=settings, embedder=HashingEmbedder(dim=64)) as robot:
        fill(robot)
        robot.export_memories(tmp_path / "robot.jsonl", vectors=True)
        expected = (ranked(robot), ranked(robot, "lab"))
    _, lines = records(tmp_path / "robot.jsonl")
    with RobotMemory(locate("copy.db"), settings=settings, embedder=HashingEmbedder(dim=64)) as copy:
        result = copy.import_memories(tmp_path / "robot.jsonl")
        assert result["memories"]["created"] == 9 and result["vectors"]["from_file"] == 6
        copy.export_memories(tmp_path / "copy.jsonl", vectors=True)
        assert records(tmp_path / "copy.jsonl")[1] == lines
        assert (ranked(copy), ranked(copy, "lab")) == expected
        assert copy.doctor()["ok"]
    with RobotMemory(tmp_path / "back.db", settings=settings, embedder=HashingEmbedder(dim=64)) as back:
        back.import_memories(tmp_path / "copy.jsonl")
        back.export_memories(tmp_path / "back.jsonl", vectors=True)
        assert records(tmp_path / "back.jsonl")[1] == lines
        assert (ranked(back), ranked(back, "lab")) == expected


def test_export_holds_every_field_tags_lineage_and_payloads(tmp_path: Path, hash64: RobotMemory) -> None:
    made = fill(hash64)
    hash64.export_memories(tmp_path / "out.jsonl", collection="default", vectors=True)
    header, lines = records(tmp_path / "out.jsonl")
    assert header["collection"] == "default" and header["memories"] == 7
    sessions = [r["session"] for r in lines if r["record"] == "session"]
    assert [s["id"] for s in sessions] == [made["session"]]
    assert sessions[0]["outcome"]["outcome_score"] == 0.75 and sessions[0]["status"] == "ended"
    memories = {r["memory"]["id"]: r for r in lines if r["record"] == "memory"}
    for field in (
        "uid",
        "status",
        "superseded_by",
        "merged_ids",
        "confidence",
        "base_confidence",
        "access_count",
        "created_at",
        "updated_at",
        "last_accessed",
        "context",
        "embedding_model",
        "invalidated_reason",
    ):
        assert all(field in r["memory"] for r in memories.values()), field
    superseded = [r for r in memories.values() if r["memory"]["status"] == "superseded"]
    representative = memories[superseded[0]["memory"]["superseded_by"]]
    assert all(r["superseded_by_uid"] == representative["memory"]["uid"] for r in superseded)
    assert sorted(representative["merged_uids"]) == sorted(r["memory"]["uid"] for r in superseded)
    assert "vector" not in superseded[0]  # only active memories have vectors
    forgotten = memories[made["ids"][5]]["memory"]
    assert forgotten["status"] == "invalidated" and forgotten["invalidated_reason"] == "limit was wrong"
    perception = memories[made["perception"]]
    assert perception["perception"] == {
        "data": {"pixels": [[1, 2], [3, 4]], "note": "größe 红色"},
        "metadata": {"camera": "wrist"},
    }
    assert {"tag": "perception", "source": "auto"} in perception["tags"]
    vector = np.frombuffer(__import__("base64").b64decode(perception["vector"]), dtype="<f4")
    assert vector.shape == (64,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_import_new_ids_remaps_ids_sessions_and_lineage(tmp_path: Path, hash64: RobotMemory) -> None:
    made = fill(hash64)
    hash64.export_memories(tmp_path / "out.jsonl")
    result = hash64.import_memories(tmp_path / "out.jsonl", conflict="new-ids", collection="copy")
    assert result["memories"]["created"] == 9 and result["sessions"]["created"] == 2
    _, old_lines = records(tmp_path / "out.jsonl")
    hash64.export_memories(tmp_path / "copy.jsonl", collection="copy")
    _, lines = records(tmp_path / "copy.jsonl")
    memories = {r["memory"]["id"]: r["memory"] for r in lines if r["record"] == "memory"}
    sessions = {r["session"]["id"] for r in lines if r["record"] == "session"}
    old_ids = {r["memory"]["id"] for r in old_lines if r["record"] == "memory"}
    old_uids = {r["memory"]["uid"] for r in old_lines if r["record"] == "memory"}
    assert len(memories) == 9 and not set(memories) & old_ids
    assert not {m["uid"] for m in memories.values()} & old_uids
    assert made["session"] not in sessions and len(sessions) == 2
    assert all(m["session_id"] in sessions for m in memories.values())
    superseded = [m for m in memories.values() if m["status"] == "superseded"]
    assert len(superseded) == 2
    representative = memories[superseded[0]["superseded_by"]]
    assert sorted(representative["merged_ids"]) == sorted(m["id"] for m in superseded)
    found = {m["id"] for m in hash64.recall("cup slipped gripper", n=20, collection="copy")["memories"]}
    assert representative["id"] in found and not found & {m["id"] for m in superseded}
    assert found <= set(memories)


def test_import_overwrite_restores_changed_memories(tmp_path: Path, hash64: RobotMemory) -> None:
    made = fill(hash64)
    hash64.export_memories(tmp_path / "out.jsonl", vectors=True)
    target = made["ids"][3]
    hash64.update(target, "lidar sees glass doors when the sun is low")
    hash64.forget(made["ids"][4], reason="mistake")
    skipped = hash64.import_memories(tmp_path / "out.jsonl")
    assert skipped["memories"]["created"] == 0
    assert hash64.get_memory(target)["content"] == "lidar sees glass doors when the sun is low"

    result = hash64.import_memories(tmp_path / "out.jsonl", conflict="overwrite")
    assert result["memories"] == {"created": 0, "updated": 9, "skipped": 0}
    assert hash64.get_memory(target)["content"] == "lidar misses glass doors in the hallway"
    assert hash64.get_memory(made["ids"][4])["status"] == "active"
    assert hash64.recall("lidar glass doors", n=1)["memories"][0]["id"] == target
    assert hash64.recall("grip force calibrated", n=1)["memories"][0]["id"] == made["ids"][4]
    assert not [m for m in hash64.recall("sun is low", n=20)["memories"] if "sun" in m["content"]]
    report = hash64.doctor()
    assert report["ok"] and report["vectors"]["active_without_vector"] == 0


def test_import_reembeds_with_another_model_or_leaves_memories_for_backfill(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings, hash64: RobotMemory
) -> None:
    fill(hash64)
    hash64.export_memories(tmp_path / "out.jsonl", vectors=True)
    with RobotMemory(locate("other.db"), settings=settings, embedder=HashingEmbedder(dim=128)) as other:
        result = other.import_memories(tmp_path / "out.jsonl")
        assert result["vectors"] == {"from_file": 0, "embedded": 6} and result["without_vector"] == 0
        assert other.embedding_status()["database_model"] == {"model_id": "hash-128", "dim": 128}
        assert other.recall("cup slipped gripper")["mode"] == "hybrid"
    offline = locate("offline.db")
    with RobotMemory(offline, settings=settings, embedder=NullEmbedder()) as bare:
        result = bare.import_memories(tmp_path / "out.jsonl")
        assert result["vectors"] == {"from_file": 0, "embedded": 0} and result["without_vector"] == 6
        found = bare.recall("cup slipped gripper")["memories"]
        # One memory matches the words; its session neighbours may follow it, matched by nothing.
        assert [m["matched_by"] for m in found if m["matched_by"]] == [["text"]]
    assert without_vector(offline) == 6
    with RobotMemory(offline, settings=settings, embedder=HashingEmbedder(dim=64)) as later:
        assert later.backfill()["embedded"] == 6
        assert ranked(later) == ranked(hash64)


def test_import_rejects_what_is_not_an_export(tmp_path: Path, hash64: RobotMemory) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"hello": 1}\n', encoding="utf-8")
    with pytest.raises(ValidationError, match=r"bad.jsonl:1: not a robotmem export"):
        hash64.import_memories(bad)
    bad.write_text('{"format": "robotmem-export", "version": 9}\n', encoding="utf-8")
    with pytest.raises(ValidationError, match="newer than this robotmem"):
        hash64.import_memories(bad)
    bad.write_text(
        '{"format": "robotmem-export", "version": 1}\n{"record": "memory", "memory": {}}\n', encoding="utf-8"
    )
    with pytest.raises(ValidationError, match=r"bad.jsonl:2: memory.uid"):
        hash64.import_memories(bad)
    with pytest.raises(ValidationError, match="conflict"):
        hash64.import_memories(bad, conflict="merge")
    with pytest.raises(ValidationError, match="cannot read"):
        hash64.import_memories(tmp_path / "missing.jsonl")
    assert hash64.doctor()["memories"]["total"] == 0


def test_export_to_an_unwritable_place_leaves_no_file(tmp_path: Path, hash64: RobotMemory) -> None:
    hash64.learn("the charger is behind the blue door")
    with pytest.raises(ValidationError, match="does not exist"):
        hash64.export_memories(tmp_path / "no-such-dir" / "out.jsonl")
    assert not (tmp_path / "no-such-dir").exists()


def test_an_interrupted_import_leaves_nothing_and_completes_when_run_again(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings, hash64: RobotMemory
) -> None:
    fill(hash64)
    hash64.export_memories(tmp_path / "out.jsonl", vectors=True)
    _, lines = records(tmp_path / "out.jsonl")

    def interrupt(stage: str, advance: int, total: int) -> None:
        if advance:
            raise KeyboardInterrupt

    with RobotMemory(locate("copy.db"), settings=settings, embedder=HashingEmbedder(dim=64)) as copy:
        with pytest.raises(KeyboardInterrupt):
            copy.import_memories(tmp_path / "out.jsonl", progress=interrupt, batch_size=4)
        assert copy.doctor()["memories"]["total"] == 0 and table_counts(copy)["sessions"] == 0
        result = copy.import_memories(tmp_path / "out.jsonl")
        assert result["memories"]["created"] == 9
        copy.export_memories(tmp_path / "again.jsonl", vectors=True)
        assert records(tmp_path / "again.jsonl")[1] == lines


# ---- import checks every record and is all or nothing ----------------------------------------------


def snapshot(mem: RobotMemory, directory: Path) -> list[Any]:
    """Everything the database holds, as a full export (the header's time left out)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"snapshot-{len(list(directory.iterdir()))}.jsonl"
    mem.export_memories(path, vectors=True)
    header, lines = records(path)
    header.pop("exported_at")
    return [header, *lines]


OVERFLOW = "__1e400__"  # written as the JSON number 1e400, which Python reads as infinity


def write_lines(path: Path, lines: list[Any]) -> Path:
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    path.write_text(text.replace(f'"{OVERFLOW}"', "1e400"), encoding="utf-8")
    return path


def test_naive_and_date_only_times_are_stored_as_utc_and_sessions_still_end(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings, hash64: RobotMemory
) -> None:
    fill(hash64)
    hash64.export_memories(tmp_path / "out.jsonl")
    header, lines = records(tmp_path / "out.jsonl")
    memories = [
        line for line in lines if line["record"] == "memory" and line["memory"]["collection"] == "lab"
    ]
    memories[0]["memory"]["created_at"] = "2020-01-01"
    memories[0]["memory"]["last_accessed"] = None
    memories[1]["memory"]["created_at"] = "2020-01-01T00:00:00"
    memories[1]["memory"]["updated_at"] = "2020-01-01T05:30:00+05:30"
    memories[1]["memory"]["last_accessed"] = "2020-01-02T00:00:00Z"
    write_lines(tmp_path / "odd.jsonl", [header, *lines])
    with RobotMemory(locate("copy.db"), settings=settings, embedder=HashingEmbedder(dim=64)) as copy:
        copy.import_memories(tmp_path / "odd.jsonl")
        stored = {
            m["memory"]["uid"]: m["memory"] for m in snapshot(copy, tmp_path / "s")[1:] if "memory" in m
        }
        first, second = stored[memories[0]["memory"]["uid"]], stored[memories[1]["memory"]["uid"]]
        assert first["created_at"] == "2020-01-01T00:00:00.000000+00:00"
        assert second["created_at"] == second["updated_at"] == "2020-01-01T00:00:00.000000+00:00"
        assert second["last_accessed"] == "2020-01-02T00:00:00.000000+00:00"
        assert copy.integrity_report()["ok"]
        session = copy.start_session(collection="lab")["session_id"]
        ended = copy.end_session(session)
        assert ended["status"] == "ended" and ended["decayed_count"] >= 1
        again = copy.start_session(collection="lab")["session_id"]
        assert copy.end_session(again)["status"] == "ended"


def test_a_bad_line_late_in_the_file_leaves_nothing_written_and_names_line_and_field(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings
) -> None:
    with RobotMemory(locate("big.db"), settings=settings, embedder=HashingEmbedder(dim=16)) as big:
        session = big.start_session()["session_id"]
        for i in range(460):
            big.learn(f"episode {i} pushed the block {i} cm past the marker", session_id=session)
        big.end_session(session)
        big.export_memories(tmp_path / "big.jsonl", vectors=True)
    header, lines = records(tmp_path / "big.jsonl")
    assert lines[450]["record"] == "memory"  # file line 452
    lines[450]["memory"]["created_at"] = "yesterday"
    lines[3]["superseded_by_uid"] = lines[4]["memory"]["uid"]  # lineage to restore, if it ran
    write_lines(tmp_path / "bad.jsonl", [header, *lines])
    with RobotMemory(locate("copy.db"), settings=settings, embedder=HashingEmbedder(dim=16)) as copy:
        copy.learn("the dock is north of the charger")
        before = snapshot(copy, tmp_path / "s")
        counts = table_counts(copy)
        with pytest.raises(
            ValidationError, match=r"bad.jsonl:452: memory.created_at: must be an ISO 8601 time"
        ):
            copy.import_memories(tmp_path / "bad.jsonl", batch_size=50)
        assert table_counts(copy) == counts and snapshot(copy, tmp_path / "s") == before


def test_a_file_with_fewer_or_more_records_than_its_header_announces_imports_nothing(
    tmp_path: Path, settings: Settings, hash64: RobotMemory, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(hash64)
    hash64.export_memories(tmp_path / "out.jsonl")
    header, lines = records(tmp_path / "out.jsonl")
    memories = [line for line in lines if line["record"] == "memory"]
    sessions = [line for line in lines if line["record"] == "session"]
    assert (header["memories"], header["sessions"]) == (len(memories), len(sessions)) == (9, 2)
    extra = json.loads(json.dumps(memories[-1]))
    extra["memory"].update(uid="f" * 32, id=None)
    cut = [
        (
            [header, *sessions, *memories[:2]],
            "header.memories: announces 9 memory records but the file holds 2",
        ),
        (
            [header, sessions[0], *memories],
            "header.sessions: announces 2 session records but the file holds 1",
        ),
        ([header, *sessions, *memories, extra], "announces 9 memory records but the file holds 10"),
        (
            [{**header, "memories": 10}, *sessions, *memories],
            "header.memories: announces 10 memory records but the file holds 9",
        ),
        ([{**header, "memories": "9"}, *sessions, *memories], "header.memories: must be a count"),
        ([{**header, "sessions": -1}, *sessions, *memories], "header.sessions: must be a count"),
    ]
    with RobotMemory(tmp_path / "copy.db", settings=settings, embedder=HashingEmbedder(dim=64)) as copy:
        before = table_counts(copy)
        for file_lines, expected in cut:
            write_lines(tmp_path / "cut.jsonl", file_lines)
            with pytest.raises(ValidationError, match=expected):
                copy.import_memories(tmp_path / "cut.jsonl")
            assert table_counts(copy) == before
        db = str(tmp_path / "copy.db")
        write_lines(tmp_path / "cut.jsonl", cut[0][0])
        assert main(["import", str(tmp_path / "cut.jsonl"), "--db", db, "--embed-backend", "hash"]) != 0
        assert "announces 9 memory records but the file holds 2" in capsys.readouterr().err
        assert table_counts(copy) == before
        legacy = {key: value for key, value in header.items() if key != "sessions"}  # older files
        write_lines(tmp_path / "old.jsonl", [legacy, *lines])
        assert copy.import_memories(tmp_path / "old.jsonl")["memories"]["created"] == 9


def test_a_superseded_memory_whose_successor_is_missing_is_refused(
    tmp_path: Path, settings: Settings, hash64: RobotMemory
) -> None:
    """A superseded memory is hidden from recall: without its successor the lesson would be lost."""
    fill(hash64)
    hash64.export_memories(tmp_path / "out.jsonl")
    header, lines = records(tmp_path / "out.jsonl")
    successor_uid = next(r["superseded_by_uid"] for r in lines if r.get("superseded_by_uid"))
    successor = next(r for r in lines if r.get("memory", {}).get("uid") == successor_uid)
    without_successor = [r for r in lines if r is not successor]
    header = {**header, "memories": header["memories"] - 1}
    write_lines(tmp_path / "orphans.jsonl", [header, *without_successor])
    first_line = next(
        n for n, r in enumerate(without_successor, start=2) if r.get("superseded_by_uid") == successor_uid
    )
    with RobotMemory(tmp_path / "copy.db", settings=settings, embedder=HashingEmbedder(dim=64)) as copy:
        before = table_counts(copy)
        for mode in ("skip", "new-ids"):
            with pytest.raises(
                ValidationError, match=rf"orphans.jsonl:{first_line}: superseded_by_uid: {successor_uid} is"
            ):
                copy.import_memories(tmp_path / "orphans.jsonl", conflict=mode)
            assert table_counts(copy) == before
        # The successor already in the database is enough (except for new-ids, which links in the file).
        successor["memory"]["session_id"] = None  # its session is not in this one-memory file
        write_lines(tmp_path / "only_successor.jsonl", [{**header, "memories": 1, "sessions": 0}, successor])
        copy.import_memories(tmp_path / "only_successor.jsonl")
        assert copy.import_memories(tmp_path / "orphans.jsonl")["memories"]["created"] == 8
        assert copy.integrity_report()["ok"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda r: r["memory"].update(content="x" * 1_000_000),
            "memory.content: is 1000000 characters; the limit is 300",
        ),
        (lambda r: r["memory"].update(content="grip\x00force"), "memory.content: must not contain NUL"),
        (lambda r: r["memory"].update(confidence=OVERFLOW), "memory.confidence: must be a finite number"),
        (lambda r: r["memory"].update(confidence=1.5), r"memory.confidence: must be within 0..1"),
        (
            lambda r: r["memory"].update(collection="lab\nother"),
            "memory.collection: must contain only printable",
        ),
        (lambda r: r["memory"].update(collection=""), "memory.collection: must not be empty"),
        (
            lambda r: r["memory"].update(context={"a": "x" * 90_000}),
            "memory.context: is .* bytes of JSON; the limit is 81920",
        ),
        (lambda r: r["memory"].update(context=[1]), "memory.context: must be a JSON object"),
        (
            lambda r: r["memory"].update(id=2**64),
            r"memory.id: must be an integer within 1..9223372036854775807",
        ),
        (lambda r: r["memory"].update(id=0), r"memory.id: must be an integer within 1..9223372036854775807"),
        (lambda r: r["memory"].update(session_id="a\tb"), "memory.session_id: must contain only printable"),
        (lambda r: r["memory"].update(access_count=-1), "memory.access_count: must be an integer"),
        (lambda r: r["memory"].update(status="deleted"), "memory.status: must be one of"),
        (lambda r: r.update(tags=[{"tag": "a\nb"}]), r"tags\[0\].tag: must contain only printable"),
        (lambda r: r.update(tags="root_cause"), "tags: must be a list"),
        (lambda r: r.update(merged_uids=[7]), r"merged_uids\[0\]: must be 32 lowercase hex digits"),
        (lambda r: r["memory"].update(uid="../../etc"), "memory.uid: must be 32 lowercase hex digits"),
        (lambda r: r["memory"].update(uid="A" * 32), "memory.uid: must be 32 lowercase hex digits"),
        (lambda r: r.update(superseded_by_uid="x" * 32), "superseded_by_uid: must be 32 lowercase hex"),
        (lambda r: r["memory"].update(category="nonsense"), "memory.category: must be one of self_defect"),
        (lambda r: r["memory"].update(category="perception"), "memory.category: a fact never has"),
        (
            lambda r: (r["memory"].update(status="superseded"), r.update(superseded_by_uid=None)),
            "superseded_by_uid: a superseded memory must name the memory that superseded it",
        ),
        (
            lambda r: r.update(superseded_by_uid=r["memory"]["uid"]),
            "superseded_by_uid: a memory cannot supersede itself",
        ),
        (lambda r: r["memory"].update(context={"a.b": 1}), r"memory.context: key 'a.b' contains \"\.\""),
        (lambda r: r["memory"].update(context={"t": {"": 1}}), r"memory.context.t: key '' is empty"),
        (lambda r: r.update(vector="!!"), "vector: must be base64"),
    ],
)
def test_import_applies_the_write_rules_to_every_field(
    locate: Callable[[str], Any],
    tmp_path: Path,
    settings: Settings,
    hash64: RobotMemory,
    change: Any,
    expected: str,
) -> None:
    fill(hash64)
    hash64.export_memories(tmp_path / "out.jsonl", vectors=True)
    header, lines = records(tmp_path / "out.jsonl")
    target = next(
        i for i, line in enumerate(lines) if line["record"] == "memory" and line["memory"]["type"] == "fact"
    )
    change(lines[target])
    write_lines(tmp_path / "bad.jsonl", [header, *lines])
    with RobotMemory(locate("copy.db"), settings=settings, embedder=HashingEmbedder(dim=64)) as copy:
        before = table_counts(copy)
        with pytest.raises(ValidationError, match=rf"bad.jsonl:{target + 2}: {expected}"):
            copy.import_memories(tmp_path / "bad.jsonl")
        assert table_counts(copy) == before


def test_sessions_and_perceptions_are_checked_too(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings, hash64: RobotMemory
) -> None:
    fill(hash64)
    hash64.export_memories(tmp_path / "out.jsonl")
    header, lines = records(tmp_path / "out.jsonl")
    cases: list[tuple[Any, str]] = [
        (
            lambda ls: ls[0]["session"].update(collection="a\nb"),
            "session.collection: must contain only printable",
        ),
        (
            lambda ls: ls[0]["session"].update(created_at="2020-13-01"),
            "session.created_at: must be an ISO 8601",
        ),
        (
            lambda ls: ls[0]["session"]["outcome"].update(outcome_score=OVERFLOW),
            "session.outcome.outcome_score",
        ),
        (
            lambda ls: next(x for x in ls if x.get("perception")).update(
                perception={"data": "x" * (4 * 2**20 + 1)}
            ),
            "perception.data: is .* bytes of JSON; the limit is 4194304",
        ),
        (
            lambda ls: next(x for x in ls if x.get("perception"))["memory"].update(perception_type="smell"),
            "memory.perception_type: must be one of",
        ),
    ]
    with RobotMemory(locate("copy.db"), settings=settings, embedder=HashingEmbedder(dim=64)) as copy:
        before = table_counts(copy)
        for change, expected in cases:
            changed = json.loads(json.dumps(lines))
            change(changed)
            write_lines(tmp_path / "bad.jsonl", [header, *changed])
            with pytest.raises(ValidationError, match=rf"bad.jsonl:\d+: {expected}"):
                copy.import_memories(tmp_path / "bad.jsonl")
            assert table_counts(copy) == before


def test_malformed_bytes_are_clean_errors(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings, hash64: RobotMemory
) -> None:
    fill(hash64)
    hash64.export_memories(tmp_path / "out.jsonl")
    text = (tmp_path / "out.jsonl").read_bytes()
    head, rest = text.split(b"\n", 1)
    deep = b'{"record": "memory", "memory": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    cases = [
        (
            head + b"\n" + b'{"record": "session", "session": {"id": "\xff\xfe"}}\n' + rest,
            r":2: not UTF-8 text",
        ),
        (head + b"\n" + deep + b"\n" + rest, r":2: invalid JSON \(nests deeper"),
        (head + b"\n" + rest.replace(b'"confidence":', b'"confidence":NaN,"x":', 1), r"invalid JSON \(NaN"),
        (
            head + b"\n" + b'{"record": "memory", "memory": {"uid": "\\ud800"}}\n',
            r":2: contains a lone surrogate",
        ),
        (
            head
            + b"\n"
            + b'{"record": "memory", "memory": {"uid": "'
            + b"a" * 32
            + b'", "id": 18446744073709551616}}\n',
            r"memory.id",
        ),
        (b"\xff" + head, r":1: not UTF-8 text"),
    ]
    with RobotMemory(locate("copy.db"), settings=settings, embedder=HashingEmbedder(dim=64)) as copy:
        before = table_counts(copy)
        for content, expected in cases:
            (tmp_path / "bad.jsonl").write_bytes(content)
            with pytest.raises(ValidationError, match=expected):
                copy.import_memories(tmp_path / "bad.jsonl")
            assert table_counts(copy) == before


def test_an_endless_line_is_refused_after_the_bound(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings
) -> None:
    """A FIFO fed forever: the import reads one bound's worth of the line, then refuses it."""
    small = settings.replace(max_data_bytes=1000, max_metadata_bytes=1000, max_context_bytes=1000)
    limit = 6 * (3000 + 4 * 2000) + 2**20
    fifo = tmp_path / "endless.jsonl"
    os.mkfifo(fifo)
    sent = [0]

    def feed() -> None:
        try:
            with fifo.open("wb") as out:
                out.write(b'{"format": "robotmem-export", "version": 1}\n{"record": "memory", "memory": "')
                while sent[0] < 50 * limit:
                    out.write(b"x" * 65536)
                    sent[0] += 65536
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    with RobotMemory(locate("copy.db"), settings=small, embedder=HashingEmbedder(dim=16)) as copy:
        writer.start()
        with pytest.raises(
            ValidationError,
            match=rf"endless.jsonl:1: not a robotmem export|:2: the line is longer than {limit} bytes",
        ):
            copy.import_memories(fifo)
    writer.join(timeout=10)
    assert sent[0] < 50 * limit  # the reader stopped; the writer got a broken pipe


def test_import_recomputes_the_hash_so_exact_dedup_holds(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings, hash64: RobotMemory
) -> None:
    hash64.learn("the charger is behind the blue door")
    hash64.export_memories(tmp_path / "out.jsonl")
    header, lines = records(tmp_path / "out.jsonl")
    lines[0]["memory"]["content_hash"] = "forged"
    write_lines(tmp_path / "out.jsonl", [header, *lines])
    with RobotMemory(locate("copy.db"), settings=settings, embedder=HashingEmbedder(dim=64)) as copy:
        copy.import_memories(tmp_path / "out.jsonl")
        assert copy.learn("The charger is behind the blue door.")["status"] == "duplicate"


def test_whatever_the_write_operations_stored_imports_back(
    locate: Callable[[str], Any], tmp_path: Path, settings: Settings
) -> None:
    """Memories at the limits (a full user context plus what learn adds, the longest texts) round-trip."""
    with RobotMemory(locate("full.db"), settings=settings, embedder=HashingEmbedder(dim=16)) as full:
        full.learn("grip_force=12.5N speed=0.3m/s " + "y" * 260, context={"note": "z" * 65_000})
        full.save_perception("d" * 2000, data="p" * (4 * 2**20 - 2), metadata={"m": "q" * 65_000})
        full.export_memories(tmp_path / "full.jsonl", vectors=True)
    with RobotMemory(locate("copy.db"), settings=settings, embedder=HashingEmbedder(dim=16)) as copy:
        assert copy.import_memories(tmp_path / "full.jsonl")["memories"]["created"] == 2
        copy.export_memories(tmp_path / "again.jsonl", vectors=True)
    assert records(tmp_path / "again.jsonl")[1] == records(tmp_path / "full.jsonl")[1]
