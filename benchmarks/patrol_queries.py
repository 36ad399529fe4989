"""The patrol queries, their exact answers by brute force over the generated records, and how answers score.

Query kinds (``KINDS``), each a dict ``{"id", "kind", "args", "truth"}``; a runner reads ``args`` only:

    last_seen_id     last_seen(object_id=...): the object's latest sighting
    last_seen_label  last_seen(query="where is my red cup" | "我的红色杯子在哪里"): the labelled object's latest
    unknown          an id or a description of no object in the log: the answer is empty
    as_of            last_seen(object_id=..., as_of=t): the latest sighting at or before t (before and after moves)
    region_window    recall(region=room sphere or box, since, until, order="recent"): every memory there, newest first
    region_query     the same with a query term ("mug", "杯子", "docking"): memories matching the term rule
    recent           recall(region=..., since="-2h" relative to the end of the log, order="recent")
    around           around(position, radius, frame="map"): objects whose latest sighting in that frame is within
                     radius (3-D distance), nearest first

The term rule (region_query): a memory matches when its text contains the term as a whole word, case
ignored (words are runs of ``[a-z0-9_]``); a Chinese term matches as a substring. ``region_window`` and
``recent`` have no term: every memory in the region and window matches. A region compares positions only
within its frame. At most ``n`` memories are expected (the newest); an answer is correct when it holds the
same memories (order is reported apart, since eMEM ranks by similarity).

An object answer is correct when its first object is the expected one (same id; an answer without ids,
eMEM's entities, is matched by label), its ``observed_at`` is the expected sighting's time (within 2 ms),
its frame is the sighting's frame and its position lies within ``POSITION_TOLERANCE`` of where the object
truly was. ``around`` is correct when the ids returned equal the ids expected (objects without an id,
which the truth cannot name across systems, are left out of both sides).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

import numpy as np
from benchmarks.patrol_data import (
    DAY,
    FRAMES,
    POSITION_TOLERANCE,
    ROOMS,
    START,
    PatrolLog,
    is_chinese,
)

KINDS = (
    "last_seen_id",
    "last_seen_label",
    "unknown",
    "as_of",
    "region_window",
    "region_query",
    "recent",
    "around",
)
OBJECT_KINDS = ("last_seen_id", "last_seen_label", "unknown", "as_of")
MEMORY_KINDS = ("region_window", "region_query", "recent")
MEMORY_N = 100
AROUND_N = 50
LABEL_TEMPLATES = (
    "the {label}",
    "where is my {label}",
    "where did I last see the {label}",
    "find the {label}",
)
LABEL_TEMPLATES_ZH = ("{label}", "我的{label}在哪里", "{label}在哪", "上次看到{label}是在哪里")
UNKNOWN_IDS = ("mug-99", "cup-30", "drone-1", "tool-7")
UNKNOWN_TEXTS = ("the purple giraffe", "where is my violin", "紫色长颈鹿在哪里")
TERMS = (
    "mug",
    "cup",
    "red",
    "bottle",
    "box",
    "docking",
    "slippery",
    "episode",
    "杯子",
    "抓取",
    "cable",
    "tool",
)
RELATIVE = {"-30m": 1800.0, "-2h": 7200.0, "-1d": DAY}
WORD = re.compile(r"[a-z0-9_]+")


def iso(epoch: float) -> str:
    """An epoch time as ISO-8601 UTC with milliseconds."""
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat(timespec="milliseconds")


def matches_term(text: str, term: str) -> bool:
    """The documented text-match rule: a whole word (case ignored), or a Chinese substring."""
    if is_chinese(term):
        return term in text
    return term.lower() in WORD.findall(text.lower())


# ---- queries ----------------------------------------------------------------------------------------


def make_queries(log: PatrolLog, seed: int = 11) -> list[dict[str, Any]]:
    """Every query kind, drawn from the log with ``seed``; ``truth`` holds what only the scorer reads."""
    rng = np.random.default_rng(seed)
    queries: list[dict[str, Any]] = []

    def add(kind: str, args: dict[str, Any], truth: dict[str, Any] | None = None) -> None:
        count = sum(q["kind"] == kind for q in queries)
        queries.append({"id": f"{kind}-{count:03d}", "kind": kind, "args": args, "truth": truth or {}})

    named = [o for o in log.tracked if o.object_id is not None]
    for obj in named:
        add("last_seen_id", {"object_id": obj.object_id})
        templates = LABEL_TEMPLATES_ZH if is_chinese(obj.label) else LABEL_TEMPLATES
        for k in rng.choice(len(templates), 2, replace=False):
            add("last_seen_label", {"text": templates[int(k)].format(label=obj.label)}, {"key": obj.key})
    for object_id in UNKNOWN_IDS:
        add("unknown", {"object_id": object_id})
    for text in UNKNOWN_TEXTS:
        add("unknown", {"text": text})
    _as_of_queries(log, rng, add)
    _memory_queries(log, rng, add)
    for _ in range(30):
        room = ROOMS[int(rng.integers(len(ROOMS) - 1))]  # map rooms
        place = room.places[int(rng.integers(len(room.places)))]
        position = (room.place_position(place) + np.append(rng.uniform(-0.5, 0.5, 2), 0.0)).round(3)
        since = None if rng.random() < 0.7 else log.end - DAY
        args = {"position": position.tolist(), "radius": float(rng.choice([1.0, 2.0, 3.0])), "frame": "map"}
        add("around", {**args, "since": since, "n": AROUND_N})
    return queries


def _as_of_queries(log: PatrolLog, rng: np.random.Generator, add: Any) -> None:
    """Just before and a while after every move, random moments, and a moment before any sighting."""
    for move in log.moves:
        add("as_of", {"object_id": move.key, "as_of": round(move.at - 1.0, 3)}, {"moment": "before move"})
        add("as_of", {"object_id": move.key, "as_of": round(move.at + 7200.0, 3)}, {"moment": "after move"})
    named = [o.object_id for o in log.tracked if o.object_id is not None]
    for _ in range(20):
        at = float(rng.uniform(START + DAY, log.end))
        add(
            "as_of",
            {"object_id": named[int(rng.integers(len(named)))], "as_of": round(at, 3)},
            {"moment": "random"},
        )
    add("as_of", {"object_id": named[0], "as_of": START + 3600.0}, {"moment": "before any sighting"})


def _memory_queries(log: PatrolLog, rng: np.random.Generator, add: Any) -> None:
    """Room regions (sphere and box) over a morning or a few hours, with and without a term."""
    reference = Reference(log)
    for kind in ("region_window", "region_query"):
        for i in range(30):
            room = ROOMS[int(rng.integers(len(ROOMS)))]
            day = int(rng.integers(DAYS_QUERIED))
            if rng.random() < 0.5:
                since = START + day * DAY + 6 * 3600  # "this morning"
                until = since + 6 * 3600
            else:
                since = START + day * DAY + float(rng.uniform(6, 20)) * 3600
                until = since + float(rng.choice([1, 2, 3])) * 3600
            args = {
                "region": room_region(room, "sphere" if i % 2 == 0 else "box"),
                "since": since,
                "until": until,
            }
            if kind == "region_query":
                args["text"] = _term_present(reference, args, rng)
            add(kind, {**args, "n": MEMORY_N}, {"room": room.name})
    for i in range(15):
        room = ROOMS[int(rng.integers(len(ROOMS)))]
        relative = list(RELATIVE)[i % len(RELATIVE)]
        args = {"region": room_region(room, "sphere"), "since": relative, "n": MEMORY_N}
        add("recent", args, {"room": room.name, "since": log.end - RELATIVE[relative]})


DAYS_QUERIED = 7


def _term_present(reference: Reference, args: dict[str, Any], rng: np.random.Generator) -> str:
    """A term that some memory in the region and window matches (nine times in ten), else any term."""
    present = [t for t in TERMS if reference.memories(args["region"], args["since"], args["until"], t, 1)]
    pool = present if present and rng.random() < 0.9 else list(TERMS)
    return str(pool[int(rng.integers(len(pool)))])


def room_region(room: Any, shape: str) -> dict[str, Any]:
    """A room as a region in its own frame: the box floor to 3 m, or the sphere that the box's floor plan
    fits in (centre at 1 m high, radius half the shorter side plus 1 m)."""
    low, high = room.box()
    if shape == "box":
        return {"field": "spatial.position", "min": low, "max": high, "frame": room.frame}
    centre = [(low[0] + high[0]) / 2, (low[1] + high[1]) / 2, 1.0]
    radius = min(high[0] - low[0], high[1] - low[1]) / 2 + 1.0
    return {"field": "spatial.position", "center": centre, "radius": radius, "frame": room.frame}


# ---- the brute-force reference ----------------------------------------------------------------------


class Reference:
    """Exact answers by scanning the records with numpy (no index, no approximation)."""

    def __init__(self, log: PatrolLog) -> None:
        self.log = log
        self.by_key = {o.key: k for k, o in enumerate(log.tracked)}
        self.by_id = {o.object_id: k for k, o in enumerate(log.tracked) if o.object_id}
        self.rows_of = [np.flatnonzero(log.objects == k) for k in range(len(log.tracked))]
        self._term_cache: dict[str, np.ndarray] = {}

    def answer(self, query: dict[str, Any]) -> list[Any]:
        """The exact answer to one query: object answers or record indices."""
        kind, args = query["kind"], query["args"]
        if kind in ("last_seen_id", "as_of"):
            return self.last_seen(self.by_id.get(args["object_id"]), args.get("as_of"))
        if kind == "last_seen_label":
            return self.last_seen(self.by_key[query["truth"]["key"]], None)
        if kind == "unknown":
            return []
        if kind == "recent":
            return self.memories(args["region"], query["truth"]["since"], None, None, args["n"])
        if kind in MEMORY_KINDS:
            return self.memories(args["region"], args["since"], args["until"], args.get("text"), args["n"])
        if kind == "around":
            return self.around(args["position"], args["radius"], args["frame"], args["since"], args["n"])
        raise ValueError(f"unknown query kind {kind!r}")

    def latest_row(self, k: int, as_of: float | None = None) -> int | None:
        """The row of object ``k``'s latest sighting at or before ``as_of``."""
        rows = self.rows_of[k]
        if as_of is not None:
            rows = rows[: int(np.searchsorted(self.log.times[rows], as_of, side="right"))]
        return int(rows[-1]) if len(rows) else None

    def last_seen(self, k: int | None, as_of: float | None) -> list[dict[str, Any]]:
        row = None if k is None else self.latest_row(k, as_of)
        return [] if row is None else [self.object_answer(row)]

    def object_answer(self, row: int) -> dict[str, Any]:
        obj = self.log.tracked[int(self.log.objects[row])]
        return {
            "object": obj.object_id,
            "label": obj.label,
            "position": self.log.positions[row].tolist(),
            "frame": FRAMES[int(self.log.frames[row])],
            "observed_at": float(self.log.times[row]),
            "record": row,
        }

    def memories(
        self, region: dict[str, Any], since: float, until: float | None, text: str | None, n: int
    ) -> list[int]:
        log = self.log
        mask = (log.frames == FRAMES.index(region["frame"])) & in_region(log.positions, region)
        mask &= log.times >= since
        if until is not None:
            mask &= log.times <= until
        if text:
            mask &= self._matching(text)[log.text_ids]
        rows = np.flatnonzero(mask)
        return [int(r) for r in rows[::-1][:n]]

    def _matching(self, term: str) -> np.ndarray:
        if term not in self._term_cache:
            self._term_cache[term] = np.array([matches_term(t, term) for t in self.log.texts], dtype=bool)
        return self._term_cache[term]

    def around(
        self, position: list[float], radius: float, frame: str, since: float | None, n: int
    ) -> list[str]:
        """Ids of the objects whose latest sighting in ``frame`` (since ``since``) is within ``radius``."""
        log, centre, found = self.log, np.asarray(position), []
        for k, obj in enumerate(log.tracked):
            rows = self.rows_of[k]
            rows = rows[log.frames[rows] == FRAMES.index(frame)]
            if obj.object_id is None or not len(rows) or (since is not None and log.times[rows[-1]] < since):
                continue
            distance = float(np.linalg.norm(log.positions[rows[-1]] - centre))
            if distance <= radius:
                found.append((distance, obj.object_id))
        return [object_id for _, object_id in sorted(found)[:n]]


