"""Filters compiled to PostgreSQL with SQLite's comparison rules, so a filter passes the same rows on both engines.

``robotmem.query.filters`` compiles a filter tree for SQLite, whose rules decide what a comparison means:
``json_extract`` gives a context value as NULL (missing or JSON null), an INTEGER (an integer literal
within 64 bits; true/false as 1/0), a REAL (any other number, so a literal past 64 bits too) or text
(a string, or an array/object as its minified JSON); any number sorts before any text; text compares
byte by byte; numbers compare by their exact values, an INTEGER against a REAL too (a nanosecond stamp
of 1.7e18 against a double near it). A record column compares under its type affinity: a numeric
column reads a numeric-looking text operand as a number (``1e400`` as infinity), a text column reads a
number operand as its text (a REAL as ``%!.15g``: ``1.0``, ``0.3``, ``1.0e+16``).

Here the same tree becomes SQL over ``memories m``, reading the ``jsonb`` context (and the context's
text as written, ``context_text``, for what ``jsonb`` does not keep: an array's or object's text, and
whether a number of 17 or more digits was written as an integer or as a double in exponent form). A
compared value is held as a ``Value``: the schema's ``rm_int``/``rm_real``/``rm_txt`` split a JSON value
into SQLite's classes, as ``numeric`` (exact), ``double precision`` and text. An operand is known here,
so each comparison is decided exactly per class: an integer against the exact decimal of the operand, a
double against the operand's double, or against the doubles on either side of an integer operand that
has none of its own. ``rm_real_text`` writes a double as SQLite's text (``$contains``). ``index_hint``
adds, for equality conditions, an equivalent-or-wider containment test the GIN index on the context can
answer, so a selective filter is found without reading every row.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from robotmem.errors import ValidationError
from robotmem.query.filters import RECORD_FIELDS, All, Any_, Condition, Node, Not

# Record fields whose column SQLite stores as INTEGER or REAL (numeric affinity).
INTEGER_FIELDS = frozenset({"id", "access_count"})
REAL_FIELDS = frozenset({"confidence"})
NUMERIC_FIELDS = INTEGER_FIELDS | REAL_FIELDS
# SQLite reads a text as a number under numeric affinity when all of it is one, with ASCII digits and
# C white space around it (``sqlite3AtoF``).
_NUMERIC_TEXT = re.compile(r"[ \t\n\v\f\r]*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?[ \t\n\v\f\r]*")
_INTEGER_TEXT = re.compile(r"[ \t\n\v\f\r]*[-+]?[0-9]+[ \t\n\v\f\r]*")
_SIGNS = {"$eq": "=", "$lt": "<", "$lte": "<=", "$gt": ">", "$gte": ">="}
_MAX_INDEX = 2**31 - 1
_INT64 = (-(2**63), 2**63 - 1)


def sqlite_real_text(value: float) -> str:
    """Return the text SQLite gives a REAL (``%!.15g``: ``5.0``, ``0.1``, ``1.0e+20``, ``0.0`` for -0.0)."""
    if not math.isfinite(value):
        return "Inf" if value > 0 else ("-Inf" if value < 0 else "NaN")
    if value == 0:
        return "0.0"
    text = f"{value:.15g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}e{exponent}"
    return text if "." in text else text + ".0"


def _as_text(value: Any) -> str:
    """The text SQLite makes of a bound number or boolean under TEXT affinity."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return sqlite_real_text(value)
    return str(value)


def _numeric_text(value: str) -> int | float | None:
    """The number SQLite's numeric affinity reads from ``value``, or None when it stays text."""
    if not _NUMERIC_TEXT.fullmatch(value):
        return None
    if _INTEGER_TEXT.fullmatch(value):
        number = int(value)
        if _INT64[0] <= number <= _INT64[1]:
            return number
    return float(value)  # overflow reads as an infinity, as in SQLite


@dataclass(frozen=True, slots=True)
class Value:
    """SQL for one compared value in SQLite's classes: ``integer`` (numeric), ``real`` (double), ``text``;
    at most one is not NULL for a row, and all are NULL when the value is."""

    integer: str
    real: str
    text: str

    def is_number(self) -> str:
        return f"({self.integer} IS NOT NULL OR {self.real} IS NOT NULL)"

    def is_null(self) -> str:
        return f"({self.integer} IS NULL AND {self.real} IS NULL AND {self.text} IS NULL)"


