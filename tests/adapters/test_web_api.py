"""The REST API against a real server on a loopback port (werkzeug in a thread, waitress from the CLI)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("flask_openapi3")

from werkzeug.serving import make_server  # noqa: E402

from robotmem import RobotMemory, ValidationError  # noqa: E402
from robotmem.adapters.web import create_app, is_loopback, serve  # noqa: E402

TOKEN = "s3cret-token"

GRASP_TEXTS = [
    "the cup slipped when the gripper closed too fast on the wet handle",
    "Basically, the cup really slipped when the gripper closed too fast on the wet handle, as expected, of course",
    "Note: the cup actually just slipped when the gripper closed too fast on the wet handle, as usual, honestly",
    "lidar misses glass doors in the hallway",
]


@contextmanager
def running(app: Any) -> Iterator[httpx.Client]:
    """Serve ``app`` on 127.0.0.1 with an OS-chosen port; yield a client bound to it."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.server_port}", timeout=30) as client:
            yield client
    finally:
        server.shutdown()
        thread.join(timeout=5)


@pytest.fixture
def client(memory: RobotMemory) -> Iterator[httpx.Client]:
    with running(create_app(memory)) as c:
        yield c


def ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def error_of(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    return str(body["error"]["message"])


def seed(memory: RobotMemory, clock: Any) -> dict[str, Any]:
    """A small robot history: two sessions (one failed), facts with positions, a perception."""
    good = memory.start_session(context={"robot": {"id": "arm-01"}})["session_id"]
    first = memory.learn(
        "grip_force=12.5N yields highest grasp success rate",
        context={
            "params": {"grip_force": {"value": 12.5, "unit": "N"}},
            "spatial": {"object_position": [1.3, 0.7, 0.42]},
            "robot": {"id": "arm-01", "type": "UR5"},
            "task": {"name": "grasp", "success": True},
        },
    )["memory_id"]
    perception = memory.save_perception(
        "Grasp trajectory: 30 steps, success",
        perception_type="procedural",
        data={"sampled_actions": [[0.1, -0.3, 0.05, 0.8]]},
        metadata={"hz": 10},
    )["memory_id"]
    memory.end_session(good, outcome_score=0.9)
    clock.advance(hours=1)
    bad = memory.start_session(context={"robot": {"id": "arm-01"}})["session_id"]
    failed = memory.learn(
        "Episode 3: failed, reward=-50, 50 steps",
        context={"spatial": {"object_position": [0.2, 0.1, 0.42]}, "task": {"success": False}},
    )["memory_id"]
    lesson = memory.learn("the block slid because the table was waxed")["memory_id"]
    memory.end_session(bad, outcome_score=0.1)
    return {
        "good": good,
        "bad": bad,
        "first": first,
        "perception": perception,
        "failed": failed,
        "lesson": lesson,
    }


def test_every_browse_endpoint_answers_with_its_shape(memory: RobotMemory, clock: Any) -> None:
    ids = seed(memory, clock)
    with running(create_app(memory)) as client:
        doctor = ok(client.get("/api/doctor"))
        assert doctor["ok"] is True and doctor["search_mode"] == "hybrid"

        stats = ok(client.get("/api/stats"))
        assert stats["memories"] == {
            "total": 4,
            "active": 4,
            "by_status": {"active": 4},
            "facts": 3,
            "perceptions": 1,
        }
        assert stats["sessions"] == {"total": 2, "active": 0, "ended": 2}
        assert [o["outcome_score"] for o in stats["session_outcomes"]] == [0.9, 0.1]  # oldest first
        assert [o["success_rate"] for o in stats["session_outcomes"]] == [1.0, 0.0]
        assert stats["spatial_fields"] == ["spatial.object_position"]
        assert {c["category"] for c in stats["categories"]} >= {"perception"}

        listing = ok(client.get("/api/memories"))
        assert set(listing) == {"memories", "total", "limit", "offset"} and listing["total"] == 4
        assert {"id", "content", "context", "params", "spatial", "robot", "task", "status"} <= set(
            listing["memories"][0]
        )

        found = ok(client.get("/api/search", params={"query": "grip force", "n": 3}))
        assert found["mode"] == "hybrid" and found["memories"][0]["id"] == ids["first"]
        assert found["memories"][0]["score"] == 1.0

        sessions = ok(client.get("/api/sessions"))
        assert [s["session_id"] for s in sessions["sessions"]] == [ids["bad"], ids["good"]]
        assert sessions["sessions"][0]["outcome_score"] == 0.1
        assert sessions["sessions"][1]["success_rate"] == 1.0

        assert ok(client.get(f"/api/sessions/{ids['good']}"))["outcome_score"] == 0.9
        timeline = ok(client.get(f"/api/sessions/{ids['good']}/memories"))
        assert timeline["session"]["session_id"] == ids["good"]
        assert [m["id"] for m in timeline["memories"]] == [ids["first"], ids["perception"]]

        (row,) = ok(client.get("/api/collections"))["collections"]
        assert row["collection"] == "default" and (row["memories"], row["active"], row["sessions"]) == (
            4,
            4,
            2,
        )
        categories = ok(client.get("/api/categories"))["categories"]
        assert sum(c["count"] for c in categories) == 4

        failures = ok(client.get("/api/recent-failures"))
        assert [s["session_id"] for s in failures["sessions"]] == [ids["bad"]]
        assert {m["id"] for m in failures["memories"]} >= {ids["failed"], ids["lesson"]}
        assert ids["first"] not in {m["id"] for m in failures["memories"]}

        spatial = ok(client.get("/api/spatial", params={"field": "spatial.object_position"}))
        assert {(p["memory_id"], p["success"]) for p in spatial["points"]} == {
            (ids["first"], True),
            (ids["failed"], False),
        }


def test_memory_detail_has_perception_payload_and_lineage(memory: RobotMemory, client: httpx.Client) -> None:
    perception = memory.save_perception(
        "depth image of the shelf", perception_type="visual", data={"depth": [[1, 2], [3, 4]]}
    )
    detail = ok(client.get(f"/api/memory/{perception['memory_id']}"))
    assert detail["data"] == {"depth": [[1, 2], [3, 4]]} and detail["perception_type"] == "visual"

    session = memory.start_session()["session_id"]
    ids = [memory.learn(text, session_id=session)["memory_id"] for text in GRASP_TEXTS]
    memory.end_session(session)
    details = [ok(client.get(f"/api/memory/{i}")) for i in ids[:3]]
    representative = next(d for d in details if d["status"] == "active")
    merged = [d for d in details if d["status"] == "superseded"]
    assert len(merged) == 2 and all(d["superseded_by"] == representative["id"] for d in merged)
    assert sorted(representative["merged_ids"]) == sorted(d["id"] for d in merged)


def test_pagination_edges(memory: RobotMemory, client: httpx.Client, clock: Any) -> None:
    created = []
    for i in range(7):
        created.append(memory.learn(f"waypoint {i} reached at pose {i * 10} cm")["memory_id"])
        clock.advance(minutes=1)
    pages = [ok(client.get("/api/memories", params={"limit": 3, "offset": o})) for o in (0, 3, 6, 7, 100)]
    assert [len(p["memories"]) for p in pages] == [3, 3, 1, 0, 0]
    assert all(p["total"] == 7 for p in pages)
    seen = [m["id"] for p in pages for m in p["memories"]]
    assert seen == list(reversed(created))  # newest first, no overlap, nothing lost
    oldest = ok(client.get("/api/memories", params={"limit": 500, "order": "oldest"}))
    assert [m["id"] for m in oldest["memories"]] == created
    assert ok(client.get("/api/memories", params={"limit": 1}))["memories"][0]["id"] == created[-1]
    for params, field in (
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"offset": -1}, "offset"),
        ({"limit": "ten"}, "limit"),
    ):
        assert field in error_of(client.get("/api/memories", params=params), 400, "invalid_input")
    sessions = ok(client.get("/api/sessions", params={"limit": 1, "offset": 5}))
    assert sessions == {"sessions": [], "total": 0, "limit": 1, "offset": 5}


