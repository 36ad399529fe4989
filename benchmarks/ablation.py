"""Ranking techniques on both labelled sets: defaults chosen on the tuning splits, ablation on held-out queries.

    python -m benchmarks.ablation [--out FILE]

Both evaluation files are stored once each with the bundled model (``robotmem.adapters.cli.evaluate``, the
code behind ``robotmem eval``), with episode vectors (``episode_vector_weight``) computed so that channel
can be scored too; every configuration then swaps ranking settings on the same memories and reruns the
queries. First a greedy search, one knob at a time in a fixed order, picks each technique's value on the
``tune`` splits of both sets (the mean of their recall@5, ties by the mean MRR). Then every
configuration — the single channels, the earlier defaults, the chosen settings, the chosen settings with
each technique turned off, and the earlier defaults with each technique turned on — is scored in the same
run on both sets' ``heldout`` splits, where no choice was made.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, ensure_cache, markdown_table, write_json
from benchmarks.quality import _read_vectors, _vector_cache_path, _write_vectors

from robotmem import RobotMemory
from robotmem.adapters.cli.evaluate import BatchingEmbedder, LoadedSet, load_documents, run_queries, splits
from robotmem.config import Settings
from robotmem.embedders import create_embedder
from robotmem.evaluation import EvalSet, load_eval_set, score_run

EPISODE_FILE = ROOT / "benchmarks" / "data" / "episode_eval.jsonl"
ROBOT_FILE = ROOT / "benchmarks" / "data" / "robot_eval.jsonl"
KS = (1, 5, 10)

# The ranking before these techniques: RRF, FTS5's BM25 constants, the basic stopwords, no structure.
EARLIER = {
    "fusion": "rrf",
    "rrf_k": 1,
    "vector_weight": 1.0,
    "bm25_k1": 1.2,
    "bm25_b": 0.75,
    "query_stopwords": "basic",
    "neighbour_share": 0.0,
    "episode_share": 0.0,
    "context_boost": 0.0,
    "direction_share": 0.0,
    "episode_vector_weight": 0.0,
}
# Searched in this order, each with the values found so far for the others; the whole list twice
# (coordinate search), as a knob chosen before the others were on may be worth changing after.
KNOBS: list[tuple[str, Sequence[Any]]] = [
    ("fusion", ("rrf", "zscore", "minmax")),
    ("rrf_k", (1, 5, 20, 60)),
    ("vector_weight", (1.0, 1.5, 2.0, 3.0)),
    ("bm25_k1", (0.6, 0.9, 1.2)),
    ("bm25_b", (0.0, 0.1, 0.25, 0.5, 0.75)),
    ("query_stopwords", ("basic", "extended")),
    ("neighbour_share", (0.0, 0.25, 0.5, 0.75, 1.0)),
    ("episode_share", (0.0, 0.05, 0.1, 0.2, 0.4)),
    ("context_boost", (0.0, 0.25, 0.5, 0.75, 1.0)),
    ("direction_share", (0.0, 0.25, 0.5, 0.8, 1.0)),
    ("episode_vector_weight", (0.0, 0.25, 0.5, 1.0)),
]
GRID = KNOBS + KNOBS
# Technique → the settings that turn it off (from the chosen settings) or on (from the earlier ones).
TECHNIQUES = {
    "score fusion": ("fusion", "rrf_k", "vector_weight"),
    "BM25 k1/b": ("bm25_k1", "bm25_b"),
    "extended stopwords": ("query_stopwords",),
    "episode neighbours": ("neighbour_share",),
    "episode score": ("episode_share",),
    "named context values": ("context_boost",),
    "step direction": ("direction_share",),
    "episode vectors": ("episode_vector_weight",),
}


ALTERNATIVES: list[tuple[str, Any]] = [
    ("fusion", "minmax"),
    ("fusion", "zscore"),
    ("query_stopwords", "extended"),
    ("episode_vector_weight", 0.5),
]
# Stored with episode vectors, so that channel can be turned on per configuration.
LOAD_WITH = {"episode_vector_weight": 1.0}


class Loaded:
    """One evaluation set stored in a RobotMemory, with the splits its queries fall in."""

    def __init__(self, mem: RobotMemory, eval_set: EvalSet, loaded: LoadedSet, base: Settings) -> None:
        self.mem, self.eval_set, self.loaded, self.base = mem, eval_set, loaded, base
        self.splits = splits(eval_set)

    def score(self, changes: dict[str, Any], split: str = "all") -> dict[str, Any]:
        self.mem.settings = self.base.replace(**changes)
        started = time.perf_counter()
        rankings, _ = run_queries(self.mem, self.eval_set, self.loaded, n=max(KS))
        elapsed = time.perf_counter() - started
        ids = self.splits[split]
        by_type = {
            name.split("/", 1)[1]: score_run(self.eval_set, rankings, ks=KS, query_ids=q)
            for name, q in self.splits.items()
            if name.startswith(f"{split}/")
        }
        return {
            "scores": score_run(self.eval_set, rankings, ks=KS, query_ids=ids),
            "by_type": by_type,
            "query_ms": elapsed * 1000 / max(1, len(self.eval_set.queries)),
        }


def _key(results: Sequence[dict[str, Any]]) -> tuple[float, float]:
    mean = lambda metric: sum(r["scores"][metric] for r in results) / len(results)  # noqa: E731
    return (round(mean("recall@5"), 6), round(mean("mrr"), 6))


def choose(sets: Sequence[Loaded], log: Callable[[str], None]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Return the settings chosen on the tuning splits of ``sets`` and every step of the search."""
    chosen = dict(EARLIER)
    steps: list[dict[str, Any]] = []
    for knob, values in GRID:
        results = {}
        for value in values:
            trial = {**chosen, knob: value}
            results[value] = [loaded.score(trial, "split:tune") for loaded in sets]
            recall, mrr = _key(results[value])
            steps.append({"knob": knob, "value": value, "recall@5": recall, "mrr": mrr})
            log(f"  tune {knob}={value}: mean recall@5 {recall:.3f}, MRR {mrr:.3f}")
        best = max(values, key=lambda v: (_key(results[v]), v == chosen[knob]))
        chosen[knob] = best
    return chosen, steps


