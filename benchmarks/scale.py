"""Speed and size at 1k, 10k and 100k memories.

A database of N realistic robot memories (four collections, params with units, positions, success flags,
sessions of 50, 15 % perceptions with a small trajectory payload) is built once per N and cached under
``benchmarks/.cache/``. Building 100k memories through ``learn()`` with the real model would take hours
on a robot CPU, so the cached databases carry vectors of the deterministic hashing embedder at 384
dimensions (the real model's size) and are written through the store functions ``learn`` uses, without
the per-call dedup. Search cost does not depend on what the vectors mean; the real model's embedding time
is measured on its own and reported beside the search numbers.

Each N is measured in its own process (``python -m benchmarks.scale measure --n N``) on a copy of the
cached file, so peak RSS is per N and the cache stays unchanged. Timings exclude the query embedding
(query vectors are computed before the clock starts); ``embed_query_real_ms`` is that cost.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    CACHE,
    PrecomputedEmbedder,
    Timing,
    ensure_cache,
    measure,
    peak_rss_mb,
    timed,
    write_json,
)

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.embedders.hashing import HashingEmbedder
from robotmem.formats.serialize import session_summary
from robotmem.records import NewMemory
from robotmem.store.protocol import StoreTx
from robotmem.text.classify import build_context, classify
from robotmem.text.tokens import content_hash, index_text

DIM = 384
BUILD_VERSION = 1  # bump when the generator changes, so cached databases are rebuilt
SESSION_SIZE = 50
PERCEPTION_SHARE = 0.15
QUERY_COLLECTION = "manipulation"
COLLECTIONS = (("manipulation", 0.55), ("fetch-push", 0.20), ("navigation", 0.15), ("locomotion", 0.10))
OBJECTS = (
    "mug",
    "paper cup",
    "glass bottle",
    "tennis ball",
    "cardboard box",
    "banana",
    "screwdriver",
    "sponge",
)
SURFACES = ("glossy", "wet", "dusty", "textured", "rubber", "metal")
TERRAINS = ("gravel", "grass", "rubber mat", "stairs", "ice", "sand")
GAITS = ("trot", "walk", "bound", "pace")
ROBOTS = {
    "manipulation": (("franka-01", "Franka Panda"), ("franka-02", "Franka Panda"), ("ur5-01", "UR5")),
    "fetch-push": (("fetch-001", "Fetch"), ("fetch-002", "Fetch")),
    "navigation": (("tb3-04", "TurtleBot3"), ("jackal-01", "Jackal")),
    "locomotion": (("go1-01", "Unitree Go1"), ("spot-01", "Spot")),
}
# Recall runs in the "manipulation" collection: ten questions about its content, two about another
# collection's (the vector channel then has to walk far down the cosine order to find filter matches).
QUERIES = (
    "grip force for the mug",
    "why did the paper cup slip",
    "pushed block failed episodes",
    "sponge grip force and approach speed",
    "banana slipped because the surface was glossy",
    "approach speed for the glass bottle",
    "tennis ball grasp success",
    "wet surface slipping grip",
    "placing the cardboard box",
    "screwdriver grasp trial",
    "reward for pushing the block",
    "tactile slip detected",
)
FILTER_COMMON = {"task.success": True}
FILTER_SELECTIVE = {"robot.id": "franka-02", "params.grip_force.value": {"$lt": 10}}
SPATIAL = {"field": "spatial.object_position", "target": [1.3, 0.7, 0.42]}


@dataclass(frozen=True, slots=True)
class Item:
    """One generated memory."""

    collection: str
    text: str
    context: dict[str, Any]
    perception_type: str | None = None
    data: str | None = None


def _position(rng: random.Random) -> list[float]:
    return [round(rng.uniform(0.8, 1.8), 3), round(rng.uniform(0.2, 1.2), 3), 0.42]


def _robot(rng: random.Random, collection: str) -> dict[str, Any]:
    robot_id, robot_type = rng.choice(ROBOTS[collection])
    return {"id": robot_id, "type": robot_type}


def _fact(rng: random.Random, collection: str, i: int) -> Item:
    success = rng.random() < 0.6
    outcome = "success" if success else "failed"
    env = {"sim_or_real": "real" if rng.random() < 0.3 else "sim"}
    if collection == "manipulation":
        obj, force, speed = (
            rng.choice(OBJECTS),
            round(rng.uniform(2, 25), 1),
            round(rng.uniform(0.02, 0.3), 2),
        )
        text = rng.choice(
            (
                f"Grasp trial {i} on the {obj}: grip_force={force} N, approach {speed} m/s, {outcome}.",
                f"The {obj} slipped at grip_force={force} N because the {rng.choice(SURFACES)} surface "
                f"reduced friction; trial {i}.",
                f"Placing the {obj} on the shelf worked with wrist speed {speed} rad/s after {i % 7} retries.",
            )
        )
        params = {
            "grip_force": {"value": force, "unit": "N"},
            "approach_speed": {"value": speed, "unit": "m/s"},
        }
        task = {"name": "grasp", "success": success, "steps": rng.randint(10, 80)}
    elif collection == "fetch-push":
        distance, steps = round(rng.uniform(0.05, 0.4), 2), rng.randint(15, 50)
        text = f"Episode {i}: pushed block {distance} m, {outcome}, {steps} steps, reward={rng.uniform(-50, 0):.1f}."
        params = {"push_speed": {"value": round(rng.uniform(0.02, 0.12), 3), "unit": "m/s"}}
        task = {"name": "push_to_target", "success": success, "steps": steps}
    elif collection == "navigation":
        speed, gap = round(rng.uniform(0.2, 0.9), 2), round(rng.uniform(0.1, 1.5), 2)
        text = f"Corridor run {i} through corridor {rng.choice('ABCD')}: average speed {speed} m/s, closest obstacle {gap} m."
        params = {
            "average_speed": {"value": speed, "unit": "m/s"},
            "closest_obstacle": {"value": gap, "unit": "m"},
        }
        task = {"name": "corridor_navigation", "success": success}
    else:
        speed = round(rng.uniform(0.1, 1.2), 2)
        stable = "stable" if success else "fell twice"
        text = f"Gait test {i}: {rng.choice(GAITS)} at {speed} m/s on {rng.choice(TERRAINS)}, {stable}."
        params = {"speed": {"value": speed, "unit": "m/s"}}
        task = {"name": "gait", "success": success}
    context = {
        "params": params,
        "spatial": {"object_position": _position(rng), "target_position": _position(rng)},
        "robot": _robot(rng, collection),
        "task": task,
        "env": env,
    }
    return Item(collection, text, context)


def _perception(rng: random.Random, collection: str, i: int) -> Item:
    kind = rng.choice(("tactile", "visual", "procedural", "proprioceptive"))
    obj = rng.choice(OBJECTS)
    text = {
        "tactile": f"Tactile reading {i} while holding the {obj}: peak {rng.uniform(2, 20):.1f} N, slip detected.",
        "visual": f"Camera frame {i}: {obj} detected at 0.{rng.randint(10, 99)} m, confidence 0.{rng.randint(50, 99)}.",
        "procedural": f"Grasp trajectory {i} for the {obj}: {rng.randint(20, 60)} steps, {rng.choice(('success', 'failed'))}.",
        "proprioceptive": f"Joint torques {i} during the {obj} lift stayed below {rng.uniform(5, 40):.1f} Nm.",
    }[kind]
    actions = [[round(rng.uniform(-1, 1), 3) for _ in range(4)] for _ in range(30)]
    return Item(collection, text, {}, perception_type=kind, data=json.dumps({"sampled_actions": actions}))


def generate(n: int, seed: int = 7) -> Iterator[Item]:
    """Yield ``n`` memories, deterministic for a seed."""
    rng = random.Random(seed)
    names = [name for name, _ in COLLECTIONS]
    weights = [share for _, share in COLLECTIONS]
    for i in range(n):
        collection = rng.choices(names, weights)[0]
        if rng.random() < PERCEPTION_SHARE:
            yield _perception(rng, collection, i)
        else:
            yield _fact(rng, collection, i)


def _new_memory(item: Item, session_id: str, created_at: str) -> NewMemory:
    found = classify(item.text, item.context)
    if item.perception_type is None:
        return NewMemory(
            collection=item.collection,
            type="fact",
            content=item.text,
            content_hash=content_hash(item.text),
            category=found.category,
            confidence=found.confidence,
            context=build_context(item.context, found, source="learn"),
            scope_files=found.scope_files,
            scope_entities=found.scope_entities,
            session_id=session_id,
            perception_type=None,
            tags=found.tags,
            index_body=index_text(item.text),
            created_at=created_at,
        )
    return NewMemory(
        collection=item.collection,
        type="perception",
        content=item.text,
        content_hash=None,
        category="perception",
        confidence=found.confidence,
        context={"source": "save_perception"},
        scope_files=found.scope_files,
        scope_entities=found.scope_entities,
        session_id=session_id,
        perception_type=item.perception_type,
        tags=("perception", item.perception_type, *found.tags[1:]),
        index_body=index_text(item.text),
        created_at=created_at,
        data_json=item.data,
    )


def cached_database(n: int, *, log: Callable[[str], None] = print) -> Path:
    """Return the path of the cached database of ``n`` memories, building it first if needed."""
    path = CACHE / f"scale-{n}-v{BUILD_VERSION}.db"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".building")
    for leftover in CACHE.glob(partial.name + "*"):
        leftover.unlink()
    started = time.perf_counter()
    embedder = HashingEmbedder(DIM)
    settings = Settings(home=CACHE / "home", embed_backend="hash", embed_dim=DIM)
    start = datetime(2026, 6, 1, tzinfo=timezone.utc)
    with RobotMemory(partial, embed_backend="none", settings=settings) as mem:
        # Bulk load through the store functions learn uses, without per-call dedup.
        items = list(generate(n))
        batch = 2000
        for offset in range(0, n, batch):
            chunk = items[offset : offset + batch]
            vectors = embedder.embed_batch([item.text for item in chunk])

            def work(
                tx: StoreTx, chunk: list[Item] = chunk, vectors: Any = vectors, offset: int = offset
            ) -> None:
                if offset == 0:
                    tx.vectors.record_model(embedder.model_id, DIM)
                for k, (item, vector) in enumerate(zip(chunk, vectors, strict=True)):
                    number = offset + k
                    session_id = f"bench-session-{number // SESSION_SIZE:06d}"
                    moment = (start + timedelta(minutes=number * 2)).isoformat(timespec="microseconds")
                    if number % SESSION_SIZE == 0:
                        tx.sessions.create(session_id, item.collection, {"robot_id": "bench"}, moment)
                    new = _new_memory(item, session_id, moment)
                    tx.memories.insert_many([new], [vector], embedder.model_id)
                    if number % SESSION_SIZE == SESSION_SIZE - 1 or number == n - 1:
                        summary = session_summary(tx.sessions.summarize(session_id))
                        tx.sessions.end(session_id, round(0.5 + (number % 5) / 10, 2), summary, moment)

            mem.engine.write(work)
            log(f"  built {min(offset + batch, n):,}/{n:,} memories ({time.perf_counter() - started:.0f} s)")
    conn = sqlite3.connect(partial)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    partial.rename(path)
    log(f"  database of {n:,} memories ready in {time.perf_counter() - started:.0f} s: {path}")
    return path


def _fresh_lesson(i: int) -> tuple[str, dict[str, Any]]:
    force = 5 + (i % 150) / 10
    text = f"Benchmark lesson {i}: the sponge held at grip_force={force:.1f} N with approach {0.05 + i / 10000:.4f} m/s."
    context = {
        "params": {"grip_force": {"value": force, "unit": "N"}},
        "spatial": {"object_position": [1.2, 0.6 + i / 1000, 0.42]},
        "robot": {"id": "franka-01", "type": "Franka Panda"},
        "task": {"name": "grasp", "success": i % 3 != 0},
    }
    return text, context


def _perception_items(start: int, count: int) -> list[dict[str, Any]]:
    return [
        {
            "description": f"Force-torque sample {start + k}: fz={(start + k) % 97 / 10:.1f} N, tz=0.{k % 9} Nm",
            "perception_type": "tactile",
            "data": {"fz": [0.1 * j for j in range(16)]},
        }
        for k in range(count)
    ]


def _copy_database(source: Path, work_dir: Path) -> Path:
    work_dir.mkdir(parents=True, exist_ok=True)
    target = work_dir / source.name
    for suffix in ("", "-wal", "-shm"):
        Path(str(target) + suffix).unlink(missing_ok=True)
    shutil.copyfile(source, target)
    return target


def measure_scale(
    n: int, repeat: int, *, real_model: bool = True, recall_only: bool = False
) -> dict[str, Any]:
    """Measure every operation on a copy of the database of ``n`` memories; return a JSON-ready dict."""
    rss_before = peak_rss_mb()
    source = cached_database(n, log=lambda line: print(line, file=sys.stderr))
    db = _copy_database(source, CACHE / "work")
    size_bytes = source.stat().st_size
    results: dict[str, Any] = {
        "n": n,
        "repeat": repeat,
        "db_bytes": size_bytes,
        "bytes_per_memory": size_bytes / n,
    }
    timings: list[Timing] = []
    settings = Settings(home=CACHE / "home", embed_backend="hash", embed_dim=DIM)
    hashing = PrecomputedEmbedder(HashingEmbedder(DIM))
    hashing.prime(QUERIES, is_query=True)
    lessons = [_fresh_lesson(i) for i in range(1_000 + repeat * 4)]
    hashing.prime([text for text, _ in lessons])

    started = time.perf_counter()
    mem = RobotMemory(db, collection=QUERY_COLLECTION, settings=settings, embedder=hashing)
    results["open_ms"] = (time.perf_counter() - started) * 1000
    # warm_up() = the vector index, then the recall mirror; timed apart (benchmarks may use internals).
    store = mem.engine.store
    model = (hashing.model_id, DIM)
    results["vector_index_load_ms"] = timed(
        lambda: store.read(lambda tx: store.vector_index(*model).sync(tx.conn))
    )
    results["mirror_build_ms"] = timed(lambda: store.read(lambda tx: store.mirror.sync(tx.conn)))
    results["index_load_ms"] = results["vector_index_load_ms"] + results["mirror_build_ms"]

    def query(i: int) -> str:
        return QUERIES[i % len(QUERIES)]

    # The first use of a filter path and of a spatial path reads that path's values once.
    results["first_filter_path_recall_ms"] = timed(lambda: mem.recall(query(0), context_filter=FILTER_COMMON))
    results["first_spatial_path_recall_ms"] = timed(
        lambda: mem.recall(query(0), context_filter=FILTER_COMMON, spatial_sort=SPATIAL)
    )

    timings.append(measure("recall_hybrid", lambda i: mem.recall(query(i)), repeat=repeat))
    timings.append(
        measure(
            "recall_hybrid_filter",
            lambda i: mem.recall(query(i), context_filter=FILTER_COMMON),
            repeat=repeat,
        )
    )
    timings.append(
        measure(
            "recall_hybrid_selective_filter",
            lambda i: mem.recall(query(i), context_filter=FILTER_SELECTIVE),
            repeat=repeat,
        )
    )
    # A threshold never used before: the mirror must evaluate the new condition over the whole table
    # (its mask is then cached), which is what a robot pays the first time it asks a new question.
    timings.append(
        measure(
            "recall_hybrid_new_filter",
            lambda i: mem.recall(
                query(i), context_filter={"params.grip_force.value": {"$lt": 10 + (i + 1) / 1000}}
            ),
            repeat=max(5, repeat // 2),
        )
    )
    timings.append(
        measure(
            "recall_hybrid_spatial",
            lambda i: mem.recall(query(i), context_filter=FILTER_COMMON, spatial_sort=SPATIAL),
            repeat=max(5, repeat // 2),
        )
    )
    if recall_only:
        mem.close()
        results["timings"] = {t.name: t.as_dict() for t in timings}
        return results
    counter = iter(range(len(lessons)))
    timings.append(
        measure("learn_precomputed_vector", lambda i: mem.learn(*lessons[next(counter)]), repeat=repeat)
    )
    timings.append(
        measure(
            "save_perception_precomputed_vector",
            lambda i: mem.save_perception(**_perception_items(1_000_000 + i, 1)[0]),
            repeat=repeat,
        )
    )
    hashing.prime([item["description"] for item in _perception_items(2_000_000, 200)])
    batch = _batched_perceptions(mem, "save_perceptions_200_precomputed_vector", 2_000_000, repeat=3)
    timings.append(batch)
    timings.append(_end_session(mem, lessons, counter, repeat=max(3, repeat // 4)))
    mem.close()

    plain = RobotMemory(db, collection=QUERY_COLLECTION, settings=settings, embed_backend="none")
    timings.append(measure("recall_bm25_only", lambda i: plain.recall(query(i)), repeat=repeat))
    timings.append(
        measure(
            "recall_bm25_only_filter",
            lambda i: plain.recall(query(i), context_filter=FILTER_COMMON),
            repeat=repeat,
        )
    )
    lessons_plain = iter(range(500, 500 + repeat * 4))
    timings.append(
        measure("learn_no_embedding", lambda i: plain.learn(*lessons[next(lessons_plain)]), repeat=repeat)
    )
    timings.append(
        measure(
            "save_perception_no_embedding",
            lambda i: plain.save_perception(**_perception_items(3_000_000 + i, 1)[0]),
            repeat=repeat,
        )
    )
    timings.append(_batched_perceptions(plain, "save_perceptions_200_no_embedding", 4_000_000, repeat=3))
    plain.close()

    if real_model:
        results.update(_real_model_costs(repeat))
    results["timings"] = {t.name: t.as_dict() for t in timings}
    for t in timings:
        if t.name.startswith("save_perceptions_200"):
            results[f"{t.name}_per_second"] = 200 / (t.p50 / 1000)
    results["peak_rss_mb"] = peak_rss_mb()
    results["peak_rss_before_mb"] = rss_before
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    return results


def _batched_perceptions(mem: RobotMemory, name: str, base: int, *, repeat: int) -> Timing:
    """Time 200 perceptions through ``save_perceptions`` when the SDK has it, else a loop of ``save_perception``."""
    batch_call = getattr(mem, "save_perceptions", None)

    def run(i: int) -> None:
        items = _perception_items(base + i * 200, 200)
        if batch_call is not None:
            batch_call(items)
        else:
            for item in items:
                mem.save_perception(**item)

    timing = measure(name if batch_call is not None else name + "_loop", run, repeat=repeat, warmup=1)
    return timing


def _end_session(
    mem: RobotMemory, lessons: list[tuple[str, dict[str, Any]]], counter: Iterator[int], *, repeat: int
) -> Timing:
    """Time ``end_session`` of an episode of 20 memories, 12 of them near repeats that consolidate."""
    samples: list[float] = []
    for round_number in range(repeat + 1):
        session = mem.start_session(context={"robot_id": "franka-01", "task": "bench"})
        for _ in range(8):
            mem.learn(*lessons[next(counter)])
        for k in range(12):
            text = (
                f"Episode {round_number * 100 + k} of session {session['session_id'][:6]}: the cup grasp worked "
                f"with grip_force {k} N, slow approach, padded fingers"
            )
            mem.learn(text, context={"task": {"success": True}})
        session_id = session["session_id"]
        started = time.perf_counter()
        mem.end_session(session_id, outcome_score=0.8)
        elapsed = (time.perf_counter() - started) * 1000
        if round_number:
            samples.append(elapsed)
    from benchmarks.harness import summarize

    return summarize("end_session_consolidate", samples)


def _real_model_costs(repeat: int) -> dict[str, Any]:
    """Return the default model's load time and the p50/p95 of embedding one query and one passage."""
    from robotmem.embedders import create_embedder

    embedder = create_embedder(Settings(embed_backend="auto"))
    started = time.perf_counter()
    if not embedder.available:
        return {"real_model": None}
    load_ms = (time.perf_counter() - started) * 1000
    queries = measure(
        "embed_query_real",
        lambda i: embedder.embed_one(QUERIES[i % len(QUERIES)], is_query=True),
        repeat=repeat,
    )
    passages = measure(
        "embed_passage_real",
        lambda i: embedder.embed_one(_fresh_lesson(i)[0], is_query=False),
        repeat=max(5, repeat // 2),
    )
    return {
        "real_model": embedder.model_id,
        "real_model_load_ms": load_ms,
        "embed_query_real": queries.as_dict(),
        "embed_passage_real": passages.as_dict(),
    }


def cold_start(n: int, repeat: int = 3) -> dict[str, Any]:
    """Time, in fresh processes, ``import robotmem``, opening the database and the first recall (index load)."""
    # A copy, migrated once untimed: recalls write access counts, and the cache must not change.
    db = _copy_database(cached_database(n, log=lambda line: print(line, file=sys.stderr)), CACHE / "cold")
    RobotMemory(db, settings=Settings(home=CACHE / "home", embed_backend="none")).close()
    script = (
        "import time, json; t0 = time.perf_counter(); import robotmem; t1 = time.perf_counter();"
        "from robotmem.config import Settings;"
        f"m = robotmem.RobotMemory({str(db)!r}, collection={QUERY_COLLECTION!r}, settings=Settings(home={str(CACHE / 'home')!r}, embed_backend='hash', embed_dim={DIM}));"
        "t2 = time.perf_counter(); m.recall('grip force for the mug'); t3 = time.perf_counter(); m.close();"
        "print(json.dumps({'import_ms': (t1-t0)*1000, 'open_ms': (t2-t1)*1000, 'first_recall_ms': (t3-t2)*1000}))"
    )
    samples: dict[str, list[float]] = {
        "import_ms": [],
        "open_ms": [],
        "first_recall_ms": [],
        "process_ms": [],
    }
    for _ in range(repeat):
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
        samples["process_ms"].append((time.perf_counter() - started) * 1000)
        for key, value in json.loads(out.stdout.strip().splitlines()[-1]).items():
            samples[key].append(value)
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    from benchmarks.harness import summarize

    return {key: summarize(key, values).as_dict() for key, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build (or reuse) the cached databases")
    build.add_argument("--n", type=int, action="append", required=True)
    run = sub.add_parser("measure", help="measure one N in this process")
    run.add_argument("--n", type=int, required=True)
    run.add_argument("--repeat", type=int, default=30)
    run.add_argument("--no-real-model", action="store_true")
    run.add_argument("--recall-only", action="store_true", help="only the hybrid recall timings")
    run.add_argument("--out", type=Path)
    cold = sub.add_parser("cold-start", help="time a fresh process opening one N")
    cold.add_argument("--n", type=int, required=True)
    cold.add_argument("--repeat", type=int, default=3)
    cold.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    ensure_cache()
    if args.command == "build":
        for n in args.n:
            cached_database(n)
        return 0
    result = (
        measure_scale(args.n, args.repeat, real_model=not args.no_real_model, recall_only=args.recall_only)
        if args.command == "measure"
        else cold_start(args.n, args.repeat)
    )
    if args.out:
        write_json(args.out, result)
    else:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