def test_memory_filters(memory: RobotMemory, client: httpx.Client, clock: Any) -> None:
    fact = memory.learn("never exceed 20 N on glass")["memory_id"]
    clock.advance(days=2)
    tactile = memory.save_perception("fingertip pressure spike", perception_type="tactile")["memory_id"]
    visual = memory.save_perception("camera sees the red block", perception_type="visual")["memory_id"]
    other = memory.learn("charging dock moved to bay 2", collection="lab")["memory_id"]
    gone = memory.learn("the arm reaches 2 m")["memory_id"]
    memory.forget(gone, "the reach is 0.85 m")

    def ids(**params: Any) -> set[int]:
        return {m["id"] for m in ok(client.get("/api/memories", params=params))["memories"]}

    assert ids(type="perception") == {tactile, visual}
    assert ids(perception_type="tactile") == {tactile}
    assert ids(collection="lab") == {other}
    assert ids(status="invalidated") == {gone}
    assert gone in ids(status="any") and gone not in ids()
    assert ids(category="constraint") == {fact}
    cutoff = (clock.now - timedelta(days=1)).isoformat()
    assert fact not in ids(since=cutoff) and tactile in ids(since=cutoff)
    assert ids(until=cutoff) == {fact}
    confidences = {m["id"]: m["confidence"] for m in ok(client.get("/api/memories"))["memories"]}
    low = min(confidences.values())
    assert ids(max_confidence=low) == {i for i, c in confidences.items() if c <= low}
    assert ids(min_confidence=1.0) == set()
    message = error_of(
        client.get("/api/memories", params={"min_confidence": 0.9, "max_confidence": 0.1}),
        400,
        "invalid_input",
    )
    assert "min_confidence" in message
    assert "perception_type" in error_of(
        client.get("/api/memories", params={"perception_type": "smell"}), 400, "invalid_input"
    )


