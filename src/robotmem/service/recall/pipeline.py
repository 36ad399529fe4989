"""The recall pipeline: from a plan to ranked hits on one snapshot, one named step after another.

    channels   the query's words and vector ranked over the scope (``CandidateSource.ranked``)
    score      fusion, episode structure, named dates, named values (``scoring``)
    pool       the scored candidates, and the nearest memories when ordering by distance
               (with a query: only the relevant ones, ``relevance``)
    boost      real-world and own-robot factors
    order      by distance, time (stored, oldest first), recent (observed, newest first) or score; the first n the snapshot holds; scores normalised (best = 1.0)

Filters apply inside every channel, before any limit, so a limit never hides a memory that passes them.

Over every collection (``collection="*"``) the pipeline runs once per collection holding active memories,
on the same snapshot, and the hits merge in the same order (by score before normalisation, by distance
or by time), normalised again over the chosen ones.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from robotmem.config import RecallSettings
from robotmem.errors import EmbeddingError
from robotmem.formats.inputs import ALL_COLLECTIONS
from robotmem.records import Hit, Memory
from robotmem.service.engine import Engine
from robotmem.service.recall import rerank as reranking
from robotmem.service.recall.anchors import Anchors, anchors_for
from robotmem.service.recall.asked import AskedOnce
from robotmem.service.recall.grouping import ContextReader
from robotmem.service.recall.plan import RecallPlan
from robotmem.service.recall.relevance import (
    ANY_WORD,
    CALIBRATIONS,
    NO_QUERY_WORD,
    NOTHING_IN_SCOPE,
    NOTHING_RELEVANT,
    NOTHING_WITHIN,
    RelevanceGate,
    default_min_relevance,
    nearest_relevant,
)
from robotmem.service.recall.scoring import bm25_words, score_candidates
from robotmem.store.protocol import CandidateSource, ChannelQuery, Ranked, StoreTx, VectorQuery
from robotmem.text.tokens import or_match, query_tokens

log = logging.getLogger("robotmem")

# The listing order of a recall without a query, by its ``order``.
_LISTED = {"time": "oldest", "recent": "recent"}
# Ordered by time, a recall with a query reads at most this many of the scope's memories in that order for
# the ones holding its words (``matches_in_order``).
_WALKED_AT_MOST = 20_000


@dataclass(frozen=True, slots=True)
class RecallOutcome:
    """Hits best first, which channels ran, the collections searched, the score the normalised scores
    were divided by (what lets the hits of several collections merge), and why there are none when
    nothing was relevant."""

    hits: list[Hit]
    mode: str
    searched: tuple[str, ...] = ()
    scale: float = 1.0
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Channels:
    """What the channels were asked and what they answered."""

    words: list[str]  # the query's BM25 words (empty when the text channel is weighted 0)
    searchable: bool  # whether the words hold a token the text channel can search (it ran)
    vector: VectorQuery | None  # the query vector, when the vector channel ran
    coverage: float  # the share of the query's IDF a text match had to cover
    ranked: Ranked

    @property
    def mode(self) -> str:
        """What ran: ``hybrid``, ``vec_only`` or ``bm25_only``."""
        if self.vector is not None:
            return "hybrid" if self.searchable else "vec_only"
        return "bm25_only"


def execute(engine: Engine, plan: RecallPlan) -> RecallOutcome:
    """Embed the query, run the pipeline on one snapshot, and count an access for every hit."""
    vector = engine.embed(plan.query, is_query=True) if plan.query else None
    anchors = query_anchors(engine, vector)
    settings = engine.settings.recall
    reranker = engine.reranker
    if reranker is not None and reranking.applies(reranker, plan.query, plan.order, plan.spatial):
        wide = dataclasses.replace(plan, n=max(plan.n, engine.settings.rerank_depth))
        outcome = engine.read(lambda tx: run(tx, wide, settings, vector, anchors))
        reranked = reranking.rerank(reranker, plan.query, outcome.hits, plan.n)
        outcome = dataclasses.replace(outcome, hits=reranked)
    else:
        outcome = engine.read(lambda tx: run(tx, plan, settings, vector, anchors))
    if outcome.hits:
        engine.store.record_access(hit.memory.id for hit in outcome.hits)
    return outcome


def run(
    tx: StoreTx,
    plan: RecallPlan,
    settings: RecallSettings,
    vector: VectorQuery | None,
    anchors: Anchors | None = None,
) -> RecallOutcome:
    """Return the hits for ``plan`` on ``tx``'s snapshot; ``vector`` is None when vector search cannot run,
    ``anchors`` when the model's relevance has no calibration (``query_anchors``)."""
    if plan.collection == ALL_COLLECTIONS:
        return run_across(tx, plan, settings, vector, anchors)
    return run_on(tx.candidates(plan.scope), tx, plan, settings, vector, anchors)


