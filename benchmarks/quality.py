"""Retrieval quality of BM25-only, vector-only and hybrid RRF on the labelled evaluation set.

The documents of ``benchmarks/data/robot_eval.jsonl`` are stored once, with the real default model,
through ``robotmem.adapters.cli.evaluate`` (the code behind ``robotmem eval``); every variant then swaps the
ranking settings (``rrf_k``, per-channel weights, candidate depth) on the same memory and reruns the
queries, so variants differ only in fusion. Query vectors are computed once and reused.

A variant is chosen on recall@5 (the issue's target), ties broken by MRR then nDCG@10. To show how much
of a difference is noise on 133 queries, each variant is also scored on two halves of the queries
(alternate ids); a default worth setting wins on both halves.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks.harness import CACHE, ROOT, ensure_cache, markdown_table, write_json

from robotmem import RobotMemory
from robotmem.adapters.cli.evaluate import BatchingEmbedder, load_documents, run_queries, splits
from robotmem.config import Settings
from robotmem.embedders import create_embedder
from robotmem.evaluation import EvalSet, load_eval_set, score_run

EVAL_FILE = ROOT / "benchmarks" / "data" / "robot_eval.jsonl"
KS = (1, 5, 10)
SPLITS_SHOWN = ("lang:en", "lang:zh", "tag:exact", "tag:paraphrase", "tag:cross_lingual")


@dataclass(frozen=True, slots=True)
class Variant:
    """One ranking configuration: a name and the settings it changes."""

    name: str
    changes: dict[str, Any]
    family: str


def variants(quick: bool) -> list[Variant]:
    """Return the configurations to score: single channels, the default, then one knob at a time and a grid."""
    out = [
        Variant("bm25 only (vector_weight=0)", {"vector_weight": 0.0}, "channel"),
        Variant("vector only (bm25_weight=0)", {"bm25_weight": 0.0}, "channel"),
        Variant("hybrid, shipped defaults", {}, "channel"),
    ]
    coverages = (0.0, 0.5) if quick else (0.0, 0.1, 0.2, 0.4, 0.5, 0.7)
    out += [Variant(f"bm25_min_coverage={c}", {"bm25_min_coverage": c}, "coverage") for c in coverages]
    out += [
        Variant(
            f"real_world_boost=1.0, bm25_min_coverage={c}",
            {"real_world_boost": 1.0, "bm25_min_coverage": c},
            "boost",
        )
        for c in ((0.0, 0.3) if quick else (0.0, 0.3, 0.5))
    ]
    out.append(
        Variant("vector only, real_world_boost=1.0", {"bm25_weight": 0.0, "real_world_boost": 1.0}, "boost")
    )
    ks = (0, 10, 30, 100) if quick else (0, 1, 5, 10, 20, 30, 45, 100, 200)
    out += [Variant(f"rrf_k={k}", {"rrf_k": k}, "rrf_k") for k in ks]
    ratios = (0.5, 2.0) if quick else (0.25, 0.5, 0.75, 1.25, 1.5, 2.0, 3.0, 4.0)
    out += [Variant(f"vector:bm25 = {r}:1", {"vector_weight": r}, "weights") for r in ratios]
    # The real-world boost multiplies RRF scores whose spread depends on rrf_k and on how many
    # candidates there are, so each of those knobs is also scored with the boost off.
    boost_ks = (0, 10, 60) if quick else (0, 5, 10, 20, 30, 60)
    out += [
        Variant(f"real_world_boost=1.0, rrf_k={k}", {"real_world_boost": 1.0, "rrf_k": k}, "boost")
        for k in boost_ks
    ]
    if not quick:
        out += [Variant(f"depth={d}", {"candidate_depth": d}, "depth") for d in (10, 20, 100, 200)]
        out += [
            Variant(
                f"real_world_boost=1.0, depth={d}", {"real_world_boost": 1.0, "candidate_depth": d}, "boost"
            )
            for d in (10, 100)
        ]
        out += [
            Variant(f"real_world_boost={b}, rrf_k=60", {"real_world_boost": b}, "boost") for b in (1.1, 1.25)
        ]
        out += [
            Variant(
                f"real_world_boost=1.0, rrf_k=10, vector:bm25 = {r}:1",
                {"real_world_boost": 1.0, "rrf_k": 10, "vector_weight": r},
                "grid",
            )
            for r in (1.5, 2.0)
        ]
        for k in (10, 30, 60):
            for r in (1.5, 2.0, 3.0):
                out.append(
                    Variant(f"rrf_k={k}, vector:bm25 = {r}:1", {"rrf_k": k, "vector_weight": r}, "grid")
                )
    return out


def halves(eval_set: EvalSet) -> tuple[set[str], set[str]]:
    """Split the queries in two by alternate position in the file."""
    ids = [q.id for q in eval_set.queries]
    return set(ids[0::2]), set(ids[1::2])


def score_variant(
    mem: RobotMemory, eval_set: EvalSet, loaded: Any, base: Settings, variant: Variant
) -> dict[str, Any]:
    """Run every query under ``variant``; return its metrics overall, per split and per half."""
    mem.settings = base.replace(**variant.changes)
    started = time.perf_counter()
    rankings, modes = run_queries(mem, eval_set, loaded, n=max(KS))
    elapsed = time.perf_counter() - started
    by_split = splits(eval_set)
    first, second = halves(eval_set)
    return {
        "name": variant.name,
        "family": variant.family,
        "changes": variant.changes,
        "modes": sorted(set(modes.values())),
        "query_ms_mean": elapsed * 1000 / max(1, len(eval_set.queries)),
        "all": score_run(eval_set, rankings, ks=KS),
        "splits": {
            name: score_run(eval_set, rankings, ks=KS, query_ids=by_split[name])
            for name in SPLITS_SHOWN
            if name in by_split
        },
        "half_a": score_run(eval_set, rankings, ks=KS, query_ids=first),
        "half_b": score_run(eval_set, rankings, ks=KS, query_ids=second),
    }


def _vector_cache_path(eval_file: Path, model_id: str) -> Path:
    digest = hashlib.sha256(eval_file.read_bytes()).hexdigest()[:16]
    return CACHE / f"eval-vectors-{model_id}-{digest}.npz"


def _read_vectors(path: Path) -> dict[tuple[str, bool], Any]:
    with np.load(path, allow_pickle=False) as data:
        texts, flags, matrix = data["texts"], data["is_query"], data["vectors"]
        return {(str(t), bool(q)): matrix[i] for i, (t, q) in enumerate(zip(texts, flags, strict=True))}


def _write_vectors(path: Path, vectors: dict[tuple[str, bool], Any]) -> None:
    """Keep the eval set's vectors between runs: the model takes about a minute for them on a busy 2-core CPU."""
    if not vectors:
        return
    keys = list(vectors)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        path,
        texts=np.array([t for t, _ in keys]),
        is_query=np.array([q for _, q in keys]),
        vectors=np.stack([np.asarray(vectors[k], dtype=np.float32) for k in keys]),
    )