def test_put_edit_is_visible_to_bm25_and_vector_recall(memory: RobotMemory, client: httpx.Client) -> None:
    target = memory.learn("grip_force=12.5N works best on the glass cup")["memory_id"]
    memory.learn("lidar scan shows the corridor is clear")
    memory.learn("battery drains fast in cold weather")
    edited = ok(
        client.put(
            f"/api/memory/{target}",
            json={
                "new_content": "suction cup holds the wooden block firmly",
                "context": {"task": {"success": True}},
            },
        )
    )
    assert edited["status"] == "updated" and edited["old_content"].startswith("grip_force")

    def hits(query: str) -> dict[int, list[str]]:
        found = ok(client.get("/api/search", params={"query": query, "n": 5}))
        return {m["id"]: m["matched_by"] for m in found["memories"]}

    assert "text" in hits("wooden block")[target]  # BM25 sees the new words
    assert "text" not in hits("glass").get(target, [])  # ... and no longer the old ones
    # Misspelt words match nothing in the text index; only the re-computed vector can find the memory.
    typo = ok(client.get("/api/search", params={"query": "woodenn blockk firmlyy", "n": 5}))
    assert typo["memories"][0]["id"] == target and typo["memories"][0]["matched_by"] == ["vector"]
    detail = ok(client.get(f"/api/memory/{target}"))
    assert detail["task"] == {"success": True} and detail["has_embedding"] is True
    # The same edit through POST /api/update (the operation name) behaves the same.
    again = ok(
        client.post("/api/update", json={"memory_id": target, "new_content": "suction cup holds a crate"})
    )
    assert again["old_content"] == "suction cup holds the wooden block firmly"


