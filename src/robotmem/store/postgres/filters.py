"""Filters compiled to PostgreSQL with SQLite's comparison rules, so a filter passes the same rows on both engines.

``robotmem.filters`` compiles a filter tree for SQLite, whose rules decide what a comparison means:
``json_extract`` gives a context value as NULL (missing or JSON null), a number (true/false as 1/0), or
text (a string, or an array/object as its minified JSON); any number sorts before any text; text
compares byte by byte. A record column compares under its type affinity: a numeric column reads a
numeric-looking text operand as a number, a text column reads a number operand as its text.

Here the same tree becomes SQL over ``memories m`` whose context is ``json`` (the text as written: every
write through the store writes it compact, as ``json_extract`` gives an array or object). The
schema's ``rm_num``/``rm_txt`` functions split a JSON value into SQLite's two comparable classes, and
each comparison is written per class: a number operand against a text value is decided by the class
alone, as in SQLite. Numbers compare as ``numeric``: stored reals are the shortest decimal of their
double (Python writes them so), and the shortest decimals of two doubles order as the doubles do.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from robotmem.errors import ValidationError
from robotmem.filters import RECORD_FIELDS, All, Any_, Condition, Node, Not

# Record fields by the affinity SQLite gives their column.
NUMERIC_FIELDS = frozenset({"id", "confidence", "access_count"})
# SQLite reads a text as a number under NUMERIC affinity when all of it is one (spaces around allowed).
_NUMERIC_TEXT = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")
_SIGNS = {"$eq": "=", "$lt": "<", "$lte": "<=", "$gt": ">", "$gte": ">="}
_MAX_INDEX = 2**31 - 1


def sqlite_real_text(value: float) -> str:
    """Return the text SQLite gives a REAL (``%!.15g``: ``5.0``, ``0.1``, ``1.0e+20``)."""
    if not math.isfinite(value):
        return "Inf" if value > 0 else ("-Inf" if value < 0 else "NaN")
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


def _as_number(value: Any) -> Decimal | None:
    """The number a bound value is under NUMERIC affinity, or None when it stays text."""
    if isinstance(value, Decimal):
        return value
    if isinstance(value, bool):
        return Decimal(int(value))
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, str) and _NUMERIC_TEXT.fullmatch(value):
        number = float(value)
        return Decimal(value.strip()) if math.isfinite(number) else None
    return None


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
        """Return SQL for the JSON value at context ``segments`` (NULL when absent).

        A segment of digits indexes an array and nothing else, as in SQLite's ``$.a[0]``.
        """
        expression = "m.context"
        for segment in segments:
            if segment.isdigit():
                index = int(segment)
                expression = f"({expression} -> {index})" if index <= _MAX_INDEX else "NULL::json"
            else:
                expression = f"({expression} -> {self.bind(segment)}::text)"
        return expression

    def _context(self, node: Condition) -> str:
        raw = self.json_at(node.path[1:])
        op, operand = node.operator, node.operand
        if op == "$exists":
            return f"({raw} IS {'NOT ' if operand else ''}NULL)"
        if op == "$contains":
            if operand is None:
                return "FALSE"
            needle = self.bind(_as_text(operand))
            return (
                f"(CASE WHEN json_typeof({raw}) = 'array' THEN EXISTS (SELECT 1 FROM json_array_elements({raw}) e "
                f"WHERE {self._equal('rm_num(e.value)', 'rm_txt(e.value)', operand)}) "
                f"ELSE strpos(rm_instr_text({raw}), {needle}) > 0 END)"
            )
        value = f"rm_value({raw})"
        return self._compare(f"rm_num({value})", f"rm_txt({value})", op, operand)

    def _compare(self, num: str, txt: str, op: str, operand: Any) -> str:
        """A comparison of the SQLite value held as ``num`` (numbers) or ``txt`` (text) with ``operand``."""
        if op == "$eq":
            if operand is None:
                return f"({num} IS NULL AND {txt} IS NULL)"
            return self._equal(num, txt, operand)
        if op == "$ne":
            if operand is None:
                return f"({num} IS NOT NULL OR {txt} IS NOT NULL)"
            return f"(({self._equal(num, txt, operand)}) IS NOT TRUE)"
        if op in ("$lt", "$lte", "$gt", "$gte"):
            return self._order(num, txt, _SIGNS[op], operand)
        if op == "$between":
            low, high = operand
            return f"({self._order(num, txt, '>=', low)} AND {self._order(num, txt, '<=', high)})"
        if op in ("$in", "$nin"):
            listed = [v for v in operand if v is not None]
            matched = " OR ".join(self._equal(num, txt, v) for v in listed) or "FALSE"
            if op == "$in":
                return f"({matched})"
            # SQLite: NULL NOT IN (...) is NULL, so a missing value passes only through "IS NULL OR".
            absent = f"({num} IS NULL AND {txt} IS NULL)"
            if len(listed) < len(operand):  # a NULL in the list makes NOT IN never true
                return f"({absent})"
            return f"({absent} OR (({matched}) IS NOT TRUE))"
        raise ValidationError(f"context_filter: operator {op} cannot compare a value")

    def _equal(self, num: str, txt: str, operand: Any) -> str:
        if isinstance(operand, str):
            return f"({txt} = {self.bind(operand)})"
        number = _as_number(operand)
        return f"({num} = {self.bind(number)}::numeric)"

    def _order(self, num: str, txt: str, sign: str, operand: Any) -> str:
        # Every number sorts before every text.
        if isinstance(operand, str):
            numbers_pass = "TRUE" if sign in ("<", "<=") else "FALSE"
            return (
                f"(CASE WHEN {num} IS NOT NULL THEN {numbers_pass} "
                f'ELSE {txt} COLLATE "C" {sign} {self.bind(operand)} END)'
            )
        texts_pass = "TRUE" if sign in (">", ">=") else "FALSE"
        return (
            f"(CASE WHEN {num} IS NOT NULL THEN {num} {sign} {self.bind(_as_number(operand))}::numeric "
            f"WHEN {txt} IS NOT NULL THEN {texts_pass} END)"
        )

    # ---- record fields ---------------------------------------------------------------------------

    def _record(self, node: Condition) -> str:
        field = node.path[0]
        column = RECORD_FIELDS[field]
        op, operand = node.operator, node.operand
        if op == "$exists":
            return f"({column} IS {'NOT ' if operand else ''}NULL)"
        if op == "$contains":
            if operand is None:
                return "FALSE"
            text = f"{column}::text" if field in NUMERIC_FIELDS else column
            return f"(strpos({text}, {self.bind(_as_text(operand))}) > 0)"
        if field in NUMERIC_FIELDS:
            # The column's number is the value; an operand that stays text sorts after every number.
            return self._compare(f"{column}::numeric", "NULL::text", op, _numeric_operand(op, operand))
        return self._compare("NULL::numeric", f'{column} COLLATE "C"', op, _text_operand(op, operand))

    def _tags(self, node: Condition) -> str:
        has = "EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.id{})"
        op, operand = node.operator, node.operand
        if op in ("$eq", "$contains", "$ne") and operand is None:
            return "TRUE" if op == "$ne" else "FALSE"
        if op in ("$eq", "$contains"):
            return "(" + has.format(f" AND t.tag = {self.bind(_as_text(operand))}") + ")"
        if op == "$ne":
            return "(NOT " + has.format(f" AND t.tag = {self.bind(_as_text(operand))}") + ")"
        if op in ("$in", "$nin"):
            listed = ", ".join(self.bind(_as_text(v)) for v in operand if v is not None) or "NULL"
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
        number = _as_number(value)
        return value if number is None else number

    return _convert(op, operand, one)


def _text_operand(op: str, operand: Any) -> Any:
    """An operand as SQLite sees it beside a text column: numbers become their text."""
    return _convert(op, operand, lambda value: value if value is None else _as_text(value))


def to_pg_sql(node: Node, prefix: str = "f") -> tuple[str, dict[str, Any]]:
    """Return ``(where_fragment, params)`` selecting the rows of ``memories m`` that satisfy ``node``."""
    builder = PgFilter(prefix)
    return builder.compile(node), builder.params
