"""How relevant a memory is to a query, on an absolute scale: the ``relevance`` of every recall hit and the
gate that drops what is not relevant (``min_relevance``), also for a recall that orders by distance.

Relevance rests on absolute signals, never on the fused scores (which are normalised per query):

    cosine of the memory to the query, less the query's and the memory's baselines ─→ CALIBRATIONS ─┐
                  (a model with only a cosine scale, or no anchors: COSINE_SCALES)                  │
    share of the query's IDF its words carry ─→ COVERAGE_BESIDE_VECTORS ────────────────────────────┼→ max
                                              (COVERAGE_ALONE without a calibrated model)           │
    context values the query names that it carries ─→ 0.5 + 0.5 × rarity ──────────────────────────┤
    the relevance of the step before or after it in its episode × NEIGHBOUR_SHARE ──────────────────┘

The baselines (``Calibration``): the query's mean cosine to a fixed set of anchor sentences
(``anchors``), the scope's ``SCOPE_RANK``-th best cosine to the query (the vector channel has it), and the
memory's mean cosine to the anchors asked as queries (how near it sits to every query). Each scale is
linear in pieces: ``zero`` and below → 0, ``floor`` → 0.5, ``full`` and above → 1, so the default
``min_relevance`` (0.5) is every model's measured floor. A query that no memory in scope reaches returns
nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from robotmem.query.spatial import SpatialSort
from robotmem.service.recall.anchors import Anchors
from robotmem.service.recall.scoring import MAX_VALUE_SHARE, value_weights
from robotmem.store.protocol import CandidateSource, ChannelQuery, StoreTx, VectorQuery
from robotmem.text.naming import value_candidates
from robotmem.text.tokens import CJK_RANGES, or_match


@dataclass(frozen=True, slots=True)
class Scale:
    """A signal's map to relevance: ``zero`` and below → 0, ``floor`` → 0.5, ``full`` and above → 1."""

    zero: float
    floor: float
    full: float

    def relevance(self, value: float) -> float:
        """The relevance of ``value``, in 0..1."""
        if value <= self.zero:
            return 0.0
        if value < self.floor:
            return 0.5 * (value - self.zero) / (self.floor - self.zero)
        if value < self.full:
            return 0.5 + 0.5 * (value - self.floor) / (self.full - self.floor)
        return 1.0

    def value_at(self, relevance: float) -> float:
        """The least value whose relevance is ``relevance`` (the inverse of ``relevance``)."""
        if relevance <= 0.5:
            return self.zero + (self.floor - self.zero) * relevance / 0.5
        return self.floor + (self.full - self.floor) * (relevance - 0.5) / 0.5


# Cosine scales per embedding model and query script (a query holding CJK characters, or not), measured
# on the labelled sets and the unanswerable queries (docs/benchmarks.md, "Relevance"). multilingual-e5-small
# puts every pair of texts between 0.7 and 0.9, and a Chinese query higher against everything: English
# queries that only the vector channel answers reach their answers at 0.77-0.84 and unanswerable ones a
# memory at 0.79-0.85; Chinese ones 0.85-0.89 and 0.82-0.88. The floors are where the two overlap least.
# Models without a scale (the hashing test embedder, Ollama, OpenAI-compatible, FastEmbed) leave relevance
# to the words and the named values.
COSINE_SCALES = {
    "multilingual-e5-small-q4": {
        "latin": Scale(zero=0.78, floor=0.83, full=0.89),
        "cjk": Scale(zero=0.81, floor=0.865, full=0.91),
    }
}
# The cosine at which each calibrated model's relevance is 0.5, per query script.
RELEVANCE_FLOORS = {
    model: {script: scale.floor for script, scale in scales.items()}
    for model, scales in COSINE_SCALES.items()
}
_CJK = re.compile(f"[{CJK_RANGES}]")


def cosine_scale(model_id: str, query: str) -> Scale | None:
    """The cosine scale of ``model_id`` for ``query``'s script (None: the model has no measured scale)."""
    scales = COSINE_SCALES.get(model_id)
    if scales is None:
        return None
    return scales["cjk" if _CJK.search(query) else "latin"]


