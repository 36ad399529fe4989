"""Structured filters on memories: parse once into a typed tree, then compile to SQL.

A filter is an object of dot-path → condition; every entry must hold. A plain value means equality;
an operator object uses ``$eq $ne $lt $lte $gt $gte $in $nin $exists $between $contains`` (several
operators in one object must all hold, ``$not`` negates one); ``$and``, ``$or`` (lists of filters)
and ``$not`` (a filter) combine filters at any level. Paths reach any key of the stored context
(prefix ``context.`` to force a context key that shadows a record field) and the record fields.
A ``params`` entry stored as ``{"value": 12.5, "unit": "N"}`` compares by its ``value``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from robotmem.errors import ValidationError

Scalar = str | int | float | bool | None

COMPARISONS = ("$eq", "$ne", "$lt", "$lte", "$gt", "$gte")
OPERATORS = (*COMPARISONS, "$in", "$nin", "$exists", "$between", "$contains", "$not")
LOGICAL = ("$and", "$or", "$not")
# Record fields a filter may name, mapped to their column on ``memories m``.
RECORD_FIELDS = {
    "id": "m.id",
    "collection": "m.collection",
    "type": "m.type",
    "category": "m.category",
    "confidence": "m.confidence",
    "perception_type": "m.perception_type",
    "session_id": "m.session_id",
    "created_at": "m.created_at",
    "updated_at": "m.updated_at",
    "access_count": "m.access_count",
    "robot_id": "m.robot_id",
    "tags": "tags",
}
# Record fields written without a logged change (every recall bumps ``access_count``): a copy of which
# memories pass a condition on one goes stale unseen, so both engines evaluate it afresh each recall.
VOLATILE_FIELDS = frozenset({"access_count"})
MAX_DEPTH = 16


@dataclass(frozen=True, slots=True)
class Condition:
    """One operator applied to the value at ``path``."""

    path: tuple[str, ...]
    operator: str
    operand: Any


@dataclass(frozen=True, slots=True)
class All:
    """Every part holds."""

    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Any_:
    """At least one part holds."""

    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """The part does not hold."""

    part: Node


Node = Condition | All | Any_ | Not


def _fail(where: str, problem: str) -> ValidationError:
    return ValidationError(f"context_filter{where}: {problem}")


def _where(path: str) -> str:
    return f"[{path!r}]" if path else ""


def reads_volatile(node: Node | None) -> bool:
    """Whether the filter ``node`` has a condition on one of ``VOLATILE_FIELDS``."""
    if node is None:
        return False
    if isinstance(node, Condition):
        return node.path[0] in VOLATILE_FIELDS
    if isinstance(node, Not):
        return reads_volatile(node.part)
    return any(reads_volatile(part) for part in node.parts)


def parse_filter(raw: Any, *, max_bytes: int = 16384) -> Node | None:
    """Return the filter tree for ``raw`` (a dict, a JSON string, or None/empty for no filter).

    Raises ``ValidationError`` naming the path and the problem for malformed input, unknown
    operators, operands of the wrong type, more than ``max_bytes`` of JSON or nesting deeper than 16.
    """
    if raw is None or raw == "" or raw == {}:
        return None
    if isinstance(raw, str):
        if len(raw.encode("utf-8")) > max_bytes:
            raise _fail("", f"is {len(raw.encode('utf-8'))} bytes; the limit is {max_bytes}")
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise _fail("", f"is not valid JSON ({exc.msg} at position {exc.pos})") from None
        except RecursionError:
            raise _fail("", f"nests deeper than {MAX_DEPTH} levels") from None
    if not isinstance(raw, dict):
        raise _fail("", f"must be a JSON object of path → condition, got {type(raw).__name__}")
    try:
        size = len(json.dumps(raw, allow_nan=False, ensure_ascii=False).encode("utf-8"))
    except RecursionError:
        raise _fail("", f"nests deeper than {MAX_DEPTH} levels") from None
    except UnicodeEncodeError:
        raise _fail("", "contains a lone surrogate, which is not valid Unicode text") from None
    except (TypeError, ValueError):
        raise _fail("", "must contain only JSON values (finite numbers, strings, lists, objects)") from None
    if size > max_bytes:
        raise _fail("", f"is {size} bytes; the limit is {max_bytes}")
    if not raw:
        return None
    return _parse_object(raw, depth=0)


def _parse_object(raw: dict[str, Any], depth: int) -> Node:
    if depth > MAX_DEPTH:
        raise _fail("", f"nests deeper than {MAX_DEPTH} levels")
    parts: list[Node] = []
    for key, value in raw.items():
        if not isinstance(key, str) or not key:
            raise _fail("", "keys must be non-empty strings")
        if key.startswith("$"):
            parts.append(_parse_logical(key, value, depth))
        else:
            parts.append(_parse_condition(key, value, depth))
    return parts[0] if len(parts) == 1 else All(tuple(parts))


def _parse_logical(key: str, value: Any, depth: int) -> Node:
    if key == "$not":
        if not isinstance(value, dict) or not value:
            raise _fail("", "$not takes a non-empty filter object")
        return Not(_parse_object(value, depth + 1))
    if key in ("$and", "$or"):
        if not isinstance(value, list) or not value or not all(isinstance(v, dict) and v for v in value):
            raise _fail("", f"{key} takes a non-empty list of non-empty filter objects")
        parts = tuple(_parse_object(v, depth + 1) for v in value)
        return All(parts) if key == "$and" else Any_(parts)
    raise _fail("", f"unknown logical operator {key!r}; expected one of {' '.join(LOGICAL)} or a path")


def _parse_path(path: str) -> tuple[str, ...]:
    segments = tuple(path.split("."))
    if any(not segment for segment in segments):
        raise _fail(_where(path), "a path is dot-separated non-empty keys, e.g. 'task.success'")
    if '"' in path:
        raise _fail(_where(path), "a key cannot contain a double quote (context keys with one are refused)")
    if segments[0] == "context" and len(segments) > 1:
        return segments
    if segments[0] in RECORD_FIELDS and len(segments) == 1:
        return segments
    return ("context", *segments)


def _parse_condition(path: str, value: Any, depth: int) -> Node:
    segments = _parse_path(path)
    if not isinstance(value, dict):
        return Condition(segments, "$eq", _scalar_or_json(path, "$eq", value))
    if not value:
        raise _fail(_where(path), "an empty object is not a condition; use {'$exists': true}")
    if not all(isinstance(k, str) and k.startswith("$") for k in value):
        raise _fail(
            _where(path),
            "an operator object takes only $-operators; for nested keys use a dot path like 'task.success'",
        )
    parts = [_parse_operator(path, segments, op, operand, depth) for op, operand in value.items()]
    return parts[0] if len(parts) == 1 else All(tuple(parts))


def _parse_operator(path: str, segments: tuple[str, ...], op: str, operand: Any, depth: int) -> Node:
    where = _where(path)
    if segments == ("tags",) and op in ("$lt", "$lte", "$gt", "$gte", "$between"):
        raise _fail(where, f"{op} does not apply to tags; use $contains, $in, $nin, $ne or $exists")
    if op == "$not":
        if not isinstance(operand, dict) or not operand:
            raise _fail(where, "$not takes an operator object, e.g. {'$not': {'$gt': 5}}")
        if depth > MAX_DEPTH:
            raise _fail(where, f"nests deeper than {MAX_DEPTH} levels")
        return Not(_parse_condition(path, operand, depth + 1))
    if op in ("$eq", "$ne"):
        return Condition(segments, op, _scalar_or_json(path, op, operand))
    if op in ("$lt", "$lte", "$gt", "$gte"):
        return Condition(segments, op, _orderable(path, op, operand))
    if op in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand:
            raise _fail(where, f"{op} takes a non-empty list of values")
        return Condition(segments, op, tuple(_scalar(path, op, v) for v in operand))
    if op == "$exists":
        if not isinstance(operand, bool):
            raise _fail(where, "$exists takes true or false")
        return Condition(segments, op, operand)
    if op == "$between":
        if not isinstance(operand, list) or len(operand) != 2:
            raise _fail(where, "$between takes a list of two bounds, e.g. [0.1, 0.5]")
        low, high = (_orderable(path, op, v) for v in operand)
        return Condition(segments, op, (low, high))
    if op == "$contains":
        return Condition(segments, op, _scalar(path, op, operand))
    raise _fail(where, f"unknown operator {op!r}; expected one of {' '.join(OPERATORS)}")


# SQLite stores integers in 64 bits; a larger Python int cannot be bound as a parameter.
SQLITE_MAX_INT = 2**63 - 1


def _scalar(path: str, op: str, value: Any) -> Scalar:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > SQLITE_MAX_INT:
        raise _fail(_where(path), f"{op} takes integers within ±{SQLITE_MAX_INT}")
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise _fail(_where(path), f"{op} takes a string, number, boolean or null, got {type(value).__name__}")


def _scalar_or_json(path: str, op: str, value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return _scalar(path, op, value)


def _orderable(path: str, op: str, value: Any) -> str | int | float:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _fail(_where(path), f"{op} takes a number or a string, got {json.dumps(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(_where(path), f"{op} takes a finite number")
    if isinstance(value, int) and abs(value) > SQLITE_MAX_INT:
        raise _fail(_where(path), f"{op} takes integers within ±{SQLITE_MAX_INT}")
    return value


def json_path(segments: Sequence[str]) -> str:
    """Return the SQLite JSON path of context ``segments`` (digits index arrays; keys are quoted)."""
    return "$" + "".join(
        f"[{segment}]" if segment.isdigit() else "." + json.dumps(segment, ensure_ascii=False)
        for segment in segments
    )


class SqlBuilder:
    """Compiles a filter tree into a WHERE fragment over ``memories m`` with named parameters."""

    def __init__(self, prefix: str = "f") -> None:
        self.params: dict[str, Any] = {}
        self._prefix = prefix

    def bind(self, value: Any) -> str:
        """Return a placeholder for ``value`` (booleans become 1/0, as SQLite's JSON gives them)."""
        name = f"{self._prefix}{len(self.params)}"
        self.params[name] = int(value) if isinstance(value, bool) else value
        return ":" + name

    def compile(self, node: Node) -> str:
        """Return the SQL boolean expression for ``node``."""
        if isinstance(node, All):
            return self._join(" AND ", node.parts)
        if isinstance(node, Any_):
            return self._join(" OR ", node.parts)
        if isinstance(node, Not):
            # Every compiled predicate is 1, 0 or NULL, so "IS NOT 1" is NOT COALESCE(.., 0) with half
            # the parser depth, and a run of $not folds into one test: 16 nested $not stay well
            # inside SQLite's parser stack.
            negated, part = True, node.part
            while isinstance(part, Not):
                negated, part = not negated, part.part
            return "(" + self.compile(part) + (" IS NOT 1)" if negated else " IS 1)")
        if node.path == ("tags",):
            return self._tags(node)
        return self._condition(node)

    def _join(self, operator: str, parts: Sequence[Node]) -> str:
        # SQLite parses a chain "a OR b OR c ..." into a tree as deep as the chain is long (its limit
        # is 1000); halves in parentheses keep a list of a thousand conditions about ten levels deep.
        if len(parts) <= 8:
            return "(" + operator.join(self.compile(part) for part in parts) + ")"
        middle = len(parts) // 2
        return (
            "(" + self._join(operator, parts[:middle]) + operator + self._join(operator, parts[middle:]) + ")"
        )

    def _json_path(self, segments: tuple[str, ...]) -> str:
        return self.bind(json_path(segments))

    def context_value(self, segments: tuple[str, ...]) -> tuple[str, str, str]:
        """Return ``(json_path, kind, value)`` SQL for the context value a condition at ``segments`` compares."""
        json_path = self._json_path(segments)
        kind = f"json_type(m.context, {json_path})"
        # A {"value": .., "unit": ..} parameter compares by its value.
        value = (
            f"(CASE WHEN {kind} = 'object' THEN json_extract(m.context, {json_path} || '.value') "
            f"WHEN {kind} IN ('array') THEN json(json_extract(m.context, {json_path})) "
            f"ELSE json_extract(m.context, {json_path}) END)"
        )
        return json_path, kind, value

    def _condition(self, node: Condition) -> str:
        if node.path[0] == "context":
            json_path, kind, value = self.context_value(node.path[1:])
        else:
            kind = f"(CASE WHEN {RECORD_FIELDS[node.path[0]]} IS NULL THEN NULL ELSE 'scalar' END)"
            json_path = ""
            value = RECORD_FIELDS[node.path[0]]
        op, operand = node.operator, node.operand
        if op == "$exists":
            return f"({kind} IS {'NOT ' if operand else ''}NULL)"
        if op == "$eq":
            return (
                f"({value} IS {self.bind(operand)})"
                if operand is None
                else f"({value} = {self.bind(operand)})"
            )
        if op == "$ne":
            return f"({value} IS NOT {self.bind(operand)})"
        if op in ("$lt", "$lte", "$gt", "$gte"):
            sign = {"$lt": "<", "$lte": "<=", "$gt": ">", "$gte": ">="}[op]
            return f"({value} {sign} {self.bind(operand)})"
        if op == "$between":
            return f"({value} BETWEEN {self.bind(operand[0])} AND {self.bind(operand[1])})"
        if op in ("$in", "$nin"):
            listed = ", ".join(self.bind(v) for v in operand)
            if op == "$in":
                return f"({value} IN ({listed}))"
            return f"({value} IS NULL OR {value} NOT IN ({listed}))"
        # $contains: an element of an array, or a substring of a string.
        needle = self.bind(operand)
        if node.path[0] != "context":
            return f"(instr({value}, {needle}) > 0)"
        return (
            f"(CASE WHEN {kind} = 'array' THEN EXISTS (SELECT 1 FROM json_each(m.context, {json_path}) "
            f"WHERE json_each.value = {needle}) ELSE instr(json_extract(m.context, {json_path}), {needle}) > 0 END)"
        )

    def _tags(self, node: Condition) -> str:
        has = "EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.id{})"
        op, operand = node.operator, node.operand
        if op in ("$eq", "$contains"):
            return "(" + has.format(f" AND t.tag = {self.bind(operand)}") + ")"
        if op == "$ne":
            return "(NOT " + has.format(f" AND t.tag = {self.bind(operand)}") + ")"
        if op in ("$in", "$nin"):
            listed = ", ".join(self.bind(v) for v in operand)
            clause = has.format(f" AND t.tag IN ({listed})")
            return f"({clause})" if op == "$in" else f"(NOT {clause})"
        if op == "$exists":
            return f"({'' if operand else 'NOT '}{has.format('')})"
        raise _fail("['tags']", f"{op} does not apply to tags; use $contains, $in, $nin, $ne or $exists")


def to_sql(node: Node, prefix: str = "f") -> tuple[str, dict[str, Any]]:
    """Return ``(where_fragment, params)`` selecting the rows of ``memories m`` that satisfy ``node``.

    Raises ``ValidationError`` for an operator that does not apply to the field (e.g. ``$lt`` on tags).
    """
    builder = SqlBuilder(prefix)
    return builder.compile(node), builder.params
