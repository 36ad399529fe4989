"""Context values a query names: the robot, object, place, task or date a memory carries (pure).

A question such as "How did go1-01 do on the gravel slope on 2026-03-14?" names values that the
memories' contexts hold (``robot.id``, ``object``, ``date``) even when their text does not. Recall
gives memories carrying such values a soft boost, weighted by how rare each value is in the
collection, and brings in memories named only by their context.

Which strings of a context are values (``context_values``): strings of ``MIN_CHARS``..``MAX_CHARS``
characters up to ``MAX_DEPTH`` keys deep, outside the ``params`` and ``spatial`` sections and the
fields in ``SKIPPED_FIELDS`` (``env.sim_or_real`` says what kind of run it was, not which; ``source`` is
the writer's marker); booleans, numbers and lists are not names. A value is compared folded
(``fold_value``): spaces trimmed, ASCII letters lower-cased — what SQLite's ``lower(trim(v, ' '))``
makes of it, so a store can keep the index with triggers. Letters outside ASCII compare as written.

When a query names a value (``value_candidates``): its text, ASCII letters lower-cased and runs of
white space made one space, contains the value as whole words (a Latin value must not sit inside a
longer word or number); a value with CJK characters may sit anywhere, as Chinese has no spaces, and is
looked for up to ``MAX_CJK_CHARS`` characters long. Only the first ``SCAN_CHARS`` characters of a query
are scanned.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from typing import Any

from robotmem.text.tokens import CJK_RANGES

MIN_CHARS = 2
MAX_CHARS = 64
MAX_DEPTH = 3
MAX_CJK_CHARS = 12
SCAN_CHARS = 200
# Top-level sections whose strings are not names: parameters and units, and positions.
SKIPPED_SECTIONS = frozenset({"params", "spatial"})
# Fields whose few values describe a kind of run (or the writer), not which run.
SKIPPED_FIELDS = frozenset({("env", "sim_or_real"), ("source",)})
_CJK = re.compile(f"[{CJK_RANGES}]")
_SPACES = re.compile(r"\s+")
_ASCII_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fold_value(text: str) -> str:
    """Return ``text`` as values compare: up to its first NUL character (as SQLite reads strings), spaces
    trimmed at both ends, ASCII letters lower-cased."""
    return text.split("\x00", 1)[0].strip(" ").translate(_ASCII_UPPER)


def context_values(context: Mapping[str, Any]) -> frozenset[str]:
    """Return the folded string values of ``context`` that a query may name."""
    found: set[str] = set()

    def walk(node: Mapping[str, Any], path: tuple[str, ...]) -> None:
        for key, value in node.items():
            here = (*path, key)
            if (not path and key in SKIPPED_SECTIONS) or here in SKIPPED_FIELDS:
                continue
            if isinstance(value, str):
                text = fold_value(value)
                if MIN_CHARS <= len(text) <= MAX_CHARS:
                    found.add(text)
            elif isinstance(value, Mapping) and len(here) < MAX_DEPTH:
                walk(value, here)

    walk(context, ())
    return frozenset(found)


def value_candidates(query: str) -> frozenset[str]:
    """Return every string a value named by ``query`` could be (see the module docstring).

    A store looks these up in its index of the values memories carry: a value is named exactly when
    it is among them.
    """
    text = _SPACES.sub(" ", query[:SCAN_CHARS].translate(_ASCII_UPPER))
    size = len(text)
    cjk = [m.start() for m in _CJK.finditer(text)]
    is_cjk = set(cjk)
    word = [(c.isalnum() or c == "_") and i not in is_cjk for i, c in enumerate(text)] + [False]
    joins = [c in ".-" for c in text]
    next_cjk = [size] * (size + 1)  # position of the first CJK character at or after i
    for i in reversed(range(size)):
        next_cjk[i] = i if i in is_cjk else next_cjk[i + 1]
    # Latin values: from a word start to a word end (a '.' or '-' before a letter or digit joins words).
    starts = [
        i
        for i in range(size)
        if text[i] != " " and i not in is_cjk and (i == 0 or not (word[i - 1] or joins[i - 1]))
    ]
    ends = [
        j
        for j in range(1, size + 1)
        if text[j - 1] != " " and (j == size or not (word[j] or (joins[j] and word[j + 1])))
    ]
    found: set[str] = set()
    for i in starts:
        reach = min(i + MAX_CHARS, next_cjk[i])  # a Latin value holds no CJK character
        for j in ends[bisect.bisect_left(ends, i + MIN_CHARS) :]:
            if j > reach:
                break
            found.add(text[i:j])
    # Values with CJK characters: any stretch holding one, up to MAX_CJK_CHARS long.
    for i in range(max(0, cjk[0] - MAX_CJK_CHARS + 1), cjk[-1] + 1) if cjk else ():
        if text[i] == " ":
            continue
        stop = min(size, i + MAX_CJK_CHARS)
        found.update(
            text[i:j] for j in range(max(i + MIN_CHARS, next_cjk[i] + 1), stop + 1) if text[j - 1] != " "
        )
    return frozenset(found)
