"""Context values a query names: the robot, object, place, task or date a memory carries (pure).

A question such as "How did go1-01 do on the gravel slope on 2026-03-14?" names values that the
memories' contexts hold (``robot.id``, ``object``, ``date``) even when their text does not. Recall
gives memories carrying such values a soft boost. A value counts as named when its normalised text
appears in the normalised query as whole words (a Latin value must not sit inside a longer word; a
value with CJK characters is matched as a substring, as Chinese has no spaces).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from robotmem.text import normalize

MIN_CHARS = 2
MAX_CHARS = 64
MAX_DEPTH = 3
# Sections whose strings are not names: parameters and units, and positions.
_SKIPPED = frozenset({"params", "spatial"})
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def context_values(context: Mapping[str, Any]) -> frozenset[str]:
    """Return the normalised string values of ``context`` that a query may name.

    Strings of ``MIN_CHARS``..``MAX_CHARS`` characters up to ``MAX_DEPTH`` keys deep, outside ``params``
    and ``spatial``; booleans, numbers and lists are not names.
    """
    found: set[str] = set()

    def walk(node: Mapping[str, Any], depth: int) -> None:
        for key, value in node.items():
            if depth == 0 and key in _SKIPPED:
                continue
            if isinstance(value, str):
                text = normalize(value)
                if MIN_CHARS <= len(text) <= MAX_CHARS:
                    found.add(text)
            elif isinstance(value, Mapping) and depth + 1 < MAX_DEPTH:
                walk(value, depth + 1)

    walk(context, 0)
    return frozenset(found)


def named_in(query: str, values: Iterable[str]) -> frozenset[str]:
    """Return the ``values`` (normalised, as from ``context_values``) that the text ``query`` names."""
    folded = normalize(query)
    named: set[str] = set()
    for value in values:
        if value not in folded:
            continue
        if _CJK.search(value):
            named.add(value)
            continue
        pattern = rf"(?<![\w.\-]){re.escape(value)}(?![\w]|[.\-]\w)"
        if re.search(pattern, folded):
            named.add(value)
    return frozenset(named)