def query_anchors(engine: Engine, vector: VectorQuery | None) -> Anchors | None:
    """The relevance anchors of the query's model, when it has a calibration (embedded once per process;
    None when the embedder fails, and relevance falls back on the model's cosine scale)."""
    if vector is None or vector.model_id not in CALIBRATIONS:
        return None
    dim = vector.dim
    try:
        return anchors_for(
            vector.model_id, lambda texts, is_query: engine.embed_texts(texts, is_query=is_query, dim=dim)
        )
    except EmbeddingError as exc:
        log.warning("relevance anchors could not be embedded, using the cosine scale: %s", exc)
        return None


def run_across(
    tx: StoreTx,
    plan: RecallPlan,
    settings: RecallSettings,
    vector: VectorQuery | None,
    anchors: Anchors | None = None,
) -> RecallOutcome:
    """``run`` in every collection that holds an active memory, the hits merged in the plan's order."""
    names = tuple(name for name, _, active, _, _ in tx.browse.collection_rows() if active)
    outcomes = []
    for name in names:
        one = dataclasses.replace(plan, collection=name)
        outcomes.append(run_on(tx.candidates(one.scope), tx, one, settings, vector, anchors))
    raw = [(hit, hit.score * outcome.scale) for outcome in outcomes for hit in outcome.hits]
    newest_first = plan.spatial is None and (
        plan.order == "recent" or (plan.order != "time" and not plan.query)
    )
    raw.sort(key=lambda pair: _merge_key(plan, *pair), reverse=newest_first)
    chosen = raw[: plan.n]
    best = max((score for _, score in chosen), default=0.0)
    hits = [dataclasses.replace(hit, score=score / best if best > 0 else 0.0) for hit, score in chosen]
    if outcomes:
        mode = outcomes[0].mode
    else:
        mode = "filter_only" if not plan.query else "bm25_only" if vector is None else "hybrid"
    notes = [outcome.note for outcome in outcomes if outcome.note] if not hits else []
    # Nothing relevant in one collection says more than an empty scope in another.
    note = next((n for n in notes if n != NOTHING_IN_SCOPE), notes[0] if notes else None)
    return RecallOutcome(hits, mode, names, best or 1.0, note)


def _merge_key(plan: RecallPlan, hit: Hit, score: float) -> tuple[object, ...]:
    """The key that orders hits of several collections as one collection's recall would."""
    if plan.spatial is not None:
        distance = hit.spatial_distance
        return (distance is None, distance or 0.0, -score, hit.memory.id)
    if plan.order == "recent":  # reversed: newest observed first
        return (hit.memory.observed_at, hit.memory.id)
    if plan.order == "time" or not plan.query:  # oldest first, or (reversed) newest first
        return (hit.memory.created_at, hit.memory.id)
    # Normalised scores differ in scale from one collection to another; relevance is absolute.
    return (-(hit.relevance if hit.relevance is not None else 0.0), -score, hit.memory.id)