def test_delete_forgets_with_reason_and_errors_have_one_shape(
    memory: RobotMemory, client: httpx.Client
) -> None:
    target = memory.learn("the gripper max opening is 85 mm")["memory_id"]
    forgotten = ok(client.request("DELETE", f"/api/memory/{target}", json={"reason": "measured 80 mm"}))
    assert forgotten == {
        "status": "forgotten",
        "memory_id": target,
        "content": "the gripper max opening is 85 mm",
        "reason": "measured 80 mm",
    }
    assert ok(client.get(f"/api/memory/{target}"))["invalidated_reason"] == "measured 80 mm"
    assert target not in {
        m["id"] for m in ok(client.get("/api/search", params={"query": "gripper"}))["memories"]
    }
    error_of(client.request("DELETE", f"/api/memory/{target}", json={"reason": "again"}), 409, "conflict")
    error_of(client.put(f"/api/memory/{target}", json={"new_content": "x"}), 409, "conflict")
    assert "reason" in error_of(
        client.request("DELETE", f"/api/memory/{target}", json={}), 400, "invalid_input"
    )
    error_of(client.get("/api/memory/999999"), 404, "not_found")
    error_of(client.get("/api/memory/abc"), 404, "not_found")
    error_of(client.get("/api/sessions/no-such-session/memories"), 404, "not_found")
    error_of(client.get("/api/no-such-endpoint"), 404, "not_found")
    error_of(client.post("/api/doctor", json={}), 405, "method_not_allowed")
    assert "unknown parameter" in error_of(
        client.get("/api/stats", params={"colection": "x"}), 400, "invalid_input"
    )
    assert "new_content" in error_of(client.put(f"/api/memory/{target}", json={}), 400, "invalid_input")
    error_of(
        client.post("/api/learn", content=b"{not json", headers={"Content-Type": "application/json"}),
        400,
        "invalid_input",
    )
    assert "insight" in error_of(client.post("/api/learn", json={"insight": "  "}), 400, "invalid_input")
    error_of(client.post("/api/end_session", json={"session_id": "nope"}), 404, "not_found")


def test_operations_over_rest_for_a_robot_without_python(client: httpx.Client) -> None:
    session = ok(client.post("/api/start_session", json={"context": '{"robot_id": "arm-01"}'}))
    learned = ok(
        client.post(
            "/api/learn",
            json={
                "insight": "grip_force=12.5N yields highest grasp success rate",
                "context": {"task": {"success": True}, "spatial": {"position": [1.3, 0.7, 0.42]}},
                "session_id": session["session_id"],
            },
        )
    )
    assert learned["status"] == "created"
    duplicate = ok(
        client.post("/api/learn", json={"insight": "grip_force=12.5N yields highest grasp success rate"})
    )
    assert duplicate["status"] == "duplicate" and duplicate["existing_id"] == learned["memory_id"]
    perceived = ok(
        client.post(
            "/api/save_perception",
            json={
                "description": "Grasp trajectory: 30 steps, success",
                "perception_type": "procedural",
                "data": {"sampled_actions": [[0.1, -0.3, 0.05, 0.8]]},
                "session_id": session["session_id"],
            },
        )
    )
    assert perceived["perception_type"] == "procedural" and perceived["has_embedding"] is True
    recalled = ok(
        client.post(
            "/api/recall",
            json={
                "query": "grip force parameters",
                "context_filter": {"task.success": True},
                "spatial_sort": {"field": "spatial.position", "target": [1.3, 0.7, 0.42]},
                "include_data": True,
            },
        )
    )
    assert recalled["memories"][0]["id"] == learned["memory_id"]
    assert recalled["memories"][0]["spatial_distance"] == 0.0
    searched = ok(
        client.get(
            "/api/search",
            params={"query": "grip force parameters", "context_filter": '{"task.success": true}'},
        )
    )
    assert [m["id"] for m in searched["memories"]] == [m["id"] for m in recalled["memories"]]
    assert "context_filter" in error_of(
        client.post("/api/recall", json={"query": "x", "context_filter": {"a": {"$less": 1}}}),
        400,
        "invalid_input",
    )
    ended = ok(
        client.post("/api/end_session", json={"session_id": session["session_id"], "outcome_score": 0.75})
    )
    assert ended["status"] == "ended" and ended["summary"]["memory_count"] == 2
    listed = ok(client.get("/api/sessions"))["sessions"][0]
    assert listed["outcome_score"] == 0.75 and listed["status"] == "ended"
    timeline = ok(client.get(f"/api/sessions/{session['session_id']}/memories"))
    assert [m["type"] for m in timeline["memories"]] == ["fact", "perception"]
    forgotten = ok(
        client.post("/api/forget", json={"memory_id": perceived["memory_id"], "reason": "bad sensor"})
    )
    assert forgotten["status"] == "forgotten"


def test_chinese_text_round_trips_unescaped(client: httpx.Client) -> None:
    learned = ok(client.post("/api/learn", json={"insight": "机械臂抓取玻璃杯时夹持力不能超过20牛"}))
    response = client.get("/api/search", params={"query": "夹持力"})
    assert "机械臂" in response.text  # UTF-8, not \\u escapes
    assert response.json()["memories"][0]["id"] == learned["memory_id"]