@dataclass(frozen=True, slots=True)
class Calibration:
    """A model's cosine read against baselines, for one query script: relevance is ``scale`` of

        cosine − hub × the memory's mean cosine to the anchors asked as queries
               − anchor × the query's mean cosine to the anchors
               − scope × the scope's ``SCOPE_RANK``-th best cosine to the query

    A relevant memory stands out of its scope and above what the query reaches in any text; an
    unrelated one sits in the bulk however high the model puts the pair's cosine.
    """

    anchor: float
    scope: float
    hub: float
    scale: Scale

    def offset(self, anchors_cosine: float, kth_cosine: float) -> float:
        """The part of the adjusted cosine that is the query's alone."""
        return self.anchor * anchors_cosine + self.scope * kth_cosine


# Per embedding model and query script, fitted on the tune half of the labelled sets and of the
# unanswerable queries (every other query of each language and kind) and checked on the other half
# (docs/benchmarks.md, "Relevance"): on a grid, the weights that cost the least recall@5 while emptying
# 93 % of the tune half's unanswerable (query, collection) pairs, replayed offline; the floor is that cut
# (the benchmark then measured 94 % on either half).
SCOPE_RANK = 5
CALIBRATIONS = {
    "multilingual-e5-small-q4": {
        "latin": Calibration(
            anchor=0.2, scope=0.7, hub=1.0, scale=Scale(zero=-0.716, floor=-0.666, full=-0.606)
        ),
        "cjk": Calibration(anchor=0.0, scope=0.5, hub=0.5, scale=Scale(zero=-0.015, floor=0.04, full=0.085)),
    }
}
# In a scope holding fewer than SMALL_SCOPE vectors the SCOPE_RANK-th cosine is near its worst, and lets
# through what a larger scope would not (the episode set's logs cut at random to 6 and 8 memories, the
# answer kept: the cosine side emptied 86 % and 90 % of the unanswerable queries no word reaches, against
# 96 % in the whole 56-memory logs): the query's anchors stand in for it.
SMALL_SCOPE = 10
SMALL_SCOPE_CALIBRATIONS = {
    "multilingual-e5-small-q4": {
        "latin": Calibration(
            anchor=0.7, scope=0.0, hub=1.0, scale=Scale(zero=-0.515, floor=-0.465, full=-0.405)
        ),
        "cjk": Calibration(anchor=0.3, scope=0.0, hub=0.5, scale=Scale(zero=0.178, floor=0.233, full=0.278)),
    }
}


def calibrations_for(
    model_id: str, query: str, scope_size: int, *, narrowed: bool
) -> tuple[Calibration, ...]:
    """The calibrations of ``model_id`` a memory's cosine must pass, for ``query``'s script and a scope
    whose vector channel found ``scope_size`` memories (none: the model has no calibration).

    The scope calibrations were fitted on whole collections. A scope ``narrowed`` by a filter, a region, a
    time window, robots or a session keeps what the filter chose, not what the query is near: its
    SCOPE_RANK-th cosine can sit far below the collection's ("mug" in a room and an hour holding two mugs
    among backpacks and books), so there the cosine must pass the anchors' reading as well (the lower
    relevance of the two counts).
    """
    scripts, small = CALIBRATIONS.get(model_id), SMALL_SCOPE_CALIBRATIONS.get(model_id)
    if scripts is None or small is None:
        return ()
    script = "cjk" if _CJK.search(query) else "latin"
    if scope_size < SMALL_SCOPE:
        return (small[script],)
    return (scripts[script], small[script]) if narrowed else (scripts[script],)


