"""``robotmem web`` as a remote client meets it: a real waitress server in a subprocess on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("waitress")

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """The base URL of ``robotmem web`` on a fresh database, with a 3-second request deadline."""
    port = _free_port()
    env = {
        **os.environ,
        "ROBOTMEM_HOME": str(tmp_path / "home"),
        "ROBOTMEM_EMBED_BACKEND": "hash",
        "ROBOTMEM_WEB_CHANNEL_TIMEOUT_S": "3",
        "ROBOTMEM_WEB_ALLOWED_HOSTS": "robot.lan",
    }
    env.pop("ROBOTMEM_WEB_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "robotmem", "web", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/api/stats", timeout=5)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline, "the web server did not start"
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.communicate(timeout=30)


def _trickling_sockets(url: str, count: int) -> list[socket.socket]:
    port = int(url.rsplit(":", 1)[1])
    opened = []
    for _ in range(count):
        conn = socket.create_connection(("127.0.0.1", port), timeout=5)
        conn.sendall(b"GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
        opened.append(conn)
    return opened


def test_idle_trickling_connections_do_not_lock_clients_out(server: str) -> None:
    sockets = _trickling_sockets(server, 120)
    try:
        for conn in sockets:
            conn.sendall(b"X")  # one byte: "active" for waitress's idle timeout
        started = time.monotonic()
        response = httpx.get(f"{server}/api/stats", timeout=10)
        assert response.status_code == 200 and time.monotonic() - started < 5
    finally:
        for conn in sockets:
            conn.close()


def test_a_request_that_never_finishes_arriving_is_cut_off(server: str) -> None:
    (conn,) = _trickling_sockets(server, 1)
    started = time.monotonic()
    closed = False
    with conn:
        while time.monotonic() - started < 15:
            try:
                conn.sendall(b"X-Slow: 1\r\n")
                conn.settimeout(1)
                if conn.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break
    assert closed and time.monotonic() - started < 10


def test_only_this_servers_host_names_are_answered(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    rebound = httpx.get(f"{server}/api/memories", headers={"Host": f"rebind.attacker.example:{port}"})
    assert rebound.status_code == 400 and rebound.json()["error"]["code"] == "invalid_host"
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"robot.lan:{port}", f"10.0.0.7:{port}"):
        assert httpx.get(f"{server}/api/memories", headers={"Host": host}).status_code == 200, host


def test_a_cross_site_search_counts_no_access(server: str) -> None:
    created = httpx.post(f"{server}/api/learn", json={"insight": "the drawer sticks when pulled fast"}).json()
    memory_id = created["memory_id"]
    for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "http://evil.example"}):
        refused = httpx.get(f"{server}/api/search", params={"query": "drawer"}, headers=headers)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert httpx.get(f"{server}/api/memory/{memory_id}").json()["access_count"] == 0
    found = httpx.get(
        f"{server}/api/search", params={"query": "drawer"}, headers={"Sec-Fetch-Site": "same-origin"}
    )
    assert found.status_code == 200 and found.json()["total"] == 1
    deadline = time.monotonic() + 10  # accesses are recorded off the reader's path
    while (count := httpx.get(f"{server}/api/memory/{memory_id}").json()["access_count"]) == 0:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(0.5)
    assert httpx.get(f"{server}/api/memory/{memory_id}").json()["access_count"] == count == 1


def test_a_body_nested_a_thousand_deep_is_a_400(server: str) -> None:
    body = '{"insight": "deep", "context": {"a": ' + "[" * 1000 + "]" * 1000 + "}}"
    response = httpx.post(f"{server}/api/learn", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and "nests deeper" in response.json()["error"]["message"]
    assert httpx.get(f"{server}/api/stats").status_code == 200


def test_sixteen_nested_not_filters_work_and_errors_show_no_path(server: str, tmp_path: Path) -> None:
    httpx.post(
        f"{server}/api/learn",
        json={"insight": "the gripper holds wet mugs", "context": {"task": {"success": True}}},
    )
    condition: dict[str, object] = {"task.success": True}
    for _ in range(16):
        condition = {"$not": condition}
    found = httpx.post(f"{server}/api/recall", json={"query": "", "context_filter": condition})
    assert found.status_code == 200 and found.json()["total"] == 1
    for _ in range(2):
        condition = {"$not": condition}
    too_deep = httpx.post(f"{server}/api/recall", json={"query": "", "context_filter": condition})
    assert too_deep.status_code == 400
    missing = httpx.get(f"{server}/api/sessions/nope")
    for response in (too_deep, missing):
        assert str(tmp_path) not in response.text and "/home/" not in response.text


def test_a_stored_huge_coordinate_gives_a_finite_distance(server: str) -> None:
    httpx.post(
        f"{server}/api/learn",
        json={"insight": "the far beacon is visible", "context": {"spatial": {"position": [1e200, 0.0]}}},
    )
    response = httpx.post(
        f"{server}/api/recall",
        json={"query": "beacon", "spatial_sort": {"field": "spatial.position", "target": [-1e200, 0.0]}},
    )
    assert "Infinity" not in response.text and "NaN" not in response.text
    (hit,) = json.loads(response.text)["memories"]
    assert hit["spatial_distance"] == 2e200


def test_no_response_shows_a_filesystem_path(server: str, tmp_path: Path) -> None:
    """Reports and listings say nothing about the machine: doctor gives the database's file name only."""
    session = httpx.post(f"{server}/api/start_session", json={"context": {"task": {"name": "push"}}}).json()
    learned = httpx.post(
        f"{server}/api/learn",
        json={
            "insight": "the block slid 3 cm past the marker",
            "context": {"spatial": {"p": [0.1, 0.2]}, "task": {"success": False}},
            "session_id": session["session_id"],
        },
    ).json()
    httpx.post(f"{server}/api/save_perception", json={"description": "wrist camera frame one", "data": [1]})
    sid, mid = session["session_id"], learned["memory_id"]
    paths = [
        "/api/doctor",
        "/api/stats",
        "/api/memories",
        "/api/search?query=block",
        "/api/sessions",
        f"/api/sessions/{sid}",
        f"/api/sessions/{sid}/memories",
        "/api/collections",
        "/api/categories",
        "/api/recent-failures",
        "/api/spatial?field=spatial.p",
        f"/api/memory/{mid}",
        "/api/openapi.json",
    ]
    home = str(tmp_path / "home")
    for path in paths:
        response = httpx.get(f"{server}{path}")
        assert response.status_code == 200, (path, response.text)
        assert home not in response.text and str(tmp_path) not in response.text, path
    doctor = httpx.get(f"{server}/api/doctor").json()
    assert doctor["database"] == "memory.db" and doctor["ok"]


