"""Optional cross-encoder reranking of recall's best candidates (``rerank_url``; off by default).

Recall asks the pipeline for ``rerank_depth`` hits instead of ``n``, sends their texts to the reranker,
orders them by its scores and keeps ``n``. Only relevance-ordered recalls with a query are reranked
(a spatial or time order is not a relevance judgement). When the reranker fails or times out, or is
cooling down after a failure, recall returns the pipeline's own first ``n``: a slow model never costs
a robot its answer.
"""

from __future__ import annotations

import dataclasses
import logging

from robotmem.embedders.rerank import HttpReranker
from robotmem.errors import EmbeddingError
from robotmem.records import Hit

log = logging.getLogger(__name__)


def applies(reranker: HttpReranker | None, query: str, order: str, spatial: object) -> bool:
    """Whether a recall with these parameters is reranked."""
    return (
        reranker is not None
        and reranker.available
        and bool(query)
        and order == "relevance"
        and spatial is None
    )


def rerank(reranker: HttpReranker, query: str, hits: list[Hit], n: int) -> list[Hit]:
    """Return the first ``n`` of ``hits`` in the reranker's order, scores normalised (best = 1.0).

    On an ``EmbeddingError`` (unreachable, timeout, HTTP error, malformed answer) the first ``n`` of
    ``hits`` are returned unchanged.
    """
    if not hits:
        return hits
    try:
        scores = reranker.score(query, [hit.memory.content for hit in hits])
    except EmbeddingError as exc:
        log.warning("recall keeps its own order: %s", exc)
        return hits[:n]
    order = sorted(range(len(hits)), key=lambda i: -scores[i])[:n]
    low, high = min(scores), max(scores)
    return [
        dataclasses.replace(hits[i], score=(scores[i] - low) / (high - low) if high > low else 1.0)
        for i in order
    ]
