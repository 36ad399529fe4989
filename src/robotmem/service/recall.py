"""recall: the pipeline from a validated request to ranked hits, over the store's candidate channels.

    scope (collection, confidence, session, robots, filter) ─→ the store's CandidateSource
    query ─→ text channel (BM25) ─┐
          └→ vector channel ──────┴→ fusion → episode structure → named values (service.scoring)
                                    → real-world boost → own-robot boost
    spatial_sort ─→ nearest memories join the pool ─→ order (distance | relevance | time) → top n → normalise
    optional reranker (service.rerank) ─→ the best rerank_depth reordered by a cross-encoder → top n

Filters apply inside every channel, before any limit, so a limit never hides a memory that passes them.
The store decides how a channel runs (``robotmem.store.protocol.CandidateSource``); this module decides
what is asked and how the answers combine.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from robotmem.errors import ValidationError
from robotmem.formats.results import RecallHit, RecallResult
from robotmem.formats.serialize import hit_to_dict, recall_result
from robotmem.formats.validation import RecallInput, parse_name, parse_robots, parse_text, validate_input
from robotmem.query.filters import All, Condition, Node, Scalar, parse_filter
from robotmem.query.spatial import SpatialSort, parse_spatial_sort
from robotmem.records import Hit, Memory
from robotmem.service import rerank as reranking
from robotmem.service.engine import Engine
from robotmem.service.scoring import Scoring, bm25_words, score_candidates
from robotmem.store.protocol import CandidateSource, RecallScope, StoreTx, VectorQuery
from robotmem.text.tokens import or_match, query_tokens

MAX_QUERY_CHARS = 4000


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
    robots: tuple[str, ...] | None = None  # None: every robot's memories
    own_robot: str = ""  # whose memories the own-robot boost favours ("" = none)

    @property
    def scope(self) -> RecallScope:
        """The memories this recall may return (robot scoping is one more filter condition)."""
        return RecallScope(
            collection=self.collection,
            min_confidence=self.min_confidence,
            session_id=self.session_id,
            exclude_session=self.exclude_session,
            filter=_with_robots(self.filter, self.robots),
        )


def _with_robots(filter: Node | None, robots: tuple[str, ...] | None) -> Node | None:
    if robots is None:
        return filter
    condition = Condition(("robot_id",), "$in", robots)
    return condition if filter is None else All((filter, condition))


@dataclass(frozen=True, slots=True)
class Tuning:
    """Ranking knobs taken from settings."""

    rrf_k: int = 60
    depth: int = 50
    bm25_weight: float = 1.0
    vector_weight: float = 1.0
    real_world_boost: float = 1.5
    bm25_min_coverage: float = 0.0
    fusion: str = "rrf"
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    query_stopwords: str = "basic"
    neighbour_share: float = 0.0
    episode_share: float = 0.0
    context_boost: float = 0.0
    direction_share: float = 0.0
    episode_vector_weight: float = 0.0
    own_robot_boost: float = 1.0

    @property
    def scoring(self) -> Scoring:
        """The knobs of ``service.scoring``."""
        return Scoring(
            fusion=self.fusion,
            rrf_k=self.rrf_k,
            bm25_weight=self.bm25_weight,
            vector_weight=self.vector_weight,
            neighbour_share=self.neighbour_share,
            episode_share=self.episode_share,
            context_boost=self.context_boost,
            direction_share=self.direction_share,
            episode_vector_weight=self.episode_vector_weight,
        )


@dataclass(frozen=True, slots=True)
class RecallOutcome:
    """Hits best first and which channels ran."""

    hits: list[Hit]
    mode: str


def recall(
    engine: Engine,
    query: str = "",
    n: int | None = None,
    min_confidence: float | None = None,
    session_id: str | None = None,
    context_filter: dict[str, Any] | str | None = None,
    spatial_sort: dict[str, Any] | str | None = None,
    collection: str | None = None,
    include_data: bool = False,
    order: str = "relevance",
    robots: list[str] | str | None = None,
) -> RecallResult:
    """Return the most relevant memories; see ``RobotMemory.recall``."""
    started = time.perf_counter()
    args = validate_input(
        RecallInput,
        {
            "query": query,
            "n": n,
            "min_confidence": min_confidence,
            "session_id": session_id,
            "context_filter": context_filter,
            "spatial_sort": spatial_sort,
            "collection": collection,
            "include_data": include_data,
            "order": order,
            "robots": robots,
        },
    )
    settings = engine.settings
    text = parse_text("query", args.query, min_chars=0, max_chars=MAX_QUERY_CHARS)
    count = settings.top_k if args.n is None else args.n
    if count > settings.max_n:
        raise ValidationError(f"n: is {count}; the limit is {settings.max_n}")
    plan = RecallPlan(
        query=text,
        n=count,
        min_confidence=settings.min_confidence if args.min_confidence is None else args.min_confidence,
        collection=engine.collection_or_default(args.collection),
        session_id=None if args.session_id is None else parse_name("session_id", args.session_id),
        filter=parse_filter(args.context_filter, max_bytes=settings.max_filter_bytes),
        spatial=parse_spatial_sort(args.spatial_sort),
        include_data=args.include_data,
        order=args.order,
        robots=parse_robots(args.robots, engine.robot_id),
        own_robot=engine.robot_id,
    )
    outcome = execute(engine, plan)
    elapsed_ms = (time.perf_counter() - started) * 1000
    return recall_result(outcome.hits, include_data=plan.include_data, mode=outcome.mode, query_ms=elapsed_ms)


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


# Values asked for per read by ``context_values`` (a filter of 100 keys stays far below max_filter_bytes).
_VALUES_PER_READ = 100


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
            ids = tx.candidates(scope).in_time_order(newest_first=False, limit=None)
            return [memory.context for memory in tx.memories.fetch(ids).values()]

        for context in engine.read(work):
            value: Any = context
            for part in path:
                value = value.get(part) if isinstance(value, dict) else None
            if value in chunk:
                found.add(value)
    return found


def tuning(engine: Engine) -> Tuning:
    """Return the ranking knobs of the engine's settings."""
    s = engine.settings
    return Tuning(
        rrf_k=s.rrf_k,
        depth=s.candidate_depth,
        bm25_weight=s.bm25_weight,
        vector_weight=s.vector_weight,
        real_world_boost=s.real_world_boost,
        bm25_min_coverage=s.bm25_min_coverage,
        fusion=s.fusion,
        bm25_k1=s.bm25_k1,
        bm25_b=s.bm25_b,
        query_stopwords=s.query_stopwords,
        neighbour_share=s.neighbour_share,
        episode_share=s.episode_share,
        context_boost=s.context_boost,
        direction_share=s.direction_share,
        episode_vector_weight=s.episode_vector_weight,
        own_robot_boost=s.own_robot_boost,
    )


