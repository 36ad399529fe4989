"""Why a filter may match nothing, in words a robot or its operator can act on (pure).

A filter's condition on a context path that no memory carries (a typo: ``task.sucess``) matches nothing,
silently; a condition whose operand is of another kind than the values stored at its path
(``{"task.success": "true"}`` where ``true`` is stored) matches nothing either; and an order comparison
of stored numbers with a text operand (``{"params.grip_force": {"$lt": "abc"}}``) passes every number,
because filters compare by SQLite's rules, where every number sorts before any text. Recall reports
each as a warning (``service/recall/warnings.py`` reads the store); this module finds the conditions,
the paths and kinds a set of contexts holds, the nearest path to a missing one, and the wording.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from robotmem.query.filters import Condition, Node, Not

RANGES = ("$lt", "$lte", "$gt", "$gte", "$between")
MAX_PATH_DEPTH = 8  # context paths collected per context, levels deep
NEAREST_CUTOFF = 0.6  # difflib's similarity a suggested path must reach


@dataclass(frozen=True, slots=True)
class Checked:
    """A condition on a context path, as the filter wrote it (``task.success``)."""

    path: str
    operator: str
    operand: Any


def context_conditions(node: Node | None) -> list[Checked]:
    """Return the conditions of ``node`` on context paths, each once, in the filter's order."""
    found: dict[tuple[str, str, str], Checked] = {}
    for condition in _conditions(node):
        if condition.path[0] != "context" or len(condition.path) < 2:
            continue  # a record field: always there
        path = ".".join(condition.path[1:])
        key = (path, condition.operator, json.dumps(condition.operand, default=str))
        found.setdefault(key, Checked(path, condition.operator, condition.operand))
    return list(found.values())


def _conditions(node: Node | None) -> Iterator[Condition]:
    if node is None:
        return
    if isinstance(node, Condition):
        yield node
    elif isinstance(node, Not):
        yield from _conditions(node.part)
    else:
        for part in node.parts:
            yield from _conditions(part)


def needs_values(conditions: Iterable[Checked]) -> bool:
    """Whether a condition compares by order with a text operand (checked even when recall filled ``n``)."""
    return any(c.operator in RANGES and _text_operand(c) for c in conditions)


def _text_operand(condition: Checked) -> bool:
    operands = condition.operand if isinstance(condition.operand, tuple) else (condition.operand,)
    return any(isinstance(value, str) for value in operands)


def context_paths(contexts: Iterable[Mapping[str, Any]]) -> set[str]:
    """Return every dot path (each prefix too) the objects of ``contexts`` hold, up to 8 levels deep."""
    paths: set[str] = set()
    for context in contexts:
        stack: list[tuple[Mapping[str, Any], str, int]] = [(context, "", 0)]
        while stack:
            node, prefix, depth = stack.pop()
            for key, value in node.items():
                path = f"{prefix}.{key}" if prefix else str(key)
                paths.add(path)
                if isinstance(value, Mapping) and depth + 1 < MAX_PATH_DEPTH:
                    stack.append((value, path, depth + 1))
    return paths


def nearest_path(missing: str, known: Iterable[str]) -> str | None:
    """Return the known path most like ``missing`` (difflib's ratio at least 0.6), or None."""
    close = difflib.get_close_matches(missing, sorted(known), n=1, cutoff=NEAREST_CUTOFF)
    return close[0] if close else None


def kinds_at(contexts: Iterable[Mapping[str, Any]], path: str) -> set[str]:
    """Return the kinds (``number``, ``text``, ``bool``, ``null``, ``list``, ``object``) of the values at
    ``path`` in ``contexts``; a ``{"value": …}`` entry counts as its value, as filters compare it."""
    kinds: set[str] = set()
    parts = path.split(".")
    for context in contexts:
        value: Any = context
        for part in parts:
            if not isinstance(value, Mapping) or part not in value:
                break
            value = value[part]
        else:
            if isinstance(value, Mapping) and "value" in value:
                value = value["value"]
            kinds.add(kind_of(value))
    return kinds


def kind_of(value: Any) -> str:
    """Return the kind of a JSON value: ``bool``, ``number``, ``text``, ``null``, ``list`` or ``object``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "text"
    if value is None:
        return "null"
    return "list" if isinstance(value, list) else "object"


def missing_path(condition: Checked, where: str, known: Iterable[str]) -> str:
    """Return the warning for a path no memory in scope (``where``: ``collection 'default'``) carries."""
    nearest = nearest_path(condition.path, known)
    hint = f"; did you mean `{nearest}`?" if nearest is not None else ""
    return f"context_filter: no memory in {where} carries `{condition.path}`{hint}"


def kind_mismatch(condition: Checked, stored: set[str], sample: int) -> str | None:
    """Return the warning for an operand of another kind than every value stored at its path (``stored``:
    their kinds among the ``sample`` latest memories that carry it), or None when the kinds can meet."""
    if not stored or condition.operator in ("$exists", "$contains") or "null" in stored:
        return None
    operands = condition.operand if isinstance(condition.operand, tuple) else (condition.operand,)
    given = {kind_of(value) for value in operands}
    if given & stored or "null" in given or given <= {"number", "bool"} and stored <= {"number", "bool"}:
        return None
    held = " and ".join(sorted(stored))
    shown = json.dumps(condition.operand if len(operands) == 1 else list(operands), ensure_ascii=False)
    counted = f"{sample} memory" if sample == 1 else f"the latest {sample} memories"
    where = f"`{condition.path}` holds {held} values (in {counted} carrying it)"
    if condition.operator in RANGES and "text" in given and "number" in stored:
        return (
            f"context_filter: {where}, but {condition.operator} compares it with the text {shown}; every "
            "number sorts before any text, so this condition does not compare magnitudes: give a number"
        )
    return (
        f"context_filter: {where}, but {condition.operator} compares it with {shown}, which none of them is"
    )