def configurations(chosen: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Return the rows of the ablation: name → settings."""
    rows = [
        ("BM25 only, earlier ranking", {**EARLIER, "vector_weight": 0.0}),
        ("vector only, earlier ranking", {**EARLIER, "bm25_weight": 0.0}),
        ("hybrid, earlier ranking", dict(EARLIER)),
        ("BM25 only, chosen settings", {**chosen, "vector_weight": 0.0}),
        ("vector only, chosen settings", {**chosen, "bm25_weight": 0.0}),
        ("hybrid, chosen settings", dict(chosen)),
        ("BM25 only, chosen, no named values", {**chosen, "vector_weight": 0.0, "context_boost": 0.0}),
        ("vector only, chosen, no named values", {**chosen, "bm25_weight": 0.0, "context_boost": 0.0}),
    ]
    for name, knobs in TECHNIQUES.items():
        off = {k: EARLIER[k] for k in knobs}
        if any(chosen[k] != EARLIER[k] for k in knobs):
            rows.append((f"chosen without {name}", {**chosen, **off}))
            rows.append((f"earlier + {name}", {**EARLIER, **{k: chosen[k] for k in knobs}}))
    # Techniques the search left off, turned on beside the chosen settings.
    for knob, value in ALTERNATIVES:
        if chosen[knob] != value:
            rows.append((f"chosen with {knob}={value}", {**chosen, knob: value}))
    return rows


def run(log: Callable[[str], None] = print) -> dict[str, Any]:
    base = Settings(embed_backend="auto")
    embedder = BatchingEmbedder(create_embedder(base))
    sets: dict[str, Loaded] = {}
    with tempfile.TemporaryDirectory(prefix="robotmem-ablation-") as home:
        memories = []
        for name, path in (("episode", EPISODE_FILE), ("robot", ROBOT_FILE)):
            cache = _vector_cache_path(path, embedder.model_id)
            if cache.exists():
                embedder.preload(_read_vectors(cache))
            settings = base.replace(home=Path(home), db_path=Path(home) / f"{name}.db")
            mem = RobotMemory(settings=settings.replace(**LOAD_WITH), embedder=embedder)
            memories.append(mem)
            eval_set = load_eval_set(path)
            started = time.perf_counter()
            loaded = load_documents(mem, eval_set)
            log(
                f"  stored {name}: {len(eval_set.documents)} documents in {time.perf_counter() - started:.1f} s"
            )
            _write_vectors(cache, embedder.cached())
            sets[name] = Loaded(mem, eval_set, loaded, settings)
        try:
            chosen, steps = choose([sets["episode"], sets["robot"]], log)
            log(f"  chosen: {chosen}")
            rows = []
            for name, changes in configurations(chosen):
                row = {
                    "name": name,
                    "changes": changes,
                    "episode_heldout": sets["episode"].score(changes, "split:heldout"),
                    "episode_tune": sets["episode"].score(changes, "split:tune"),
                    "robot_heldout": sets["robot"].score(changes, "split:heldout"),
                    "robot_tune": sets["robot"].score(changes, "split:tune"),
                }
                rows.append(row)
                log(
                    f"  {name:<40} held-out recall@5: episode {row['episode_heldout']['scores']['recall@5']:.3f}"
                    f", robot {row['robot_heldout']['scores']['recall@5']:.3f}"
                )
        finally:
            for mem in memories:
                mem.close()
    return {
        "model": embedder.model_id,
        "duplicates": {name: s.loaded.duplicates for name, s in sets.items()},
        "chosen": chosen,
        "search": steps,
        "rows": rows,
    }


def render(result: dict[str, Any]) -> str:
    """Markdown: the ablation table, then recall@5 by query type on each held-out split."""
    metrics = ("recall@1", "recall@5", "recall@10", "mrr")
    header = ["configuration"]
    header += [f"episode held-out {m}" for m in metrics] + [f"robot held-out {m}" for m in metrics]
    header += ["episode tune recall@5", "robot tune recall@5"]
    body = [
        [
            r["name"],
            *(r["episode_heldout"]["scores"][m] for m in metrics),
            *(r["robot_heldout"]["scores"][m] for m in metrics),
            r["episode_tune"]["scores"]["recall@5"],
            r["robot_tune"]["scores"]["recall@5"],
        ]
        for r in result["rows"]
    ]
    parts = [
        f"Model {result['model']}; chosen on the tuning splits: {result['chosen']}",
        "",
        markdown_table(header, body),
    ]
    for key, title in (("episode_heldout", "Episode"), ("robot_heldout", "Robot")):
        types = sorted(result["rows"][0][key]["by_type"])
        by_type = [[r["name"], *(r[key]["by_type"][t]["recall@5"] for t in types)] for r in result["rows"]]
        parts += [
            "",
            f"{title} held-out recall@5 by query type:",
            "",
            markdown_table(["configuration", *types], by_type),
        ]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    ensure_cache()
    result = run(log=lambda line: print(line, file=sys.stderr))
    if args.out:
        write_json(args.out, result)
    print(render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
