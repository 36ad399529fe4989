"""Recall's warnings: the conditions on context paths that no memory in scope carries, or whose operand
is of another kind than the values stored there (the wording and rules: ``query/explain``); and a region's
or spatial sort's frame in which no memory has a position (``frame_warnings``).

They are looked for when a recall with a filter returns fewer than ``n`` memories (what a filter that
cannot match looks like), and always for an order comparison with a text operand (which matches too
much, not too little). The scope is the collections searched, active memories of any confidence. A
path's presence is exact (the filter ``{path: {"$exists": true}}`` on the store); the kinds stored at a
path are read from the latest ``KIND_SAMPLE`` memories that carry it, and the nearest existing path
from the paths of the latest ``PATH_SAMPLE`` memories. A condition that some memory meets on its own is
not read further (its path and kind are there), unless it compares by order with a text. Measured on 20k memories (2 cores, load 8): a
filter that matches, 28 ms; one with a missing path, 170 ms (the warning costs the difference).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from robotmem.query import explain
from robotmem.query.filters import Condition
from robotmem.query.regions import INDEXED_PATHS
from robotmem.records import Hit
from robotmem.service.recall.plan import RecallPlan
from robotmem.store.protocol import RecallScope, StoreTx

KIND_SAMPLE = 200
PATH_SAMPLE = 500
FRAMES_SHOWN = 20  # a fleet's per-robot frames (robot7/odom …) are named up to this many


def filter_warnings(tx: StoreTx, plan: RecallPlan, searched: Sequence[str], returned: int) -> list[str]:
    """Return the warnings about ``plan``'s filter over the collections ``searched`` (empty when none)."""
    conditions = explain.context_conditions(plan.filter)
    if not conditions or not searched or (returned >= plan.n and not explain.needs_values(conditions)):
        return []
    where = _where(searched)
    warnings: list[str] = []
    known: set[str] | None = None
    for condition in conditions:
        if condition.operator == "$exists":
            continue  # asking whether a path is there is no mistake either way
        if not explain.needs_values([condition]) and _matches(tx, searched, condition):
            continue  # a condition some memory meets names a path and a kind that are there
        carriers = _carriers(tx, searched, condition.path)
        if not carriers:
            if known is None:
                known = explain.context_paths(_contexts(tx, searched, None, PATH_SAMPLE))
            warnings.append(explain.missing_path(condition, where, known))
            continue
        kinds = explain.kinds_at(carriers, condition.path)
        mismatch = explain.kind_mismatch(condition, kinds, len(carriers))
        if mismatch is not None:
            warnings.append(mismatch)
    return list(dict.fromkeys(warnings))


def _where(searched: Sequence[str]) -> str:
    if len(searched) == 1:
        return f"collection '{searched[0]}'"
    return "collections " + ", ".join(f"'{name}'" for name in searched)


def _matches(tx: StoreTx, searched: Sequence[str], condition: explain.Checked) -> bool:
    """Whether some active memory of ``searched`` meets ``condition`` alone (a mask or one row to find)."""
    node = Condition(("context", *condition.path.split(".")), condition.operator, condition.operand)
    return any(
        tx.candidates(RecallScope(collection=name, min_confidence=0.0, filter=node)).listed(1, order="id")
        for name in searched
    )


def _carriers(tx: StoreTx, searched: Sequence[str], path: str) -> list[dict[str, Any]]:
    """Return the contexts of the latest ``KIND_SAMPLE`` active memories of ``searched`` carrying ``path``."""
    return _contexts(tx, searched, Condition(("context", *path.split(".")), "$exists", True), KIND_SAMPLE)


def _contexts(
    tx: StoreTx, searched: Sequence[str], condition: Condition | None, limit: int
) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for collection in searched:
        scope = RecallScope(collection=collection, min_confidence=0.0, filter=condition)
        ids = tx.candidates(scope).listed(limit, order="newest")
        found += [memory.context for memory in tx.memories.fetch(ids).values()]
    return found


def frame_warnings(tx: StoreTx, plan: RecallPlan, hits: Sequence[Hit]) -> list[str]:
    """Return a warning for the region's frame when the recall returned nothing, and for the spatial
    sort's when no memory returned has a distance, if the spatial index holds no position in that frame
    (a ROS frame id written ``/map`` where the positions say ``map``, say)."""
    asked: list[tuple[str, tuple[str, ...], str]] = []
    if plan.region is not None and not hits:
        asked.append(("region.frame", plan.region.path, plan.region.frame))
    if plan.spatial is not None and all(hit.spatial_distance is None for hit in hits):
        asked.append(("spatial_sort.frame", plan.spatial.path, plan.spatial.frame))
    return missing_frames(tx, asked)


def missing_frames(tx: StoreTx, asked: Sequence[tuple[str, tuple[str, ...], str]]) -> list[str]:
    """Return a warning for each ``(field, path, frame)`` asked whose frame holds no position at ``path``,
    naming the frames that do. Only the indexed path (``INDEXED_PATHS``) is asked: the index lists its
    frames in one lookup each, read only when some frame is asked."""
    asked = [(field, path, frame) for field, path, frame in asked if path in INDEXED_PATHS]
    stored = tx.browse.position_frames() if asked else []
    shown = ", ".join(repr(name) for name in stored[:FRAMES_SHOWN])
    more = f" and {len(stored) - FRAMES_SHOWN} more" if len(stored) > FRAMES_SHOWN else ""
    there = f"frames with a position: {shown}{more}" if stored else "no memory has a position"
    return [
        f"{field}: no memory has a position at `{'.'.join(path)}` in frame {frame!r} ({there})"
        for field, path, frame in asked
        if frame not in stored
    ]