def _json_value(json_sql: str, path_sql: str) -> Value:
    """The classes of the ``jsonb`` value ``json_sql`` found at context path ``path_sql``."""
    located = f"{json_sql}, m.context_text, {path_sql}"
    return Value(f"rm_int({located})", f"rm_real({located})", f"rm_txt({located})")


def _holds_nul(operand: Any) -> bool:
    """True for a text operand holding a NUL, which PostgreSQL text cannot carry (nor a stored value)."""
    return isinstance(operand, str) and "\0" in operand


def _stored_forms(operand: Any) -> list[Any]:
    """The JSON values a stored value equal to ``operand`` (by SQLite's rules) can be written as.

    ``jsonb`` compares numbers by their decimal value, and a double is written as its shortest decimal:
    true also equals 1, and an integer equals a double of the same exact value whose shortest decimal
    differs from it (2**60 and ``1.152921504606847e+18``).
    """
    if isinstance(operand, str):
        return [operand]
    number = int(operand) if isinstance(operand, bool) else operand
    forms: list[Any] = [number]
    if number in (0, 1):
        forms.append(bool(number))
    if isinstance(number, float) and number.is_integer():
        forms.append(int(number))
    elif isinstance(number, int) and abs(number) <= 2**1023 and float(number) == number:
        forms.append(float(number))
    return forms


def _between_doubles(number: int) -> tuple[float, float] | None:
    """The adjacent doubles ``(below, above)`` around an integer no double equals, or None when one does."""
    nearest = float(number)
    if int(nearest) == number:
        return None
    if int(nearest) < number:
        return nearest, math.nextafter(nearest, math.inf)
    return math.nextafter(nearest, -math.inf), nearest


