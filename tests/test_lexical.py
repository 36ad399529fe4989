"""``LexicalIndex.score`` over only the documents a mask allows gives each of them the score, and the
match, it has among all documents: the statistics stay those of the whole index."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from robotmem.lexical import LexicalIndex

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
