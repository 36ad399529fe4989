"""The recall pipeline: filters, BM25 and vector candidates, RRF, weighting, spatial order.

Filters apply before any candidate limit, so a limit never hides a memory that passes them: BM25
ranks only passing rows, and the vector channel ranks only passing vectors. With a ``RecallMirror``
(the service always passes one) the filters are a numpy mask by memory id and BM25 is scored from the
mirrored postings, with the same formula as FTS5; without one, the filters are compiled into the SQL
of each channel. Both give the same candidates (``tests/test_recall_mirror.py`` checks it).
"""

from __future__ import annotations

import itertools
import sqlite3
from dataclasses import dataclass
from typing import Any

import numpy as np

from robotmem.filters import Node, to_sql
from robotmem.ranking import fuse_rrf
from robotmem.records import Hit
from robotmem.spatial import SpatialSort, coordinates_at, distance
from robotmem.store import memories, search
from robotmem.store.mirror import BoolArray, RecallMirror
from robotmem.store.vectors import MirroredIndex
from robotmem.text import or_match, query_tokens


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
    bm25_min_coverage: float = 0.0


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


def _top(ids: np.ndarray, scores: np.ndarray, depth: int) -> list[int]:
    """Return up to ``depth`` of ``ids`` by score, best first (ties by smaller id)."""
    if len(ids) > depth:
        head = np.argpartition(-scores, depth - 1)[:depth]
        ids, scores = ids[head], scores[head]
    order = np.lexsort((ids, -scores))
    return [int(m) for m in ids[order]]


def _allowed_among(ids: np.ndarray, allowed: BoolArray) -> BoolArray:
    """Return, for each of ``ids``, whether ``allowed`` passes it.

    An id beyond the mask (written after the snapshot the mask was made on) does not pass.
    """
    known = ids < len(allowed)
    passing = np.zeros(len(ids), dtype=np.bool_)
    passing[known] = allowed[ids[known]]
    return passing


def _masked_text(
    mirror: RecallMirror, words: list[str], allowed: BoolArray, depth: int, min_coverage: float = 0.0
) -> list[int] | None:
    """BM25 candidates for the query ``words`` from the mirror, or None when FTS5 must answer (a token FTS5 splits)."""
    scored = mirror.bm25(words, min_coverage)
    if scored is None:
        return None
    scores, matched = scored
    size = min(len(matched), len(allowed))
    ids = np.flatnonzero(matched[:size] & allowed[:size])
    return _top(ids, scores[ids], depth)


def _masked_vectors(
    index: MirroredIndex, query_vector: np.ndarray, allowed: BoolArray, depth: int
) -> list[int]:
    ids, scores = index.index.similarities(query_vector)
    rows = np.flatnonzero(_allowed_among(ids, allowed))
    return _top(ids[rows], scores[rows], depth)


def _nearest(
    conn: sqlite3.Connection, mirror: RecallMirror, spatial: SpatialSort, allowed: BoolArray, n: int
) -> dict[int, float]:
    """Return id → distance of the ``n`` nearest allowed memories within reach, with every tie at the n-th.

    Nothing further can be chosen: memories with a distance are ordered before those without.
    """
    ids, far = mirror.distances(conn, spatial.path, spatial.target)
    keep = _allowed_among(ids, allowed)
    if spatial.max_distance is not None:
        keep &= far <= spatial.max_distance
    ids, far = ids[keep], far[keep]
    if len(ids) > n:
        nth = np.partition(far, n - 1)[n - 1]
        ids, far = ids[far <= nth], far[far <= nth]
    return {int(m): float(d) for m, d in zip(ids, far, strict=True)}