def _web(tmp_path: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROBOTMEM_HOME": str(tmp_path / "home"), "ROBOTMEM_EMBED_BACKEND": "hash"}
    env.pop("ROBOTMEM_WEB_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "robotmem", "web", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("port", ["-1", "65536", "70000"])
def test_a_port_out_of_range_is_one_error_line(tmp_path: Path, port: str) -> None:
    result = _web(tmp_path, "--port", port)
    assert result.returncode == 2
    assert result.stderr == f"Error: --port: expected a port number 0..65535, got {port}\n"
    assert not (tmp_path / "home").exists()  # refused before the database is opened


def test_a_port_in_use_is_one_error_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _web(tmp_path, "--port", str(port))
    assert result.returncode == 2
    assert result.stderr == f"Error: --port {port}: cannot listen on 127.0.0.1:{port} (already in use)\n"


def test_port_zero_prints_the_port_it_serves_on(tmp_path: Path) -> None:
    env = {**os.environ, "ROBOTMEM_HOME": str(tmp_path / "home"), "ROBOTMEM_EMBED_BACKEND": "hash"}
    env.pop("ROBOTMEM_WEB_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "robotmem", "web", "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("robotmem web UI on http://127.0.0.1:"), line
        url = line.split()[4].rstrip("/")
        assert not url.endswith(":0")
        assert httpx.get(f"{url}/api/stats", timeout=30).status_code == 200
    finally:
        process.terminate()
        process.communicate(timeout=30)