class PgFilter:
    """Compiles a filter tree into a WHERE fragment over ``memories m`` with psycopg named parameters."""

    def __init__(self, prefix: str = "f") -> None:
        self.params: dict[str, Any] = {}
        self._prefix = prefix

    def bind(self, value: Any) -> str:
        """Return a placeholder for ``value``."""
        name = f"{self._prefix}{len(self.params)}"
        self.params[name] = value
        return f"%({name})s"

    def compile(self, node: Node) -> str:
        """Return the SQL boolean expression for ``node`` (NULL counts as false, as in SQLite's WHERE)."""
        if isinstance(node, All):
            return self._join(" AND ", node.parts)
        if isinstance(node, Any_):
            return self._join(" OR ", node.parts)
        if isinstance(node, Not):
            negated, part = True, node.part
            while isinstance(part, Not):
                negated, part = not negated, part.part
            return "((" + self.compile(part) + (") IS NOT TRUE)" if negated else ") IS TRUE)")
        if node.path == ("tags",):
            return self._tags(node)
        if node.path[0] == "context":
            return self._context(node)
        return self._record(node)

    def _join(self, operator: str, parts: Sequence[Node]) -> str:
        if len(parts) <= 8:
            return "(" + operator.join(self.compile(part) for part in parts) + ")"
        middle = len(parts) // 2
        return (
            "(" + self._join(operator, parts[:middle]) + operator + self._join(operator, parts[middle:]) + ")"
        )

    # ---- context values --------------------------------------------------------------------------

    def json_at(self, segments: Sequence[str]) -> str:
        """Return SQL for the ``jsonb`` value at context ``segments`` (NULL when absent).

        A segment of digits indexes an array and nothing else, as in SQLite's ``$.a[0]``.
        """
        expression = "m.context"
        for segment in segments:
            if segment.isdigit():
                index = int(segment)
                # rm_element, not ``-> index``: jsonb answers ``-> 0`` on a scalar with the scalar itself.
                expression = f"rm_element({expression}, {index})" if index <= _MAX_INDEX else "NULL::jsonb"
            else:
                expression = f"({expression} -> {self.bind(segment)}::text)"
        return expression

    def _context(self, node: Condition) -> str:
        segments = node.path[1:]
        raw = self.json_at(segments)
        path = f"{self.bind(list(segments))}::text[]"
        op, operand = node.operator, node.operand
        if op == "$exists":
            return f"({raw} IS {'NOT ' if operand else ''}NULL)"
        if op == "$contains":
            if operand is None or _holds_nul(operand):
                return "FALSE"
            needle = self.bind(_as_text(operand))
            element = _json_value("e.value", f"{path} || ARRAY[(e.n - 1)::text]")
            return (
                f"(CASE WHEN jsonb_typeof({raw}) = 'array' THEN EXISTS (SELECT 1 FROM "
                f"jsonb_array_elements({raw}) WITH ORDINALITY AS e(value, n) WHERE {self._equal(element, operand)}) "
                f"ELSE strpos(rm_instr_text({raw}, m.context_text, {path}), {needle}) > 0 END)"
            )
        return self._compare(_json_value(f"rm_value({raw})", f"rm_value_path({raw}, {path})"), op, operand)

    def index_hint(self, node: Node) -> str | None:
        """Return a containment test on ``m.context`` that every row passing ``node`` passes (and the GIN
        index answers), or None when the filter has no equality condition to build one from."""
        if isinstance(node, All):
            hints = [h for part in node.parts if (h := self.index_hint(part)) is not None]
            return "(" + " AND ".join(hints) + ")" if hints else None
        if (
            not isinstance(node, Condition)
            or node.path[0] != "context"
            or node.operator not in ("$eq", "$in")
        ):
            return None
        segments = node.path[1:]
        if any(segment.isdigit() for segment in segments):
            return None
        operands = [node.operand] if node.operator == "$eq" else list(node.operand)
        shapes: list[Any] = []
        for operand in operands:
            if (
                operand is None
                or isinstance(operand, str)
                and (operand.startswith(("[", "{")) or "\0" in operand)
            ):
                return None  # NULL, and arrays/objects compared as text, have no containment form
            for form in _stored_forms(operand):
                shapes += [form, {"value": form}]
        tests = []
        for shape in shapes:
            document: Any = shape
            for segment in reversed(segments):
                document = {segment: document}
            tests.append(f"m.context @> {self.bind(json.dumps(document))}::jsonb")
        return "(" + " OR ".join(tests) + ")"

    def _compare(self, value: Value, op: str, operand: Any) -> str:
        """A comparison of ``value`` with ``operand`` (Python, as SQLite sees it bound) by SQLite's rules."""
        if op == "$eq":
            if operand is None:
                return value.is_null()
            return self._equal(value, operand)
        if op == "$ne":
            if operand is None:
                return f"(NOT {value.is_null()})"
            return f"(({self._equal(value, operand)}) IS NOT TRUE)"
        if op in ("$lt", "$lte", "$gt", "$gte"):
            return self._order(value, _SIGNS[op], operand)
        if op == "$between":
            low, high = operand
            return f"({self._order(value, '>=', low)} AND {self._order(value, '<=', high)})"
        if op in ("$in", "$nin"):
            listed = [v for v in operand if v is not None]
            matched = " OR ".join(self._equal(value, v) for v in listed) or "FALSE"
            if op == "$in":
                return f"({matched})"
            # SQLite: NULL NOT IN (...) is NULL, so a missing value passes only through "IS NULL OR".
            if len(listed) < len(operand):  # a NULL in the list makes NOT IN never true
                return value.is_null()
            return f"({value.is_null()} OR (({matched}) IS NOT TRUE))"
        raise ValidationError(f"context_filter: operator {op} cannot compare a value")

    def _equal(self, value: Value, operand: Any) -> str:
        if isinstance(operand, str):
            if _holds_nul(operand):
                return "FALSE"  # no stored text holds a NUL (SQLite reads a JSON string up to one)
            return f"({value.text} = {self.bind(operand)})"
        return self._numbers(value, "=", operand, texts="FALSE")

    def _order(self, value: Value, sign: str, operand: Any) -> str:
        # Every number sorts before every text.
        if isinstance(operand, str):
            numbers_pass = "TRUE" if sign in ("<", "<=") else "FALSE"
            if _holds_nul(operand):
                # Byte order, no stored text holding a NUL: below "p\0..." is at most "p", above is past "p".
                operand = operand.split("\0", 1)[0]
                sign = "<=" if sign in ("<", "<=") else ">"
            return (
                f"(CASE WHEN {value.is_number()} THEN {numbers_pass} "
                f'ELSE {value.text} COLLATE "C" {sign} {self.bind(operand)} END)'
            )
        return self._numbers(value, sign, operand, texts="TRUE" if sign in (">", ">=") else "FALSE")

    def _numbers(self, value: Value, sign: str, operand: int | float, texts: str) -> str:
        """``value sign operand`` for a number operand, compared by exact values; ``texts`` for a text value."""
        number = int(operand) if isinstance(operand, bool) else operand
        exact = Decimal(number)  # the exact value of an int, or of a double
        integer = f"{value.integer} {sign} {self.bind(exact)}::numeric"
        if isinstance(number, float):
            real = f"{value.real} {sign} {self.bind(number)}::float8"
        else:
            around = _between_doubles(number)
            if around is None:
                real = f"{value.real} {sign} {self.bind(float(number))}::float8"
            elif sign == "=":
                real = "FALSE"
            elif sign in ("<", "<="):
                real = f"{value.real} <= {self.bind(around[0])}::float8"
            else:
                real = f"{value.real} >= {self.bind(around[1])}::float8"
        return (
            f"(CASE WHEN {value.integer} IS NOT NULL THEN {integer} WHEN {value.real} IS NOT NULL THEN {real} "
            f"WHEN {value.text} IS NOT NULL THEN {texts} END)"
        )

    # ---- record fields ---------------------------------------------------------------------------

    def _record(self, node: Condition) -> str:
        field = node.path[0]
        column = RECORD_FIELDS[field]
        op, operand = node.operator, node.operand
        if op == "$exists":
            return f"({column} IS {'NOT ' if operand else ''}NULL)"
        if op == "$contains":
            if operand is None or _holds_nul(operand):
                return "FALSE"
            if field in REAL_FIELDS:
                text = f"rm_real_text({column})"
            elif field in INTEGER_FIELDS:
                text = f"{column}::text"
            else:
                text = column
            return f"(strpos({text}, {self.bind(_as_text(operand))}) > 0)"
        if field in INTEGER_FIELDS:
            value = Value(f"{column}::numeric", "NULL::float8", "NULL::text")
        elif field in REAL_FIELDS:
            value = Value("NULL::numeric", f"{column}::float8", "NULL::text")
        else:
            return self._compare(
                Value("NULL::numeric", "NULL::float8", f'{column} COLLATE "C"'),
                op,
                _text_operand(op, operand),
            )
        # The column's number is the value; an operand that stays text sorts after every number.
        return self._compare(value, op, _numeric_operand(op, operand))

    def _tags(self, node: Condition) -> str:
        has = "EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.id{})"
        op, operand = node.operator, node.operand
        if op in ("$eq", "$contains", "$ne") and (operand is None or _holds_nul(operand)):
            return "TRUE" if op == "$ne" else "FALSE"
        if op in ("$eq", "$contains"):
            return "(" + has.format(f" AND t.tag = {self.bind(_as_text(operand))}") + ")"
        if op == "$ne":
            return "(NOT " + has.format(f" AND t.tag = {self.bind(_as_text(operand))}") + ")"
        if op in ("$in", "$nin"):
            listed = (
                ", ".join(self.bind(_as_text(v)) for v in operand if v is not None and not _holds_nul(v))
                or "NULL"
            )
            clause = has.format(f" AND t.tag IN ({listed})")
            return f"({clause})" if op == "$in" else f"(NOT {clause})"
        if op == "$exists":
            return f"({'' if operand else 'NOT '}{has.format('')})"
        raise ValidationError(
            f"context_filter['tags']: {op} does not apply to tags; use $contains, $in, $nin, $ne or $exists"
        )


def _convert(op: str, operand: Any, one: Any) -> Any:
    if op in ("$in", "$nin"):
        return tuple(one(v) for v in operand)
    if op == "$between":
        return (one(operand[0]), one(operand[1]))
    return one(operand)


def _numeric_operand(op: str, operand: Any) -> Any:
    """An operand as SQLite sees it beside a numeric column: a number if it reads as one, else text."""

    def one(value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float)):
            return value
        number = _numeric_text(value)
        return value if number is None else number

    return _convert(op, operand, one)


def _text_operand(op: str, operand: Any) -> Any:
    """An operand as SQLite sees it beside a text column: numbers become their text."""
    return _convert(op, operand, lambda value: value if value is None else _as_text(value))


def to_pg_sql(node: Node, prefix: str = "f") -> tuple[str, dict[str, Any]]:
    """Return ``(where_fragment, params)`` selecting the rows of ``memories m`` that satisfy ``node``."""
    builder = PgFilter(prefix)
    return builder.compile(node), builder.params