def test_stored_markup_is_returned_as_plain_data(client: httpx.Client) -> None:
    payload = "<script>window.pwned=1</script> gripper note"
    created = ok(client.post("/api/learn", json={"insight": payload}))
    assert ok(client.get(f"/api/memory/{created['memory_id']}"))["content"] == payload
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"


def test_writes_must_be_same_origin_json(client: httpx.Client) -> None:
    body = {"insight": "torque limit on joint 3 is 40 Nm"}
    error_of(client.post("/api/learn", data=body), 415, "unsupported_media_type")  # a classic form post
    error_of(
        client.post("/api/learn", content=b'{"insight": "x"}', headers={"Content-Type": "text/plain"}),
        415,
        "unsupported_media_type",
    )
    error_of(
        client.post("/api/learn", json=body, headers={"Origin": "http://evil.example"}), 403, "forbidden"
    )
    error_of(client.post("/api/learn", json=body, headers={"Sec-Fetch-Site": "cross-site"}), 403, "forbidden")
    own = str(client.base_url).rstrip("/")
    ok(client.post("/api/learn", json=body, headers={"Origin": own, "Sec-Fetch-Site": "same-origin"}))
    ok(client.get("/api/stats", headers={"Origin": "http://evil.example"}))  # reads are not state-changing


def test_token_is_required_for_every_write_when_configured(memory: RobotMemory) -> None:
    with running(create_app(memory, token=TOKEN)) as client:
        body = {"insight": "elbow joint overheats after 40 minutes"}
        error_of(client.post("/api/learn", json=body), 401, "unauthorized")
        error_of(
            client.post("/api/learn", json=body, headers={"X-Robotmem-Token": "wrong"}), 401, "unauthorized"
        )
        created = ok(client.post("/api/learn", json=body, headers={"X-Robotmem-Token": TOKEN}))
        target = created["memory_id"]
        error_of(client.put(f"/api/memory/{target}", json={"new_content": "x y"}), 401, "unauthorized")
        error_of(client.request("DELETE", f"/api/memory/{target}", json={"reason": "r"}), 401, "unauthorized")
        ok(
            client.request(
                "DELETE",
                f"/api/memory/{target}",
                json={"reason": "r"},
                headers={"Authorization": f"Bearer {TOKEN}"},
            )
        )
        ok(client.get("/api/stats"))


def test_untrusted_host_header_is_refused(memory: RobotMemory) -> None:
    with running(create_app(memory, trusted_hosts=["127.0.0.1", "localhost"])) as client:
        ok(client.get("/api/stats"))
        assert client.get("/api/stats", headers={"Host": "attacker.example"}).status_code == 400


def test_serve_refuses_a_public_address_without_a_token(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ROBOTMEM_WEB_TOKEN", raising=False)
    with pytest.raises(ValidationError, match="ROBOTMEM_WEB_TOKEN"):
        serve(host="0.0.0.0", port=0, db=tmp_path / "memory.db")
    assert not (tmp_path / "memory.db").exists()
    assert (
        is_loopback("127.0.0.1")
        and is_loopback("localhost")
        and is_loopback("::1")
        and is_loopback("127.8.0.1")
    )
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.com")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_cli_serves_with_waitress_and_refuses_public_binding(tmp_path: Path) -> None:
    env = {**os.environ, "ROBOTMEM_HOME": str(tmp_path / "home"), "ROBOTMEM_EMBED_BACKEND": "hash"}
    env.pop("ROBOTMEM_WEB_TOKEN", None)
    refused = subprocess.run(
        [sys.executable, "-m", "robotmem", "web", "--host", "0.0.0.0", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "ROBOTMEM_WEB_TOKEN" in refused.stderr
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "robotmem", "web", "--port", str(port), "--db", str(tmp_path / "web.db")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/api/doctor", timeout=5)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline, "the web server did not start"
                time.sleep(0.2)
        assert response.status_code == 200 and response.json()["database"].endswith("web.db")
        assert response.headers["server"] == "robotmem"  # waitress's ident
        learned = httpx.post(f"http://127.0.0.1:{port}/api/learn", json={"insight": "the door opens inward"})
        assert learned.json()["status"] == "created"
    finally:
        process.terminate()
        process.communicate(timeout=30)
