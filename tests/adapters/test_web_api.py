"""The REST API against a real server on a loopback port (werkzeug in a thread, waitress from the CLI)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("flask_openapi3")

from tests.conftest import location_of, rewrite_context  # noqa: E402
from tests.service.test_browse import seed  # noqa: E402
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
    # A short poll interval: shutdown() waits for the loop to notice, 0.5 s by default per test.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
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


def test_memory_detail_has_perception_payload_and_lineage(memory: RobotMemory, client: httpx.Client) -> None:
    perception = memory.save_perception(
        "depth image of the shelf", perception_type="visual", data={"depth": [[1, 2], [3, 4]]}
    )
    detail = ok(client.get(f"/api/memory/{perception['memory_id']}"))
    assert detail["data"] == {"depth": [[1, 2], [3, 4]]} and detail["perception_type"] == "visual"

    session = memory.start_session()["session_id"]
    memory.settings = memory.settings.replace(
        dedup_jaccard=1.5
    )  # learn keeps each wording; end_session merges
    ids = [memory.learn(text, session_id=session)["memory_id"] for text in GRASP_TEXTS]
    memory.end_session(session)
    details = [ok(client.get(f"/api/memory/{i}")) for i in ids[:3]]
    representative = next(d for d in details if d["status"] == "active")
    merged = [d for d in details if d["status"] == "superseded"]
    assert len(merged) == 2 and all(d["superseded_by"] == representative["id"] for d in merged)
    assert sorted(representative["merged_ids"]) == sorted(d["id"] for d in merged)


def _json(value: Any) -> Any:
    """``value`` as it travels as JSON (tuples become lists)."""
    return json.loads(json.dumps(value))


def test_every_browse_endpoint_answers_what_the_python_api_returns(memory: RobotMemory, clock: Any) -> None:
    ids = seed(memory, clock)
    session = ids["good"]
    pairs: list[tuple[str, dict[str, Any], Any]] = [
        # Over HTTP the database is named by its file or database name only (no path or address).
        ("/api/doctor", {}, lambda: {**memory.doctor(), "database": str(location_of(memory)).rsplit("/", 1)[-1]}),
        ("/api/stats", {}, memory.stats),
        ("/api/stats", {"collection": "default"}, lambda: memory.stats("default")),
        ("/api/memories", {}, memory.list_memories),
        ("/api/memories", {"limit": 2, "offset": 1, "order": "oldest", "type": "fact"},
         lambda: memory.list_memories(limit=2, offset=1, order="oldest", type="fact")),
        ("/api/sessions", {}, memory.list_sessions),
        ("/api/sessions", {"status": "ended", "limit": 1}, lambda: memory.list_sessions(status="ended", limit=1)),
        (f"/api/sessions/{session}", {}, lambda: memory.get_session(session)),
        (f"/api/sessions/{session}/memories", {}, lambda: memory.session_memories(session)),
        (f"/api/memory/{ids['perception']}", {}, lambda: memory.get_memory(ids["perception"])),
        ("/api/collections", {}, memory.collections),
        ("/api/categories", {}, memory.categories),
        ("/api/recent-failures", {}, memory.recent_failures),
        ("/api/recent-failures", {"max_outcome": 0.95, "limit": 1},
         lambda: memory.recent_failures(limit=1, max_outcome=0.95)),
        ("/api/spatial", {"field": "spatial.object_position"},
         lambda: memory.spatial_points("spatial.object_position")),
        ("/api/sessions", {"robot": "arm-01", "outcome": "failure", "threshold": 0.2},
         lambda: memory.list_sessions(robot="arm-01", outcome="failure", threshold=0.2)),
        ("/api/episode-facets", {}, memory.episode_facets),
        ("/api/map", {}, memory.map_view),
        ("/api/map", {"field": "spatial.object_position", "since": "2026-01-01T12:00:00Z", "limit": 1},
         lambda: memory.map_view("spatial.object_position", since="2026-01-01T12:00:00Z", limit=1)),
        ("/api/map", {"since": "-2h", "until": "now"}, lambda: memory.map_view(since="-2h", until="now")),
        ("/api/params", {}, memory.param_fields),
        ("/api/params/outcome", {"x": "params.grip_force", "bins": 3},
         lambda: memory.param_outcome("params.grip_force", bins=3)),
        ("/api/server", {}, lambda: {"token_required": False}),
    ]  # fmt: skip
    with running(create_app(memory)) as client:
        for path, params, call in pairs:
            assert ok(client.get(path, params=params)) == _json(call()), path
        found = ok(client.get("/api/search", params={"query": "grip force", "n": 3}))
        expected = memory.recall("grip force", n=3)
        assert [m["id"] for m in found["memories"]] == [m["id"] for m in expected["memories"]]
        assert found["mode"] == expected["mode"] == "hybrid"


def sightings(memory: RobotMemory) -> dict[str, int]:
    """Objects seen in two frames in March (stored on the clock's 1 January), and memories there without one."""

    def saw(text: str, at: str, position: list[float], frame: str | None = None, **named: str) -> int:
        spatial: dict[str, Any] = {"position": position}
        if frame is not None:
            spatial["frame"] = frame
        context = {"spatial": spatial, "object": named} if named else {"spatial": spatial}
        return int(memory.save_perception(text, context=context, observed_at=at)["memory_id"])

    return {
        "mug1": saw(
            "red mug on the table", "2026-03-02T08:00:00Z", [1.0, 1.0, 0.9], id="mug-3", label="red mug"
        ),
        "cone1": saw("a cone by the gate", "2026-03-02T08:30:00Z", [0.0, 0.0], label="cone"),
        "mug2": saw(
            "red mug still there", "2026-03-02T09:00:00Z", [1.05, 1.0, 0.9], id="mug-3", label="red mug"
        ),
        "pallet1": saw(
            "pallet at the yard", "2026-03-02T09:10:00Z", [3.0, 0.0], "odom", id="pallet-1", label="pallet"
        ),
        "cone2": saw("the cone again", "2026-03-02T09:30:00Z", [0.3, 0.0], label="cone"),
        "pallet2": saw(
            "pallet moved a little", "2026-03-02T09:40:00Z", [3.1, 0.0], "odom", id="pallet-1", label="pallet"
        ),
        "mug3": saw(
            "red mug on the shelf", "2026-03-02T10:00:00Z", [4.0, 2.0, 0.9], id="mug-3", label="red mug"
        ),
        "cone3": saw("another cone far away", "2026-03-02T10:30:00Z", [8.0, 8.0], label="cone"),
        "wall": saw("a crack in the wall", "2026-03-02T11:00:00Z", [2.0, 5.0]),
        "thing": saw("something at the crack", "2026-03-02T11:10:00Z", [2.0, 5.0], id="x-1", label="thing"),
        "odd": odd_frame(memory),
        "nameless": int(  # names no object: not a sighting the map counts
            memory.learn(
                "something",
                context={"object": {}, "spatial": {"position": [0.5, 0.5]}},
                observed_at="2026-03-02T11:20:00Z",
            )["memory_id"]
        ),
    }


def odd_frame(memory: RobotMemory) -> int:
    """A memory whose frame is no text, as another program or an older robotmem could write it."""
    odd = int(memory.learn("odd frame", context={"spatial": {"position": [9.0, 9.0]}})["memory_id"])
    rewrite_context(memory, odd, {"spatial": {"position": [9.0, 9.0], "frame": 5}})
    return odd


def test_map_shows_one_frame_and_the_objects_seen_in_it(memory: RobotMemory, client: httpx.Client) -> None:
    ids = sightings(memory)
    found = ok(client.get("/api/map"))
    assert found == _json(memory.map_view())
    assert found["field"] == "spatial.position" and found["time_field"] == "observed_at"
    # The frame most memories are in is the default; a frame that is no text is in none.
    assert found["frame"] == "map"
    assert found["frames"] == [{"frame": "map", "memories": 9}, {"frame": "odom", "memories": 2}]
    assert found["total"] == 9 and ids["pallet1"] not in {p["memory_id"] for p in found["points"]}
    assert found["sightings"] == 7 and ids["odd"] not in {p["memory_id"] for p in found["points"]}
    objects = {(o["object_id"], o["label"]): o for o in found["objects"]}
    mug = objects[("mug-3", "red mug")]
    assert mug["memory_id"] == ids["mug3"] and mug["position"] == [4.0, 2.0, 0.9] and mug["sightings"] == 3
    assert mug["observed_at"] == "2026-03-02T10:00:00Z" and mug["collection"] == "default"
    assert [t["memory_id"] for t in mug["track"]] == [ids["mug1"], ids["mug2"], ids["mug3"]]
    assert [t["observed_at"] for t in mug["track"]][0] == "2026-03-02T08:00:00Z"
    # Cones without an id: the second within 1 m of the first is the same cone, the third another.
    cones = sorted([t["memory_id"] for t in o["track"]] for o in found["objects"] if o["label"] == "cone")
    assert cones == [[ids["cone1"], ids["cone2"]], [ids["cone3"]]]
    assert [o["memory_id"] for o in found["objects"]][:2] == [ids["thing"], ids["cone3"]]  # newest first
    assert ("pallet-1", "pallet") not in objects

    odom = ok(client.get("/api/map", params={"frame": "odom"}))
    assert odom == _json(memory.map_view(frame="odom"))
    assert [p["memory_id"] for p in odom["points"]] == [ids["pallet2"], ids["pallet1"]]
    assert [(o["object_id"], [t["position"] for t in o["track"]]) for o in odom["objects"]] == [
        ("pallet-1", [[3.0, 0.0], [3.1, 0.0]])
    ]
    assert ok(client.get("/api/map", params={"frame": "lab"}))["points"] == []

    # The window bounds when things were observed (March), not when they were stored (1 January).
    morning = {"since": "2026-03-02T08:45:00Z", "until": "2026-03-02T10:15:00Z", "objects": 1}
    window = ok(client.get("/api/map", params=morning))
    assert window == _json(memory.map_view(**morning))
    assert window["total"] == 3 and window["sightings"] == 3
    assert [(o["object_id"], o["sightings"]) for o in window["objects"]] == [("mug-3", 2)]
    assert ok(client.get("/api/map", params={"until": "2026-02-01T00:00:00Z"}))["total"] == 0


def test_listing_parameters_are_checked_with_the_field_named(client: httpx.Client) -> None:
    for path, params, field in (
        ("/api/memories", {"limit": 0}, "limit"),
        ("/api/memories", {"limit": 501}, "limit"),
        ("/api/memories", {"offset": -1}, "offset"),
        ("/api/memories", {"limit": "ten"}, "limit"),
        ("/api/memories", {"min_confidence": 0.9, "max_confidence": 0.1}, "min_confidence"),
        ("/api/memories", {"perception_type": "smell"}, "perception_type"),
        ("/api/sessions", {"order": "sideways"}, "order"),
        ("/api/spatial", {"field": "position"}, "field"),
        ("/api/sessions", {"outcome": "partial"}, "outcome"),
        ("/api/sessions", {"threshold": 2}, "threshold"),
        ("/api/map", {"field": "params.grip_force"}, "field"),
        ("/api/map", {"since": "2026-02-01", "until": "2026-01-01"}, "since"),
        ("/api/map", {"frame": ""}, "frame"),
        ("/api/map", {"frame": "odom\x00"}, "frame"),
        ("/api/map", {"frame": "f" * 201}, "frame"),
        ("/api/map", {"objects": -1}, "objects"),
        ("/api/map", {"objects": 1001}, "objects"),
        ("/api/params/outcome", {}, "x"),
        ("/api/params/outcome", {"x": "params.grip_force", "bins": 101}, "bins"),
    ):
        assert field in error_of(client.get(path, params=params), 400, "invalid_input"), (path, params)


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
        assert ok(client.get("/api/server")) == {"token_required": True}


def test_a_token_no_header_can_carry_is_refused_at_start(memory: RobotMemory) -> None:
    """A token beyond Latin-1 would start a server that refuses every write; one within it works."""
    for token in ("jeton-ロボット", " padded", "line\nbreak"):
        with pytest.raises(ValidationError, match="token: no HTTP client can send this token"):
            create_app(memory, token=token)
    with running(create_app(memory, token="clé-secrète")) as client:
        body = {"insight": "the wrist camera fogs up in the cold room"}
        error_of(
            client.post("/api/learn", json=body, headers={"X-Robotmem-Token": b"cle"}), 401, "unauthorized"
        )
        ok(
            client.post(
                "/api/learn", json=body, headers={"X-Robotmem-Token": "clé-secrète".encode("latin-1")}
            )
        )


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


@pytest.mark.slow
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


def test_search_and_recall_carry_scope_warnings_and_the_session_robot(client: httpx.Client) -> None:
    session = ok(
        client.post("/api/start_session", json={"context": {"robot_id": "arm-07", "task": {"name": "pick"}}})
    )
    ok(
        client.post(
            "/api/learn",
            json={"insight": "the mug slips above 3 m/s", "context": {"task": {"success": False}}},
        )
    )
    ok(client.post("/api/learn", json={"insight": "the shelf holds mugs", "collection": "lab"}))
    ok(client.post("/api/end_session", json={"session_id": session["session_id"]}))
    mine = ok(
        client.post(
            "/api/recall",
            json={"query": "mug", "robots": ["arm-07"], "context_filter": {"task.name": "pick"}},
        )
    )
    assert [m["content"] for m in mine["memories"]] == ["the mug slips above 3 m/s"]
    assert mine["memories"][0]["robot_id"] == "arm-07" and mine["collections"] == ["default"]
    typo = ok(client.get("/api/search", params={"query": "mug", "context_filter": '{"task.sucess": false}'}))
    assert typo["total"] == 0
    assert typo["warnings"] == [
        "context_filter: no memory in collection 'default' carries `task.sucess`; did you mean `task.success`?"
    ]
    every = ok(client.get("/api/search", params={"query": "mug", "collection": "*"}))
    assert every["collections"] == ["default", "lab"] and every["total"] == 2
