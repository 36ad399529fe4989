"""PostgreSQL's dialect of the filter walk (``query.filters.FilterWalk``): SQLite's comparison rules,
emulated, so that a filter passes the same rows on both engines (``store/sqlite/filters.py`` states them).

The walk's tree becomes SQL over ``memories m``, reading the ``jsonb`` context (and the context's text
as written, ``context_text``, for what ``jsonb`` does not keep: an array's or object's text, and
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
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, NamedTuple

from robotmem.query.filters import RECORD_FIELDS, All, Condition, FilterWalk, Node, Operand, Scalar

# Record fields whose column SQLite stores as INTEGER or REAL (numeric affinity).
INTEGER_FIELDS = frozenset({"id", "access_count"})
REAL_FIELDS = frozenset({"confidence"})
# SQLite reads a text as a number under numeric affinity when all of it is one, with ASCII digits and
# C white space around it (``sqlite3AtoF``).
_NUMERIC_TEXT = re.compile(r"[ \t\n\v\f\r]*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?[ \t\n\v\f\r]*")
_INTEGER_TEXT = re.compile(r"[ \t\n\v\f\r]*[-+]?[0-9]+[ \t\n\v\f\r]*")
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
    if isinstance(value, float):
        return sqlite_real_text(value)
    return str(value)


def _as_number(value: Any) -> Any:
    """An operand as SQLite's numeric affinity reads it: a text that is all one number becomes it."""
    if not isinstance(value, str) or not _NUMERIC_TEXT.fullmatch(value):
        return value
    if _INTEGER_TEXT.fullmatch(value) and _INT64[0] <= int(value) <= _INT64[1]:
        return int(value)
    return float(value)  # overflow reads as an infinity, as in SQLite


def _as_is(value: Any) -> Any:
    return value


class Value(NamedTuple):
    """SQL for one compared value in SQLite's classes: ``integer`` (numeric), ``real`` (double), ``text``;
    at most one is not NULL for a row, and all are NULL when the value is. ``operand`` gives an operand
    as SQLite sees it beside the value (a column's affinity converts it)."""

    integer: str
    real: str
    text: str
    operand: Callable[[Any], Any] = _as_is

    def is_number(self) -> str:
        return f"({self.integer} IS NOT NULL OR {self.real} IS NOT NULL)"


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


class PgFilter(FilterWalk[Value]):
    """Compiles a filter tree into a WHERE fragment over ``memories m`` with psycopg named parameters."""

    def placeholder(self, name: str) -> str:
        return f"%({name})s"

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

    context_located = json_at  # NULL when absent, jsonb 'null' for a JSON null

    def context_value(self, segments: tuple[str, ...]) -> Value:
        raw = self.json_at(segments)
        return _json_value(f"rm_value({raw})", f"rm_value_path({raw}, {self.bind(list(segments))}::text[])")

    def context_contains(self, segments: tuple[str, ...], operand: Scalar) -> str:
        if operand is None or _holds_nul(operand):
            return "FALSE"
        raw, path = self.json_at(segments), f"{self.bind(list(segments))}::text[]"
        element = _json_value("e.value", f"{path} || ARRAY[(e.n - 1)::text]")
        text = self._text_contains(f"rm_instr_text({raw}, m.context_text, {path})", operand)
        return (
            f"(CASE WHEN jsonb_typeof({raw}) = 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements({raw}) "
            f"WITH ORDINALITY AS e(value, n) WHERE {self.equal(element, operand)}) ELSE {text} END)"
        )

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
            if not isinstance(operand, str) and abs(operand) >= 2**63:
                return None  # SQLite reads a stored integer past 64 bits as a double: many equal this one
            for form in _stored_forms(operand):
                shapes += [form, {"value": form}]
        tests = []
        for shape in shapes:
            document: Any = shape
            for segment in reversed(segments):
                document = {segment: document}
            tests.append(f"m.context @> {self.bind(json.dumps(document))}::jsonb")
        return "(" + " OR ".join(tests) + ")"

    # ---- record fields ---------------------------------------------------------------------------

    def record_value(self, field: str) -> Value:
        # The column's number is the value, and an operand that stays text sorts after every number; a
        # text column reads a number operand as its text.
        column = RECORD_FIELDS[field]
        if field in INTEGER_FIELDS:
            return Value(f"{column}::numeric", "NULL::float8", "NULL::text", _as_number)
        if field in REAL_FIELDS:
            return Value("NULL::numeric", f"{column}::float8", "NULL::text", _as_number)
        return Value("NULL::numeric", "NULL::float8", f'{column} COLLATE "C"', _as_text)

    def record_contains(self, field: str, operand: Scalar) -> str:
        column = RECORD_FIELDS[field]
        if field in REAL_FIELDS:
            return self._text_contains(f"rm_real_text({column})", operand)
        return self._text_contains(f"{column}::text" if field in INTEGER_FIELDS else column, operand)

    def _text_contains(self, text: str, operand: Scalar) -> str:
        if operand is None or _holds_nul(operand):
            return "FALSE"
        return f"(strpos({text}, {self.bind(_as_text(operand))}) > 0)"

    def tag(self, operand: Scalar) -> Scalar:
        return None if operand is None or _holds_nul(operand) else _as_text(operand)

    # ---- comparisons by SQLite's rules -----------------------------------------------------------

    def is_null(self, value: Value) -> str:
        return f"({value.integer} IS NULL AND {value.real} IS NULL AND {value.text} IS NULL)"

    def equal(self, value: Value, operand: Operand) -> str:
        operand = value.operand(operand)
        if isinstance(operand, str):
            if _holds_nul(operand):
                return "FALSE"  # no stored text holds a NUL (SQLite reads a JSON string up to one)
            return f"({value.text} = {self.bind(operand)})"
        return self._numbers(value, "=", operand, texts="FALSE")

    def order(self, value: Value, sign: str, operand: Operand) -> str:
        operand = value.operand(operand)
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

    def _numbers(self, value: Value, sign: str, operand: float, texts: str) -> str:
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


def to_pg_sql(node: Node, prefix: str = "f") -> tuple[str, dict[str, Any]]:
    """Return ``(where_fragment, params)`` selecting the rows of ``memories m`` that satisfy ``node``."""
    builder = PgFilter(prefix)
    return builder.compile(node), builder.params