def run_on(
    source: CandidateSource,
    tx: StoreTx,
    plan: RecallPlan,
    settings: RecallSettings,
    vector: VectorQuery | None,
    anchors: Anchors | None = None,
) -> RecallOutcome:
    """``run`` over a given candidate source (tests compare the sources of one store this way)."""
    source = AskedOnce(source)
    channels = ranked_channels(source, plan, settings, vector)
    reader = ContextReader(tx, plan.scope)
    fused = (
        score_candidates(source, plan.query, channels.ranked, settings, plan.n, reader) if plan.query else {}
    )
    gate = relevance_gate(source, tx, plan, channels, anchors) if plan.query else None
    pool, near = candidate_pool(source, tx, plan, channels, fused, gate)
    relevance = gate.with_neighbours(gate.relevance(pool)) if gate is not None else {}
    if gate is not None and plan.spatial is None:
        # Ordered by time, the ranking no longer puts the relevant first: the floor cuts each memory.
        each = plan.min_relevance is not None or plan.order != "relevance"
        pool = relevant_pool(pool, relevance, gate.min_relevance, each=each)
    # Time orders need every pooled memory's record; ranking by relevance only the chosen few's.
    needs_records = plan.order in ("time", "recent") or not plan.query
    records = tx.memories.fetch(pool) if needs_records else {}
    scores = boosted(
        source, plan, settings, fused, [m for m in pool if m in records] if needs_records else pool
    )
    ordered, shown, distances = _order(plan, scores, near, records)
    chosen = ordered[: plan.n] if needs_records else _visible(tx, ordered, plan.n, records)
    best = max((shown[m] for m in chosen), default=0.0)
    if best <= 0:  # no chosen memory has the spatial field: show relevance instead
        shown = {m: scores[m] if scores[m] > 0 else 1.0 for m in scores}
        best = max((shown[m] for m in chosen), default=0.0)
    payloads = tx.memories.payloads(chosen) if plan.include_data else {}
    ranked = channels.ranked
    matched = {
        "text": {m for m, _ in ranked.text},
        "vector": {m for m, _ in (*ranked.vectors, *ranked.episode_vectors)},
    }
    hits = [
        Hit(
            memory=records[m],
            score=(shown[m] / best) if best > 0 else 0.0,
            matched_by=frozenset(name for name, found in matched.items() if m in found),
            spatial_distance=distances.get(m),
            relevance=relevance.get(m),
            data=payloads.get(m, (None, None))[0],
            metadata=payloads.get(m, (None, None))[1],
        )
        for m in chosen
    ]
    note = empty_note(source, plan, gate, cut=bool(scores) and not ordered) if not hits else None
    mode = channels.mode if plan.query else "filter_only"
    return RecallOutcome(hits, mode, (plan.collection,), best if best > 0 else 1.0, note)


def empty_note(source: CandidateSource, plan: RecallPlan, gate: RelevanceGate | None, *, cut: bool) -> str:
    """Why a recall returned nothing: ``max_distance`` left out every relevant memory (``cut``: some
    competed), the scope holds no memory (without a query, what else; with one, a lookup made only then),
    no memory holds a word of the query (a spatial sort's floor for a model without a relevance scale), or
    none is relevant."""
    if plan.spatial is not None and plan.spatial.max_distance is not None and cut:
        return NOTHING_WITHIN.format(reach=plan.spatial.max_distance, frame=plan.spatial.frame)
    if not plan.query or not source.listed(1, order="id"):
        return NOTHING_IN_SCOPE
    floor = gate.min_relevance if gate is not None else 0.0
    return (
        NO_QUERY_WORD
        if floor == ANY_WORD and plan.min_relevance is None
        else NOTHING_RELEVANT.format(floor=floor)
    )


