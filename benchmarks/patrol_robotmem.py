"""The patrol log and queries through robotmem's public where-and-when API.

What it expects of ``RobotMemory`` (it checks, and says what is missing, before storing anything):

    save_perceptions([{"description", "perception_type", "context", "observed_at"}, ...])
    learn(insight, context, observed_at=...)            observed_at: ISO-8601 with zone, or epoch seconds
    recall(query, n, min_confidence, collection, order="recent", region=..., since=..., until=...)
        region: {"field": "spatial.position", "center": [x, y, z], "radius": r, "frame": f}
             or {"field": "spatial.position", "min": [...], "max": [...], "frame": f}
        since/until: ISO-8601, epoch seconds, or relative ("-2h", to the instance's clock)
    last_seen(query="", object_id=None, n=5, since=None, until=None, region=None, as_of=None, collection=None)
        -> {"objects": [{"object_id", "label", "position", "frame", "observed_at", "memory_id", "sightings"}]}
    around(position, radius, frame=None, since=None, n=...) -> {"objects": [... "distance"], "memories": [...]}

Each sighting is a perception whose context names the object (``{"object": {"id", "label"}}``, the label
alone for an anonymous one) and its position (``{"spatial": {"position": [x, y, z], "frame": ...}}``);
each lesson is ``learn`` with the robot's position. The instance's clock is the end of the log, so relative
times mean the same as in the reference. Vectors come from the table the harness computed (the same eMEM
gets); a query text missing from it would be embedded by the model during a timed call, and is counted.
"""

from __future__ import annotations

import inspect
import json
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks.harness import PrecomputedEmbedder
from benchmarks.patrol_data import PatrolLog
from benchmarks.patrol_queries import iso

COLLECTION = "patrol"
BATCH = 500
NEEDS = {
    "RobotMemory.last_seen": ("query", "object_id", "n", "since", "until", "region", "as_of", "collection"),
    "RobotMemory.around": ("position", "radius", "frame", "since", "n"),
    "RobotMemory.recall": ("region", "since", "until", "order"),
    "RobotMemory.learn": ("observed_at",),
}


class Unavailable(RuntimeError):
    """The robotmem on the path lacks part of the API the benchmark needs."""


def missing_api() -> list[str]:
    """What of ``NEEDS`` the importable robotmem lacks (empty when all is there)."""
    from robotmem import RobotMemory

    missing = []
    for name, parameters in NEEDS.items():
        method = getattr(RobotMemory, name.split(".")[1], None)
        if method is None:
            missing.append(f"{name}()")
            continue
        have = set(inspect.signature(method).parameters)
        missing.extend(f"{name}({p}=)" for p in parameters if p not in have)
    return missing


class CountingEmbedder(PrecomputedEmbedder):
    """Precomputed vectors that count the texts they had to send to the model."""

    def __init__(self, base: Any) -> None:
        super().__init__(base)
        self.misses: list[str] = []

    def embed_one(self, text: str, *, is_query: bool = False) -> Any:
        if (text, is_query) not in self._cache:
            self.misses.append(text)
        return super().embed_one(text, is_query=is_query)

    def embed_batch(self, texts: Any, *, is_query: bool = False) -> Any:
        self.misses.extend(t for t in texts if (t, is_query) not in self._cache)
        return super().embed_batch(texts, is_query=is_query)


def open_memory(
    db_dir: Path, vectors: Any, now: float, server: str | None, fresh: bool = True
) -> tuple[Any, CountingEmbedder]:
    """A fresh store: ``db_dir/patrol.db`` (the one there when not ``fresh``), or the (empty) PostgreSQL
    database at ``server``."""
    from robotmem import RobotMemory
    from robotmem.config import Settings
    from robotmem.embedders.bundled import BundledEmbedder

    db_dir.mkdir(parents=True, exist_ok=True)
    if server is None and fresh:
        for old in db_dir.glob("patrol.db*"):
            old.unlink()
    embedder = CountingEmbedder(BundledEmbedder())
    embedder.load(vectors["passage_texts"], vectors["passage_vectors"])
    embedder.load(vectors["query_texts"], vectors["query_vectors"], is_query=True)
    clock_now = datetime.fromtimestamp(now, tz=timezone.utc)
    memory = RobotMemory(
        server or db_dir / "patrol.db",
        collection=COLLECTION,
        settings=Settings(),
        embedder=embedder,
        clock=lambda: clock_now,
    )
    return memory, embedder


def context_of(record: dict[str, Any]) -> dict[str, Any]:
    context: dict[str, Any] = {
        "spatial": {"position": record["position"], "frame": record["frame"]},
        "robot": {"id": "patrol-1"},
    }
    if record["label"] is not None:
        named = {"id": record["object_id"]} if record["object_id"] else {}
        context["object"] = {**named, "label": record["label"]}
    return context


def ingest(memory: Any, log: PatrolLog) -> dict[int, int]:
    """Store every record in time order (sightings in batches); return memory id -> record index."""
    rows: dict[int, int] = {}
    batch: list[int] = []

    def flush() -> None:
        items = [
            {
                "description": log.text(i),
                "perception_type": "visual",
                "context": context_of(log.record(i)),
                "observed_at": iso(float(log.times[i])),
            }
            for i in batch
        ]
        for index, stored in zip(batch, memory.save_perceptions(items), strict=True):
            rows[int(stored["memory_id"])] = index
        batch.clear()

    for index in range(len(log)):
        if log.kinds[index] == 0:
            batch.append(index)
            if len(batch) >= BATCH:
                flush()
            continue
        flush()
        record = log.record(index)
        learned = memory.learn(record["text"], context_of(record), observed_at=record["observed_at"])
        memory_id = learned["memory_id"] if learned["status"] == "created" else learned["existing_id"]
        rows.setdefault(int(memory_id), index)
    flush()
    return rows


