"""What each stored column must hold, checked the same way by ``check``, ``repair`` and export.

SQLite keeps whatever type a statement writes (a BLOB in a TEXT column, text in an INTEGER one), so
a row written by another program can hold a value robotmem never writes. ``check`` reports such rows
(``columns_invalid``, ``session_columns_invalid``), export refuses them naming the row and column
(instead of failing inside the JSON encoder), and ``repair`` brings them to the kind they must have.

Kinds: ``text``, ``integer``, ``number``, ``object`` (JSON object text), ``strings`` and ``ids``
(JSON arrays of strings, of integers), ``json`` (any JSON text); a trailing ``?`` allows NULL. The
times and confidences of memories and sessions have checks of their own (``times_invalid``,
``confidence_invalid``, repaired by ``SharedMaintenance._repair_values``), so the checks here leave them out;
export checks every column.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from robotmem.errors import ValidationError
from robotmem.formats import strict_json

MEMORY_COLUMNS: dict[str, str] = {
    "id": "integer",
    "collection": "text",
    "type": "text",
    "content": "text",
    "human_summary": "text?",
    "content_hash": "text?",
    "category": "text",
    "confidence": "number",
    "base_confidence": "number",
    "context": "object",
    "scope_files": "strings",
    "scope_entities": "strings",
    "session_id": "text?",
    "perception_type": "text?",
    "status": "text",
    "superseded_by": "integer?",
    "merged_ids": "ids",
    "invalidated_reason": "text?",
    "embedding_model": "text?",
    "access_count": "integer",
    "last_accessed": "text?",
    "created_at": "text",
    "updated_at": "text",
    "uid": "text",
    "robot_id": "text",
    "observed_at": "text",
}
SESSION_COLUMNS: dict[str, str] = {
    "id": "text",
    "collection": "text",
    "context": "object",
    "status": "text",
    "summary": "object?",
    "created_at": "text",
    "ended_at": "text?",
}
OUTCOME_COLUMNS: dict[str, str] = {
    "session_id": "text",
    "outcome_score": "number?",
    "memory_count": "integer",
    "summary": "object",
    "created_at": "text",
}
TAG_COLUMNS: dict[str, str] = {"tag": "text", "source": "text"}
PAYLOAD_COLUMNS: dict[str, str] = {"data": "json?", "metadata": "json?"}
# Columns of memories and sessions with checks (and repairs) of their own: the form of a time, the
# range of a confidence (``SharedMaintenance._repair_values``).
MEMORY_OWN_CHECKS = frozenset(
    {"created_at", "updated_at", "last_accessed", "observed_at", "confidence", "base_confidence"}
)
SESSION_OWN_CHECKS = frozenset({"created_at", "ended_at"})
# table → (its kinds, the columns left to their own checks)
TABLES: dict[str, tuple[dict[str, str], frozenset[str]]] = {
    "memories": (MEMORY_COLUMNS, MEMORY_OWN_CHECKS),
    "memory_tags": (TAG_COLUMNS, frozenset()),
    "perception_payloads": (PAYLOAD_COLUMNS, frozenset()),
    "sessions": (SESSION_COLUMNS, SESSION_OWN_CHECKS),
    "session_outcomes": (OUTCOME_COLUMNS, frozenset()),
}

_SQL = {
    "text": "typeof({c}) = 'text'",
    "integer": "typeof({c}) = 'integer'",
    "number": "typeof({c}) IN ('integer', 'real')",
    "object": "(typeof({c}) = 'text' AND json_valid({c}) AND json_type({c}) = 'object')",
    "strings": "(typeof({c}) = 'text' AND json_valid({c}) AND json_type({c}) = 'array' "
    "AND NOT EXISTS (SELECT 1 FROM json_each({c}) WHERE json_each.type != 'text'))",
    "ids": "(typeof({c}) = 'text' AND json_valid({c}) AND json_type({c}) = 'array' "
    "AND NOT EXISTS (SELECT 1 FROM json_each({c}) WHERE json_each.type != 'integer'))",
    "json": "(typeof({c}) = 'text' AND json_valid({c}))",
}


def sql_valid(column: str, kind: str) -> str:
    """Return the SQL condition that holds when ``column`` holds a value of ``kind``."""
    test = _SQL[kind.rstrip("?")].format(c=column)
    return f"({column} IS NULL OR {test})" if kind.endswith("?") else test


def sql_invalid_row(
    alias: str, columns: Mapping[str, str], present: Iterable[str], skip: frozenset[str] = frozenset()
) -> str:
    """Return the SQL condition that holds when a column of the row ``alias`` holds a wrong kind.

    Only columns the table has (``present``; an older schema may lack some) and not in ``skip`` (those
    left to their own checks) are tested.
    """
    have = set(present)
    tests = [
        sql_valid(f"{alias}.{name}", kind)
        for name, kind in columns.items()
        if name in have and name not in skip
    ]
    return "NOT (" + " AND ".join(tests) + ")" if tests else "0"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def _json_of(value: Any) -> Any:
    """Parse stored JSON text as SQLite's ``json_valid`` reads it (no NaN or Infinity)."""
    if not isinstance(value, str):
        raise ValueError
    return _DECODER.decode(value)


def _element_kind(base: str) -> type | None:
    return {"strings": str, "ids": int}.get(base)


