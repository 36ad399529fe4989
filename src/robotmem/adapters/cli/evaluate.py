"""``robotmem eval FILE``: score recall on a labelled evaluation file (format: benchmarks/data/README.md).

The documents are stored in a throwaway database through ``learn``/``save_perception``, each query runs
through ``recall`` with its own ``context_filter`` and ``spatial_sort``, and the ranked document ids are
scored with ``robotmem.evaluation.score_run``. ``--mode`` picks the channels: ``hybrid`` (BM25 and
vectors fused as the ``fusion`` setting says: min-max normalised scores by default), ``bm25`` (no embedder) or ``vector`` (BM25 weight 0, so only the vector channel
ranks).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robotmem import RobotMemory
from robotmem.config import Settings, load_settings
from robotmem.embedders import Embedder, create_embedder
from robotmem.errors import ValidationError
from robotmem.evaluation import EvalSet, load_eval_set, score_run
from robotmem.formats import strict_json

MODES = ("hybrid", "bm25", "vector")
DEFAULT_KS = (1, 5, 10)
SHARED_COLLECTION = "eval"


class BatchingEmbedder:
    """Wraps an embedder: ``prime`` embeds many texts in batches, later ``embed_one`` calls hit the cache.

    Storing a few hundred documents one model call at a time is several times slower than batching them,
    and the queries of a set are embedded once however many configurations are scored.
    """

    def __init__(self, base: Embedder, batch_size: int = 32) -> None:
        self.base = base
        self.batch_size = batch_size
        self._cache: dict[tuple[str, bool], Any] = {}

    @property
    def model_id(self) -> str:
        return self.base.model_id

    @property
    def dim(self) -> int:
        return self.base.dim

    @property
    def available(self) -> bool:
        return self.base.available

    @property
    def status(self) -> str:
        return self.base.status

    def prime(self, texts: Sequence[str], *, is_query: bool) -> None:
        """Embed the texts not cached yet; an embedder failure is left for ``embed_one`` to report."""
        if not self.base.available:
            return
        missing = [t for t in dict.fromkeys(texts) if (t, is_query) not in self._cache]
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            for text, vector in zip(chunk, self.base.embed_batch(chunk, is_query=is_query), strict=True):
                self._cache[(text, is_query)] = np.asarray(vector, dtype=np.float32)

    def embed_one(self, text: str, *, is_query: bool = False) -> Any:
        cached = self._cache.get((text, is_query))
        if cached is None:
            cached = self.base.embed_one(text, is_query=is_query)
            self._cache[(text, is_query)] = cached
        return cached

    def embed_batch(self, texts: Sequence[str], *, is_query: bool = False) -> Any:
        self.prime(texts, is_query=is_query)
        return np.stack([self.embed_one(t, is_query=is_query) for t in texts])

    def close(self) -> None:
        self.base.close()

    def cached(self) -> dict[tuple[str, bool], Any]:
        """Return a copy of the cache: ``(text, is_query)`` → vector (to save between runs)."""
        return dict(self._cache)

    def preload(self, vectors: dict[tuple[str, bool], Any]) -> None:
        """Add vectors computed earlier by the same model."""
        self._cache.update(vectors)


@dataclass
class LoadedSet:
    """An evaluation set stored in a RobotMemory: document id ↔ memory id, and how the load went."""

    memory_of: dict[str, int]
    document_of: dict[int, str]
    duplicates: list[str] = field(default_factory=list)
    load_s: float = 0.0
    keep_collections: bool = False


def settings_for_mode(base: Settings, mode: str) -> Settings:
    """Return ``base`` adjusted so recall runs the channels of ``mode``; raises ``ValidationError``."""
    if mode == "hybrid":
        return base
    if mode == "bm25":
        return base.replace(embed_backend="none")
    if mode == "vector":
        return base.replace(bm25_weight=0.0)
    raise ValidationError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")


def load_documents(mem: RobotMemory, eval_set: EvalSet) -> LoadedSet:
    """Store every document of ``eval_set`` in ``mem``.

    Documents keep their own collection only when every query names one (recall searches one collection);
    otherwise all go to one shared collection. A document that ``learn`` reports as a duplicate maps to
    the memory it repeats and is listed in ``duplicates``.
    """
    started = time.perf_counter()
    keep = bool(eval_set.queries) and all(q.collection is not None for q in eval_set.queries)
    embedder = mem.embedder
    if isinstance(embedder, BatchingEmbedder):
        embedder.prime([d.text for d in eval_set.documents], is_query=False)
        embedder.prime([q.query for q in eval_set.queries], is_query=True)
    loaded = LoadedSet(memory_of={}, document_of={}, keep_collections=keep)
    sessions: dict[tuple[str | None, str], str] = {}
    for document in eval_set.documents:
        collection = document.collection if keep else SHARED_COLLECTION
        session_id = None
        if document.session is not None:
            key = (collection, document.session)
            if key not in sessions:
                sessions[key] = mem.start_session(collection=collection)["session_id"]
            session_id = sessions[key]
        if document.type == "perception":
            stored = mem.save_perception(
                description=document.text,
                perception_type=document.perception_type or "visual",
                collection=collection,
                session_id=session_id,
            )
            memory_id = int(stored["memory_id"])
        else:
            learned = mem.learn(
                insight=document.text,
                context=dict(document.context),
                collection=collection,
                session_id=session_id,
            )
            if learned["status"] == "duplicate":
                loaded.duplicates.append(document.id)
                memory_id = int(learned["existing_id"])
            else:
                memory_id = int(learned["memory_id"])
        loaded.memory_of[document.id] = memory_id
        loaded.document_of.setdefault(memory_id, document.id)
    loaded.load_s = time.perf_counter() - started
    return loaded


def run_queries(
    mem: RobotMemory, eval_set: EvalSet, loaded: LoadedSet, n: int
) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Run every query through ``mem.recall``; return query id → ranked document ids, and → recall mode."""
    rankings: dict[str, list[str]] = {}
    modes: dict[str, str] = {}
    for query in eval_set.queries:
        collection = query.collection if loaded.keep_collections else SHARED_COLLECTION
        result = mem.recall(
            query=query.query,
            n=n,
            context_filter=dict(query.context_filter) if query.context_filter is not None else None,
            spatial_sort=dict(query.spatial_sort) if query.spatial_sort is not None else None,
            collection=collection,
        )
        rankings[query.id] = [
            loaded.document_of.get(int(m["id"]), f"memory:{m['id']}") for m in result["memories"]
        ]
        modes[query.id] = str(result["mode"])
    return rankings, modes