# Share of the query's IDF that a memory's words carry. Beside a calibrated model a paraphrase shares only
# incidental words and the cosine finds it; without one the words decide alone. A query word no memory holds
# carries the highest IDF, so "grip force for the violin bow" covers little of its query.
COVERAGE_BESIDE_VECTORS = Scale(zero=0.0, floor=0.3, full=1.0)
COVERAGE_ALONE = Scale(zero=0.0, floor=0.15, full=1.0)
# Share of a memory's relevance that the steps next to it in its episode inherit: "what was changed right
# after the gripper slipped" is answered by the step after the relevant one, which shares nothing with it.
NEIGHBOUR_SHARE = 0.9
# The default min_relevance: the floor of every scale. An embedding model without a measured scale has no
# floor: its recalls keep every memory (relevance is still reported, from the words and named values), and
# ordered by distance, the memories holding any query word or named value (ANY_WORD).
DEFAULT_MIN_RELEVANCE = 0.5
ANY_WORD = 0.001


def default_min_relevance(vector: VectorQuery | None, *, by_distance: bool) -> float:
    """The min_relevance a recall uses when none is given: the floor, unless the model has no scale."""
    if vector is None or vector.model_id in COSINE_SCALES:
        return DEFAULT_MIN_RELEVANCE
    return ANY_WORD if by_distance else 0.0


# Relevance levels at which a memory's words are tested, besides the gate's own (one pass over the scope's
# text matches each, cached per recall): the floor, 0.75 (whose episode neighbours reach the floor) and 1.
_TEXT_LEVELS = (0.5, 0.75, 1.0)

# Why a recall with a query returned nothing.
NOTHING_RELEVANT = (
    "no memory in this scope is relevant to the query (none reaches min_relevance {floor:g}): no such "
    "experience is stored here; widen the scope, rephrase, or pass min_relevance=0 to see the nearest anyway"
)
# The note when no memory at all is in the scope: nothing was ranked, so relevance is not the reason.
NOTHING_IN_SCOPE = (
    "no memory is in this scope (the collection, session, robots, filters, region, time window and "
    "min_confidence asked): nothing was ranked; widen the scope"
)
# The note when a spatial sort's max_distance left out every memory that competed.
NOTHING_WITHIN = (
    "no relevant memory lies within max_distance {reach:g} of the target in frame '{frame}': widen "
    "max_distance or leave it out to see the nearest"
)
# The note of a spatial sort whose floor, for a model without a relevance scale, is a query word (ANY_WORD).
NO_QUERY_WORD = (
    "no memory in this scope holds a word of the query (a sort by distance keeps those only, this model "
    "having no relevance scale): rephrase, or pass min_relevance=0 to see the nearest anyway"
)