def execute(engine: Engine, plan: RecallPlan) -> RecallOutcome:
    """Embed the query, run the pipeline on one snapshot, and count an access for every hit."""
    vector = engine.embed(plan.query, is_query=True) if plan.query else None
    knobs = tuning(engine)
    reranker = engine.reranker
    if reranker is not None and reranking.applies(reranker, plan.query, plan.order, plan.spatial):
        wide = dataclasses.replace(plan, n=max(plan.n, engine.settings.rerank_depth))
        outcome = engine.read(lambda tx: run(tx, wide, knobs, vector))
        outcome = RecallOutcome(reranking.rerank(reranker, plan.query, outcome.hits, plan.n), outcome.mode)
    else:
        outcome = engine.read(lambda tx: run(tx, plan, knobs, vector))
    if outcome.hits:
        engine.store.record_access(hit.memory.id for hit in outcome.hits)
    return outcome


def run(tx: StoreTx, plan: RecallPlan, tuning: Tuning, vector: VectorQuery | None) -> RecallOutcome:
    """Return the hits for ``plan`` on ``tx``'s snapshot; ``vector`` is None when vector search cannot run."""
    return run_on(tx.candidates(plan.scope), tx, plan, tuning, vector)


def run_on(
    source: CandidateSource, tx: StoreTx, plan: RecallPlan, tuning: Tuning, vector: VectorQuery | None
) -> RecallOutcome:
    """``run`` over a given candidate source (tests compare the sources of one store this way)."""
    depth = max(tuning.depth, plan.n)
    # A channel weighted 0 cannot change the order, so it does not run (and ``mode`` says so).
    words = bm25_words(plan.query, tuning.query_stopwords) if plan.query and tuning.bm25_weight > 0 else []
    has_words = or_match(words) is not None
    use_vectors = bool(plan.query) and vector is not None and tuning.vector_weight > 0
    mode = _mode(plan.query, has_words, use_vectors)
    # Beside the vector channel, a match on incidental words only (a paraphrase shares none of the rare
    # ones) is left out: it would push the vector channel's answer down.
    coverage = tuning.bm25_min_coverage if use_vectors else 0.0
    text_scored, vector_scored = source.text_and_vectors_scored(
        words if has_words else [],
        vector if use_vectors else None,
        depth,
        coverage,
        tuning.bm25_k1,
        tuning.bm25_b,
    )
    episode_scored = (
        source.episode_vectors_scored(vector, depth)
        if use_vectors and vector is not None and tuning.episode_vector_weight > 0
        else []
    )
    fused = score_candidates(
        source, plan.query, text_scored, vector_scored, tuning.scoring, plan.n, episode_scored
    )
    in_text = {m for m, _ in text_scored}
    in_vector = {m for m, _ in vector_scored} | {m for m, _ in episode_scored}
    pool_ids = list(fused)
    near: dict[int, float] = {}
    if plan.spatial is not None and plan.query:
        # Task and place together: the nearest among the memories relevant to the query, not the nearest
        # of all (see ``_RelevanceGate``). Every relevant memory competes, not only the ones in the pool.
        relevant = _RelevanceGate(
            source, tx, words or query_tokens(plan.query), vector if use_vectors else None, tuning
        )
        if has_words:
            relevant.heard(coverage, bool(text_scored))
        near = _nearest_among(source, plan.spatial, plan.n, relevant)
        kept = relevant.among(fused)
        pool_ids = [m for m in fused if m in kept] + [m for m in near if m not in fused]
    elif plan.spatial is not None:
        # Every memory passing the filters competes on distance, in every mode: the nearest are found,
        # not only the nearest among the text matches that made the candidate pool.
        near = source.nearest(plan.spatial, plan.n)
        pool_ids += [m for m in near if m not in fused]
        if not plan.query:
            # Memories without the field come after, smallest id first.
            pool_ids += source.first(plan.n, set(near) | set(fused))
    elif not plan.query:
        pool_ids += source.in_time_order(newest_first=plan.order != "time", limit=plan.n)
    # Full records (JSON decoded) are loaded for the whole pool only when time order needs them;
    # ranking by relevance needs just the real-world flag, and records of the chosen few.
    needs_records = plan.order == "time" or not plan.query
    records = tx.memories.fetch(pool_ids) if needs_records else {}
    real = source.real_world(pool_ids)
    # Only a relevance order can change; a scope of the robot alone gains nothing from the boost.
    boost_own = (
        tuning.own_robot_boost != 1.0
        and bool(plan.own_robot)
        and bool(fused)
        and plan.robots != (plan.own_robot,)
    )
    own = source.from_robot(pool_ids, plan.own_robot) if boost_own else set()
    scores: dict[int, float] = {}
    for memory_id in pool_ids:
        if needs_records and memory_id not in records:
            continue
        score = fused.get(memory_id, 0.0)
        if memory_id in real:
            score *= tuning.real_world_boost
        if memory_id in own:
            score *= tuning.own_robot_boost
        scores[memory_id] = score
    ordered, final, distances = _order(plan, scores, near, records)
    chosen = ordered[: plan.n] if needs_records else _visible(tx, ordered, plan.n, records)
    best = max((final[m] for m in chosen), default=0.0)
    if best <= 0:  # no chosen memory has the spatial field: show relevance instead
        final = {m: scores[m] if scores[m] > 0 else 1.0 for m in scores}
        best = max((final[m] for m in chosen), default=0.0)
    payloads = tx.memories.payloads(chosen) if plan.include_data else {}
    hits = [
        Hit(
            memory=records[m],
            score=(final[m] / best) if best > 0 else 0.0,
            matched_by=frozenset(
                name for name, members in (("text", in_text), ("vector", in_vector)) if m in members
            ),
            spatial_distance=distances.get(m),
            data=payloads.get(m, (None, None))[0],
            metadata=payloads.get(m, (None, None))[1],
        )
        for m in chosen
    ]
    return RecallOutcome(hits, mode)


