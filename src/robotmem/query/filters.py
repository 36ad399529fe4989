"""Structured filters on memories: parse once into a typed tree, then walk it into SQL.

A filter is an object of dot-path → condition; every entry must hold. A plain value means equality;
an operator object uses ``$eq $ne $lt $lte $gt $gte $in $nin $exists $between $contains`` (several
operators in one object must all hold, ``$not`` negates one); ``$and``, ``$or`` (lists of filters)
and ``$not`` (a filter) combine filters at any level. Paths reach any key of the stored context
(prefix ``context.`` to force a context key that shadows a record field) and the record fields.
A ``params`` entry stored as ``{"value": 12.5, "unit": "N"}`` compares by its ``value``.

``FilterWalk`` walks the tree once for every engine; each engine's dialect (``store/sqlite/filters.py``,
``store/postgres/filters.py``) says how its SQL reads a value and compares it by SQLite's rules.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from robotmem.errors import ValidationError

Scalar = str | int | float | bool | None
Operand = str | int | float  # a scalar other than null (a bool is an int)

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
    "observed_at": "m.observed_at",
    "access_count": "m.access_count",
    "robot_id": "m.robot_id",
    "tags": "tags",
}
# Record fields written without a logged change (every recall bumps ``access_count``): a copy of which
# memories pass a condition on one goes stale unseen, so both engines evaluate it afresh each recall.
VOLATILE_FIELDS = frozenset({"access_count"})
# Record fields whose conditions change from one recall to the next: a time window relative to now
# (``since="-2h"``) names a new moment every call. A copy of which memories pass such a condition would
# be read in full and used once, so neither engine keeps one; the condition is evaluated on the
# database (an index on ``observed_at``) each recall, like a volatile one.
UNCACHED_FIELDS = VOLATILE_FIELDS | {"observed_at"}
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


def reads_volatile(node: Node | None, fields: frozenset[str] = VOLATILE_FIELDS) -> bool:
    """Whether the filter ``node`` has a condition on one of ``fields`` (by default ``VOLATILE_FIELDS``;
    ``UNCACHED_FIELDS`` asks whether a copy of its passing memories is worth keeping)."""
    if node is None:
        return False
    if isinstance(node, Condition):
        return node.path[0] in fields
    if isinstance(node, Not):
        return reads_volatile(node.part, fields)
    return any(reads_volatile(part, fields) for part in node.parts)


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


def _orderable(path: str, op: str, value: Any) -> Operand:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _fail(_where(path), f"{op} takes a number or a string, got {json.dumps(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(_where(path), f"{op} takes a finite number")
    if isinstance(value, int) and abs(value) > SQLITE_MAX_INT:
        raise _fail(_where(path), f"{op} takes integers within ±{SQLITE_MAX_INT}")
    return value


# The order comparisons, as SQL writes them.
SIGNS = {"$lt": "<", "$lte": "<=", "$gt": ">", "$gte": ">="}
Compared = TypeVar("Compared")


def _truth(predicate: str, negated: bool) -> str:
    """Whether ``predicate`` (in parentheses, or a literal) is true, or, ``negated``, false or NULL."""
    # One operator in PostgreSQL and in SQLite (from 3.23; the store's upserts need 3.24), where
    # NOT COALESCE(.., FALSE) would take twice the parser depth.
    return f"({predicate} IS {'NOT ' if negated else ''}TRUE)"


class FilterWalk(ABC, Generic[Compared]):
    """Walks a filter tree into a WHERE fragment over ``memories m`` with named parameters.

    The walk is what every engine shares: how ``$and``/``$or``/``$not`` combine, which conditions read a
    record field, the tags or a context path, what each operator means in terms of equality, order and
    absence, and how parameters are bound. An engine's subclass, its dialect, says only what its SQL
    writes differently: placeholders, how a value is read (as ``Compared``: SQL text, or whatever the
    dialect compares) and how it compares with an operand by SQLite's rules, which are the language's.
    """

    def __init__(self, prefix: str = "f") -> None:
        self.params: dict[str, Any] = {}
        self._prefix = prefix

    def bind(self, value: Any) -> str:
        """Return a placeholder for ``value``, a parameter of the fragment."""
        name = f"{self._prefix}{len(self.params)}"
        self.params[name] = value
        return self.placeholder(name)

    def compile(self, node: Node) -> str:
        """Return the SQL boolean expression for ``node``: true for a row that passes, false or NULL else.

        Raises ``ValidationError`` for an operator that does not apply to the field (e.g. ``$lt`` on tags).
        """
        if isinstance(node, All):
            return self._join(" AND ", node.parts)
        if isinstance(node, Any_):
            return self._join(" OR ", node.parts)
        if isinstance(node, Not):
            # A run of $not folds into one test, so 16 nested $not stay well inside SQLite's parser stack.
            negated, part = True, node.part
            while isinstance(part, Not):
                negated, part = not negated, part.part
            return _truth(self.compile(part), negated)
        if node.path == ("tags",):
            return self._tags(node.operator, node.operand)
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

    def _condition(self, node: Condition) -> str:
        op, operand = node.operator, node.operand
        field, segments = node.path[0], node.path[1:]
        in_context = field == "context"
        if op == "$exists":
            located = self.context_located(segments) if in_context else RECORD_FIELDS[field]
            return f"({located} IS {'NOT ' if operand else ''}NULL)"
        if op == "$contains" and in_context:
            return self.context_contains(segments, operand)
        if op == "$contains":
            return self.record_contains(field, operand)
        value = self.context_value(segments) if in_context else self.record_value(field)
        if op == "$eq":
            return self.is_null(value) if operand is None else self.equal(value, operand)
        if op == "$ne":
            if operand is None:
                return f"(NOT {self.is_null(value)})"
            return _truth(self.equal(value, operand), negated=True)
        if op in SIGNS:
            return self.order(value, SIGNS[op], operand)
        if op == "$between":
            return self.between(value, *operand)
        listed = [v for v in operand if v is not None]  # $in, $nin: NULL is never IN a list
        matched = self.among(value, listed) if listed else "FALSE"
        if op == "$in":
            return matched
        # NULL NOT IN (...) is NULL, so a missing value passes only through "IS NULL OR"; a NULL in the
        # list makes NOT IN never true.
        if len(listed) < len(operand):
            return self.is_null(value)
        return f"({self.is_null(value)} OR {_truth(matched, negated=True)})"

    def _tags(self, op: str, operand: Any) -> str:
        has = "EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.id{})"
        if op == "$exists":
            return f"({'' if operand else 'NOT '}{has.format('')})"
        if op not in ("$eq", "$contains", "$ne", "$in", "$nin"):
            raise _fail("['tags']", f"{op} does not apply to tags; use $contains, $in, $nin, $ne or $exists")
        wanted = operand if op in ("$in", "$nin") else (operand,)
        listed = [self.bind(tag) for tag in map(self.tag, wanted) if tag is not None]
        clause = has.format(f" AND t.tag IN ({', '.join(listed)})") if listed else "FALSE"
        return f"(NOT {clause})" if op in ("$ne", "$nin") else f"({clause})"

    # ---- the dialect: what each engine writes its own way --------------------------------------

    @abstractmethod
    def placeholder(self, name: str) -> str:
        """The placeholder of parameter ``name`` in the engine's driver."""

    @abstractmethod
    def context_located(self, segments: tuple[str, ...]) -> str:
        """SQL that is NULL exactly when the context holds nothing (not even JSON null) at ``segments``."""

    @abstractmethod
    def context_value(self, segments: tuple[str, ...]) -> Compared:
        """The value a condition on context ``segments`` compares (a parameter's ``value``)."""

    @abstractmethod
    def context_contains(self, segments: tuple[str, ...], operand: Scalar) -> str:
        """Whether the context value at ``segments`` is an array holding ``operand``, or a text holding it."""

    @abstractmethod
    def record_value(self, field: str) -> Compared:
        """The value a condition on record field ``field`` compares (under its column's affinity)."""

    @abstractmethod
    def record_contains(self, field: str, operand: Scalar) -> str:
        """Whether the text of record field ``field`` holds ``operand``'s text, both as SQLite writes them."""

    @abstractmethod
    def is_null(self, value: Compared) -> str:
        """Whether ``value`` is NULL: a missing field or a JSON null (true or false, never NULL)."""

    @abstractmethod
    def equal(self, value: Compared, operand: Operand) -> str:
        """Whether ``value`` equals ``operand`` by SQLite's rules."""

    @abstractmethod
    def order(self, value: Compared, sign: str, operand: Operand) -> str:
        """Whether ``value sign operand`` holds by SQLite's rules (``sign`` one of ``SIGNS``)."""

    def between(self, value: Compared, low: Operand, high: Operand) -> str:
        """Whether ``value`` lies within ``low`` and ``high``, both included."""
        return f"({self.order(value, '>=', low)} AND {self.order(value, '<=', high)})"

    def among(self, value: Compared, listed: Sequence[Operand]) -> str:
        """Whether ``value`` equals one of ``listed``."""
        return "(" + " OR ".join(self.equal(value, operand) for operand in listed) + ")"

    def tag(self, operand: Scalar) -> Scalar:
        """The parameter a tag must equal to match ``operand``, or None when no tag can."""
        return operand
