"""The own-robot boost and robot scoping, measured on the labelled evaluation set split among four robots.

The documents of ``benchmarks/data/robot_eval.jsonl`` are stored with the real default model in one store,
document i belonging to ``robot-(i % 4)``; the queries are asked by ``robot-0``. For each boost the run
reports recall@5 and MRR over every query, over the queries whose answers include one of robot-0's own
memories ("own") and over the rest ("others"), and the share of the top 5 that is robot-0's own. A boost
trades the second for the first: it should lift the own robot's answers without pushing the fleet's
answers out of the top 5.

Latency: every query runs under each scope (whole fleet with and without the boost, ``robots="self"``,
two robots), alternating configurations per query, three times; medians side by side in one run.

Sync: a robot with ``--sync-n`` memories (hashing embedder, so no model time) pushes them to an empty
fleet file; a second robot pulls them; then a sync with nothing new, and one after 10 new memories.

    .venv/bin/python -m benchmarks.fleet [--sync-n 10000] [--out benchmarks/.cache/results/fleet.json]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import CACHE, ROOT, ensure_cache, fmt, markdown_table, write_json

from robotmem import RobotMemory
from robotmem.adapters.cli.evaluate import SHARED_COLLECTION, BatchingEmbedder
from robotmem.config import Settings
from robotmem.embedders import create_embedder
from robotmem.evaluation import EvalSet, load_eval_set, score_run

EVAL_FILE = ROOT / "benchmarks" / "data" / "robot_eval.jsonl"
ROBOTS = 4
BOOSTS = (1.0, 1.1, 1.2, 1.35, 1.5, 2.0, 3.0)
SCOPES: dict[str, dict[str, Any]] = {
    "fleet, boost 1.0": {"own_robot_boost": 1.0, "robots": None},
    "fleet, boost 1.2": {"own_robot_boost": 1.2, "robots": None},
    "robots=self": {"own_robot_boost": 1.2, "robots": "self"},
    "robots=robot-0,robot-1": {"own_robot_boost": 1.2, "robots": "robot-0,robot-1"},
}


def load(mem: RobotMemory, eval_set: EvalSet, base: Settings) -> tuple[dict[int, str], dict[str, str]]:
    """Store every document as its robot's; return memory id → document id and document id → robot."""
    embedder = mem.embedder
    if isinstance(embedder, BatchingEmbedder):
        embedder.prime([d.text for d in eval_set.documents], is_query=False)
        embedder.prime([q.query for q in eval_set.queries], is_query=True)
    document_of: dict[int, str] = {}
    robot_of: dict[str, str] = {}
    for index, document in enumerate(eval_set.documents):
        robot = f"robot-{index % ROBOTS}"
        mem.settings = base.replace(robot_id=robot)
        if document.type == "perception":
            stored = mem.save_perception(
                description=document.text,
                perception_type=document.perception_type or "visual",
                collection=SHARED_COLLECTION,
            )
            memory_id = int(stored["memory_id"])
        else:
            learned = mem.learn(
                insight=document.text, context=dict(document.context), collection=SHARED_COLLECTION
            )
            memory_id = int(
                learned["memory_id"] if learned["status"] == "created" else learned["existing_id"]
            )
        document_of.setdefault(memory_id, document.id)
        robot_of[document.id] = mem.get_memory(memory_id)["robot_id"]
    return document_of, robot_of


def ask(
    mem: RobotMemory, eval_set: EvalSet, document_of: dict[int, str], robots: Any, n: int
) -> dict[str, list[str]]:
    """Run every query; return query id → ranked document ids."""
    rankings: dict[str, list[str]] = {}
    for query in eval_set.queries:
        result = mem.recall(
            query=query.query,
            n=n,
            context_filter=dict(query.context_filter) if query.context_filter is not None else None,
            spatial_sort=dict(query.spatial_sort) if query.spatial_sort is not None else None,
            collection=SHARED_COLLECTION,
            robots=robots,
        )
        rankings[query.id] = [document_of.get(int(m["id"]), f"memory:{m['id']}") for m in result["memories"]]
    return rankings


def score_boosts(
    mem: RobotMemory, eval_set: EvalSet, document_of: dict[int, str], robot_of: dict[str, str], base: Settings
) -> list[dict[str, Any]]:
    """Score every boost: recall@5 and MRR on all, own and others; the own share of the top 5."""
    own = {q.id for q in eval_set.queries if any(robot_of.get(g) == "robot-0" for g in q.gold)}
    others = {q.id for q in eval_set.queries} - own
    rows = []
    for boost in BOOSTS:
        mem.settings = base.replace(robot_id="robot-0", own_robot_boost=boost)
        rankings = ask(mem, eval_set, document_of, None, 5)
        top = [doc for ranked in rankings.values() for doc in ranked[:5]]
        rows.append(
            {
                "boost": boost,
                "all": score_run(eval_set, rankings, ks=(1, 5)),
                "own": score_run(eval_set, rankings, ks=(1, 5), query_ids=own),
                "others": score_run(eval_set, rankings, ks=(1, 5), query_ids=others),
                "own_share_top5": sum(robot_of.get(d) == "robot-0" for d in top) / max(1, len(top)),
            }
        )
    return rows


