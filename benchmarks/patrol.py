"""Where and when: a week of patrol through robotmem and eMEM, scored against the exact answers.

    python -m benchmarks.patrol --n 10000 100000 [--systems reference,emem,robotmem]
        [--emem-python /tmp/emem-venv/bin/python] [--emem-thresholds 0.85,0.99] [--repeat 3] [--seed 7]
        [--reuse] [--keep-store] [--strict] [--robotmem-server postgresql://...]

For each size the harness generates the log (``patrol_data``) and the queries (``patrol_queries``), caches
them with one table of vectors (multilingual-e5-small, the bundled model: passages for every stored text
and entity name, queries for every query text), then runs each system and scores its answers with the
same rule against the brute-force reference:

    reference   exact answers by numpy scans over the records (its time is a baseline, not a contender)
    emem        benchmarks/patrol_emem.py in eMEM's own interpreter (--emem-python), once per threshold
    robotmem    benchmarks/patrol_robotmem.py in this interpreter, through the public where-and-when API;
                when the API is not there it is reported as not run (--strict makes that an error)

Times are per query, the median of ``--repeat`` timed calls after one untimed call, then p50/p95 over the
queries of a kind; no timing includes an embedding model. Results: benchmarks/.cache/results/patrol-N.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks.harness import CACHE, ROOT, ensure_cache, fmt, machine, markdown_table, percentile, write_json
from benchmarks.patrol_data import PatrolLog, generate, load_log, save_log
from benchmarks.patrol_queries import KINDS, MEMORY_KINDS, Reference, make_queries, score

TARGETS = {  # what robotmem must meet (SQLite, 100k sightings)
    "last_seen_id": {"correct": 1.0, "p50_ms": 2.0},
    "last_seen_label": {"correct": 0.95, "p50_ms": 2.0},
    "region_query": {"p50_ms": 5.0},
}


def prepare(n: int, seed: int) -> tuple[Path, Path, Path]:
    """Generate (or reuse) the log, its queries and the vector table; return their paths."""
    folder = ensure_cache() / "patrol"
    log_path = folder / f"log-{n}-{seed}.json.gz"
    queries_path = folder / f"queries-{n}-{seed}.json"
    vectors_path = folder / f"vectors-{n}-{seed}.npz"
    if not log_path.exists():
        save_log(generate(n, seed), log_path)
    log = load_log(log_path)
    if not queries_path.exists():
        queries_path.write_text(json.dumps(make_queries(log), ensure_ascii=False), encoding="utf-8")
    if not vectors_path.exists():
        queries = json.loads(queries_path.read_text(encoding="utf-8"))
        write_vectors(log, queries, vectors_path)
    return log_path, queries_path, vectors_path


def write_vectors(log: PatrolLog, queries: list[dict[str, Any]], path: Path) -> None:
    """Embed every stored text and entity name (passages) and every query text (queries) once."""
    from robotmem.embedders.bundled import BundledEmbedder

    names = {o.object_id for o in log.tracked if o.object_id} | {o.label for o in log.tracked}
    passages = sorted(set(log.texts) | names)
    asked = sorted({q["args"]["text"] for q in queries if q["args"].get("text")})
    model = BundledEmbedder()
    started = time.perf_counter()
    passage_vectors = np.concatenate(
        [model.embed_batch(passages[i : i + 64]) for i in range(0, len(passages), 64)]
    )
    query_vectors = model.embed_batch(asked, is_query=True)
    print(
        f"embedded {len(passages)} passages and {len(asked)} queries in {time.perf_counter() - started:.0f} s"
    )
    np.savez(
        path, passage_texts=np.array(passages), passage_vectors=passage_vectors,
        query_texts=np.array(asked), query_vectors=query_vectors,
    )  # fmt: skip


def run_reference(log: PatrolLog, queries: list[dict[str, Any]], repeat: int) -> dict[str, Any]:
    reference = Reference(log)
    answers, ms = {}, {}
    for query in queries:
        answers[query["id"]] = reference.answer(query)
        samples = []
        for _ in range(repeat):
            began = time.perf_counter()
            reference.answer(query)
            samples.append((time.perf_counter() - began) * 1000)
        ms[query["id"]] = statistics.median(samples)
    return {"system": "reference (numpy scan)", "records": len(log), "answers": answers, "ms": ms}


def run_emem(
    paths: tuple[Path, Path, Path], python: str, threshold: float | None, repeat: int, reuse: bool
) -> dict[str, Any]:
    """eMEM in its own interpreter (``threshold`` None: without entities); its JSON result back through a
    file (kept, and read again with ``reuse``)."""
    variant = "no-entities" if threshold is None else str(threshold)
    out = CACHE / "patrol" / f"emem-{paths[0].stem}-{variant}.json"
    if reuse and out.exists():
        cached: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
        return cached
    command = [
        python, str(ROOT / "benchmarks" / "patrol_emem.py"), "--log", str(paths[0]), "--queries", str(paths[1]),
        "--vectors", str(paths[2]), "--out", str(out), "--repeat", str(repeat),
        "--db-dir", str(CACHE / "patrol" / f"emem-db-{variant}"),
    ] + (["--no-entities"] if threshold is None else ["--threshold", str(threshold)])  # fmt: skip
    subprocess.run(command, check=True)
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def run_robotmem(
    paths: tuple[Path, Path, Path], repeat: int, strict: bool, server: str | None, reuse: bool, keep: bool
) -> dict[str, Any] | None:
    from benchmarks import patrol_robotmem

    log = load_log(paths[0])
    queries = json.loads(paths[1].read_text(encoding="utf-8"))
    vectors = np.load(paths[2])
    try:
        return patrol_robotmem.run(
            log, queries, vectors, CACHE / "patrol" / "robotmem-db", repeat, server, reuse, keep
        )
    except patrol_robotmem.Unavailable as missing:
        if strict:
            raise
        print(f"robotmem not run: {missing}", file=sys.stderr)
        return {"system": "robotmem", "not_run": str(missing)}


def summarize(
    log: PatrolLog, queries: list[dict[str, Any]], expected: dict[str, Any], result: dict[str, Any]
) -> dict[str, Any]:
    """Per query kind: queries, answered, share correct, mean recall, ordered share, p50/p95 ms."""
    kinds: dict[str, Any] = {}
    for kind in KINDS:
        mine = [q for q in queries if q["kind"] == kind]
        answered = [q for q in mine if result["answers"].get(q["id"]) is not None]
        scores = [score(q, expected[q["id"]], result["answers"][q["id"]], log) for q in answered]
        times = [result["ms"][q["id"]] for q in answered if result["ms"][q["id"]] == result["ms"][q["id"]]]
        recalls = [s["recall"] for s in scores if "recall" in s]
        kinds[kind] = {
            "queries": len(mine),
            "answered": len(answered),
            "correct": sum(s["correct"] for s in scores) / len(answered) if answered else float("nan"),
            "recall": statistics.fmean(recalls) if recalls else float("nan"),
            "ordered": statistics.fmean([s["ordered"] for s in scores if "ordered" in s])
            if kind in MEMORY_KINDS and scores
            else float("nan"),
            "p50_ms": percentile(times, 0.5),
            "p95_ms": percentile(times, 0.95),
            "wrong": [q["id"] for q, s in zip(answered, scores, strict=True) if not s["correct"]][:10],
        }
    return kinds


def check_targets(summary: dict[str, Any]) -> list[str]:
    """One line per target: what robotmem measured against what it must meet (the times apply at 100k)."""
    lines = []
    for kind, target in TARGETS.items():
        for measure, bound in target.items():
            value = summary[kind][measure]
            met = value >= bound if measure == "correct" else value <= bound
            lines.append(
                f"{kind} {measure}: {fmt(value, 3)} (target {'≥' if measure == 'correct' else '≤'} {bound}) "
                + ("met" if met else "NOT MET")
            )
    return lines


def table(n: int, summaries: dict[str, dict[str, Any]], results: dict[str, dict[str, Any]]) -> str:
    """Markdown: one row per query kind, correct share and p50/p95 per system; build and size below."""
    systems = list(summaries)
    headers = ["query kind", "queries"] + [
        f"{s}: {col}" for s in systems for col in ("correct", "p50 ms", "p95 ms")
    ]
    rows = []
    for kind in KINDS:
        row: list[Any] = [kind, summaries[systems[0]][kind]["queries"]]
        for system in systems:
            cell = summaries[system][kind]
            share = "n/a" if cell["answered"] == 0 else f"{cell['correct']:.0%}"
            if 0 < cell["answered"] < cell["queries"]:
                share += f" of {cell['answered']}"
            row += [share, cell["p50_ms"], cell["p95_ms"]]
        rows.append(row)
    lines = [f"### {n:,} sightings", "", markdown_table(headers, rows), ""]
    for system in systems:
        result = results[system]
        size = result.get("size_bytes")
        facts = [f"{result['records']:,} records"]
        if "build_s" in result:
            facts.append(f"build {fmt(result['build_s'], 1)} s")
        if size:
            facts.append(f"store {size / 2**20:.1f} MiB")
        if "reopen_s" in result:
            facts.append(f"reopen {fmt(result['reopen_s'], 2)} s")
        if result.get("errors"):
            facts.append(f"{len(result['errors'])} queries raised ({next(iter(result['errors'].values()))})")
        if "entities" in result:
            facts.append(f"{result['entities']} entities")
        lines.append(f"- {system}: " + ", ".join(facts))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description="Where and when: the patrol benchmark")
    parser.add_argument("--n", type=int, nargs="+", default=[10_000])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--systems", default="reference,emem,robotmem")
    parser.add_argument("--emem-python", default="/tmp/emem-venv/bin/python")
    parser.add_argument(
        "--emem-thresholds", default="0.85,0.99", help="entity merge thresholds; 'none': observations only"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="read eMEM's earlier result when there is one; ask a --robotmem-server database again that an "
        "earlier run filled with the same log",
    )
    parser.add_argument(
        "--keep-store",
        action="store_true",
        help="SQLite: keep the store of each size and seed and ask it again in the next run with --keep-store "
        "(built when missing or incomplete); to compare two versions of robotmem on one store",
    )
    parser.add_argument("--robotmem-server", help="postgresql:// address of an empty database (else SQLite)")
    parser.add_argument("--strict", action="store_true", help="fail when robotmem lacks the API")
    args = parser.parse_args()
    systems = args.systems.split(",")
    for n in args.n:
        paths = prepare(n, args.seed)
        log = load_log(paths[0])
        queries = json.loads(paths[1].read_text(encoding="utf-8"))
        reference = run_reference(log, queries, args.repeat)
        results = {"reference": reference} if "reference" in systems else {}
        if "emem" in systems:
            for variant in args.emem_thresholds.split(","):
                threshold = None if variant == "none" else float(variant)
                name = "eMEM no entities" if threshold is None else f"eMEM {threshold}"
                results[name] = run_emem(paths, args.emem_python, threshold, args.repeat, args.reuse)
        if "robotmem" in systems:
            outcome = run_robotmem(
                paths, args.repeat, args.strict, args.robotmem_server, args.reuse, args.keep_store
            )
            if outcome is not None and "not_run" not in outcome:
                results["robotmem"] = outcome
        summaries = {name: summarize(log, queries, reference["answers"], r) for name, r in results.items()}
        report = {
            "n": n,
            "seed": args.seed,
            "machine": machine(),
            "summaries": summaries,
            "facts": {
                k: {f: v for f, v in r.items() if f not in ("answers", "ms")} for k, r in results.items()
            },
        }
        write_json(CACHE / "results" / f"patrol-{n}.json", report)
        markdown = table(n, summaries, results)
        if "robotmem" in summaries:
            report["targets"] = check_targets(summaries["robotmem"])
            markdown += (
                "\nrobotmem against its targets:\n" + "\n".join(f"- {t}" for t in report["targets"]) + "\n"
            )
            write_json(CACHE / "results" / f"patrol-{n}.json", report)
        (CACHE / "results" / f"patrol-{n}.md").write_text(markdown, encoding="utf-8")
        print(markdown)


if __name__ == "__main__":
    main()
