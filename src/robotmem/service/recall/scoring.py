"""From the channels' scored candidates to one score per memory: fusion, episode structure, named dates,
named values.

    text (BM25) ─┐
    vector ──────┴→ fuse: RRF on ranks, or z-score / min-max normalised scores, weighted per channel
                  → episode structure: a query asking for the step after (before) something moves
                                       direction_share of each memory's score to its successor
                                       (predecessor) in its episode;
                                       + neighbour_share × the scores of the memory's session neighbours
                                       + episode_share × the best score in the memory's session
                                       (episodes: sessions, and with episode_field the memories without
                                       one that share that context value, ``grouping``)
                  → named dates: + date_boost × best for memories dated within a day or month the
                                 query names (``text.dates``)
                  → named values: + context_boost × best × the rarity of the context values the query
                                    names that the memory carries (robot, object, place, date, ...);
                                    memories named only by their context join

Every step is a setting of ``RecallSettings`` and off at 0; the defaults were chosen on the tuning splits
of the labelled sets (docs/benchmarks.md). Neighbours and named memories come from the
candidate source, so they pass the recall's filters like every other candidate.
"""

from __future__ import annotations

import math
import re

from robotmem.config import RecallSettings
from robotmem.query.ranking import (
    add_episode_scores,
    add_share_of_best,
    fuse_rrf,
    fuse_scores,
    shift_along_episodes,
    spread_to_neighbours,
)
from robotmem.service.recall.grouping import ContextReader, context_episodes, memory_dates
from robotmem.store.protocol import CandidateSource, NamedValues, Ranked
from robotmem.text.dates import matches_any, named_spans
from robotmem.text.naming import value_candidates
from robotmem.text.tokens import STOPWORDS, query_tokens

# A standard English list of function words (beyond ``text.STOPWORDS``, which is applied to every
# query) and common Chinese question words, dropped from the BM25 query when query_stopwords = extended.
EXTENDED_STOPWORDS = STOPWORDS | frozenset(
    [
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "any",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "can",
        "could",
        "down",
        "during",
        "each",
        "few",
        "further",
        "here",
        "him",
        "his",
        "her",
        "hers",
        "herself",
        "himself",
        "itself",
        "just",
        "more",
        "most",
        "much",
        "must",
        "nor",
        "now",
        "off",
        "once",
        "only",
        "other",
        "ought",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "some",
        "such",
        "them",
        "themselves",
        "those",
        "through",
        "too",
        "under",
        "until",
        "up",
        "very",
        "would",
        "yours",
        "yourself",
        "yourselves",
        "they",
        "he",
        "whom",
        "while",
        "any",
        "anything",
        "did",
        "done",
        "doing",
        "get",
        "got",
        "make",
        "made",
        "many",
        "may",
        "might",
        "shall",
        "still",
        "use",
        "used",
        "using",
        "want",
        "wanted",
        "什么",
        "怎么",
        "怎么样",
        "如何",
        "哪",
        "哪个",
        "哪些",
        "吗",
        "呢",
        "吧",
        "的",
        "了",
        "是",
        "在",
        "有",
        "和",
        "与",
        "及",
        "或",
        "那次",
        "这次",
        "几次",
        "时候",
        "应该",
        "多大",
        "多少",
        "之后",
        "之前",
        "紧接着",
        "现在",
        "结果",
    ]
)


# Structure looks at this many of the best candidates (at least n): it reorders the head of the list,
# and reading sessions for a whole candidate pool would cost more than the rest of recall.
STRUCTURE_DEPTH = 20


# A value carried by more than this share of a collection's memories names none of them in particular.
MAX_VALUE_SHARE = 0.5