def time_scopes(mem: RobotMemory, eval_set: EvalSet, base: Settings, repeat: int = 3) -> dict[str, float]:
    """Return the median recall latency (ms) of each scope, configurations alternating per query."""
    samples: dict[str, list[float]] = {name: [] for name in SCOPES}
    for _ in range(repeat):
        for query in eval_set.queries:
            for name, scope in SCOPES.items():
                mem.settings = base.replace(robot_id="robot-0", own_robot_boost=scope["own_robot_boost"])
                started = time.perf_counter()
                mem.recall(query=query.query, n=5, collection=SHARED_COLLECTION, robots=scope["robots"])
                samples[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def time_sync(count: int) -> dict[str, float]:
    """Return seconds for the first push of ``count`` memories, the first pull, a no-op and a 10-memory sync."""
    with tempfile.TemporaryDirectory(prefix="robotmem-sync-") as home:
        root = Path(home)
        base = Settings(home=root, embed_backend="hash")
        fleet = root / "fleet.db"
        with (
            RobotMemory(root / "a.db", settings=base.replace(robot_id="robot-a")) as a,
            RobotMemory(root / "b.db", settings=base.replace(robot_id="robot-b")) as b,
        ):
            for start in range(0, count, 500):
                a.save_perceptions(
                    [
                        {
                            "description": f"joint trajectory {i}: 30 steps, reward {i % 97}",
                            "data": {"step": i},
                        }
                        for i in range(start, min(count, start + 500))
                    ]
                )
            out: dict[str, float] = {}
            started = time.perf_counter()
            a.sync(fleet, direction="push")
            out["first push"] = time.perf_counter() - started
            started = time.perf_counter()
            b.sync(fleet, direction="pull")
            out["first pull (fresh robot)"] = time.perf_counter() - started
            for mem in (a, b, a, b):
                mem.sync(fleet)  # the echoes of the first round
            started = time.perf_counter()
            a.sync(fleet)
            out["sync, nothing new"] = time.perf_counter() - started
            for i in range(10):
                a.learn(f"trial {i}: grip_force={i}.5N held the mug")
            started = time.perf_counter()
            a.sync(fleet)
            out["sync, 10 new memories"] = time.perf_counter() - started
    return out


def run(eval_file: Path = EVAL_FILE, sync_n: int = 10_000) -> dict[str, Any]:
    eval_set = load_eval_set(eval_file)
    base = Settings(embed_backend="auto")
    embedder = BatchingEmbedder(create_embedder(base))
    with tempfile.TemporaryDirectory(prefix="robotmem-fleet-") as home:
        settings = base.replace(home=Path(home), db_path=Path(home) / "fleet.db")
        with RobotMemory(settings=settings, embedder=embedder) as mem:
            document_of, robot_of = load(mem, eval_set, settings)
            boosts = score_boosts(mem, eval_set, document_of, robot_of, settings)
            latency = time_scopes(mem, eval_set, settings)
    sync_s = time_sync(sync_n)
    return {
        "model": embedder.model_id,
        "documents": len(eval_set.documents),
        "queries": len(eval_set.queries),
        "robots": ROBOTS,
        "boosts": boosts,
        "latency_ms_p50": latency,
        "sync_n": sync_n,
        "sync_s": sync_s,
    }


def render(result: dict[str, Any]) -> str:
    rows = result["boosts"]
    own_queries = int(rows[0]["own"]["queries"])
    return "\n".join(
        [
            f"Model {result['model']}; {result['documents']} documents among {result['robots']} robots, "
            f"{result['queries']} queries asked by robot-0 ({own_queries} with an own answer).",
            "",
            markdown_table(
                [
                    "own_robot_boost",
                    "recall@5",
                    "MRR",
                    "recall@5 own",
                    "recall@5 others",
                    "MRR own",
                    "MRR others",
                    "own share of top 5",
                ],
                [
                    [
                        r["boost"],
                        *(
                            fmt(value, 3)
                            for value in (
                                r["all"]["recall@5"],
                                r["all"]["mrr"],
                                r["own"]["recall@5"],
                                r["others"]["recall@5"],
                                r["own"]["mrr"],
                                r["others"]["mrr"],
                                r["own_share_top5"],
                            )
                        ),
                    ]
                    for r in rows
                ],
            ),
            "",
            markdown_table(
                ["scope", "recall p50 (ms)"],
                [[name, value] for name, value in result["latency_ms_p50"].items()],
            ),
            "",
            markdown_table(
                [f"sync of {result['sync_n']:,} memories", "seconds", "memories/s"],
                [
                    [name, value, result["sync_n"] / value if name.startswith("first") else float("nan")]
                    for name, value in result["sync_s"].items()
                ],
            ),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CACHE / "results" / "fleet.json")
    parser.add_argument("--sync-n", dest="sync_n", type=int, default=10_000)
    args = parser.parse_args()
    ensure_cache()  # its .gitignore keeps results out of git
    result = run(sync_n=args.sync_n)
    write_json(args.out, result)
    print(render(result))


if __name__ == "__main__":
    main()