def _key(row: dict[str, Any]) -> tuple[float, float, float]:
    scores = row["all"]
    return (round(scores["recall@5"], 6), round(scores["mrr"], 6), round(scores["ndcg@10"], 6))


def run_quality(quick: bool = False, eval_file: Path = EVAL_FILE, log: Any = print) -> dict[str, Any]:
    """Score every variant; return ``{"model", "load_s", "variants": [...], "best": name}``."""
    eval_set = load_eval_set(eval_file)
    base = Settings(embed_backend="auto")
    embedder = BatchingEmbedder(create_embedder(base))
    vector_cache = _vector_cache_path(eval_file, embedder.model_id)
    if vector_cache.exists():
        embedder.preload(_read_vectors(vector_cache))
    with tempfile.TemporaryDirectory(prefix="robotmem-quality-") as home:
        settings = base.replace(home=Path(home), db_path=Path(home) / "quality.db")
        with RobotMemory(settings=settings, embedder=embedder) as mem:
            started = time.perf_counter()
            loaded = load_documents(mem, eval_set)
            log(
                f"  stored {len(eval_set.documents)} documents with {embedder.model_id} in {time.perf_counter() - started:.1f} s"
            )
            _write_vectors(vector_cache, embedder.cached())
            rows = []
            for variant in variants(quick):
                rows.append(score_variant(mem, eval_set, loaded, settings, variant))
                log(
                    f"  {variant.name:<42} recall@5 {rows[-1]['all']['recall@5']:.3f}  mrr {rows[-1]['all']['mrr']:.3f}"
                )
    best = max(rows, key=_key)
    return {
        "model": embedder.model_id,
        "eval_file": str(eval_file.relative_to(ROOT)) if eval_file.is_relative_to(ROOT) else str(eval_file),
        "documents": len(eval_set.documents),
        "queries": len(eval_set.queries),
        "duplicates": loaded.duplicates,
        "variants": rows,
        "best": best["name"],
    }


