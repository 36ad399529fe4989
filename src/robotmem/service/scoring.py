"""From the channels' scored candidates to one score per memory: fusion, episode structure, named values.

    text (BM25) ─┐
    vector ──────┴→ fuse: RRF on ranks, or z-score / min-max normalised scores, weighted per channel
                  → episode structure: + neighbour_share × the scores of the memory's session neighbours
                                       + episode_share × the best score in the memory's session
                  → named values: + context_boost × best × (share of the values the query names that
                                    the memory's context carries: robot, object, place, date, ...)

Every step is a setting and off at 0 (``rrf`` for fusion); the defaults were chosen on the tuning split
of the episode evaluation set (docs/benchmarks.md). Neighbours come from the candidate source, so they
pass the recall's filters like every other candidate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from robotmem.naming import context_values, named_in
from robotmem.ranking import add_episode_scores, fuse_rrf, fuse_scores, spread_to_neighbours
from robotmem.store.protocol import CandidateSource
from robotmem.text import STOPWORDS, query_tokens

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


@dataclass(frozen=True, slots=True)
class Scoring:
    """The scoring knobs of one recall (``recall.Tuning`` carries them from settings)."""

    fusion: str = "rrf"
    rrf_k: int = 60
    bm25_weight: float = 1.0
    vector_weight: float = 1.0
    neighbour_share: float = 0.0
    episode_share: float = 0.0
    context_boost: float = 0.0
    structure_depth: int = 20


def bm25_words(query: str, query_stopwords: str) -> list[str]:
    """Return the BM25 query words of ``query``: its tokens without the chosen stopword list."""
    words = query_tokens(query)
    if query_stopwords == "extended":
        words = [w for w in words if w not in EXTENDED_STOPWORDS]
    return words


def fuse(
    text_ranked: Sequence[tuple[int, float]], vector_ranked: Sequence[tuple[int, float]], knobs: Scoring
) -> dict[int, float]:
    """Return id → fused score of the two channels' candidates (first-seen order)."""
    weights = [knobs.bm25_weight, knobs.vector_weight]
    if knobs.fusion == "rrf":
        return fuse_rrf(
            [[m for m, _ in text_ranked], [m for m, _ in vector_ranked]], k=knobs.rrf_k, weights=weights
        )
    present = [
        (channel, w) for channel, w in zip((text_ranked, vector_ranked), weights, strict=True) if channel
    ]
    return fuse_scores([c for c, _ in present], method=knobs.fusion, weights=[w for _, w in present])


def leaders(scores: dict[int, float], count: int) -> list[int]:
    """Return the ``count`` best-scored ids (ties by first seen)."""
    return sorted(scores, key=lambda m: -scores[m])[:count]


def add_structure(
    source: CandidateSource, scores: dict[int, float], knobs: Scoring, count: int
) -> dict[int, float]:
    """Return ``scores`` raised by episode structure around the ``count`` best candidates.

    Their neighbours gain a share of their scores (and join when new: the source only names memories that
    pass the scope); every scored memory of their sessions gains a share of the session's best score.
    """
    if not scores or (knobs.neighbour_share <= 0 and knobs.episode_share <= 0):
        return scores
    top = leaders(scores, count)
    episodes = source.episodes(top)
    raised = spread_to_neighbours(scores, episodes, knobs.neighbour_share, sources=set(top))
    return add_episode_scores(raised, episodes, knobs.episode_share) if knobs.episode_share > 0 else raised


def add_named_values(
    source: CandidateSource, scores: dict[int, float], query: str, knobs: Scoring, count: int
) -> dict[int, float]:
    """Return ``scores`` where the ``count`` best candidates gain a soft boost for each context value the
    query names that they carry."""
    if not scores or knobs.context_boost <= 0 or not query:
        return scores
    carried = {m: context_values(c) for m, c in source.contexts(leaders(scores, count)).items()}
    named = named_in(query, frozenset().union(*carried.values())) if carried else frozenset()
    if not named:
        return scores
    best = max(scores.values())
    out = dict(scores)
    for memory_id, values in carried.items():
        share = len(values & named) / len(named)
        if share > 0:
            out[memory_id] += knobs.context_boost * best * share
    return out


def score_candidates(
    source: CandidateSource,
    query: str,
    text_scored: Sequence[tuple[int, float]],
    vector_scored: Sequence[tuple[int, float]],
    knobs: Scoring,
    n: int = 0,
) -> dict[int, float]:
    """Return id → score of every candidate: fused channels, then episode structure, then named values.

    Structure and named values look at the best ``knobs.structure_depth`` candidates only (and at least
    ``n``): they reorder the head of the list, and reading contexts and sessions for a whole candidate
    pool would cost more than the rest of recall.
    """
    fused = fuse(text_scored, vector_scored, knobs)
    count = max(knobs.structure_depth, n)
    raised = add_structure(source, fused, knobs, count)
    return add_named_values(source, raised, query, knobs, count)