class RelevanceGate:
    """The relevance of memories to one query, and which reach ``min_relevance``.

    A memory's relevance is the largest of its cosine's (read against the baselines of the model's
    ``CALIBRATIONS`` given ``anchors``, else on its scale in ``COSINE_SCALES``), its
    named values' (``named_relevance``) and its words' (the share of the query's IDF they carry, on
    ``COVERAGE_BESIDE_VECTORS``, or ``COVERAGE_ALONE``
    without a calibrated model). Words and cosines are computed only for the memories asked about (the
    vector channel's candidates come with their cosines); whether any memory in scope is relevant (``any``)
    is known from the channel's best candidates, the named values, or one text match.
    """

    def __init__(
        self,
        source: CandidateSource,
        tx: StoreTx,
        words: list[str],
        vector: VectorQuery | None,
        min_relevance: float,
        cosines: Sequence[tuple[int, float]] = (),
        query: str = "",
        anchors: Anchors | None = None,
        *,
        narrowed: bool = False,
    ) -> None:
        scale = cosine_scale(vector.model_id, query) if vector is not None else None
        self._source = source
        self._words = words if or_match(words) is not None else []
        self._scale = scale
        self._coverage = COVERAGE_BESIDE_VECTORS if scale is not None else COVERAGE_ALONE
        self.min_relevance = min_relevance
        self._text: dict[int, float] = {}
        self._matches_any: bool | None = None  # whether any memory in scope reaches the gate by its words
        self._tx = tx
        calibrations = (
            calibrations_for(vector.model_id, query, len(cosines), narrowed=narrowed)
            if vector is not None and anchors is not None
            else ()
        )
        self._calibrated = (
            CalibratedCosines(tx, vector, anchors, calibrations, cosines)
            if vector is not None and anchors is not None and calibrations
            else None
        )
        # On a bare scale: the vector channel's candidates are the scope's most similar memories, so when
        # the best of them is below the gate's cosine, so is every memory in scope; other memories' cosines
        # are asked by id. A calibrated model's cosines are read by ``CalibratedCosines``.
        bare = scale is not None and self._calibrated is None
        self._vector = vector if bare else None
        self._cosine: dict[int, float] = dict(cosines) if bare else {}
        if self._calibrated is not None:
            level = min_relevance if min_relevance > 0 else DEFAULT_MIN_RELEVANCE
            found = self._calibrated.relevance(m for m, _ in cosines)
            self._similar = any(r >= level for r in found.values())
        elif scale is not None:
            least = scale.value_at(min_relevance) if min_relevance > 0 else scale.floor
            self._similar = any(c >= least for c in self._cosine.values())
        else:
            self._similar = False
        self._named = named_relevance(source, query) if query else {}

    @property
    def gate_coverage(self) -> float:
        """The share of the query's IDF a memory's words must carry to reach ``min_relevance``."""
        return self._coverage_at(self.min_relevance)

    def _coverage_at(self, level: float) -> float:
        # The lowest level is any query word (coverage 0: in a store of a few memories every shared word
        # has an IDF near 0, so a positive share could miss it).
        return 0.0 if level <= ANY_WORD else self._coverage.value_at(level)

    def heard(self, coverage: float, found: bool) -> None:
        """Learn from the recall's text channel over the same words and scope, which asked for matches
        covering ``coverage`` of the query and ``found`` some or none."""
        if found and coverage >= self.gate_coverage:
            self._matches_any = True
        elif not found and coverage <= self.gate_coverage:
            self._matches_any = False

    def any(self) -> bool:
        """Whether any memory the scope allows is relevant (one text match is enough to know)."""
        if self._similar or self._named or self.min_relevance <= 0:
            return True
        if self._matches_any is None:
            query = ChannelQuery(self._words, depth=1, min_coverage=self.gate_coverage)
            self._matches_any = bool(self._words and self._source.ranked(query).text)
        return self._matches_any

    def relevance(self, ids: Iterable[int]) -> dict[int, float]:
        """Return id → relevance in 0..1 of ``ids`` (memories the recall's scope allows)."""
        wanted = list(dict.fromkeys(ids))
        vector = self._vector
        if vector is not None and (unscored := [m for m in wanted if m not in self._cosine]):
            self._cosine.update(self._tx.vectors.cosines(unscored, vector))
        unknown = [m for m in wanted if m not in self._text]
        if unknown:
            self._text.update(self._word_levels(unknown))
        cosine = self._cosine_relevance(wanted)
        return {m: max(self._text[m], self._named.get(m, 0.0), cosine.get(m, 0.0)) for m in wanted}

    def _cosine_relevance(self, ids: list[int]) -> dict[int, float]:
        """Return id → the relevance its cosine gives (memories without a vector are left out)."""
        if self._calibrated is not None:
            return self._calibrated.relevance(ids)
        scale = self._scale
        if scale is None:
            return {}
        return {m: scale.relevance(self._cosine[m]) for m in ids if m in self._cosine}

    def _word_levels(self, ids: list[int]) -> dict[int, float]:
        """Return id → the highest level (of ``_TEXT_LEVELS`` and ``min_relevance``) whose share of the
        query's IDF the memory's words carry, 0 below all: from each memory's share in one pass when the
        source can, else by asking its matches at each level's coverage."""
        levels = sorted({*_TEXT_LEVELS, self.min_relevance} - {0.0}) if self._words else []
        found = dict.fromkeys(ids, 0.0)
        shares = self._source.text_coverage(self._words, ids) if levels else None
        if shares is not None:
            # Any query word reaches the lowest level (coverage 0); the tolerance is ``score``'s.
            needed = [(level, self._coverage_at(level) - 1e-12) for level in levels]
            for m, share in shares.items():
                if share > 0:
                    found[m] = max((level for level, least in needed if share >= least), default=0.0)
            return found
        for level in levels:
            passed = self._source.text_matches(self._words, self._coverage_at(level), ids)
            if not passed:
                break
            found.update((m, level) for m in passed)
            ids = [m for m in ids if m in passed]
        return found

    def with_neighbours(self, relevance: dict[int, float]) -> dict[int, float]:
        """Return ``relevance`` where each memory is at least ``NEIGHBOUR_SHARE`` × the relevance of the
        memory before or after it in its episode (among those of ``relevance``)."""
        out = dict(relevance)
        for episode in self._source.episodes([m for m, r in relevance.items() if r > 0]):
            for before, after in zip(episode, episode[1:], strict=False):
                for source, target in ((before, after), (after, before)):
                    if source in relevance and target in out:
                        out[target] = max(out[target], NEIGHBOUR_SHARE * relevance[source])
        return out

    def among(self, ids: Iterable[int]) -> set[int]:
        """The relevant ones of ``ids``: those whose relevance reaches ``min_relevance``."""
        return {m for m, r in self.relevance(ids).items() if r >= self.min_relevance}


