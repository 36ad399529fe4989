"""Reliability soak: many writers on one file, writers killed mid-write, and the checks after each.

Run from the repository root:

    python benchmarks/soak.py                      # everything at full size (see docs/reliability.md)
    python benchmarks/soak.py processes --writers 4 --per-writer 1000
    python benchmarks/soak.py threads --threads 8 --per-thread 500
    python benchmarks/soak.py crash --runs 20
    python benchmarks/soak.py --quick --json out.json   # the sizes the test suite uses

Scenarios:

- ``processes``: N writer processes each ``learn`` distinct texts on one database while a reader
  process recalls in a loop. Every writer reports the ids it was given; afterwards the table must
  hold exactly those rows, no call may have raised, and ``integrity_report()`` must be clean.
- ``threads``: the same with N threads sharing one ``RobotMemory`` (plus one reader thread).
- ``crash``: a writer (learn, save_perception, update, forget) is killed with SIGKILL at a random
  moment, again and again on the same file. The writer prints each acknowledged change, flushed,
  after the call returned. After each kill: ``PRAGMA integrity_check`` is ok, every acknowledged
  change is in the file, and the FTS and vector indexes agree with the table (or ``repair()``
  restores them, which is then reported).

All scenarios use the deterministic hashing embedder, so vectors are stored and checked without a
model. The exit status is 0 when every check held.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
try:
    from robotmem import RobotMemError, RobotMemory
    from robotmem.config import Settings
except ImportError:  # run from a checkout without an installed package
    sys.path.insert(0, str(ROOT / "src"))
    from robotmem import RobotMemError, RobotMemory
    from robotmem.config import Settings

SCRIPT = Path(__file__).resolve()
WORDS = [
    "gripper",
    "cup",
    "drawer",
    "shelf",
    "bottle",
    "door",
    "handle",
    "tray",
    "sponge",
    "block",
    "peg",
    "hole",
    "cable",
    "valve",
    "lid",
    "box",
    "wrench",
    "bolt",
    "nut",
    "plate",
    "bowl",
    "spoon",
    "towel",
    "hinge",
    "rail",
    "crate",
    "pallet",
    "bin",
    "hook",
    "knob",
    "lever",
    "pipe",
]
SURFACES = ("oak", "steel", "glass", "rubber", "felt", "tile", "carpet", "marble")


def insight(writer: int, index: int) -> str:
    """Return a text no other (writer, index) produces and that dedup will never call a duplicate."""
    rng = random.Random(writer * 1_000_003 + index)
    a, b = rng.sample(WORDS, 2)
    force = 5 + (index % 400) * 0.05
    return (
        f"writer {writer} trial {index}: grip_force={force:.2f}N moved the {a} onto the {b} "
        f"on {rng.choice(SURFACES)} at station {writer}-{index}"
    )


def open_memory(db: Path) -> RobotMemory:
    """Open ``db`` with the hashing embedder and default settings (environment ignored)."""
    return RobotMemory(db, embed_backend="hash", settings=Settings(home=db.parent))


def _percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2),
        "max_ms": round(ordered[-1], 2),
    }


# ---- workers (run in their own process) ----------------------------------------------------------


def worker_writer(db: Path, writer: int, count: int) -> dict[str, Any]:
    """Learn ``count`` distinct texts; return the ids given, duplicates, errors and latencies."""
    ids: list[int] = []
    duplicates: list[str] = []
    errors: list[str] = []
    latencies: list[float] = []
    try:
        mem = open_memory(db)
    except RobotMemError as exc:
        return {"writer": writer, "ids": [], "duplicates": [], "errors": [f"open: {exc}"], "latency": {}}
    with mem:
        for index in range(count):
            started = time.perf_counter()
            try:
                result = mem.learn(insight(writer, index))
            except RobotMemError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            latencies.append((time.perf_counter() - started) * 1000)
            if result["status"] == "created":
                ids.append(int(result["memory_id"]))
            else:
                duplicates.append(f"{index}: {result}")
    return {
        "writer": writer,
        "ids": ids,
        "duplicates": duplicates,
        "errors": errors,
        "latency": _percentiles(latencies),
    }


def worker_reader(db: Path, stop: Path, mem: RobotMemory | None = None) -> dict[str, Any]:
    """Recall in a loop until ``stop`` exists; return how many recalls ran, errors and latencies."""
    errors: list[str] = []
    latencies: list[float] = []
    rng = random.Random(7)
    own = mem is None
    if mem is None:
        # Wait until a writer has created the schema, as a reader started with the robot would.
        deadline = time.monotonic() + 30
        while not db.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        mem = open_memory(db)
    try:
        while not stop.exists():
            started = time.perf_counter()
            try:
                mem.recall(f"{rng.choice(WORDS)} {rng.choice(WORDS)} grip force", n=5)
            except RobotMemError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append((time.perf_counter() - started) * 1000)
    finally:
        if own:
            mem.close()
    return {"recalls": len(latencies), "errors": errors, "latency": _percentiles(latencies)}


def worker_crash(db: Path, run: int) -> None:
    """Write forever, printing each acknowledged change (flushed) after the call returned.

    Lines: ``L id`` learn, ``P id`` save_perception, ``U id text`` update, ``F id`` forget. Before an
    update it prints ``u id text``: a kill between the commit and the acknowledgement leaves the new
    text stored but unacknowledged, and the check must accept it.
    """
    rng = random.Random(run)
    mine: list[int] = []
    with open_memory(db) as mem:
        index = 0
        while True:
            index += 1
            roll = rng.random()
            if roll < 0.15 and mine:
                memory_id = mine.pop(rng.randrange(len(mine)))
                mem.forget(memory_id, reason=f"crash run {run} step {index}")
                line = f"F {memory_id}"
            elif roll < 0.30 and mine:
                memory_id = rng.choice(mine)
                text = insight(10_000 + run, index)
                sys.stdout.write(f"u {memory_id} {text}\n")
                sys.stdout.flush()
                mem.update(memory_id, text)
                line = f"U {memory_id} {text}"
            elif roll < 0.45:
                data = {"joints": [[rng.random() for _ in range(7)] for _ in range(rng.randint(1, 400))]}
                result = mem.save_perception(
                    f"run {run} trajectory {index}", perception_type="procedural", data=data
                )
                line = f"P {result['memory_id']}"
            else:
                result = mem.learn(insight(1_000 + run, index))
                if result["status"] != "created":
                    continue
                mine.append(int(result["memory_id"]))
                line = f"L {result['memory_id']}"
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(process: subprocess.Popen[str], what: str) -> dict[str, Any]:
    out, err = process.communicate(timeout=900)
    if process.returncode != 0:
        raise RuntimeError(f"{what} exited with {process.returncode}: {err[-2000:]}")
    return dict(json.loads(out.strip().splitlines()[-1]))


# ---- checks --------------------------------------------------------------------------------------


def table_ids(db: Path) -> list[int]:
    """Return every memory id in ``db`` (read with plain sqlite3, not through robotmem)."""
    conn = sqlite3.connect(db)
    try:
        return [int(r[0]) for r in conn.execute("SELECT id FROM memories ORDER BY id")]
    finally:
        conn.close()


def verify(db: Path, acknowledged: Sequence[int]) -> dict[str, Any]:
    """Compare the table with the acknowledged ids and run the integrity report."""
    stored = table_ids(db)
    lost = sorted(set(acknowledged) - set(stored))
    unexpected = sorted(set(stored) - set(acknowledged))
    with open_memory(db) as mem:
        report = mem.integrity_report()
    return {
        "stored": len(stored),
        "acknowledged": len(acknowledged),
        "lost": lost,
        "unacknowledged_rows": unexpected,
        "integrity_ok": report["ok"],
        "integrity": {k: report[k] for k in ("integrity_check", "problems", "rows")},
    }


# ---- scenarios -----------------------------------------------------------------------------------


def scenario_processes(workdir: Path, writers: int, per_writer: int, reader: bool = True) -> dict[str, Any]:
    """``writers`` processes × ``per_writer`` learns (plus a reader process) on one new file."""
    db = workdir / f"processes-{writers}x{per_writer}.db"
    stop = workdir / f"{db.name}.stop"
    started = time.perf_counter()
    procs = [_spawn("worker-writer", str(db), str(w), str(per_writer)) for w in range(writers)]
    reader_proc = _spawn("worker-reader", str(db), str(stop)) if reader else None
    results = [_finish(p, f"writer {w}") for w, p in enumerate(procs)]
    elapsed = time.perf_counter() - started
    stop.touch()
    reader_result = _finish(reader_proc, "reader") if reader_proc is not None else None
    acknowledged = [i for r in results for i in r["ids"]]
    errors = [e for r in results for e in r["errors"]] + (reader_result["errors"] if reader_result else [])
    duplicates = [d for r in results for d in r["duplicates"]]
    check = verify(db, acknowledged)
    return {
        "scenario": "processes",
        "writers": writers,
        "per_writer": per_writer,
        "expected": writers * per_writer,
        "elapsed_s": round(elapsed, 2),
        "learns_per_s": round(writers * per_writer / elapsed, 1),
        "errors": errors[:20],
        "error_count": len(errors),
        "duplicates": duplicates[:20],
        "writer_latency": [r["latency"] for r in results],
        "reader": None if reader_result is None else {k: reader_result[k] for k in ("recalls", "latency")},
        **check,
        "passed": not errors
        and not duplicates
        and check["stored"] == writers * per_writer
        and not check["lost"]
        and not check["unacknowledged_rows"]
        and check["integrity_ok"],
    }


def scenario_threads(workdir: Path, threads: int, per_thread: int, reader: bool = True) -> dict[str, Any]:
    """``threads`` threads × ``per_thread`` learns sharing one ``RobotMemory`` (plus a reader thread)."""
    db = workdir / f"threads-{threads}x{per_thread}.db"
    stop = workdir / f"{db.name}.stop"
    results: list[dict[str, Any]] = [{} for _ in range(threads)]
    reader_result: dict[str, Any] = {}
    started = time.perf_counter()
    with open_memory(db) as mem:

        def write(writer: int) -> None:
            ids: list[int] = []
            errors: list[str] = []
            duplicates: list[str] = []
            for index in range(per_thread):
                try:
                    result = mem.learn(insight(writer, index))
                except Exception as exc:  # a thread must report every failure, robotmem's or not
                    errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                if result["status"] == "created":
                    ids.append(int(result["memory_id"]))
                else:
                    duplicates.append(f"{index}: {result}")
            results[writer] = {"ids": ids, "errors": errors, "duplicates": duplicates}

        def read() -> None:
            try:
                reader_result.update(worker_reader(db, stop, mem))
            except Exception as exc:
                reader_result.update({"recalls": 0, "errors": [f"{type(exc).__name__}: {exc}"]})

        workers = [threading.Thread(target=write, args=(w,)) for w in range(threads)]
        reading = threading.Thread(target=read) if reader else None
        for t in workers:
            t.start()
        if reading is not None:
            reading.start()
        for t in workers:
            t.join()
        elapsed = time.perf_counter() - started
        stop.touch()
        if reading is not None:
            reading.join()
    acknowledged = [i for r in results for i in r["ids"]]
    errors = [e for r in results for e in r["errors"]] + list(reader_result.get("errors", []))
    duplicates = [d for r in results for d in r["duplicates"]]
    check = verify(db, acknowledged)
    return {
        "scenario": "threads",
        "threads": threads,
        "per_thread": per_thread,
        "expected": threads * per_thread,
        "elapsed_s": round(elapsed, 2),
        "learns_per_s": round(threads * per_thread / elapsed, 1),
        "errors": errors[:20],
        "error_count": len(errors),
        "duplicates": duplicates[:20],
        "reader": {k: reader_result.get(k) for k in ("recalls", "latency")} if reader else None,
        **check,
        "passed": not errors
        and not duplicates
        and check["stored"] == threads * per_thread
        and not check["lost"]
        and not check["unacknowledged_rows"]
        and check["integrity_ok"],
    }


def _parse_acks(out: str) -> tuple[list[int], set[int], dict[int, set[str]]]:
    """Created ids, forgotten ids, and per updated id the texts it may hold: the acknowledged one
    and the one of the update in flight when the writer was killed (committed or not)."""
    created: list[int] = []
    forgotten: set[int] = set()
    updated: dict[int, set[str]] = {}
    in_flight: tuple[int, str] | None = None
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            continue  # the last line may be cut by the kill
        kind, memory_id = parts[0], int(parts[1])
        if kind in ("L", "P"):
            created.append(memory_id)
        elif kind == "F":
            forgotten.add(memory_id)
        elif kind == "u" and len(parts) == 3:
            in_flight = (memory_id, parts[2])
        elif kind == "U" and len(parts) == 3:
            updated[memory_id] = {parts[2]}
            in_flight = None
    if in_flight is not None and in_flight[0] in updated:
        updated[in_flight[0]].add(in_flight[1])
    return created, forgotten, updated


def crash_check(
    db: Path, created: Sequence[int], forgotten: set[int], updated: dict[int, set[str]]
) -> dict[str, Any]:
    """Check one killed run: integrity, acknowledged changes present, indexes agree (repairing if not)."""
    conn = sqlite3.connect(db)
    try:
        integrity = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
        # A writer killed while creating the schema leaves no table (and has acknowledged nothing).
        has_table = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories'").fetchone()
        rows = {
            int(r[0]): (str(r[1]), str(r[2]))
            for r in (conn.execute("SELECT id, status, content FROM memories") if has_table else [])
        }
    finally:
        conn.close()
    lost = [m for m in created if m not in rows]
    not_forgotten = [m for m in forgotten if m in rows and rows[m][0] != "invalidated"]
    # An update is only checked when that memory was not forgotten later in the run.
    not_updated = [
        m for m, texts in updated.items() if m not in forgotten and m in rows and rows[m][1] not in texts
    ]
    with open_memory(db) as mem:
        report = mem.integrity_report()
        repaired = None
        if not report["ok"]:
            repaired = mem.repair()
    return {
        "integrity_check": integrity,
        "acknowledged": len(created),
        "lost": lost,
        "forget_lost": not_forgotten,
        "update_lost": not_updated,
        "indexes_ok": report["ok"],
        "problems": {k: v for k, v in report["problems"].items() if v},
        "repair_ok": None if repaired is None else repaired["ok"],
        "passed": integrity == ["ok"]
        and not lost
        and not not_forgotten
        and not not_updated
        and (report["ok"] or bool(repaired and repaired["ok"])),
    }


def scenario_crash(workdir: Path, runs: int, seed: int = 1, max_delay_s: float = 1.5) -> dict[str, Any]:
    """Kill a writer with SIGKILL ``runs`` times at random moments; check the file after each kill.

    Every fifth run is killed at a random moment after it was started (often while it imports or
    opens the database); the others at a random moment after their first acknowledged write, so
    that slow start-up on a loaded machine cannot make the test vacuous.
    """
    db = workdir / f"crash-{runs}.db"
    rng = random.Random(seed)
    results = []
    started = time.perf_counter()
    for run in range(runs):
        process = _spawn("worker-crash", str(db), str(run))
        first = ""
        if run % 5 != 0:
            assert process.stdout is not None
            first = process.stdout.readline()  # blocks until the first acknowledged write
        delay = rng.uniform(0.0, max_delay_s)
        time.sleep(delay)
        os.kill(process.pid, signal.SIGKILL)
        out, err = process.communicate(timeout=60)
        out = first + out
        created, forgotten, updated = _parse_acks(out)
        outcome = crash_check(db, created, forgotten, updated)
        outcome.update(
            {
                "run": run,
                "killed": f"{delay:.2f} s after " + ("its first write" if first else "start"),
                "changes_acknowledged": sum(1 for line in out.splitlines() if line[:1].isupper()),
            }
        )
        if process.returncode != -signal.SIGKILL:
            outcome["passed"] = False
            outcome["stderr"] = err[-2000:]
        results.append(outcome)
    acknowledged = sum(r["changes_acknowledged"] for r in results)
    return {
        "scenario": "crash",
        "runs": runs,
        "elapsed_s": round(time.perf_counter() - started, 2),
        "memories_after": len(table_ids(db)),
        "acknowledged_total": acknowledged,
        "runs_repaired": sum(1 for r in results if r["repair_ok"] is not None),
        "failed_runs": [r for r in results if not r["passed"]],
        "passed": acknowledged > 0 and all(r["passed"] for r in results),
    }


# ---- command line --------------------------------------------------------------------------------

FULL = {"writers": 4, "per_writer": 1000, "threads": 8, "per_thread": 500, "runs": 20}
QUICK = {"writers": 4, "per_writer": 150, "threads": 8, "per_thread": 60, "runs": 5}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen scenarios, print a JSON report, return 0 when every check held."""
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw and raw[0].startswith("worker-"):
        return _worker(raw)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "scenario", nargs="?", default="all", choices=["all", "processes", "threads", "crash"]
    )
    parser.add_argument("--quick", action="store_true", help="the smaller sizes the test suite uses")
    parser.add_argument("--writers", type=int)
    parser.add_argument("--per-writer", type=int)
    parser.add_argument("--threads", type=int)
    parser.add_argument("--per-thread", type=int)
    parser.add_argument("--runs", type=int)
    parser.add_argument("--no-reader", action="store_true")
    parser.add_argument("--workdir", type=Path, help="keep the databases here (default: a temporary dir)")
    parser.add_argument("--json", type=Path, help="also write the report to this file")
    args = parser.parse_args(raw)
    sizes = dict(QUICK if args.quick else FULL)
    for key in sizes:
        if getattr(args, key) is not None:
            sizes[key] = getattr(args, key)
    with tempfile.TemporaryDirectory(prefix="robotmem-soak-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        report: dict[str, Any] = {"python": sys.version.split()[0], "sqlite": sqlite3.sqlite_version}
        report["cpus"] = os.cpu_count()
        if args.scenario in ("all", "processes"):
            report["processes"] = scenario_processes(
                workdir, sizes["writers"], sizes["per_writer"], reader=not args.no_reader
            )
        if args.scenario in ("all", "threads"):
            report["threads"] = scenario_threads(
                workdir, sizes["threads"], sizes["per_thread"], reader=not args.no_reader
            )
        if args.scenario in ("all", "crash"):
            report["crash"] = scenario_crash(workdir, sizes["runs"])
    passed = all(v["passed"] for v in report.values() if isinstance(v, dict) and "passed" in v)
    report["passed"] = passed
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0 if passed else 1


def _worker(raw: list[str]) -> int:
    kind, db = raw[0], Path(raw[1])
    if kind == "worker-writer":
        print(json.dumps(worker_writer(db, int(raw[2]), int(raw[3]))))
    elif kind == "worker-reader":
        print(json.dumps(worker_reader(db, Path(raw[2]))))
    elif kind == "worker-crash":
        worker_crash(db, int(raw[2]))
    else:
        raise SystemExit(f"unknown worker {kind}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
