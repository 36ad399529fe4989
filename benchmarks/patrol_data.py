"""A week of a patrolling robot, generated from a seed: the log both memories store, and the truth behind it.

The site is eight rooms on one floor (boxes in metres, 0..3 m high). Seven are in the ``map`` frame; the
yard, where the robot has no map, reports in ``odom``, whose origin sits 28 m along x from the map's: yard
positions in ``odom`` fall inside the kitchen's and the lab's ``map`` boxes, so a memory that compares
positions across frames puts yard sightings in the kitchen. Every room has places (a counter, a shelf)
where objects sit.

Objects carry an id and a label ("mug-1", "red mug"); labels are close on purpose ("red mug", "red cup",
"blue mug", "green mug", "红色杯子"), some are Chinese. Four objects are anonymous (a detector without a
tracker): two potted plants and two traffic cones, with a label and no id, each pair more than 10 m apart
and never moved. Some objects are moved at known times to a place in another room.

The robot patrols 06:00-22:00 every day for seven days, room after room (4-12 minutes a room). A sighting
is an object present in the visited room at that moment, at its true position plus Gaussian noise
(``NOISE_SIGMA`` per axis), in its room's frame. Lessons and episode outcomes (robot experience that names
no object, "grip_force=12.4N slipped on the wet mug") make up ``lesson_share`` of the log, at the robot's
position. Every record has a distinct time (millisecond resolution), so "the latest" is never a tie.

Pure: numpy and the standard library only, so the same module loads in another interpreter (the eMEM
runner's). ``save_log``/``load_log`` move a log between processes as gzip JSON.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

START = datetime(2026, 6, 1, tzinfo=timezone.utc).timestamp()
DAYS = 7
DAY = 86400.0
PATROL_HOURS = (6.0, 22.0)
NOISE_SIGMA = 0.03  # metres, per axis
POSITION_TOLERANCE = 0.25  # a reported position this close to the truth is "within noise" (> 4 sigma in 3-D)
FRAMES = ("map", "odom")
ODOM_ORIGIN = np.array([28.0, 0.0, 0.0])  # the odom origin in map coordinates
KINDS = ("sighting", "lesson")


@dataclass(frozen=True)
class Place:
    name: str
    name_zh: str
    fx: float  # position as fractions of the room's box
    fy: float
    z: float


@dataclass(frozen=True)
class Room:
    name: str
    name_zh: str
    low: tuple[float, float]  # map coordinates (x, y)
    high: tuple[float, float]
    frame: str
    places: tuple[Place, ...]

    def place_position(self, place: Place) -> np.ndarray:
        """The place's position in the room's own frame."""
        x = self.low[0] + place.fx * (self.high[0] - self.low[0])
        y = self.low[1] + place.fy * (self.high[1] - self.low[1])
        return to_frame(np.array([x, y, place.z]), self.frame)

    def box(self) -> tuple[list[float], list[float]]:
        """The room's box in its own frame, floor to 3 m."""
        low = to_frame(np.array([self.low[0], self.low[1], 0.0]), self.frame)
        high = to_frame(np.array([self.high[0], self.high[1], 3.0]), self.frame)
        return low.tolist(), high.tolist()


def to_frame(map_position: np.ndarray, frame: str) -> np.ndarray:
    """A map position expressed in ``frame``."""
    return map_position - ODOM_ORIGIN if frame == "odom" else map_position


def _places(*rows: tuple[str, str, float, float, float]) -> tuple[Place, ...]:
    return tuple(Place(*row) for row in rows)