def matches_in_order(
    source: CandidateSource, plan: RecallPlan, channels: Channels, ranked: dict[int, float]
) -> list[int]:
    """The memories holding the query's words (the text channel's rule, ``text_matches``), not ranked
    already, among the scope's first in the plan's time order: up to the ``n``-th such memory.

    Ordered by time, a recall asks for the newest (or oldest) relevant memories, not for the newest of the
    best ranked: where more memories than the channels' depth hold the words, the ranked ones alone would
    be a sample. The scope's first memories in that order are read, four times as many each round until
    ``n`` match (each round reads its prefix again: at most a third more than the last round alone), at
    most ``_WALKED_AT_MOST`` memories (beyond, the best ranked stand for the rest)."""
    order = _LISTED[plan.order]
    limit = 4 * plan.n
    while True:
        walked = source.listed(limit, order=order)
        matched = source.text_matches(channels.words, channels.coverage, walked)
        found = [m for m in walked if m in matched]
        if len(found) >= plan.n or len(walked) < limit or limit >= _WALKED_AT_MOST:
            return [m for m in found[: plan.n] if m not in ranked]
        limit = min(4 * limit, _WALKED_AT_MOST)


def relevant_pool(pool: list[int], relevance: dict[int, float], floor: float, *, each: bool) -> list[int]:
    """The pool a relevance floor leaves. By default (``each`` False) the floor decides whether anything is
    relevant at all: no memory reaches it, nothing is returned; one does, the ranking stands and every hit
    shows its relevance. A ``min_relevance`` the caller gives (``each``) also leaves out every memory below."""
    reached = [m for m in pool if relevance[m] >= floor]
    return reached if each or not reached else pool


def ranked_channels(
    source: CandidateSource, plan: RecallPlan, settings: RecallSettings, vector: VectorQuery | None
) -> Channels:
    """Ask the channels for the query's candidates. A channel weighted 0 cannot change the order, so it
    does not run (and ``mode`` says so)."""
    if not plan.query:
        return Channels([], False, None, 0.0, Ranked())
    words = bm25_words(plan.query, settings.query_stopwords) if settings.bm25_weight > 0 else []
    searchable = or_match(words) is not None
    vector = vector if settings.vector_weight > 0 else None
    # Beside the vector channel, a match on incidental words only (a paraphrase shares none of the rare
    # ones) is left out: it would push the vector channel's answer down.
    coverage = settings.bm25_min_coverage if vector is not None else 0.0
    query = ChannelQuery(
        words=words if searchable else [],
        vector=vector,
        depth=max(settings.candidate_depth, plan.n),
        min_coverage=coverage,
        k1=settings.bm25_k1,
        b=settings.bm25_b,
        episode_vectors=settings.episode_vector_weight > 0,
    )
    return Channels(words, searchable, vector, coverage, source.ranked(query))


def relevance_gate(
    source: CandidateSource,
    tx: StoreTx,
    plan: RecallPlan,
    channels: Channels,
    anchors: Anchors | None = None,
) -> RelevanceGate:
    """The relevance of memories to the plan's query (``relevance``), told what the text channel found."""
    gate = RelevanceGate(
        source,
        tx,
        channels.words or query_tokens(plan.query),
        channels.vector,
        (
            default_min_relevance(channels.vector, by_distance=plan.spatial is not None)
            if plan.min_relevance is None
            else plan.min_relevance
        ),
        cosines=channels.ranked.vectors,
        query=plan.query,
        anchors=anchors,
        narrowed=plan.scope.narrowed,
    )
    if channels.searchable:
        gate.heard(channels.coverage, bool(channels.ranked.text))
    return gate


