"""``LexicalIndex.score`` over only the documents a mask allows gives each of them the score, and the
match, it has among all documents: the statistics stay those of the whole index."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from robotmem.query.bm25 import LexicalIndex

WORDS = ["grip", "force", "cup", "slip", "arm", "shelf"]
documents = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(
    main=documents,
    later=documents,
    removed=st.sets(st.integers(0, 80), max_size=10),
    allowed=st.lists(st.booleans(), max_size=120),
    query=st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=4),
    min_coverage=st.sampled_from([0.0, 0.5]),
)
def test_scoring_only_allowed_documents_changes_none_of_their_scores(
    main: list[list[str]],
    later: list[list[str]],
    removed: set[int],
    allowed: list[bool],
    query: list[str],
    min_coverage: float,
) -> None:
    index = LexicalIndex()
    index.build(enumerate(main))
    for offset, terms in enumerate(later):  # a delta segment: new documents and replaced ones
        index.add(offset * 2, terms)
    for doc in removed:
        index.remove(doc)
    mask = np.asarray(allowed, dtype=np.bool_)
    scores, matched = index.score(query, min_coverage)
    some, some_matched = index.score(query, min_coverage, allowed=mask)
    wanted = np.zeros(len(matched), dtype=np.bool_)
    wanted[: min(len(mask), len(matched))] = mask[: len(matched)]
    assert np.array_equal(some_matched, matched & wanted)
    assert np.array_equal(some[some_matched], scores[some_matched])


def _best(scores: np.ndarray, matched: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best matches, best first, ties by smaller id, and every other match tied with the k-th."""
    ranked = sorted(
        ((int(d), float(scores[d])) for d in np.flatnonzero(matched)), key=lambda p: (-p[1], p[0])
    )
    if len(ranked) <= k:
        return ranked
    return [p for p in ranked if p[1] >= ranked[k - 1][1]]


@settings(max_examples=300, deadline=None)
@given(
    main=documents,
    later=documents,
    removed=st.sets(st.integers(0, 80), max_size=10),
    allowed=st.none() | st.lists(st.booleans(), max_size=120),
    query=st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=5),
    best=st.integers(1, 12),
    knobs=st.sampled_from([(0.0, 1.2, 0.75), (0.5, 1.2, 0.75), (0.3, 0.6, 0.1), (0.0, 2.0, 1.0)]),
    rare=st.integers(0, 3),
)
def test_the_best_scores_skip_no_document_that_ranks(
    main: list[list[str]],
    later: list[list[str]],
    removed: set[int],
    allowed: list[bool] | None,
    query: list[str],
    best: int,
    knobs: tuple[float, float, float],
    rare: int,
) -> None:
    """``score_best`` (MaxScore) matches every document among the ``best`` highest scores of ``score``,
    with the same scores, whatever the deltas, removals, masks, repeated words and coverage."""
    index = LexicalIndex()
    # A few documents hold a rare word, so that the common words often cannot reach the top.
    index.build(enumerate([*main, *(["tactile", "cup"] for _ in range(rare))]))
    for offset, terms in enumerate(later):
        index.add(offset * 3, terms)
    for doc in removed:
        index.remove(doc)
    coverage, k1, b = knobs
    mask = None if allowed is None else np.asarray(allowed, dtype=np.bool_)
    phrases = [*query, "tactile"] if rare else query
    full, full_matched = index.score(phrases, coverage, k1, b, allowed=mask)
    ids, scores = index.score_best(phrases, best, coverage, k1, b, allowed=mask)
    assert np.array_equal(ids, np.unique(ids))  # ascending, distinct
    assert full_matched[ids].all()
    assert np.array_equal(scores, full[ids])  # the same floats
    some = np.zeros(len(full))
    some[ids] = scores
    some_matched = np.zeros(len(full), dtype=np.bool_)
    some_matched[ids] = True
    assert _best(some, some_matched, best) == _best(full, full_matched, best)


@settings(max_examples=300, deadline=None)
@given(
    main=documents,
    later=documents,
    removed=st.sets(st.integers(0, 80), max_size=10),
    merged=st.booleans(),
    query=st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=5),
    asked=st.lists(st.integers(-2, 130), max_size=30),
)
def test_coverage_is_the_share_of_the_query_each_document_holds(
    main: list[list[str]],
    later: list[list[str]],
    removed: set[int],
    merged: bool,
    query: list[str],
    asked: list[int],
) -> None:
    """``coverage`` gives each asked document (also unknown, repeated and negative ids) the IDFs of the
    phrases it holds, summed in the query's order, over the IDFs of all phrases: the same floats as the
    ``min_coverage`` test of ``score``, whatever the deltas, removals and merges."""
    index = LexicalIndex()
    held = dict(enumerate(main))
    index.build(held.items())
    for offset, terms in enumerate(later):
        index.add(offset * 2, terms)
        held[offset * 2] = terms
    for doc in removed:
        index.remove(doc)
        held.pop(doc, None)
    if merged:
        index.merge()
    rows = float(index.documents)
    idf = [
        max(
            math.log(
                (rows - sum(p in t for t in held.values()) + 0.5) / (sum(p in t for t in held.values()) + 0.5)
            ),
            1e-6,
        )
        for p in query
    ]
    mass = sum(idf, 0.0)
    ids = np.asarray(asked, dtype=np.int64)
    shares = index.coverage(query, ids)
    for doc, share in zip(asked, shares.tolist(), strict=True):
        covered = 0.0
        for phrase, weight in zip(query, idf, strict=True):
            covered += weight if phrase in held.get(doc, ()) else 0.0
        assert share == (covered / mass if held else 0.0)
