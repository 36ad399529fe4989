"""Time from spawning ``robotmem mcp`` to a completed MCP ``initialize``, and to the first tool result.

Each run spawns a fresh server process on the same temporary database, sends ``initialize`` at once
(the server reads it as soon as it is listening) and stops the clock when the answer line arrives; it
then sends ``notifications/initialized`` and a ``recall``, whose answer also waits for the embedder
loading in the background. Messages are written by hand (newline-delimited JSON-RPC), so nothing on the
client side is timed. For scale, the same number of bare ``import mcp.server.mcpserver`` processes are
timed too, and CPU seconds are reported beside wall seconds: on a busy machine every wall time grows
together, while CPU time stays close to what an idle machine would show.

    .venv/bin/python benchmarks/mcp_startup.py --runs 10             # default embedder (bundled model)
    .venv/bin/python benchmarks/mcp_startup.py --runs 10 --backend hash

Prints one JSON object; exits 1 when the median time to ``initialize`` exceeds ``--limit`` seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

PROTOCOL_VERSION = "2025-11-25"


def _send(stream: TextIO, message: dict[str, Any]) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


def _answer(stream: TextIO, request_id: int) -> dict[str, Any]:
    while True:
        line = stream.readline()
        if not line:
            raise RuntimeError("the server closed stdout before answering")
        message = json.loads(line)
        if message.get("id") == request_id:
            if "error" in message:
                raise RuntimeError(f"request {request_id} failed: {message['error']}")
            return message  # type: ignore[no-any-return]


def _cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) the process has used so far; None where /proc is missing."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, float, float | None]:
    """Return seconds to the initialize answer, seconds to the first recall answer, and the server's CPU
    seconds up to the initialize answer (a measure that a busy machine inflates much less)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        _send(
            process.stdin,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "mcp_startup", "version": "1"},
                },
            },
        )
        answer = _answer(process.stdout, 1)
        initialized = time.perf_counter() - started
        cpu = _cpu_seconds(process.pid)
        if answer["result"]["serverInfo"]["name"] != "robotmem":
            raise RuntimeError(f"unexpected server: {answer['result']['serverInfo']}")
        _send(process.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(
            process.stdin,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "recall", "arguments": {"query": "grip force"}},
            },
        )
        result = _answer(process.stdout, 2)["result"]
        if result.get("isError"):
            raise RuntimeError(f"recall failed: {result['content']}")
        first_result = time.perf_counter() - started
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return initialized, first_result, cpu


def time_import() -> tuple[float, float]:
    """Wall and CPU seconds of one bare ``python -c 'import mcp.server.mcpserver'``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server.mcpserver"], check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def summary(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), 3),
        "min": round(ordered[0], 3),
        "max": round(ordered[-1], 3),
        "runs": [round(v, 3) for v in values],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="spawns to time (default 10)")
    parser.add_argument("--backend", help="ROBOTMEM_EMBED_BACKEND for the server (default: unset, i.e. auto)")
    parser.add_argument("--limit", type=float, default=1.5, help="allowed median seconds to initialize")
    parser.add_argument("--no-baseline", action="store_true", help="skip timing the bare SDK import")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="robotmem-mcp-startup-") as home:
        env = {**os.environ, "ROBOTMEM_HOME": home}
        env.pop("ROBOTMEM_EMBED_BACKEND", None)
        if args.backend:
            env["ROBOTMEM_EMBED_BACKEND"] = args.backend
        command = [sys.executable, "-m", "robotmem", "mcp", "--db", str(Path(home) / "memory.db")]
        run_once(command, env)  # creates the database and warms the OS file cache; not counted
        timings, imports = [], []
        for _ in range(args.runs):  # interleaved, so that both see the same machine load
            timings.append(run_once(command, env))
            if not args.no_baseline:
                imports.append(time_import())
    report: dict[str, Any] = {
        "command": "python -m robotmem mcp --db <tmp>/memory.db",
        "embed_backend": args.backend or "auto (default)",
        "spawn_to_initialize_s": summary([t[0] for t in timings]),
        "spawn_to_first_recall_s": summary([t[1] for t in timings]),
    }
    cpu = [t[2] for t in timings if t[2] is not None]
    if cpu:
        report["server_cpu_to_initialize_s"] = summary(cpu)
    if imports:
        report["bare_sdk_import_s"] = summary([wall for wall, _ in imports])
        report["bare_sdk_import_cpu_s"] = summary([cpu for _, cpu in imports])
        report["initialize_over_bare_import"] = round(
            report["spawn_to_initialize_s"]["median"] / report["bare_sdk_import_s"]["median"], 2
        )
    report.update(
        limit_s=args.limit,
        ok=report["spawn_to_initialize_s"]["median"] <= args.limit,
        python=sys.version.split()[0],
        mcp=metadata.version("mcp"),
        cpus=os.cpu_count(),
        load_average=[round(value, 2) for value in os.getloadavg()],
    )
    print(json.dumps(report, indent=2))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
