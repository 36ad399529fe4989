"""Relevance on both labelled sets and the unanswerable queries, side by side in one run.

    python -m benchmarks.relevance [--min-relevance 0.5 ...] [--mode hybrid|bm25] [--out FILE]
    python -m benchmarks.relevance --write-anchors     # the shipped anchor means of the bundled model

Both evaluation files are stored once each (the bundled model, cached vectors), then every labelled query
runs with ``min_relevance`` 0 (the gate off: the ranking without it) and at each given ``min_relevance``,
and recall@5 of each set is printed side by side. Every query of ``benchmarks/data/unanswerable.jsonl``
(nothing in either set answers it) runs in every collection of both sets at each ``min_relevance``: the
share that returns nothing, per (query, collection) pair and per query (nothing in any collection).

Everything is also reported per half: the labelled sets' own ``tune``/``heldout`` splits, and the
unanswerable queries split the same way (``unanswerable_halves``: every other query of each language and
kind, by id). Relevance calibrations are fitted on the tune halves and checked on the held-out ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.ablation import EPISODE_FILE, ROBOT_FILE
from benchmarks.harness import ROOT, ensure_cache, markdown_table, write_json
from benchmarks.quality import _read_vectors, _vector_cache_path, _write_vectors

from robotmem import RobotMemory
from robotmem.adapters.cli.evaluate import (
    SHARED_COLLECTION,
    BatchingEmbedder,
    LoadedSet,
    load_documents,
    splits,
)
from robotmem.config import Settings
from robotmem.embedders import create_embedder
from robotmem.evaluation import EvalSet, load_eval_set, score_run
from robotmem.service.recall.relevance import DEFAULT_MIN_RELEVANCE

UNANSWERABLE_FILE = ROOT / "benchmarks" / "data" / "unanswerable.jsonl"
KS = (1, 5, 10)


def load_unanswerable(path: Path = UNANSWERABLE_FILE) -> list[dict[str, str]]:
    """The unanswerable queries: id, query, lang, kind."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def unanswerable_halves(queries: Sequence[dict[str, str]]) -> dict[str, str]:
    """Query id → ``tune`` or ``heldout``: every other query of each (language, kind), in id order."""
    groups: dict[tuple[str, str], list[str]] = {}
    for query in queries:
        groups.setdefault((query["lang"], query["kind"]), []).append(query["id"])
    return {
        query_id: "tune" if i % 2 == 0 else "heldout"
        for ids in groups.values()
        for i, query_id in enumerate(sorted(ids))
    }


def labelled_run(
    mem: RobotMemory, eval_set: EvalSet, loaded: LoadedSet, min_relevance: float | None
) -> tuple[dict[str, list[str]], int]:
    """Query id → ranked document ids at ``min_relevance``, and how many queries returned nothing."""
    rankings: dict[str, list[str]] = {}
    empty = 0
    for query in eval_set.queries:
        result = mem.recall(
            query=query.query,
            n=max(KS),
            context_filter=dict(query.context_filter) if query.context_filter is not None else None,
            spatial_sort=dict(query.spatial_sort) if query.spatial_sort is not None else None,
            collection=query.collection if loaded.keep_collections else SHARED_COLLECTION,
            min_relevance=min_relevance,
        )
        rankings[query.id] = [loaded.document_of.get(int(m["id"]), "?") for m in result["memories"]]
        empty += not result["memories"]
    return rankings, empty


def unanswerable_run(
    stores: Sequence[tuple[RobotMemory, list[str]]],
    queries: Sequence[dict[str, str]],
    min_relevance: float | None,
) -> list[dict[str, Any]]:
    """Every unanswerable query in every collection: how many memories came back, and the best relevance."""
    rows = []
    halves = unanswerable_halves(queries)
    for query in queries:
        for mem, collections in stores:
            for collection in collections:
                result = mem.recall(
                    query=query["query"], n=5, collection=collection, min_relevance=min_relevance
                )
                rows.append(
                    {
                        "id": query["id"],
                        "kind": query["kind"],
                        "lang": query["lang"],
                        "half": halves[query["id"]],
                        "collection": collection,
                        "returned": len(result["memories"]),
                        "best": max((m["relevance"] or 0.0 for m in result["memories"]), default=None),
                    }
                )
    return rows