class Asker:
    """Runs one query through the new API and returns the answer in the harness's shape."""

    def __init__(self, memory: Any, rows: dict[int, int]) -> None:
        self.memory = memory
        self.rows = rows

    def ask(self, query: dict[str, Any]) -> list[Any]:
        kind, args = query["kind"], query["args"]
        if kind in ("last_seen_id", "as_of", "last_seen_label", "unknown"):
            as_of = args.get("as_of")
            found = self.memory.last_seen(
                query=args.get("text", ""), object_id=args.get("object_id"), n=1 if "object_id" in args else 5,
                as_of=iso(as_of) if as_of is not None else None, collection=COLLECTION,
            )  # fmt: skip
            return [self.object_answer(o) for o in found["objects"]]
        if kind == "around":
            since = args["since"]
            found = self.memory.around(
                args["position"], args["radius"], frame=args["frame"],
                since=iso(since) if since is not None else None, n=args["n"],
            )  # fmt: skip
            return [o["object_id"] for o in found["objects"]]
        since = args["since"] if kind == "recent" else iso(args["since"])
        until = iso(args["until"]) if "until" in args else None
        result = self.memory.recall(
            query=args.get("text", ""), n=args["n"], min_confidence=0.0, collection=COLLECTION,
            order="recent", region=args["region"], since=since, until=until,
        )  # fmt: skip
        return [self.rows.get(int(m["id"]), -1) for m in result["memories"]]

    def object_answer(self, found: dict[str, Any]) -> dict[str, Any]:
        return {
            "object": found.get("object_id"),
            "label": found.get("label"),
            "position": found.get("position"),
            "frame": found.get("frame"),
            "observed_at": found.get("observed_at"),
            "record": self.rows.get(int(found["memory_id"])) if found.get("memory_id") is not None else None,
        }


def stored_rows(memory: Any, rows_file: Path) -> dict[int, int] | None:
    """The memory id -> record index map of an earlier ingest, when the database still holds exactly it."""
    if not rows_file.exists():
        return None
    rows = {int(k): v for k, v in json.loads(rows_file.read_text(encoding="utf-8")).items()}
    return rows if memory.stats(COLLECTION)["memories"]["total"] == len(rows) else None


def store_size(db_dir: Path) -> int:
    return sum(p.stat().st_size for p in db_dir.glob("patrol.db*"))


def run(
    log: PatrolLog,
    queries: list[dict[str, Any]],
    vectors: Any,
    db_dir: Path,
    repeat: int,
    server: str | None = None,
    reuse: bool = False,
    keep: bool = False,
) -> dict[str, Any]:
    """Build the store, ask every query (once untimed, then ``repeat`` times timed); raise ``Unavailable``.

    ``server`` is a ``postgresql://`` address of an empty database to use instead of a SQLite file; with
    ``reuse``, a database this function filled before with the same log is asked again without storing.
    ``keep`` does that for SQLite: the file of this log (``db_dir/kept-N-SEED``) is kept, and asked again by
    the next run with ``keep`` (two versions of robotmem, alternated, ask one store).
    """
    missing = missing_api()
    if missing:
        raise Unavailable("robotmem lacks " + ", ".join(missing))
    started = time.perf_counter()
    kept = keep and server is None
    if kept:
        db_dir = db_dir / f"kept-{len(log)}-{log.seed}"
    memory, embedder = open_memory(db_dir, vectors, log.end, server, fresh=not kept)
    rows_file = db_dir / (f"server-rows-{len(log)}.json" if server else "rows.json")
    rows = stored_rows(memory, rows_file) if (server and reuse) or kept else None
    build_s: float | None = None
    if rows is None:
        if kept:  # what the file holds is not this log: start it again
            memory.close()
            memory, embedder = open_memory(db_dir, vectors, log.end, None)
        rows = ingest(memory, log)
        build_s = time.perf_counter() - started
        if server or kept:
            rows_file.write_text(json.dumps(rows), encoding="utf-8")
    asker = Asker(memory, rows)
    answers, ms = {}, {}
    timed_misses = 0
    for query in queries:
        answers[query["id"]] = asker.ask(query)
        misses_before = len(embedder.misses)
        samples = []
        for _ in range(repeat):
            began = time.perf_counter()
            asker.ask(query)
            samples.append((time.perf_counter() - began) * 1000)
        ms[query["id"]] = statistics.median(samples)
        if len(embedder.misses) > misses_before:
            timed_misses += len(embedder.misses) - misses_before
            ms[query["id"]] = float(np.nan)  # a model call inside the timing: not comparable
    memory.close()
    return {
        "system": "robotmem",
        "records": len(log),
        **({} if build_s is None else {"build_s": build_s}),
        "size_bytes": None if server else store_size(db_dir),
        "engine": "postgresql" if server else "sqlite",
        "answers": answers,
        "ms": ms,
        "model_calls_while_timed": timed_misses,
    }