def splits(eval_set: EvalSet) -> dict[str, set[str]]:
    """Return split name → query ids: every query, each language, each tag, each split and each tag within a split."""
    out: dict[str, set[str]] = {"all": {q.id for q in eval_set.queries}}
    for query in eval_set.queries:
        out.setdefault(f"lang:{query.lang}", set()).add(query.id)
        for tag in query.tags:
            out.setdefault(f"tag:{tag}", set()).add(query.id)
        if query.split is not None:
            out.setdefault(f"split:{query.split}", set()).add(query.id)
            for tag in query.tags:
                out.setdefault(f"split:{query.split}/{tag}", set()).add(query.id)
    return out


def evaluate(
    eval_set: EvalSet,
    settings: Settings,
    *,
    mode: str = "hybrid",
    ks: Sequence[int] = DEFAULT_KS,
    embedder: Embedder | None = None,
    workdir: Path | None = None,
) -> dict[str, Any]:
    """Store ``eval_set`` in a temporary database, run its queries in ``mode`` and score them.

    Returns ``{"mode", "modes_seen", "model", "documents", "queries", "duplicates", "load_s", "query_s",
    "metrics": {split: score_run(...)}}``. Raises ``ValidationError`` for a bad mode or k.
    """
    ks = tuple(sorted(set(ks)))
    if not ks or ks[0] < 1 or ks[-1] > settings.max_n:
        raise ValidationError(f"k: expected values within 1..{settings.max_n}, got {list(ks)}")
    chosen = settings_for_mode(settings, mode)
    if embedder is None and chosen.embed_backend != "none":
        embedder = BatchingEmbedder(create_embedder(chosen))
    with tempfile.TemporaryDirectory(prefix="robotmem-eval-", dir=workdir) as home:
        chosen = chosen.replace(home=Path(home), db_path=Path(home) / "eval.db")
        with RobotMemory(settings=chosen, embedder=embedder if mode != "bm25" else None) as mem:
            loaded = load_documents(mem, eval_set)
            started = time.perf_counter()
            rankings, modes = run_queries(mem, eval_set, loaded, n=ks[-1])
            query_s = time.perf_counter() - started
            model = mem.embedder.model_id if mem.embedder.available else None
    metrics = {
        name: score_run(eval_set, rankings, ks=ks, query_ids=ids)
        for name, ids in sorted(splits(eval_set).items())
    }
    return {
        "mode": mode,
        "modes_seen": sorted(set(modes.values())),
        "model": model,
        "documents": len(eval_set.documents),
        "queries": len(eval_set.queries),
        "duplicates": loaded.duplicates,
        "load_s": round(loaded.load_s, 3),
        "query_s": round(query_s, 3),
        "metrics": metrics,
    }


def render(report: dict[str, Any], ks: Sequence[int]) -> str:
    """Return the report as a plain-text table: one row per split, MRR and recall/nDCG at each k."""
    columns = ["mrr", *[f"recall@{k}" for k in ks], *[f"ndcg@{k}" for k in ks]]
    lines = [
        f"mode {report['mode']} (recall reported {', '.join(report['modes_seen']) or '-'}), "
        f"model {report['model'] or 'none'}; {report['documents']} documents, {report['queries']} queries, "
        f"{len(report['duplicates'])} stored as duplicates; load {report['load_s']:.1f} s, "
        f"queries {report['query_s']:.1f} s",
        "",
        f"{'split':<22} {'n':>4} " + " ".join(f"{c:>9}" for c in columns),
    ]
    for name, scores in report["metrics"].items():
        cells = " ".join(f"{scores[c]:>9.3f}" for c in columns)
        lines.append(f"{name:<22} {int(scores['queries']):>4} {cells}")
    return "\n".join(lines)


def _eval(args: argparse.Namespace) -> int:
    settings = load_settings(os.environ)
    if args.embed_backend is not None:
        settings = settings.replace(embed_backend=args.embed_backend)
    ks = tuple(sorted(set(args.k)))
    report = evaluate(load_eval_set(args.file), settings, mode=args.mode, ks=ks)
    if args.json:
        print(strict_json.dumps(report, indent=2))
    else:
        print(render(report, ks))
    return 0


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``eval`` command to the ``robotmem`` parser."""
    p = subparsers.add_parser(
        "eval", parents=[common], help="score recall on a labelled evaluation file (JSONL)"
    )
    p.add_argument("file", type=Path, help="evaluation file: documents and queries, one JSON object a line")
    p.add_argument("--k", type=int, nargs="+", default=list(DEFAULT_KS), help="cut-offs (default: 1 5 10)")
    p.add_argument("--mode", choices=MODES, default="hybrid", help="channels to rank with (default: hybrid)")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    p.set_defaults(run=_eval)


__all__: list[str] = ["BatchingEmbedder", "evaluate", "load_documents", "register", "run_queries"]