def render(result: dict[str, Any]) -> str:
    """Return Markdown tables: channels per split, then every variant with its halves."""
    rows = result["variants"]
    channels = [r for r in rows if r["family"] == "channel"]
    header = ["configuration", "modes", "recall@1", "recall@5", "recall@10", "MRR", "nDCG@10"]
    out = [
        f"Model {result['model']}; {result['documents']} documents, {result['queries']} queries "
        f"({len(result['duplicates'])} documents stored as duplicates).",
        "",
        markdown_table(
            header,
            [
                [
                    r["name"],
                    ", ".join(r["modes"]),
                    *(r["all"][m] for m in ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10")),
                ]
                for r in channels
            ],
        ),
        "",
        "recall@5 by split:",
        "",
        markdown_table(
            ["configuration", *SPLITS_SHOWN],
            [
                [r["name"], *(r["splits"].get(s, {}).get("recall@5", float("nan")) for s in SPLITS_SHOWN)]
                for r in channels
            ],
        ),
        "",
        "Every variant (halves: alternate queries, to show what is noise):",
        "",
        markdown_table(
            ["variant", "recall@5", "MRR", "nDCG@10", "recall@5 half A", "recall@5 half B", "MRR A", "MRR B"],
            [
                [
                    r["name"],
                    r["all"]["recall@5"],
                    r["all"]["mrr"],
                    r["all"]["ndcg@10"],
                    r["half_a"]["recall@5"],
                    r["half_b"]["recall@5"],
                    r["half_a"]["mrr"],
                    r["half_b"]["mrr"],
                ]
                for r in rows
            ],
        ),
        "",
        f"Best on recall@5 (then MRR, nDCG@10): **{result['best']}**.",
    ]
    return "\n".join(out)


def hybrid_beats_channels(result: dict[str, Any]) -> dict[str, Any]:
    """Return the recall@5 of the three channel rows and whether hybrid beats both single channels."""
    by_family = {r["name"]: r["all"]["recall@5"] for r in result["variants"] if r["family"] == "channel"}
    bm25 = next(v for k, v in by_family.items() if k.startswith("bm25"))
    vector = next(v for k, v in by_family.items() if k.startswith("vector"))
    hybrid = next(v for k, v in by_family.items() if k.startswith("hybrid"))
    return {"bm25": bm25, "vector": vector, "hybrid": hybrid, "met": hybrid > max(bm25, vector)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--file", type=Path, default=EVAL_FILE)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    ensure_cache()
    result = run_quality(args.quick, args.file, log=lambda line: print(line, file=sys.stderr))
    if args.out:
        write_json(args.out, result)
    print(render(result))
    print(json.dumps(hybrid_beats_channels(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