def read(value: Any, kind: str) -> tuple[Any, str | None]:
    """Return ``(value, problem)``: the value read from SQLite (JSON kinds parsed) and what is wrong
    with it for a column of ``kind`` (None when nothing is)."""
    if value is None:
        return None, (None if kind.endswith("?") else "NULL")
    base = kind.rstrip("?")
    if isinstance(value, bytes):
        return value, f"a BLOB of {len(value)} bytes"
    if base == "text":
        return value, (None if isinstance(value, str) else f"the number {value!r}")
    if base == "integer":
        return value, (None if isinstance(value, int) else f"{type(value).__name__} {str(value)[:40]!r}")
    if base == "number":
        return value, (None if isinstance(value, (int, float)) else f"the text {str(value)[:40]!r}")
    try:
        parsed = _json_of(value)
    except ValueError:
        return value, ("text that is not JSON" if isinstance(value, str) else f"the number {value!r}")
    if base == "object" and not isinstance(parsed, dict):
        return value, f"JSON {type(parsed).__name__}, not an object"
    element = _element_kind(base)
    if element is not None:
        if not isinstance(parsed, list):
            return value, f"JSON {type(parsed).__name__}, not an array"
        if not all(isinstance(item, element) and not isinstance(item, bool) for item in parsed):
            return (
                value,
                f"an array with an element that is not {'a string' if element is str else 'an integer'}",
            )
    return parsed, None


def problem(value: Any, kind: str) -> str | None:
    """Return what is wrong with ``value`` (as read from SQLite) for a column of ``kind``, or None."""
    return read(value, kind)[1]


# The types a column of each kind holds in the common case, checked without a call (``read_row``).
_PLAIN_TYPES: dict[str, tuple[type, ...]] = {"text": (str,), "integer": (int,), "number": (int, float)}
_PLANS: dict[tuple[int, tuple[str, ...]], list[tuple[str, str | None, tuple[type, ...], bool]]] = {}


def _plan(
    names: Sequence[str], kinds: Mapping[str, str]
) -> list[tuple[str, str | None, tuple[type, ...], bool]]:
    """Return, per column, ``(name, kind, plain types, NULL allowed)``; cached per table layout."""
    key = (id(kinds), tuple(names))
    plan = _PLANS.get(key)
    if plan is None:
        plan = []
        for name in names:
            kind = kinds.get(name)
            base = None if kind is None else kind.rstrip("?")
            plain = _PLAIN_TYPES.get(base or "", ())
            plan.append((name, kind, plain, kind is not None and kind.endswith("?")))
        _PLANS[key] = plan
    return plan


def read_row(what: str, names: Sequence[str], row: Sequence[Any], kinds: Mapping[str, str]) -> dict[str, Any]:
    """Return the row as ``{column: value}`` with JSON columns parsed.

    Raises ``ValidationError`` naming ``what`` (e.g. ``memory 12``) and the column for a value of a
    wrong kind. A column without a kind (added by a later schema) only has to be something JSON can
    hold, and is returned as stored.
    """
    record: dict[str, Any] = {}
    for (name, kind, plain, nullable), value in zip(_plan(names, kinds), row, strict=True):
        # The common case first, without a call: a value of the plain type its column holds.
        if type(value) in plain or (value is None and nullable):
            record[name] = value
            continue
        if kind is None:
            record[name], wrong = value, ("a BLOB" if isinstance(value, bytes) else None)
        else:
            record[name], wrong = read(value, kind)
        if wrong is not None:
            belongs = expected(kind) if kind is not None else "text, a number or NULL"
            raise ValidationError(
                f"{what}: column {name} holds {wrong} where {belongs} belongs; "
                "`robotmem check` lists such rows and `robotmem repair` rewrites them in the right form"
            )
    return record


def expected(kind: str) -> str:
    """Return ``kind`` in words, for messages."""
    words = {
        "text": "text",
        "integer": "an integer",
        "number": "a number",
        "object": "a JSON object",
        "strings": "a JSON array of strings",
        "ids": "a JSON array of integers",
        "json": "JSON text",
    }[kind.rstrip("?")]
    return f"{words} or NULL" if kind.endswith("?") else words


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def repaired(value: Any, kind: str) -> Any:
    """Return the value a column of ``kind`` holding ``value`` (of a wrong kind) is repaired to.

    Nothing readable is dropped: a BLOB becomes its UTF-8 text, a context that is not an object is
    kept inside one (``{"value": ...}`` or ``{"unreadable": text}``), JSON that cannot be read becomes
    a JSON string, NaN and Infinity become null. Lists (scopes, merged ids) keep their elements of the
    right type; a count becomes 0 and a link or score that cannot be read becomes NULL.
    """
    base = kind.rstrip("?")
    if value is None:
        return {"text": "", "integer": 0, "number": 0.0, "object": "{}", "strings": "[]", "ids": "[]"}.get(
            base
        )
    if base == "text":
        return _text(value)
    if base in ("integer", "number"):
        try:
            number = float(_text(value))
        except ValueError:
            return None if kind.endswith("?") else 0
        if not math.isfinite(number):
            return None if kind.endswith("?") else 0
        return int(number) if base == "integer" else number
    text = _text(value)
    try:
        parsed = strict_json.loads(text)  # NaN and Infinity become null
    except ValueError:
        parsed, readable = None, False
    else:
        readable = True
    element = _element_kind(base)
    if element is not None:
        items = parsed if isinstance(parsed, list) else []
        kept = [item for item in items if isinstance(item, element) and not isinstance(item, bool)]
        return strict_json.dumps(kept)
    if base == "object":
        if isinstance(parsed, dict):
            return strict_json.dumps(parsed)
        return strict_json.dumps({"value": parsed} if readable else {"unreadable": text})
    return strict_json.dumps(parsed if readable else text)