# Phrases by which a query asks for the step after (or before) the one it describes: "What was changed
# right after the mug slipped?", "滑落之后紧接着做了什么调整？". A bare "after"/"before" is not one
# ("minimum charge before sending the robot out" asks about the charge).
_AFTER = re.compile(
    r"\b(?:right|just|immediately|directly|shortly) after\b|\bafter that\b|\bafterwards?\b"
    r"|\bnext step\b|\bstep after\b|\bwhat (?:came|happened|was done) next\b|\bwhat came after\b"
    r"|\bwhat followed\b|\bthen what\b|紧接着|接下来|随后|下一步|后一步|之后马上|之后立刻|之后立即"
)
_BEFORE = re.compile(
    r"\b(?:right|just|immediately|directly|shortly) before\b|\bbefore that\b|\bbeforehand\b"
    r"|\bprevious step\b|\bstep before\b|\bwhat came before\b|\bwhat preceded\b"
    r"|前一步|上一步|之前那一步|紧挨着之前"
)


def step_direction(query: str) -> int:
    """Return 1 when ``query`` asks for the step after the one it describes, -1 for the step before, else 0."""
    folded = query.lower()
    after, before = bool(_AFTER.search(folded)), bool(_BEFORE.search(folded))
    return 0 if after == before else (1 if after else -1)


# Nouns that stand for whatever is handled ("why did the object slip", "那个东西为什么掉了"): every
# manipulation memory is about an object, so the word names none in particular, yet where few memories
# spell it out its IDF outweighs the query's key word ("crushed the object" above "the cup slipped").
# Left out of the BM25 query unless nothing else is left; the vector channel still reads them.
PLACEHOLDER_NOUNS = frozenset(
    ["object", "objects", "thing", "things", "item", "items", "stuff", "物体", "东西", "物品", "对象"]
)


def bm25_words(query: str, query_stopwords: str) -> list[str]:
    """Return the BM25 query words of ``query``: its tokens without the chosen stopword list, and without
    placeholder nouns when other words remain."""
    words = query_tokens(query)
    if query_stopwords == "extended":
        words = [w for w in words if w not in EXTENDED_STOPWORDS]
    specific = [w for w in words if w not in PLACEHOLDER_NOUNS]
    return specific if specific else words


def fuse(ranked: Ranked, knobs: RecallSettings) -> dict[int, float]:
    """Return id → fused score of the channels' candidates (first-seen order); the episode vectors' channel
    (empty when off) is weighted by ``episode_vector_weight``."""
    channels = [ranked.text, ranked.vectors]
    weights = [knobs.bm25_weight, knobs.vector_weight]
    if ranked.episode_vectors:
        channels.append(ranked.episode_vectors)
        weights.append(knobs.episode_vector_weight)
    if knobs.fusion == "rrf":
        return fuse_rrf([[m for m, _ in c] for c in channels], k=knobs.rrf_k, weights=weights)
    present = [(channel, w) for channel, w in zip(channels, weights, strict=True) if channel]
    return fuse_scores([c for c, _ in present], method=knobs.fusion, weights=[w for _, w in present])


def leaders(scores: dict[int, float], count: int) -> list[int]:
    """Return the ``count`` best-scored ids (ties by first seen)."""
    return sorted(scores, key=lambda m: -scores[m])[:count]


def add_structure(
    source: CandidateSource,
    scores: dict[int, float],
    query: str,
    knobs: RecallSettings,
    count: int,
    reader: ContextReader | None = None,
) -> dict[int, float]:
    """Return ``scores`` raised by episode structure around the ``count`` best candidates.

    When the query asks for the step after (before) the one it describes, each memory passes
    ``direction_share`` of its score to the next (previous) memory of its episode. Then the best
    candidates' neighbours gain a share of their scores (and join when new: the source only names
    memories that pass the scope); every scored memory of their sessions gains a share of the session's
    best score. With ``episode_field`` and a ``reader``, the memories without a session that share a
    context value are episodes too (``episodes_of``).
    """
    direction = step_direction(query) if knobs.direction_share > 0 else 0
    if not scores or (knobs.neighbour_share <= 0 and knobs.episode_share <= 0 and direction == 0):
        return scores
    top = leaders(scores, count)
    episodes = episodes_of(source, top, knobs, reader)
    raised = scores
    if direction != 0:
        raised = shift_along_episodes(raised, episodes, knobs.direction_share, direction, sources=set(top))
    raised = spread_to_neighbours(
        raised, episodes, knobs.neighbour_share, knobs.neighbour_span, sources=set(top)
    )
    return add_episode_scores(raised, episodes, knobs.episode_share) if knobs.episode_share > 0 else raised