ROOMS = (
    Room("kitchen", "厨房", (0, 0), (8, 6), "map", _places(
        ("counter", "台面", 0.2, 0.15, 0.9), ("table", "餐桌", 0.55, 0.5, 0.75),
        ("sink", "水槽", 0.85, 0.15, 0.9), ("shelf", "架子", 0.8, 0.85, 1.5))),
    Room("lab", "实验室", (0, 6), (8, 14), "map", _places(
        ("bench", "实验台", 0.3, 0.3, 0.9), ("fume hood", "通风橱", 0.8, 0.2, 1.0),
        ("cabinet", "柜子", 0.5, 0.85, 1.4))),
    Room("living room", "客厅", (8, 0), (18, 8), "map", _places(
        ("sofa", "沙发", 0.2, 0.7, 0.45), ("coffee table", "茶几", 0.45, 0.45, 0.4),
        ("tv stand", "电视柜", 0.85, 0.2, 0.5), ("bookshelf", "书架", 0.9, 0.85, 1.2))),
    Room("corridor", "走廊", (8, 8), (26, 10), "map", _places(
        ("hall bench", "长凳", 0.1, 0.5, 0.45), ("shoe rack", "鞋架", 0.5, 0.5, 0.3),
        ("wall hook", "挂钩", 0.9, 0.5, 1.6))),
    Room("workshop", "车间", (8, 10), (18, 18), "map", _places(
        ("workbench", "工作台", 0.3, 0.3, 0.9), ("tool wall", "工具墙", 0.1, 0.8, 1.5),
        ("cart", "推车", 0.75, 0.6, 0.8))),
    Room("office", "办公室", (18, 0), (26, 8), "map", _places(
        ("desk", "书桌", 0.3, 0.4, 0.75), ("filing cabinet", "文件柜", 0.85, 0.8, 1.0),
        ("window sill", "窗台", 0.6, 0.05, 0.9))),
    Room("storage room", "储藏室", (18, 10), (26, 16), "map", _places(
        ("rack", "货架", 0.2, 0.5, 1.2), ("floor", "地上", 0.6, 0.4, 0.0), ("bin", "箱子", 0.85, 0.8, 0.6))),
    Room("yard", "院子", (28, 0), (38, 12), "odom", _places(
        ("shed", "棚子", 0.2, 0.8, 1.0), ("patio table", "露台桌", 0.6, 0.3, 0.75),
        ("ground", "地上", 0.8, 0.7, 0.0))),
)  # fmt: skip
ROOM_INDEX = {room.name: i for i, room in enumerate(ROOMS)}


@dataclass(frozen=True)
class CatalogObject:
    object_id: str | None  # None: anonymous, sighted by label only
    label: str
    home: str  # room name
    place: str | None = None  # a fixed place (anonymous objects), else drawn from the seed


CATALOG = (
    CatalogObject("mug-1", "red mug", "kitchen"),
    CatalogObject("mug-2", "blue mug", "kitchen"),
    CatalogObject("cup-3", "red cup", "kitchen"),
    CatalogObject("cup-35", "红色杯子", "kitchen"),
    CatalogObject("cooker-36", "电饭煲", "kitchen"),
    CatalogObject("bottle-6", "water bottle", "kitchen"),
    CatalogObject("pot-37", "茶壶", "kitchen"),
    CatalogObject("remote-25", "remote control", "living room"),
    CatalogObject("book-26", "book", "living room"),
    CatalogObject("keys-23", "keys", "living room"),
    CatalogObject("wallet-24", "wallet", "living room"),
    CatalogObject("bag-21", "backpack", "living room"),
    CatalogObject("shoe-40", "拖鞋", "living room"),
    CatalogObject("laptop-8", "laptop", "office"),
    CatalogObject("tablet-9", "tablet", "office"),
    CatalogObject("charger-10", "phone charger", "office"),
    CatalogObject("office-28", "stapler", "office"),
    CatalogObject("office-29", "scissors", "office"),
    CatalogObject("mug-4", "green mug", "office"),
    CatalogObject("bank-38", "充电宝", "office"),
    CatalogObject("lab-31", "multimeter", "lab"),
    CatalogObject("lab-32", "oscilloscope probe", "lab"),
    CatalogObject("lab-33", "pipette", "lab"),
    CatalogObject("lab-34", "beaker", "lab"),
    CatalogObject("safety-20", "safety goggles", "lab"),
    CatalogObject("cup-5", "white cup", "lab"),
    CatalogObject("safety-18", "fire extinguisher", "corridor"),
    CatalogObject("umb-22", "umbrella", "corridor"),
    CatalogObject("box-16", "toolbox", "storage room"),
    CatalogObject("box-17", "cardboard box", "storage room"),
    CatalogObject("cable-11", "USB cable", "storage room"),
    CatalogObject("vac-39", "扫地机器人", "storage room"),
    CatalogObject("tool-12", "screwdriver", "workshop"),
    CatalogObject("tool-13", "hammer", "workshop"),
    CatalogObject("tool-14", "wrench", "workshop"),
    CatalogObject("tool-15", "drill", "workshop"),
    CatalogObject("tool-30", "tape measure", "workshop"),
    CatalogObject("safety-19", "first aid kit", "workshop"),
    CatalogObject("bottle-7", "thermos", "workshop"),
    CatalogObject("cart-41", "wheelbarrow", "yard"),
    CatalogObject("hose-42", "garden hose", "yard"),
    CatalogObject("tool-43", "shovel", "yard"),
    CatalogObject(None, "potted plant", "living room", "sofa"),
    CatalogObject(None, "potted plant", "office", "window sill"),
    CatalogObject(None, "traffic cone", "corridor", "wall hook"),
    CatalogObject(None, "traffic cone", "workshop", "tool wall"),
)
MOVED_SHARE = 0.3  # of the objects that may move (ids, outside the yard)