class CalibratedCosines:
    """The relevance a calibrated model's cosines give the memories of one query: the lowest of what each
    of its ``Calibration``s gives. Each calibration's offset for the query is fixed once; each memory's
    cosine and hub are read from the vector index when first asked about."""

    def __init__(
        self,
        tx: StoreTx,
        vector: VectorQuery,
        anchors: Anchors,
        calibrations: Sequence[Calibration],
        cosines: Sequence[tuple[int, float]],
    ) -> None:
        kth = cosines[SCOPE_RANK - 1][1] if len(cosines) >= SCOPE_RANK else 0.0
        anchors_cosine = anchors.of_query(vector.vector)
        self._vectors = tx.vectors
        self._vector = vector
        self._hub_query, self._hub_norm = anchors.hub_query(vector)
        self._readings = [(c, c.offset(anchors_cosine, kth)) for c in calibrations]
        self._cosine = dict(cosines)
        self._hub: dict[int, float] = {}
        self._relevance: dict[int, float] = {}

    def relevance(self, ids: Iterable[int]) -> dict[int, float]:
        """Return id → relevance of those of ``ids`` with a vector of the query's model."""
        wanted = list(dict.fromkeys(ids))
        unknown = [m for m in wanted if m not in self._relevance]
        if unknown:
            missing = [m for m in unknown if m not in self._cosine]
            if missing:
                self._cosine.update(self._vectors.cosines(missing, self._vector))
            hubs = self._vectors.cosines([m for m in unknown if m in self._cosine], self._hub_query)
            self._hub.update((m, c * self._hub_norm) for m, c in hubs.items())
            for m in unknown:
                if m in self._cosine and m in self._hub:
                    cosine, hub = self._cosine[m], self._hub[m]
                    self._relevance[m] = min(
                        c.scale.relevance(cosine - c.hub * hub - offset) for c, offset in self._readings
                    )
                else:
                    self._relevance[m] = 0.0
        return {m: self._relevance[m] for m in wanted}


def named_relevance(source: CandidateSource, query: str) -> dict[int, float]:
    """Return id → relevance of the memories carrying context values ``query`` names (a robot id, a date,
    an object): 0.5 + 0.5 × the values' rarity (``scoring.value_weights``), at most 1."""
    candidates = value_candidates(query)
    found = source.named_values(candidates, MAX_VALUE_SHARE) if candidates else None
    if found is None or not found.carriers:
        return {}
    weights = value_weights(found)
    return {m: 0.5 + 0.5 * min(1.0, sum(weights[v] for v in values)) for m, values in found.carriers.items()}


def nearest_relevant(
    source: CandidateSource, spatial: SpatialSort, n: int, relevant: RelevanceGate
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