def in_region(positions: np.ndarray, region: dict[str, Any]) -> np.ndarray:
    """Which positions lie in a sphere/circle (``center``, ``radius``) or a box (``min``, ``max``)."""
    if "center" in region:
        centre = np.asarray(region["center"], dtype=np.float64)
        distance = np.linalg.norm(positions[:, : len(centre)] - centre, axis=1)
        return np.asarray(distance <= float(region["radius"]))
    low, high = np.asarray(region["min"]), np.asarray(region["max"])
    inside = (positions[:, : len(low)] >= low) & (positions[:, : len(high)] <= high)
    return np.asarray(inside.all(axis=1))


# ---- scoring ----------------------------------------------------------------------------------------


def score(query: dict[str, Any], expected: list[Any], answer: list[Any], log: PatrolLog) -> dict[str, Any]:
    """``{"correct", "recall", "ordered"}`` of one answer against the reference's."""
    kind = query["kind"]
    if kind in OBJECT_KINDS:
        if not expected:
            return {"correct": not answer}
        return {"correct": bool(answer) and same_sighting(answer[0], expected[0], log)}
    if kind == "around":
        named = {o.object_id for o in log.tracked if o.object_id}
        got = [a for a in answer if a in named]
        return {"correct": set(got) == set(expected), "recall": _share(set(got), set(expected))}
    got_rows = [int(a) for a in answer]
    return {
        "correct": set(got_rows) == set(expected),
        "recall": _share(set(got_rows), set(expected)),
        "ordered": got_rows == list(expected),
    }


def _share(got: set[Any], expected: set[Any]) -> float:
    return len(got & expected) / len(expected) if expected else float(not got)


def same_sighting(answer: dict[str, Any], expected: dict[str, Any], log: PatrolLog) -> bool:
    """Right object, right time (2 ms), right frame, position within noise of the truth."""
    if answer.get("object") is not None:
        if answer["object"] != expected["object"]:
            return False
    elif answer.get("label") != expected["label"]:
        return False
    observed = parse_time(answer.get("observed_at"))
    if observed is None or abs(observed - expected["observed_at"]) > 0.002:
        return False
    if answer.get("frame", expected["frame"]) != expected["frame"]:
        return False
    obj = log.tracked[int(log.objects[expected["record"]])]
    truth = np.asarray(obj.segment_at(expected["observed_at"]).position)
    position = np.asarray(answer.get("position") or [np.inf] * 3, dtype=np.float64)
    return len(position) == 3 and float(np.linalg.norm(position - truth)) <= POSITION_TOLERANCE


def parse_time(value: Any) -> float | None:
    """Epoch seconds from a number or an ISO-8601 string (a zone-less one is read as UTC)."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()