def is_chinese(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


@dataclass
class Segment:
    """Where an object is from ``start`` (inclusive) to ``end`` (exclusive)."""

    start: float
    end: float
    room: str
    place: str
    position: list[float]  # true position in the room's frame


@dataclass
class TrackedObject:
    key: str  # the id, or "label#n" for an anonymous object (truth only: no system sees it)
    object_id: str | None
    label: str
    segments: list[Segment] = field(default_factory=list)

    def segment_at(self, t: float) -> Segment:
        for segment in self.segments:
            if segment.start <= t < segment.end:
                return segment
        return self.segments[-1]


@dataclass
class Move:
    key: str
    at: float
    from_room: str
    to_room: str


@dataclass
class PatrolLog:
    """The records (columns of equal length, in time order) and the truth that produced them."""

    seed: int
    times: np.ndarray  # float64 epoch seconds, strictly increasing
    positions: np.ndarray  # (n, 3) float64, in the record's frame
    frames: np.ndarray  # int8 index into FRAMES
    kinds: np.ndarray  # int8 index into KINDS
    objects: np.ndarray  # int16 index into ``tracked``, -1 for a lesson
    rooms: np.ndarray  # int8 index into ROOMS
    text_ids: np.ndarray  # int32 index into ``texts``
    texts: list[str]
    tracked: list[TrackedObject]
    moves: list[Move]

    def __len__(self) -> int:
        return len(self.times)

    @property
    def end(self) -> float:
        """ "Now" for the queries: one minute after the last record."""
        return float(self.times[-1]) + 60.0

    def text(self, index: int) -> str:
        return self.texts[int(self.text_ids[index])]

    def record(self, index: int) -> dict[str, Any]:
        """One record as the runners store it: text, time, position, frame, kind and object."""
        obj = int(self.objects[index])
        tracked = self.tracked[obj] if obj >= 0 else None
        return {
            "index": index,
            "kind": KINDS[int(self.kinds[index])],
            "text": self.text(index),
            "observed_at": float(self.times[index]),
            "position": [round(float(v), 4) for v in self.positions[index]],
            "frame": FRAMES[int(self.frames[index])],
            "room": ROOMS[int(self.rooms[index])].name,
            "object_id": tracked.object_id if tracked else None,
            "label": tracked.label if tracked else None,
        }


def generate(n_sightings: int, seed: int = 7, lesson_share: float = 0.04) -> PatrolLog:
    """Generate a week of patrol with about ``n_sightings`` sightings plus lessons, from ``seed``."""
    rng = np.random.default_rng(seed)
    tracked, moves = _place_objects(rng)
    visit_rooms, visit_starts, visit_ends = _patrol(rng)
    n_lessons = round(n_sightings * lesson_share)
    weights = visit_ends - visit_starts
    counts = rng.multinomial(n_sightings + n_lessons, weights / weights.sum())
    times, rooms = [], []
    for room, start, end, count in zip(visit_rooms, visit_starts, visit_ends, counts, strict=True):
        times.append(np.sort(rng.uniform(start, end, count)))
        rooms.append(np.full(count, room, dtype=np.int8))
    all_times = _distinct_milliseconds(np.concatenate(times))
    all_rooms = np.concatenate(rooms)
    is_lesson = np.zeros(len(all_times), dtype=bool)
    is_lesson[rng.choice(len(all_times), n_lessons, replace=False)] = True
    return _records(rng, seed, all_times, all_rooms, is_lesson, tracked, moves)


def _place_objects(rng: np.random.Generator) -> tuple[list[TrackedObject], list[Move]]:
    """Each catalogue object at a place of its home room; some moved once or twice during the week."""
    tracked: list[TrackedObject] = []
    movable: list[int] = []
    anonymous_count: dict[str, int] = {}
    for entry in CATALOG:
        room = ROOMS[ROOM_INDEX[entry.home]]
        if entry.object_id is None:
            anonymous_count[entry.label] = anonymous_count.get(entry.label, 0) + 1
            key = f"{entry.label}#{anonymous_count[entry.label]}"
        else:
            key = entry.object_id
            if room.frame == "map":
                movable.append(len(tracked))
        place = next((p for p in room.places if p.name == entry.place), None) or _draw(rng, room.places)
        obj = TrackedObject(key, entry.object_id, entry.label)
        obj.segments.append(
            _segment(rng, START, START + DAYS * DAY, room, place, anonymous=place is not None)
        )
        tracked.append(obj)
    moves: list[Move] = []
    chosen = rng.choice(movable, round(len(movable) * MOVED_SHARE), replace=False)
    for index in sorted(int(i) for i in chosen):
        obj = tracked[index]
        count = int(rng.integers(1, 3))
        for at in np.sort(rng.uniform(START + 0.5 * DAY, START + (DAYS - 0.5) * DAY, count)):
            at = round(float(at), 3)
            old = obj.segments[-1]
            choices = [r for r in ROOMS if r.frame == "map" and r.name != old.room]
            room = _draw(rng, choices)
            old.end = at
            obj.segments.append(_segment(rng, at, START + DAYS * DAY, room, _draw(rng, room.places)))
            moves.append(Move(obj.key, at, old.room, room.name))
    moves.sort(key=lambda m: m.at)
    return tracked, moves


def _draw(rng: np.random.Generator, items: Any) -> Any:
    return items[int(rng.integers(len(items)))]


def _segment(
    rng: np.random.Generator, start: float, end: float, room: Room, place: Place, anonymous: bool = False
) -> Segment:
    """An object at ``place`` with its own offset on it (up to 0.3 m each way, none for a fixed place)."""
    offset = np.zeros(3) if anonymous else np.append(rng.uniform(-0.3, 0.3, 2), 0.0)
    position = room.place_position(place) + offset
    return Segment(start, end, room.name, place.name, [round(float(v), 4) for v in position])


def _patrol(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Room visits: the rooms in a fixed round, 4-12 minutes each, a minute between, 06:00-22:00."""
    rooms, starts, ends = [], [], []
    route = list(range(len(ROOMS)))
    step = 0
    for day in range(DAYS):
        t = START + day * DAY + PATROL_HOURS[0] * 3600
        stop = START + day * DAY + PATROL_HOURS[1] * 3600
        while t < stop:
            duration = float(rng.uniform(240, 720))
            rooms.append(route[step % len(route)])
            starts.append(t)
            ends.append(min(t + duration, stop))
            t += duration + 60
            step += 1
    return np.array(rooms), np.array(starts), np.array(ends)


def _distinct_milliseconds(times: np.ndarray) -> np.ndarray:
    """Round to milliseconds and push equal times apart by a millisecond each, keeping the order."""
    millis = np.round(np.sort(times) * 1000).astype(np.int64)
    # m[i] = max(m[i], m[i-1] + 1): subtracting the index turns the bumps into a running maximum
    shifted = np.maximum.accumulate(millis - np.arange(len(millis)))
    return (shifted + np.arange(len(millis))) / 1000.0


def _records(
    rng: np.random.Generator,
    seed: int,
    times: np.ndarray,
    rooms: np.ndarray,
    is_lesson: np.ndarray,
    tracked: list[TrackedObject],
    moves: list[Move],
) -> PatrolLog:
    """Pick what each moment records: an object present in the room, or a lesson at the robot's position."""
    n = len(times)
    positions = np.zeros((n, 3))
    objects = np.full(n, -1, dtype=np.int16)
    text_ids = np.zeros(n, dtype=np.int32)
    texts: list[str] = []
    text_index: dict[str, int] = {}
    keep = np.ones(n, dtype=bool)
    noise = rng.normal(0.0, NOISE_SIGMA, (n, 3))
    robot = rng.uniform(0.1, 0.9, (n, 2))
    move_times = np.array([m.at for m in moves])
    present_in: dict[tuple[int, int], list[int]] = {}  # (moves so far, room) -> objects there
    for i in range(n):
        room = ROOMS[int(rooms[i])]
        t = float(times[i])
        if is_lesson[i]:
            position = np.array([*(np.array(room.low) + robot[i] * np.subtract(room.high, room.low)), 0.0])
            positions[i] = to_frame(position, room.frame)
            text = lesson_text(rng, i, room)
        else:
            epoch = (int(np.searchsorted(move_times, t, side="right")), int(rooms[i]))
            if epoch not in present_in:
                present_in[epoch] = [k for k, o in enumerate(tracked) if o.segment_at(t).room == room.name]
            present = present_in[epoch]
            if not present:
                keep[i] = False
                continue
            k = present[int(rng.integers(len(present)))]
            segment = tracked[k].segment_at(t)
            objects[i] = k
            positions[i] = np.asarray(segment.position) + noise[i]
            text = sighting_text(rng, tracked[k].label, room, segment.place)
        text_ids[i] = text_index.setdefault(text, len(texts))
        if text_ids[i] == len(texts):
            texts.append(text)
    frames = np.array([FRAMES.index(ROOMS[int(r)].frame) for r in rooms], dtype=np.int8)
    kinds = np.where(is_lesson, 1, 0).astype(np.int8)
    return PatrolLog(
        seed, times[keep], np.round(positions[keep], 4), frames[keep], kinds[keep], objects[keep],
        rooms[keep], text_ids[keep], texts, tracked, moves,
    )  # fmt: skip


SIGHTING_TEMPLATES = (
    "{label} on the {place}",
    "{label} seen on the {place} in the {room}",
    "detected {label} at the {place}",
    "the {label} is on the {place}",
)
SIGHTING_TEMPLATES_ZH = ("{label}在{room}的{place}上", "看到{label}在{place}上")


def sighting_text(rng: np.random.Generator, label: str, room: Room, place_name: str) -> str:
    """A detector's caption of one sighting (Chinese when the label is Chinese)."""
    place = next(p for p in room.places if p.name == place_name)
    if is_chinese(label):
        template = _draw(rng, SIGHTING_TEMPLATES_ZH)
        return str(template.format(label=label, room=room.name_zh, place=place.name_zh))
    return str(_draw(rng, SIGHTING_TEMPLATES).format(label=label, room=room.name, place=place.name))


def lesson_text(rng: np.random.Generator, number: int, room: Room) -> str:
    """Robot experience that names no tracked object; ``number`` keeps every text distinct."""
    force = float(rng.uniform(5, 30))
    choice = int(rng.integers(7))
    place = _draw(rng, room.places)
    if choice == 0:
        return f"grip_force={force:.1f}N slipped on the wet mug during pick {number}"
    if choice == 1:
        reward = int(rng.integers(-80, 100))
        outcome = "succeeded" if reward > 0 else "failed"
        return f"Episode {number}: docking {outcome}, reward={reward}, {int(rng.integers(20, 400))} steps"
    if choice == 2:
        return f"door handle of the {room.name} needed {force:.1f}N to open (try {number})"
    if choice == 3:
        return f"floor near the {place.name} was slippery, speed cut to {force / 40:.2f} m/s (run {number})"
    if choice == 4:
        return f"camera exposure {int(force * 2)} ms washed out the cup by the window, frame {number}"
    if choice == 5:
        return f"第{number}次抓取：杯子太滑，夹持力{force:.1f}N不够"
    return f"battery at {int(force * 3)}% after {number} minutes of patrol; returned to dock"


def save_log(log: PatrolLog, path: Path) -> None:
    """Write the log (records and truth) as gzip JSON."""
    payload = {
        "seed": log.seed,
        "times": log.times.tolist(),
        "positions": log.positions.round(4).tolist(),
        "frames": log.frames.tolist(),
        "kinds": log.kinds.tolist(),
        "objects": log.objects.tolist(),
        "rooms": log.rooms.tolist(),
        "text_ids": log.text_ids.tolist(),
        "texts": log.texts,
        "tracked": [
            {
                "key": o.key,
                "object_id": o.object_id,
                "label": o.label,
                "segments": [vars(s) for s in o.segments],
            }
            for o in log.tracked
        ],
        "moves": [vars(m) for m in log.moves],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as handle:
        json.dump(payload, handle, ensure_ascii=False)


def load_log(path: Path) -> PatrolLog:
    """Read a log written by :func:`save_log`."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        raw = json.load(handle)
    tracked = [
        TrackedObject(o["key"], o["object_id"], o["label"], [Segment(**s) for s in o["segments"]])
        for o in raw["tracked"]
    ]
    return PatrolLog(
        seed=raw["seed"],
        times=np.asarray(raw["times"], dtype=np.float64),
        positions=np.asarray(raw["positions"], dtype=np.float64).reshape(-1, 3),
        frames=np.asarray(raw["frames"], dtype=np.int8),
        kinds=np.asarray(raw["kinds"], dtype=np.int8),
        objects=np.asarray(raw["objects"], dtype=np.int16),
        rooms=np.asarray(raw["rooms"], dtype=np.int8),
        text_ids=np.asarray(raw["text_ids"], dtype=np.int32),
        texts=list(raw["texts"]),
        tracked=tracked,
        moves=[Move(**m) for m in raw["moves"]],
    )