def candidate_pool(
    source: CandidateSource,
    tx: StoreTx,
    plan: RecallPlan,
    channels: Channels,
    fused: dict[int, float],
    relevant: RelevanceGate | None,
) -> tuple[list[int], dict[int, float]]:
    """Return the memories that compete (in a first-seen order) and id → distance of the nearest ones.

    Ordering by distance, every memory passing the filters competes, not only the scored candidates: with a
    query, every relevant one (``relevance``); without, every one with the field, then the rest by id.
    """
    pool = list(fused)
    if plan.spatial is None:
        if not plan.query:
            pool += source.listed(plan.n, order=_LISTED.get(plan.order, "newest"))
        elif plan.order in _LISTED and channels.searchable:
            pool += matches_in_order(source, plan, channels, fused)
        return pool, {}
    # Only positions in the sort's frame are measured; memories of other frames stay, as if without one.
    measured = tx.candidates(plan.frame_scope)
    if relevant is None:
        near = measured.nearest(plan.spatial, plan.n)
        return list(near) + source.listed(plan.n, order="id", exclude=set(near)), near
    near = nearest_relevant(measured, plan.spatial, plan.n, relevant)
    kept = relevant.among(fused)
    return [m for m in fused if m in kept] + [m for m in near if m not in fused], near


def boosted(
    source: CandidateSource,
    plan: RecallPlan,
    settings: RecallSettings,
    fused: dict[int, float],
    pool: list[int],
) -> dict[int, float]:
    """Return id → score of the pool: fused score × the real-world boost × the own-robot boost."""
    # A scope of the robot alone gains nothing from the own-robot boost; without a score there is nothing
    # to boost.
    boost_own = (
        settings.own_robot_boost != 1.0
        and bool(plan.own_robot)
        and bool(fused)
        and plan.robots != (plan.own_robot,)
    )
    marks = source.marks(pool, plan.own_robot if boost_own else None)
    scores: dict[int, float] = {}
    for memory_id in pool:
        score = fused.get(memory_id, 0.0)
        if memory_id in marks.real_world:
            score *= settings.real_world_boost
        if memory_id in marks.own:
            score *= settings.own_robot_boost
        scores[memory_id] = score
    return scores


def _order(
    plan: RecallPlan, scores: dict[int, float], near: dict[int, float], records: dict[int, Memory]
) -> tuple[list[int], dict[int, float], dict[int, float | None]]:
    """Return the pool in final order, the score shown for each, and spatial distances (None = no point)."""
    distances: dict[int, float | None] = {}
    if plan.spatial is not None:
        distances = {m: near.get(m) for m in scores}
        known = {m: d for m, d in distances.items() if d is not None}
        if plan.spatial.max_distance is not None:
            reach = plan.spatial.max_distance
            scores = {m: s for m, s in scores.items() if m in known and known[m] <= reach}
        ordered = sorted(scores, key=lambda m: (m not in known, known.get(m, 0.0), -scores[m], m))
        return ordered, {m: 1.0 / (1.0 + known[m]) if m in known else 0.0 for m in ordered}, distances
    if plan.order == "time":
        ordered = sorted(scores, key=lambda m: (records[m].created_at, m))
        return ordered, {m: 1.0 for m in ordered}, distances
    if plan.order == "recent":
        ordered = sorted(scores, key=lambda m: (records[m].observed_at, m), reverse=True)
        return ordered, {m: 1.0 for m in ordered}, distances
    if not plan.query:
        ordered = sorted(scores, key=lambda m: (records[m].created_at, m), reverse=True)
        return ordered, {m: 1.0 for m in ordered}, distances
    return sorted(scores, key=lambda m: -scores[m]), scores, distances


def _visible(tx: StoreTx, ordered: list[int], n: int, records: dict[int, Memory]) -> list[int]:
    """Return the first ``n`` of ``ordered`` that this snapshot holds, loading their records.

    A source may be a commit ahead of this snapshot (another thread synced a shared cache later): a
    memory the snapshot does not have yet is skipped, and the next one takes its place.
    """
    chosen: list[int] = []
    start = 0
    while len(chosen) < n and start < len(ordered):
        block = ordered[start : start + n - len(chosen)]
        records.update(tx.memories.fetch(block))
        chosen += [m for m in block if m in records]
        start += len(block)
    return chosen