def episodes_of(
    source: CandidateSource, top: list[int], knobs: RecallSettings, reader: ContextReader | None
) -> list[list[int]]:
    """Return the episodes of the ``top`` candidates: their sessions, and with ``episode_field`` set, the
    context-value episodes of those that have none."""
    episodes = source.episodes(top)
    if not knobs.episode_field or reader is None:
        return episodes
    held = {m for members in episodes for m in members}
    return episodes + context_episodes(reader, knobs.episode_field, [m for m in top if m not in held])


def add_named_dates(
    scores: dict[int, float], query: str, knobs: RecallSettings, reader: ContextReader | None
) -> dict[int, float]:
    """Return ``scores`` where the candidates dated within a day or month the query names gain
    ``date_boost`` × the best score; a memory's date is its context's ``date``, else its ``created_at``."""
    if knobs.date_boost <= 0 or reader is None or not scores:
        return scores
    spans = named_spans(query)
    if not spans:
        return scores
    dated = memory_dates(reader, list(scores))
    return add_share_of_best(
        scores, [m for m, day in dated.items() if matches_any(spans, day)], knobs.date_boost
    )


def value_weights(found: NamedValues) -> dict[str, float]:
    """Return value → its rarity in the collection, in (0, 1]: ln(1 + N/n) / ln(1 + N) for a value that
    n of the N memories carry (1 for a value only one memory carries)."""
    total = max(found.memories, 1)
    scale = math.log1p(total)
    return {v: min(1.0, math.log1p(total / max(n, 1)) / scale) for v, n in found.carried_by.items()}


def add_named_values(
    source: CandidateSource, scores: dict[int, float], query: str, knobs: RecallSettings, count: int
) -> dict[int, float]:
    """Return ``scores`` where memories carrying context values the query names gain a soft boost.

    The gain of a memory is ``context_boost`` × the best score × the summed rarity (``value_weights``) of
    the named values it carries, at most 1: a value that one memory in a thousand carries lifts it by
    about the best score, a robot id that half of them carry by a tenth. Memories carrying named values
    that are not candidates join, the ``count`` with the largest gains.
    """
    if knobs.context_boost <= 0 or not query:
        return scores
    candidates = value_candidates(query)
    found = source.named_values(candidates, MAX_VALUE_SHARE) if candidates else NamedValues()
    if not found.carriers:
        return scores
    weights = value_weights(found)
    gains = {m: min(1.0, sum(weights[v] for v in values)) for m, values in found.carriers.items()}
    unit = knobs.context_boost * (max(scores.values()) if scores else 1.0)
    out = dict(scores)
    newcomers = sorted((m for m in gains if m not in scores), key=lambda m: (-gains[m], -m))[:count]
    for memory_id in [m for m in gains if m in scores] + newcomers:
        out[memory_id] = out.get(memory_id, 0.0) + unit * gains[memory_id]
    return out


def score_candidates(
    source: CandidateSource,
    query: str,
    ranked: Ranked,
    knobs: RecallSettings,
    n: int = 0,
    reader: ContextReader | None = None,
) -> dict[int, float]:
    """Return id → score of every candidate: fused channels, then episode structure, named dates, then
    named values. ``reader`` gives the steps that read records (``episode_field``, ``date_boost``) the
    recall's transaction; without it they do not run.

    Structure and named values look at the best ``STRUCTURE_DEPTH`` candidates only (and at least ``n``).
    """
    count = max(STRUCTURE_DEPTH, n)
    raised = add_structure(source, fuse(ranked, knobs), query, knobs, count, reader)
    dated = add_named_dates(raised, query, knobs, reader)
    return add_named_values(source, dated, query, knobs, count)