# Cosine at or above which a memory counts as relevant to a query (the vector half of the relevance gate
# of a spatial recall), per embedding model. multilingual-e5-small puts every pair of texts between 0.7
# and 0.9: on robot memories a query and its answer measured 0.85-0.89, a paraphrase 0.86, while
# nonsense queries ("zebra quantum xylophone", "asdf qwer") and unrelated ones reached at most 0.79 and
# related-but-different experiences 0.80-0.83. Models without a measured floor (the hashing test
# embedder, Ollama, OpenAI-compatible, FastEmbed) leave the gate to the text channel.
RELEVANCE_FLOORS = {"multilingual-e5-small-q4": 0.84}


class _RelevanceGate:
    """Which memories are relevant to the query: the relevance gate of a spatial recall.

    A memory is relevant when its cosine to the query reaches the model's floor in ``RELEVANCE_FLOORS``,
    or when it contains query words — beside that vector test, words carrying ``bm25_min_coverage`` of
    the query's IDF, as the text channel asks beside vectors (a paraphrase shares only incidental
    words, and the cosine finds it; a source that cannot weigh words counts any match); without it (no
    embedder, or a model with no floor), any query word. The words are tested only on the memories
    asked about (the nearest, and the pool), never on every memory holding a query word; the vector
    index answers over every stored vector, and ``among`` keeps only the ids it is asked about.
    """

    def __init__(
        self,
        source: CandidateSource,
        tx: StoreTx,
        words: list[str],
        vector: VectorQuery | None,
        tuning: Tuning,
    ) -> None:
        floor = RELEVANCE_FLOORS.get(vector.model_id) if vector is not None else None
        self._source = source
        self._words = words if or_match(words) is not None else []
        self._coverage = tuning.bm25_min_coverage if floor is not None else 0.0
        self._known: dict[int, bool] = {}
        self._matches_any: bool | None = None  # whether any memory in scope holds the words, once known
        self._similar: set[int] = set()
        if vector is not None and floor is not None:
            # Few memories clear the floor: ask for a short ranked head and widen it only while it fills.
            first = 256
            while len(similar := tx.vectors.most_similar(vector, first, floor)) >= first:
                first *= 4
            self._similar = {m for m, _ in similar}

    def heard(self, coverage: float, found: bool) -> None:
        """Learn from the recall's text channel over the same words and scope, which asked for matches
        covering ``coverage`` of the query and ``found`` some or none."""
        if found and coverage >= self._coverage:
            self._matches_any = True
        elif not found and coverage <= self._coverage:
            self._matches_any = False

    def any(self) -> bool:
        """Whether any memory the scope allows is relevant (one text match is enough to know)."""
        if self._similar:
            return True
        if self._matches_any is None:
            self._matches_any = bool(self._words and self._source.text(self._words, 1, self._coverage))
        return self._matches_any

    def among(self, ids: Iterable[int]) -> set[int]:
        """The relevant ones of ``ids`` (memories the recall's scope allows)."""
        wanted = list(dict.fromkeys(ids))
        unknown = [m for m in wanted if m not in self._known and m not in self._similar]
        if unknown:
            matched = (
                self._source.text_matches(self._words, self._coverage, unknown) if self._words else set()
            )
            self._known.update((m, m in matched) for m in unknown)
        return {m for m in wanted if m in self._similar or self._known.get(m, False)}


def _nearest_among(
    source: CandidateSource, spatial: SpatialSort, n: int, relevant: _RelevanceGate
) -> dict[int, float]:
    """Return id → distance of the ``n`` nearest relevant memories with the field, with every tie at the n-th."""
    if not relevant.any():
        return {}
    # Ask for the nearest of all and widen until n relevant ones are among them (or every point is): the
    # answer holds every point up to its farthest, so the n nearest relevant and their ties are in it.
    ask = max(4 * n, 64)
    while True:
        nearest = source.nearest(spatial, ask)
        kept = relevant.among(nearest)
        near = {m: d for m, d in nearest.items() if m in kept}
        if len(near) >= n or len(nearest) < ask:
            break
        ask *= 4
    if len(near) <= n:
        return near
    nth = sorted(near.values())[n - 1]
    return {m: d for m, d in near.items() if d <= nth}


def _mode(query: str, has_words: bool, use_vectors: bool) -> str:
    if not query:
        return "filter_only"
    if use_vectors:
        return "hybrid" if has_words else "vec_only"
    return "bm25_only"


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
