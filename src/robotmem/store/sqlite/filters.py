"""SQLite's dialect of the filter walk (``query.filters.FilterWalk``), whose rules are the language's own.

``json_extract`` gives a context value as NULL (missing or JSON null), an INTEGER (an integer literal
within 64 bits; true/false as 1/0), a REAL (any other number, so a literal past 64 bits too) or text (a
string, or an array/object as its minified JSON); any number sorts before any text; text compares byte
by byte; numbers compare by their exact values, an INTEGER against a REAL too (a nanosecond stamp of
1.7e18 against a double near it). A record column compares under its type affinity: a numeric column
reads a numeric-looking text operand as a number (``1e400`` as infinity), a text column reads a number
operand as its text (a REAL as ``%!.15g``: ``1.0``, ``0.3``, ``1.0e+16``). Here every comparison is
SQLite's own operator; the other engines emulate what it answers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from robotmem.query.filters import RECORD_FIELDS, FilterWalk, Node, Operand, Scalar


def json_path(segments: Sequence[str]) -> str:
    """Return the SQLite JSON path of context ``segments`` (digits index arrays; keys are quoted)."""
    return "$" + "".join(
        f"[{segment}]" if segment.isdigit() else "." + json.dumps(segment, ensure_ascii=False)
        for segment in segments
    )


class SqlBuilder(FilterWalk[str]):
    """Compiles a filter tree into a WHERE fragment over ``memories m`` with ``:name`` parameters."""

    def placeholder(self, name: str) -> str:
        return ":" + name

    def context_located(self, segments: tuple[str, ...]) -> str:
        return f"json_type(m.context, {self.bind(json_path(segments))})"

    def context_value(self, segments: tuple[str, ...]) -> str:
        """Return SQL for the context value a condition at ``segments`` compares."""
        path = self.bind(json_path(segments))
        kind = f"json_type(m.context, {path})"
        # A {"value": .., "unit": ..} parameter compares by its value, an array as its minified JSON.
        return (
            f"(CASE WHEN {kind} = 'object' THEN json_extract(m.context, {path} || '.value') "
            f"WHEN {kind} = 'array' THEN json(json_extract(m.context, {path})) "
            f"ELSE json_extract(m.context, {path}) END)"
        )

    def context_contains(self, segments: tuple[str, ...], operand: Scalar) -> str:
        path, needle = self.bind(json_path(segments)), self.bind(operand)
        return (
            f"(CASE WHEN json_type(m.context, {path}) = 'array' THEN EXISTS (SELECT 1 FROM json_each(m.context, "
            f"{path}) WHERE json_each.value = {needle}) ELSE instr(json_extract(m.context, {path}), {needle}) > 0 END)"
        )

    def record_value(self, field: str) -> str:
        return RECORD_FIELDS[field]

    def record_contains(self, field: str, operand: Scalar) -> str:
        return f"(instr({RECORD_FIELDS[field]}, {self.bind(operand)}) > 0)"  # instr reads a number as text

    def is_null(self, value: str) -> str:
        return f"({value} IS NULL)"

    def equal(self, value: str, operand: Operand) -> str:
        return f"({value} = {self.bind(operand)})"

    def order(self, value: str, sign: str, operand: Operand) -> str:
        return f"({value} {sign} {self.bind(operand)})"

    def between(self, value: str, low: Operand, high: Operand) -> str:
        return f"({value} BETWEEN {self.bind(low)} AND {self.bind(high)})"

    def among(self, value: str, listed: Sequence[Operand]) -> str:
        return f"({value} IN ({', '.join(self.bind(operand) for operand in listed)}))"


def to_sql(node: Node, prefix: str = "f") -> tuple[str, dict[str, Any]]:
    """Return ``(where_fragment, params)`` selecting the rows of ``memories m`` that satisfy ``node``.

    Raises ``ValidationError`` for an operator that does not apply to the field (e.g. ``$lt`` on tags).
    """
    builder = SqlBuilder(prefix)
    return builder.compile(node), builder.params