def run(
    conn: sqlite3.Connection,
    plan: RecallPlan,
    tuning: Tuning,
    *,
    index: MirroredIndex | None,
    query_vector: np.ndarray | None,
    mirror: RecallMirror | None = None,
) -> RecallOutcome:
    """Return the hits for ``plan``. ``index``/``query_vector`` are None when vector search cannot run.

    ``mirror`` (synced here, inside the caller's read transaction) makes the filters a mask and BM25 a
    numpy computation; without it every channel queries SQLite.
    """
    where, params = predicate(plan)
    allowed: BoolArray | None = None
    if mirror is not None:
        mirror.sync(conn)
        allowed = mirror.allowed(
            conn,
            collection=plan.collection,
            min_confidence=plan.min_confidence,
            session_id=plan.session_id,
            exclude_session=plan.exclude_session,
            filter=plan.filter,
        )
    depth = max(tuning.depth, plan.n)
    # A channel weighted 0 cannot change the order, so it does not run (and ``mode`` says so).
    words = query_tokens(plan.query) if plan.query and tuning.bm25_weight > 0 else []
    match = or_match(words)
    use_vectors = (
        bool(plan.query) and index is not None and query_vector is not None and tuning.vector_weight > 0
    )
    if not plan.query:
        mode = "filter_only"
    elif use_vectors:
        mode = "hybrid" if match else "vec_only"
    else:
        mode = "bm25_only"

    text_ranked: list[int] | None = None
    if match and mirror is not None and allowed is not None:
        # Beside the vector channel, a match on incidental words only (a paraphrase shares none of
        # the rare ones) is left out: it would push the vector channel's answer down.
        coverage = tuning.bm25_min_coverage if use_vectors else 0.0
        text_ranked = _masked_text(mirror, words, allowed, depth, coverage)
    if text_ranked is None:
        text_ranked = [m for m, _ in search.search_fts(conn, match, where, params, depth)] if match else []
    vector_ranked: list[int] = []
    if use_vectors:
        assert index is not None and query_vector is not None
        if allowed is not None:
            vector_ranked = _masked_vectors(index, query_vector, allowed, depth)
        else:
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
    near: dict[int, float] | None = None  # with a mirror: distance of the nearest passing memories
    if plan.spatial is not None and mirror is not None and allowed is not None:
        near = _nearest(conn, mirror, plan.spatial, allowed, plan.n)
        pool_ids += [m for m in near if m not in fused]
        if not plan.query:
            # Memories without the field come after, smallest id first (as the SQL path orders them).
            spare = (int(m) for m in np.flatnonzero(allowed) if int(m) not in near and int(m) not in fused)
            pool_ids += list(itertools.islice(spare, plan.n))
    elif plan.spatial is not None:
        # Every memory passing the filters competes on distance, in every mode: the nearest are found,
        # not only the nearest among the text matches that made the candidate pool.
        coords = search.coordinates(conn, plan.spatial.path, where, params)
        pool_ids += [m for m in coords if m not in fused]
    if not plan.query and near is None:
        limit = None if plan.spatial else plan.n
        extra = search.select_ids(conn, where, params, newest_first=plan.order != "time", limit=limit)
        pool_ids += [m for m in extra if m not in fused and m not in coords]
    # Full records (JSON decoded) are loaded for the whole pool only when time order needs them;
    # ranking by relevance needs just the real-world flag, and records of the chosen few.
    needs_records = plan.order == "time" or not plan.query
    records = memories.fetch(conn, pool_ids) if needs_records else {}
    real = mirror.real_world(pool_ids) if mirror is not None else search.real_world(conn, pool_ids)
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
            if near is not None:
                distances[memory_id] = near.get(memory_id)
                continue
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
    if needs_records:
        chosen = ordered[: plan.n]
    else:
        # The mirror may be a commit ahead of this snapshot (another thread synced it later): a memory
        # this snapshot does not have yet is skipped, and the next one takes its place.
        chosen, start = [], 0
        while len(chosen) < plan.n and start < len(ordered):
            block = ordered[start : start + plan.n - len(chosen)]
            records.update(memories.fetch(conn, block))
            chosen += [m for m in block if m in records]
            start += len(block)
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