def empty_shares(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Group → share of empty (query, collection) pairs and of queries empty in every collection."""
    groups: dict[str, list[dict[str, Any]]] = {"all": list(rows)}
    for row in rows:
        groups.setdefault(f"kind:{row['kind']}", []).append(row)
        groups.setdefault(f"lang:{row['lang']}", []).append(row)
        groups.setdefault(f"half:{row['half']}", []).append(row)
        groups.setdefault(f"half:{row['half']}/lang:{row['lang']}", []).append(row)
    out = {}
    for name, members in groups.items():
        by_query: dict[str, bool] = {}
        for row in members:
            by_query[row["id"]] = by_query.get(row["id"], True) and row["returned"] == 0
        out[name] = {
            "queries": len(by_query),
            "pairs empty": sum(r["returned"] == 0 for r in members) / len(members),
            "queries empty everywhere": sum(by_query.values()) / len(by_query),
        }
    return out


def level_name(level: float | None) -> str:
    """A level's key: ``default`` is recall without ``min_relevance`` (the floor decides the whole answer)."""
    return "default" if level is None else f"{level:g}"


def parse_level(text: str) -> float | None:
    return None if text == "default" else float(text)


def run(levels: Sequence[float | None], mode: str, log: Callable[[str], None] = print) -> dict[str, Any]:
    base = Settings(embed_backend="auto" if mode == "hybrid" else "none")
    embedder = BatchingEmbedder(create_embedder(base)) if mode == "hybrid" else None
    result: dict[str, Any] = {
        "levels": [level_name(v) for v in levels],
        "mode": mode,
        "sets": {},
        "unanswerable": {},
    }
    with tempfile.TemporaryDirectory(prefix="robotmem-relevance-") as home:
        stores: list[tuple[RobotMemory, list[str]]] = []
        memories = []
        try:
            for name, path in (("episode", EPISODE_FILE), ("robot", ROBOT_FILE)):
                if embedder is not None:
                    cache = _vector_cache_path(path, embedder.model_id)
                    if cache.exists():
                        embedder.preload(_read_vectors(cache))
                settings = base.replace(home=Path(home), db_path=Path(home) / f"{name}.db")
                mem = RobotMemory(settings=settings, embedder=embedder)
                memories.append(mem)
                eval_set = load_eval_set(path)
                loaded = load_documents(mem, eval_set)
                if embedder is not None:
                    _write_vectors(cache, embedder.cached())
                parts = splits(eval_set)
                scored = {}
                for floor in (0.0, *levels):
                    rankings, empty = labelled_run(mem, eval_set, loaded, floor)
                    key = level_name(floor)
                    scored[key] = {
                        split: score_run(eval_set, rankings, ks=KS, query_ids=parts[split])
                        for split in ("all", "split:tune", "split:heldout")
                    }
                    scored[key]["empty"] = empty
                    log(f"  {name} at {key}: recall@5 {scored[key]['all']['recall@5']:.3f}, {empty} empty")
                result["sets"][name] = scored
                collections = (
                    sorted({d.collection or "" for d in eval_set.documents})
                    if loaded.keep_collections
                    else [SHARED_COLLECTION]
                )
                stores.append((mem, collections))
            if embedder is not None:
                result["model"] = embedder.model_id
            for floor in levels:
                rows = unanswerable_run(stores, load_unanswerable(), floor)
                result["unanswerable"][level_name(floor)] = {"rows": rows, "shares": empty_shares(rows)}
                log(f"  unanswerable at {level_name(floor)}: {empty_shares(rows)['all']}")
        finally:
            for mem in memories:
                mem.close()
    return result


def render(result: dict[str, Any]) -> str:
    """Markdown: recall@5 at each min_relevance beside the gate off, then the unanswerable queries."""
    levels = list(result["levels"])
    header = ["min_relevance"]
    for name in result["sets"]:
        header += [f"{name} recall@5", f"{name} change", f"{name} empty"]
    header += ["unanswerable pairs empty", "unanswerable queries empty everywhere", "English", "Chinese"]
    body = []
    for level in ["0", *levels]:
        row: list[Any] = [level]
        for scored in result["sets"].values():
            recall = scored[level]["all"]["recall@5"]
            row += [recall, recall - scored["0"]["all"]["recall@5"], int(scored[level]["empty"])]
        shares = result["unanswerable"].get(level, {}).get("shares")
        row += (
            [
                shares["all"]["pairs empty"],
                shares["all"]["queries empty everywhere"],
                shares["lang:en"]["pairs empty"],
                shares["lang:zh"]["pairs empty"],
            ]
            if shares
            else ["", "", "", ""]
        )
        body.append(row)
    parts = [f"mode {result['mode']}, model {result.get('model', 'none')}", "", markdown_table(header, body)]
    parts += ["", "Per half (labelled splits; unanswerable queries by ``unanswerable_halves``):", ""]
    parts.append(render_halves(result))
    for level in levels:
        shares = result["unanswerable"][level]["shares"]
        parts += [
            "",
            f"Unanswerable queries at min_relevance {level}:",
            "",
            markdown_table(
                ["group", "queries", "(query, collection) pairs empty", "queries empty in every collection"],
                [
                    [k, int(v["queries"]), v["pairs empty"], v["queries empty everywhere"]]
                    for k, v in shares.items()
                ],
            ),
        ]
    return "\n".join(parts)


def render_halves(result: dict[str, Any]) -> str:
    """Markdown: each half's recall@5 at each level beside the gate off, and its unanswerable pairs empty."""
    header = ["half", "min_relevance"]
    for name in result["sets"]:
        header += [f"{name} recall@5", f"{name} change"]
    header += ["unanswerable pairs empty", "English", "Chinese"]
    body = []
    for half in ("tune", "heldout"):
        for level in ["0", *result["levels"]]:
            row: list[Any] = [half, level]
            for scored in result["sets"].values():
                recall = scored[level][f"split:{half}"]["recall@5"]
                row += [recall, recall - scored["0"][f"split:{half}"]["recall@5"]]
            shares = result["unanswerable"].get(level, {}).get("shares")
            row += (
                [
                    shares[f"half:{half}"]["pairs empty"],
                    shares[f"half:{half}/lang:en"]["pairs empty"],
                    shares[f"half:{half}/lang:zh"]["pairs empty"],
                ]
                if shares
                else ["", "", ""]
            )
            body.append(row)
    return markdown_table(header, body)


def write_anchor_means() -> Path:
    """Embed the relevance anchors with the bundled model and store their means beside ``anchors.py``."""
    # Imported here: the benchmark itself also runs against checkouts from before the anchors.
    from robotmem.query.vectors import unit_vector
    from robotmem.service.recall import anchors
    from robotmem.service.recall.anchors import embedded_anchors, shipped_entry

    embedder = create_embedder(Settings(embed_backend="auto"))

    def embed(texts: Sequence[str], is_query: bool) -> list[Any]:
        return [
            unit_vector(row, embedder.dim) for row in embedder.embed_batch(list(texts), is_query=is_query)
        ]

    found = embedded_anchors(embed)
    if found is None:
        raise SystemExit(f"{embedder.model_id}: an anchor text has no vector")
    path = Path(anchors.__file__).with_name(anchors.SHIPPED)
    entries = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    entries[embedder.model_id] = shipped_entry(found)
    lines = [
        f"  {json.dumps(model)}: {{\n"
        + ",\n".join(f"    {json.dumps(key)}: {json.dumps(value)}" for key, value in entry.items())
        + "\n  }"
        for model, entry in sorted(entries.items())
    ]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--min-relevance",
        type=parse_level,
        nargs="+",
        default=[None, DEFAULT_MIN_RELEVANCE],
        help="levels to measure; 'default' is recall without min_relevance",
    )
    parser.add_argument("--mode", choices=("hybrid", "bm25"), default="hybrid")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--write-anchors", action="store_true", help="embed the relevance anchors and write anchor_means.json"
    )
    args = parser.parse_args(argv)
    if args.write_anchors:
        print(write_anchor_means())
        return 0
    ensure_cache()
    result = run(args.min_relevance, args.mode, log=lambda line: print(line, file=sys.stderr))
    if args.out:
        write_json(args.out, result)
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
