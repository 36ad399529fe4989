"""recall: the most relevant memories for a query, over the store's candidate channels.

    scope (collection, confidence, session, robots, filter) ─→ the store's CandidateSource
    query ─→ text channel (BM25) ─┐
          └→ vector channel ──────┴→ fusion → episode structure → named dates → named values (scoring)
                                    → real-world boost → own-robot boost
    spatial_sort ─→ nearest relevant memories join the pool (relevance) ─→ order (distance | relevance |
    time) → top n → normalise
    optional reranker (rerank) ─→ the best rerank_depth reordered by a cross-encoder → top n
    a filter that may match nothing, a frame holding no position (warnings) ─→ the result's ``warnings``

``plan`` holds the validated request, ``pipeline`` its steps. The store decides how a channel runs
(``robotmem.store.protocol.CandidateSource``); this package decides what is asked and how the answers
combine.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from robotmem.formats.inputs import RecallInput
from robotmem.formats.results import RecallHit, RecallResult
from robotmem.formats.serialize import hit_to_dict, recall_result
from robotmem.formats.validation import resolve_robots, resolve_window
from robotmem.query.filters import Scalar, parse_filter
from robotmem.service.engine import Engine
from robotmem.service.recall.pipeline import execute
from robotmem.service.recall.plan import RecallPlan
from robotmem.service.recall.warnings import filter_warnings, frame_warnings
from robotmem.store.protocol import RecallScope, StoreTx

# Values asked for per read by ``context_values`` (a filter of 100 keys stays far below max_filter_bytes).
_VALUES_PER_READ = 100


def recall(engine: Engine, args: RecallInput) -> RecallResult:
    """Return the most relevant memories; see ``RobotMemory.recall``."""
    started = time.perf_counter()
    settings = engine.settings
    acting = engine.acting_robot()
    since, until = resolve_window(*args.window, engine.clock())
    plan = RecallPlan(
        query=args.query,
        n=settings.top_k if args.n is None else args.n,
        min_confidence=settings.min_confidence if args.min_confidence is None else args.min_confidence,
        collection=engine.collection_for(args.collection),
        session_id=args.session_id,
        filter=args.filter,
        spatial=args.spatial,
        region=args.region_parsed,
        include_data=args.include_data,
        order=args.order,
        robots=resolve_robots(args.robot_ids, acting),
        own_robot=acting,
        since=since,
        until=until,
        min_relevance=args.min_relevance,
    )
    outcome = execute(engine, plan)
    warnings = engine.read(
        lambda tx: (
            filter_warnings(tx, plan, outcome.searched, len(outcome.hits))
            + frame_warnings(tx, plan, outcome.hits)
        )
    )
    elapsed_ms = (time.perf_counter() - started) * 1000
    return recall_result(
        outcome.hits,
        include_data=plan.include_data,
        mode=outcome.mode,
        query_ms=elapsed_ms,
        collections=outcome.searched,
        warnings=warnings,
        note=outcome.note,
    )


def related(engine: Engine, session_id: str, collection: str, texts: list[str]) -> list[RecallHit]:
    """Return memories of other sessions related to ``texts`` (a session's own), for end_session."""
    if not texts:
        return []
    plan = RecallPlan(
        query=" ".join(texts)[:2000],
        n=engine.settings.related_top_k,
        min_confidence=engine.settings.min_confidence,
        collection=collection,
        exclude_session=session_id,
        own_robot=engine.robot_id,
    )
    return [hit_to_dict(hit, include_data=False) for hit in execute(engine, plan).hits]


def context_values(
    engine: Engine,
    field: str,
    values: Sequence[Scalar],
    collection: str | None = None,
    *,
    where: Mapping[str, Any] | None = None,
) -> set[Scalar]:
    """Return the values among ``values`` that an active memory of ``collection`` holds at context ``field``
    (among the memories passing the filter ``where``, when given).

    A lookup for importers (``provenance.key`` of episodes already stored): every match counts, whatever
    ``max_n`` says, no access is recorded, and no ranking runs. Values are asked for 100 per read.
    """
    target = engine.collection_or_default(collection)
    path = field.split(".")
    wanted = list(dict.fromkeys(values))
    found: set[Scalar] = set()
    for start in range(0, len(wanted), _VALUES_PER_READ):
        chunk = wanted[start : start + _VALUES_PER_READ]
        condition = {field: {"$in": chunk}}
        scope = RecallScope(
            collection=target,
            min_confidence=0.0,
            filter=parse_filter({"$and": [dict(where), condition]} if where else condition),
        )

        def work(tx: StoreTx, scope: RecallScope = scope) -> list[dict[str, Any]]:
            ids = tx.candidates(scope).listed(None, order="oldest")
            return [memory.context for memory in tx.memories.fetch(ids).values()]

        for context in engine.read(work):
            value: Any = context
            for part in path:
                value = value.get(part) if isinstance(value, dict) else None
            if value in chunk:
                found.add(value)
    return found
