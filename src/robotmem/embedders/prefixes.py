"""The instruction prefixes some embedding models expect on queries and on stored passages."""

from __future__ import annotations

import re
from collections.abc import Sequence

# (pattern on the model name without its org or tag, query prefix, passage prefix)
_RULES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"(^|[-_])e5([-_]|$)"), "query: ", "passage: "),
    (re.compile(r"^nomic-embed-text"), "search_query: ", "search_document: "),
    (re.compile(r"^mxbai-embed-large"), "Represent this sentence for searching relevant passages: ", ""),
)


def task_prefixes(model: str) -> tuple[str, str]:
    """Return the ``(query, passage)`` prefixes ``model`` was trained with; ``("", "")`` for most models.

    Matches e5 models (``query: `` / ``passage: ``), nomic-embed-text (``search_query: `` /
    ``search_document: ``) and mxbai-embed-large (an instruction on queries only), by name.
    """
    name = model.lower().rsplit("/", 1)[-1].split(":", 1)[0]
    for pattern, query, passage in _RULES:
        if pattern.search(name):
            return query, passage
    return "", ""


def add_prefix(texts: Sequence[str], model: str, *, is_query: bool) -> list[str]:
    """Return ``texts`` with the query or passage prefix of ``model`` in front (unchanged if none)."""
    query, passage = task_prefixes(model)
    prefix = query if is_query else passage
    return [prefix + text for text in texts] if prefix else list(texts)
