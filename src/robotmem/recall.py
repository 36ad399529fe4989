"""The recall pipeline: filters compiled to SQL, BM25 and vector candidates, RRF, weighting, spatial order.

Filters are part of every candidate query, so a candidate-pool limit never hides a memory that passes
them: BM25 ranks only passing rows, and the vector channel walks the whole cosine order until it has
``depth`` passing rows or runs out.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

import numpy as np

from robotmem.filters import Node, to_sql
from robotmem.ranking import fuse_rrf
from robotmem.records import Hit
from robotmem.spatial import SpatialSort, coordinates_at, distance
from robotmem.store import memories, search
from robotmem.store.vectors import MirroredIndex
from robotmem.text import fts_query


@dataclass(frozen=True, slots=True)
class RecallPlan:
    """A validated recall request."""

    query: str
    n: int
    min_confidence: float
    collection: str
    session_id: str | None = None
    exclude_session: str | None = None
    filter: Node | None = None
    spatial: SpatialSort | None = None
    include_data: bool = False
    order: str = "relevance"


@dataclass(frozen=True, slots=True)
class Tuning:
    """Ranking knobs taken from settings."""

    rrf_k: int = 60
    depth: int = 50
    bm25_weight: float = 1.0
    vector_weight: float = 1.0
    real_world_boost: float = 1.5


@dataclass(frozen=True, slots=True)
class RecallOutcome:
    """Hits best first and which channels ran."""

    hits: list[Hit]
    mode: str


def predicate(plan: RecallPlan) -> tuple[str, dict[str, Any]]:
    """Return the SQL predicate over ``memories m`` for every filter of ``plan``."""
    parts = ["m.status = 'active'", "m.collection = :p_collection", "m.confidence >= :p_min_confidence"]
    params: dict[str, Any] = {"p_collection": plan.collection, "p_min_confidence": plan.min_confidence}
    if plan.session_id is not None:
        parts.append("m.session_id = :p_session")
        params["p_session"] = plan.session_id
    if plan.exclude_session is not None:
        parts.append("(m.session_id IS NULL OR m.session_id != :p_exclude)")
        params["p_exclude"] = plan.exclude_session
    if plan.filter is not None:
        sql, filter_params = to_sql(plan.filter)
        parts.append(sql)
        params.update(filter_params)
    return " AND ".join(parts), params


def _vector_candidates(
    conn: sqlite3.Connection,
    index: MirroredIndex,
    query_vector: np.ndarray,
    where: str,
    params: dict[str, Any],
    depth: int,
) -> list[int]:
    ids, scores = index.index.similarities(query_vector)
    total = len(ids)
    found: list[int] = []
    checked, size = 0, max(2 * depth, 64)
    remaining = scores.astype(np.float32, copy=True)
    while checked < total and len(found) < depth:
        size = min(size, total - checked)
        # Sort only the best ``size`` unchecked scores (argpartition), not the whole index.
        head = (
            np.argpartition(-remaining, size - 1)[:size]
            if size < total - checked
            else np.flatnonzero(remaining > -np.inf)
        )
        head = head[np.argsort(-remaining[head], kind="stable")]
        remaining[head] = -np.inf
        chunk = [int(m) for m in ids[head]]
        allowed = search.passing(conn, chunk, where, params)
        found.extend(m for m in chunk if m in allowed)
        checked += len(chunk)
        # Size the next block from the share of rows that passed so far (at most four times what was
        # checked, as a small sample misjudges a selective filter).
        share = max(len(found), 1) / checked
        size = min(max(int(1.5 * (depth - len(found)) / share), 64), 4 * checked)
    return found[:depth]


def run(
    conn: sqlite3.Connection,
    plan: RecallPlan,
    tuning: Tuning,
    *,
    index: MirroredIndex | None,
    query_vector: np.ndarray | None,
) -> RecallOutcome:
    """Return the hits for ``plan``. ``index``/``query_vector`` are None when vector search cannot run."""
    where, params = predicate(plan)
    depth = max(tuning.depth, plan.n)
    # A channel weighted 0 cannot change the order, so it does not run (and ``mode`` says so).
    match = fts_query(plan.query) if plan.query and tuning.bm25_weight > 0 else None
    use_vectors = (
        bool(plan.query) and index is not None and query_vector is not None and tuning.vector_weight > 0
    )
    if not plan.query:
        mode = "filter_only"
    elif use_vectors:
        mode = "hybrid" if match else "vec_only"
    else:
        mode = "bm25_only"

    text_ranked = [m for m, _ in search.search_fts(conn, match, where, params, depth)] if match else []
    vector_ranked: list[int] = []
    if use_vectors:
        assert index is not None and query_vector is not None
        vector_ranked = _vector_candidates(conn, index, query_vector, where, params, depth)
    fused = fuse_rrf(
        [text_ranked, vector_ranked], k=tuning.rrf_k, weights=[tuning.bm25_weight, tuning.vector_weight]
    )
    in_text, in_vector = set(text_ranked), set(vector_ranked)
    channels = {
        m: frozenset(name for name, members in (("text", in_text), ("vector", in_vector)) if m in members)
        for m in fused
    }

    pool_ids = list(fused)
    coords: dict[int, Any] = {}
    if plan.spatial is not None:
        # Every memory passing the filters competes on distance, in every mode: the nearest are found,
        # not only the nearest among the text matches that made the candidate pool.
        coords = search.coordinates(conn, plan.spatial.path, where, params)
        pool_ids += [m for m in coords if m not in fused]
    if not plan.query:
        limit = None if plan.spatial else plan.n
        extra = search.select_ids(conn, where, params, newest_first=plan.order != "time", limit=limit)
        pool_ids += [m for m in extra if m not in fused and m not in coords]
    # Full records (JSON decoded) are loaded for the whole pool only when time order needs them;
    # ranking by relevance needs just the real-world flag, and records of the chosen few.
    needs_records = plan.order == "time" or not plan.query
    records = memories.fetch(conn, pool_ids) if needs_records else {}
    real = search.real_world(conn, pool_ids)
    scores: dict[int, float] = {}
    for memory_id in pool_ids:
        if needs_records and memory_id not in records:
            continue
        score = fused.get(memory_id, 0.0)
        if memory_id in real:
            score *= tuning.real_world_boost
        scores[memory_id] = score

    distances: dict[int, float | None] = {}
    if plan.spatial is not None:
        for memory_id in scores:
            raw = coords.get(memory_id)
            point = coordinates_at({"v": raw}, ("v",)) if raw is not None else None
            distances[memory_id] = distance(point, plan.spatial.target)
        known = {m: d for m, d in distances.items() if d is not None}
        if plan.spatial.max_distance is not None:
            reach = plan.spatial.max_distance
            scores = {m: s for m, s in scores.items() if m in known and known[m] <= reach}
        ordered = sorted(scores, key=lambda m: (m not in known, known.get(m, 0.0), -scores[m], m))
        final = {m: 1.0 / (1.0 + known[m]) if m in known else 0.0 for m in ordered}
    elif plan.order == "time":
        ordered = sorted(scores, key=lambda m: (records[m].created_at, m))
        final = {m: 1.0 for m in ordered}
    elif not plan.query:
        ordered = sorted(scores, key=lambda m: (records[m].created_at, m), reverse=True)
        final = {m: 1.0 for m in ordered}
    else:
        ordered = sorted(scores, key=lambda m: -scores[m])
        final = scores
    chosen = ordered[: plan.n]
    if not needs_records:
        records = memories.fetch(conn, chosen)
    best = max((final[m] for m in chosen), default=0.0)
    if best <= 0:  # no chosen memory has the spatial field: show relevance instead
        final = {m: scores[m] if scores[m] > 0 else 1.0 for m in scores}
        best = max((final[m] for m in chosen), default=0.0)
    payloads = memories.payloads(conn, chosen) if plan.include_data else {}
    hits = [
        Hit(
            memory=records[m],
            score=(final[m] / best) if best > 0 else 0.0,
            matched_by=channels.get(m, frozenset()),
            spatial_distance=distances.get(m),
            data=payloads.get(m, (None, None))[0],
            metadata=payloads.get(m, (None, None))[1],
        )
        for m in chosen
    ]
    return RecallOutcome(hits, mode)
