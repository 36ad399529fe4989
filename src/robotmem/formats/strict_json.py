"""Strict JSON in and out: no surface ever emits ``NaN`` or ``Infinity``.

Python's ``json`` writes non-finite floats as the bare words ``NaN``, ``Infinity`` and ``-Infinity``,
which browsers, ``jq`` and most JSON parsers reject. robotmem validates every number it is given, but
a value can still turn non-finite later: a distance computed from a stored coordinate near the float
limit, a file written by another program (SQLite's JSON functions accept ``NaN`` and ``1e999``), or an
old export. The rule everywhere is the same: **a non-finite number becomes ``null``**. Clamping to the
largest float was rejected because it invents a magnitude that was never measured; ``null`` says "no
usable value", which is what a robot reading the field must act on.

``loads`` reads stored JSON that way, ``finite`` cleans a value already in memory, and ``dumps``
writes text with ``allow_nan=False`` after cleaning, so a non-finite number that slipped through
becomes ``null`` rather than invalid text. The MCP server (text and structured content), the REST
API, the CLI and export all write through ``dumps`` / ``finite``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

__all__ = ["depth", "dumps", "finite", "loads"]

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _finite_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _no_constant(_name: str) -> None:
    return None


# One decoder for every call: json.loads with hooks would build a new one each time.
_DECODER = json.JSONDecoder(parse_float=_finite_float, parse_constant=_no_constant)


def loads(text: str | bytes) -> Any:
    """Parse JSON text; ``NaN``, ``Infinity`` and numbers beyond the float range become ``None``."""
    if isinstance(text, (bytes, bytearray)):
        return json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    return _DECODER.decode(text)


def finite(value: Any) -> Any:
    """Return ``value`` with every non-finite float (at any depth) replaced by ``None``.

    Containers are copied only when something in them changes; tuples become lists, as in JSON.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        cleaned = {key: finite(item) for key, item in value.items()}
        return value if all(cleaned[k] is value[k] for k in value) else cleaned
    if isinstance(value, (list, tuple)):
        items = [finite(item) for item in value]
        if isinstance(value, list) and all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items
    return value


def dumps(value: Any, **options: Any) -> str:
    """Return JSON text of ``value`` with non-finite numbers written as ``null`` (never ``NaN``).

    ``options`` go to ``json.dumps`` (``indent``, ``separators``, ``default``, ...); ``ensure_ascii``
    defaults to False, ``allow_nan`` is always False.
    """
    options.setdefault("ensure_ascii", False)
    options["allow_nan"] = False
    try:
        return json.dumps(value, **options)
    except ValueError as exc:
        if "Out of range float values" not in str(exc):
            raise
    return json.dumps(finite(value), **options)


def depth(text: bytes) -> int:
    """Return how deeply the JSON text nests arrays and objects (0 for a scalar), without parsing it.

    Brackets inside strings do not count. Servers call it before ``json.loads``, whose recursion a
    hostile body nested thousands deep would otherwise exhaust.
    """
    if b"[" not in text and b"{" not in text:
        return 0
    structure = np.frombuffer(_STRING.sub(b"", text), dtype=np.uint8)
    steps = np.zeros(len(structure), dtype=np.int64)
    steps[(structure == ord("[")) | (structure == ord("{"))] = 1
    steps[(structure == ord("]")) | (structure == ord("}"))] = -1
    return int(np.cumsum(steps).max(initial=0))
