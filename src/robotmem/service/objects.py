"""Objects that persist: ``last_seen`` ("where did I last see the red mug?") and ``around`` ("what is
around me now?"), over the sightings recall already indexes.

A sighting is any memory whose context names an object: ``{"object": {"id": "mug-3", "label": "red mug"}}``
with a position (``spatial.position``, ``spatial.frame``). An object with an id is every sighting of that id,
whatever the distance between them: a later sighting elsewhere means it moved, and the earlier ones stay its
history. Sightings with a label and no id are grouped by the setting ``object_group_radius``: in time order, a
sighting joins the group of the same label and frame whose latest position lies within the radius, else it
starts one.

A sighting is read as a ``Sighting`` (the object's id and label, the position, its frame and the time), not
as a whole record: ``tx.memories.sightings``. The store orders sightings by ``SIGHTING_FIELD``.
``map_tracks`` turns one frame's sightings into the web map's objects: each one's latest position there
and its track, by the same rules.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeGuard, TypeVar

import numpy as np

from robotmem.errors import ValidationError
from robotmem.formats.inputs import AroundInput, LastSeenInput
from robotmem.formats.results import AroundResult, LastSeenResult, MapObject, ObjectSighting
from robotmem.formats.serialize import (
    around_result,
    last_seen_result,
    map_object,
    object_sighting,
    with_distance,
)
from robotmem.formats.validation import resolve_bound, resolve_window
from robotmem.query.filters import All, Condition, Node
from robotmem.query.regions import DEFAULT_FRAME, Region
from robotmem.records import Hit, MapSighting, Sighting
from robotmem.service.engine import Engine
from robotmem.service.recall.pipeline import execute
from robotmem.service.recall.plan import RecallPlan
from robotmem.service.recall.scoring import bm25_words
from robotmem.service.recall.warnings import missing_frames
from robotmem.store.protocol import CandidateSource, ChannelQuery, RecallScope, StoreTx
from robotmem.text.naming import fold_value, value_candidates
from robotmem.text.tokens import CJK_RANGES, or_match

# When a sighting happened: the record field filters and the store's order use.
# With event time stored, these become "observed_at" and the order "recent" (the one place to change).
SIGHTING_FIELD = "observed_at"
NEWEST_FIRST = "recent"
_LABEL_POOL = 100  # sightings recall ranks to resolve a description to objects
_LABEL_POOL_WIDE = 2000  # ranked again when the first pool, full, named no object
_LABEL_BLOCK = 20  # carriers of a value read to tell whether it is an object's label or id
_BLOCK = 500
# Words of a question about where something is that name no object ("where did I last see ..."; "...在哪里"):
# left out before a description is compared with an object's names (``_Naming``).
# fmt: off
QUESTION_WORDS = frozenset((
    "last", "latest", "lately", "recently", "see", "saw", "seen", "find", "found",
    "locate", "located", "show", "spot", "spotted", "look", "looking",
    "我", "的", "在", "哪", "哪里", "哪儿", "上次", "最后", "看到", "见到", "看见", "找", "找到", "是", "了", "吗",
))
# fmt: on

_HAS_OBJECT = Condition(("context", "object"), "$exists", True)
# ``around`` reads each object's latest sighting when the collection names at most this many object ids.
MOST_OBJECTS = 1000
# Why ``last_seen`` found nothing (its ``note``).
NO_SUCH_ID = (
    "no sighting in collection {collection!r} names object id {object_id!r}: nothing is known of it here"
)
NOT_IN_SPAN = (
    "object {object_id!r} has {count} sightings in collection {collection!r}, none in the window, as_of or "
    "region asked"
)
NOTHING_NAMED = (
    "no object sighted in collection {collection!r} (in the window, as_of and region asked) is named by the "
    "description (its id or label, or every word asked among them): nothing is known of it here"
)
NO_SIGHTING = (
    "no sighting (a memory whose context names an object) in collection {collection!r} in the window, "
    "as_of and region asked"
)
NAMED_BY_ID = 5  # ``_Naming``'s rank of an object whose id a description holds as written
_CJK = re.compile(f"[{CJK_RANGES}]")
# An id-like word: letters and digits, a digit among them, joined by "-" or "_" ("mug-30", "R2-D2", "tb_1").
_ID_LIKE = re.compile(r"(?<![\w-])(?=[\w-]*\d)[^\W_]+(?:[-_][^\W_]+)+(?![\w-])")
_LETTER = re.compile(r"[^\W\d_]")

_Item = TypeVar("_Item")


@dataclass
class Track:
    """One object's sightings in a question's scope, newest first."""

    object_id: str | None
    label: str | None
    sightings: list[Sighting] = field(default_factory=list)  # newest first; the latest alone when counted
    count: int | None = None  # how many sightings, when not all are in ``sightings``

    def result(self) -> ObjectSighting:
        latest = self.sightings[0]
        position = latest.position
        return object_sighting(
            self.object_id,
            self.label,
            [float(v) for v in position] if _is_point(position) else None,
            latest.frame if latest.frame is not None else DEFAULT_FRAME,
            _utc(latest.observed_at),
            latest.memory_id,
            len(self.sightings) if self.count is None else self.count,
        )


def last_seen(engine: Engine, args: LastSeenInput) -> LastSeenResult:
    """Return each matching object's latest sighting, best match first; see ``RobotMemory.last_seen``."""
    since, until, as_of = args.window
    now = engine.clock()
    start, end = resolve_window(since, until, now)
    then = resolve_bound("as_of", as_of, now)
    if start is not None and then is not None and start > then:
        raise ValidationError(f"as_of: {then} is before since ({start}); no sighting could match")
    span = _Span(engine.collection_for(args.collection), start, _earliest(end, then), args.region_parsed)
    scope = span.scope()
    if args.object_id is not None:
        keys: list[tuple[str | None, str | None]] = [(args.object_id, None)]
    elif args.query:
        keys = _described(engine, args.query, span, args.n)
    else:
        keys = engine.read(lambda tx: _recent_keys(tx, scope, args.n))

    radius = engine.settings.object_group_radius

    recent = args.object_id is None and not args.query

    def work(tx: StoreTx) -> list[Track]:
        tracks: list[Track] = []
        for object_id, label in keys:
            tracks.extend(_tracks(tx, span, object_id, label, radius))
            if len(tracks) >= args.n and not recent:
                break
        if recent:
            # The most recently seen first: a label's older groups come after other objects seen since.
            # Each of the first n names has a group newer than any name after them, so these n suffice.
            tracks.sort(key=lambda t: (t.sightings[0].observed_at, t.sightings[0].memory_id), reverse=True)
        return tracks[: args.n]

    found = [track.result() for track in engine.read(work)]
    if found:
        return last_seen_result(found)
    region = span.region
    warned = [("region.frame", region.path, region.frame)] if region is not None else []
    return engine.read(
        lambda tx: last_seen_result([], missing_frames(tx, warned), _nothing_seen(tx, args, span.collection))
    )


def _nothing_seen(tx: StoreTx, args: LastSeenInput, collection: str) -> str:
    """Why ``last_seen`` found nothing: for an id, whether any sighting names it at all (one index seek)."""
    if args.object_id is not None:
        track = tx.memories.object_track(collection, args.object_id, None, None)
        if track is None:
            return NO_SUCH_ID.format(object_id=args.object_id, collection=collection)
        return NOT_IN_SPAN.format(object_id=args.object_id, collection=collection, count=track[1])
    if args.query:
        return NOTHING_NAMED.format(collection=collection)
    return NO_SIGHTING.format(collection=collection)


def around(engine: Engine, args: AroundInput) -> AroundResult:
    """Return the objects last seen within the radius, nearest first, and the memories there, newest
    observed first."""
    now = engine.clock()
    since = resolve_bound("since", args.since_parsed, now)
    collection = engine.collection_for(args.collection)
    region = args.region_parsed
    here = _Span(collection, since, None, region)
    everywhere = _Span(collection, since)
    radius = engine.settings.object_group_radius

    def work(tx: StoreTx) -> list[ObjectSighting]:
        found: list[ObjectSighting] = []
        for track in _maybe_around(tx, here, everywhere, radius):
            sighting = track.result()
            if _inside(region, sighting):  # its latest sighting, not an earlier one, is here
                found.append(with_distance(sighting, _distance(sighting["position"], region)))
        found.sort(key=lambda s: (s.get("distance", 0.0), s["memory_id"]))
        return found[: args.n]

    objects = engine.read(work)
    plan = RecallPlan(
        query="",
        n=args.n,
        min_confidence=0.0,
        collection=collection,
        filter=_joined(None, *_window(since, None)),
        order="recent",  # what happened there last, whenever it was stored
        region=region,
        own_robot=engine.robot_id,
    )
    hits: list[Hit] = execute(engine, plan).hits
    warned = [("frame", region.path, region.frame)] if not objects and not hits else []
    return around_result(objects, hits, engine.read(lambda tx: missing_frames(tx, warned)) if warned else ())


def _maybe_around(tx: StoreTx, here: _Span, everywhere: _Span, radius: float) -> Iterator[Track]:
    """The tracks whose latest sighting may lie in ``here``'s region. Objects with an id come from each
    one's latest sighting (``latest_by_object``: one index seek per object, up to ``MOST_OBJECTS``), and
    only those whose latest sighting is in the region are counted; past that many ids, and for sightings
    without an id (grouped by label and place), from the sightings in the region. At 1M sightings a room
    holds ~100,000 of them; a site names tens or hundreds of objects."""
    assert here.region is not None
    latest = tx.memories.latest_by_object(everywhere.collection, everywhere.since, MOST_OBJECTS)
    without_id = None if latest is None else Condition(("context", "object", "id"), "$exists", False)
    if latest is not None:
        sightings = tx.memories.sightings([memory_id for _, memory_id in latest])
        for named_id, memory_id in latest:
            sighting = sightings.get(memory_id)
            track = Track(named_id, sighting.label, [sighting]) if sighting is not None else None
            if track is not None and _inside(here.region, track.result()):
                # Counted from the index of ids, over the same window (its newest is this sighting).
                counted = tx.memories.object_track(everywhere.collection, named_id, everywhere.since, None)
                track.count = counted[1] if counted is not None else 1
                yield track
    named = tx.memories.objects_named(tx.candidates(here.scope(without_id)).listed(None, order="id"))
    for object_id, label in sorted(named, key=lambda key: (key[0] or "", key[1] or "")):
        yield from _tracks(tx, everywhere, object_id, label, radius)


@dataclass(frozen=True)
class _Span:
    """Where and when a question looks: a collection, a window on ``SIGHTING_FIELD`` (stored times; None:
    unbounded) and a region (None: anywhere)."""

    collection: str
    since: str | None = None
    until: str | None = None
    region: Region | None = None

    def scope(self, condition: Node | None = None) -> RecallScope:
        """The sightings in the span (that meet ``condition``), as a recall scope."""
        filter = _joined(_HAS_OBJECT, *_window(self.since, self.until), *([condition] if condition else []))
        return RecallScope(collection=self.collection, min_confidence=0.0, filter=filter, region=self.region)


def _joined(first: Node | None, *more: Node) -> Node | None:
    parts = [p for p in (first, *more) if p is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else All(tuple(parts))


def _window(since: str | None, until: str | None) -> list[Node]:
    """The conditions "observed in [since, until]" (stored times; None: unbounded)."""
    bounds = [(since, "$gte"), (until, "$lte")]
    return [Condition((SIGHTING_FIELD,), op, at) for at, op in bounds if at is not None]


def _earliest(*moments: str | None) -> str | None:
    given = [m for m in moments if m is not None]
    return min(given) if given else None


def _utc(stored: str) -> str:
    return datetime.fromisoformat(stored).astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _keys(named: Iterable[tuple[str | None, str | None]]) -> list[tuple[str | None, str | None]]:
    """The objects of ``(object id, label)`` pairs, in first-seen order: ``(id, None)``, or ``(None, label)``
    without id."""
    keys: dict[tuple[str | None, str | None], None] = {}
    for object_id, label in named:
        if object_id is not None:
            keys[(object_id, None)] = None
        elif label is not None:
            keys[(None, label)] = None
    return list(keys)


class _Naming:
    """How specifically a description names an object (``rank``; 0: it does not name it).

    5: it holds the object's id as written ("where is mug-3"); 4: every word of an id with a letter, one of
    them not a word of the label ("pallet 2" names pallet-2); 3: its label as written ("the red mug on the
    kitchen table"; whole words, anywhere for a name with CJK characters, which the word splitter may cut
    otherwise inside a sentence: "充电宝在哪"); 2: every word of the label, or of the id; 1: every
    word it asks (BM25's, without ``QUESTION_WORDS``) is among the object's names ("mug" names the red mug).
    Words compare case-folded and singular ("mugs"); an id-like word ("mug-30", "R2-D2": letters and digits
    joined by "-" or "_") stays one word, so "mug-2" names neither mug-30 nor a mug without id. "The blue mug"
    names no red mug, "mug-7" no crate-7, "蓝色杯子" no 红色杯子: one shared word is not enough."""

    def __init__(self, query: str, stopwords: str) -> None:
        self._stopwords = stopwords
        self._text = _folded(query)
        self.ids = _ID_LIKE.findall(query)
        rest = _ID_LIKE.sub(" ", query)
        self._asked = (
            frozenset(
                [*(_singular(w) for w in bm25_words(rest, stopwords)), *(i.casefold() for i in self.ids)]
            )
            - QUESTION_WORDS
        )
        self._rank: dict[tuple[str | None, str | None], int] = {}
        # An object's key (``_keys``) → the best rank of the sightings' names it was asked about.
        self.best: dict[tuple[str | None, str | None], int] = {}

    def __call__(self, pair: tuple[str | None, str | None]) -> bool:
        rank = self.rank(pair)
        if rank:
            (key,) = _keys([pair])
            self.best[key] = max(rank, self.best.get(key, 0))
        return rank > 0

    def rank(self, pair: tuple[str | None, str | None]) -> int:
        if pair not in self._rank:
            self._rank[pair] = self._ranked(*pair)
        return self._rank[pair]

    def _ranked(self, object_id: str | None, label: str | None) -> int:
        object_id = object_id if object_id and _LETTER.search(object_id) else None  # "41": a number asked
        if object_id and self._holds(object_id):
            return NAMED_BY_ID
        label_words, id_words = (self._words(name) for name in (label, object_id))
        asked = self._asked
        if id_words and id_words <= asked and not id_words <= label_words:
            return 4  # "pallet 2" names pallet-2, before pallet-1 whose label it holds too
        if label and self._holds(label):
            return 3
        if (label_words and label_words <= asked) or (id_words and id_words <= asked):
            return 2  # "red mug" in other words
        whole = {object_id.casefold()} if object_id else set()
        return int(bool(asked) and asked <= label_words | id_words | whole)

    def _words(self, name: str | None) -> frozenset[str]:
        return frozenset(_singular(w) for w in bm25_words(name, self._stopwords)) if name else frozenset()

    def _holds(self, name: str) -> bool:
        """Whether the description holds ``name`` as written (case-folded; a name of stop words alone
        never: "the")."""
        folded = _folded(name)
        if len(folded) < 2 or not bm25_words(name, self._stopwords):
            return False
        if _CJK.search(folded):
            return folded in self._text
        return re.search(rf"(?<![\w.-]){re.escape(folded)}(?![\w]|[.-]\w)", self._text) is not None


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _singular(word: str) -> str:
    """An English plural's singular, roughly ("mugs", "boxes", "glasses"); other words as they are."""
    if len(word) <= 3 or not word.endswith("s") or word.endswith("ss"):
        return word
    return word[:-2] if word.endswith(("ches", "shes", "xes", "zes", "sses")) else word[:-1]


def _described(engine: Engine, query: str, span: _Span, n: int) -> list[tuple[str | None, str | None]]:
    """The objects a description names (``_Naming``), the most specifically named first, then in the order
    BM25 ranks their sightings: the objects of the best-matching sightings, and any object whose id the
    description holds (read from the index of ids); when none of those is named, the objects whose label or
    id the description holds as a context value (``naming.value_candidates``) though no caption says it.

    Only the words count, not the vector channel: "the blue mug" must not resolve to the red mug whose
    sightings sit nearer in meaning, and a description of nothing seen finds nothing, never the nearest
    object."""
    settings = engine.settings.recall
    words = bm25_words(query, settings.query_stopwords)
    if or_match(words) is None:
        return []
    names = _Naming(query, settings.query_stopwords)
    scope = span.scope()

    def ranked(source: CandidateSource, depth: int) -> list[int]:
        channel = ChannelQuery(
            words=words, depth=depth, min_coverage=0.0, k1=settings.bm25_k1, b=settings.bm25_b
        )
        return [m for m, _ in source.ranked(channel).text]

    def work(tx: StoreTx) -> list[tuple[str | None, str | None]]:
        source = tx.candidates(scope)
        ids = ranked(source, _LABEL_POOL)
        keys: list[tuple[str | None, str | None]] = [
            (object_id, None)
            for object_id in dict.fromkeys(names.ids)
            if span.region is None
            and tx.memories.object_track(span.collection, object_id, span.since, span.until) is not None
        ]
        keys += [key for key in _first_keys(tx, ids, len(ids), _LABEL_POOL, names) if key not in keys]
        if not keys and len(ids) == _LABEL_POOL:  # the best matches are other objects': look deeper
            keys = _first_keys(tx, ranked(source, _LABEL_POOL_WIDE)[_LABEL_POOL:], n, _BLOCK, names)
        keys = keys or _named_by_value(tx, source, query, names)
        # The most specifically named first; the sort is stable, so BM25's order stands among equals.
        return sorted(keys, key=lambda key: -names.best.get(key, NAMED_BY_ID))[:n]

    return engine.read(work)


def _named_by_value(
    tx: StoreTx, source: CandidateSource, query: str, names: _Naming
) -> list[tuple[str | None, str | None]]:
    """The objects whose id or label the description holds as a context value (``named_values``),
    checked on a few of each value's carriers."""
    found = source.named_values(value_candidates(query), 1.0)
    carriers: dict[str, list[int]] = {}
    for memory_id, values in sorted(found.carriers.items()):
        for value in values:
            carriers.setdefault(value, []).append(memory_id)
    keys: list[tuple[str | None, str | None]] = []
    for value in sorted(carriers, key=lambda v: (-len(v), v)):  # the longest value first: the fullest name
        sample = carriers[value][-_LABEL_BLOCK:]  # the newest memories carrying it
        objects = tx.memories.objects_of(sample)
        held = [
            pair
            for pair in objects.values()
            if names(pair) and value in (fold_value(pair[0] or ""), fold_value(pair[1] or ""))
        ]
        keys += [key for key in _keys(held) if key not in keys]
    return keys


def _recent_keys(tx: StoreTx, scope: RecallScope, n: int) -> list[tuple[str | None, str | None]]:
    return _first_keys(tx, tx.candidates(scope).listed(None, order=NEWEST_FIRST), n, _BLOCK)


def _first_keys(
    tx: StoreTx,
    ids: Sequence[int],
    n: int,
    block: int,
    keep: Callable[[tuple[str | None, str | None]], bool] = lambda _: True,
) -> list[tuple[str | None, str | None]]:
    """The objects (``_keys``) the sightings ``ids`` name, in their order, those whose ``(object id, label)``
    ``keep`` accepts: their two names alone are read (``objects_of``), a ``block`` at a time until ``n`` are
    found."""
    keys: list[tuple[str | None, str | None]] = []
    for start in range(0, len(ids), block):
        chunk = ids[start : start + block]
        fetched = tx.memories.objects_of(chunk)
        found = _keys(fetched[m] for m in chunk if m in fetched and keep(fetched[m]))
        keys += [key for key in found if key not in keys]
        if len(keys) >= n:
            break
    return keys


def _tracks(tx: StoreTx, span: _Span, object_id: str | None, label: str | None, radius: float) -> list[Track]:
    """The tracks of an object id (one), or of a label's sightings without id (grouped within ``radius``),
    newest first."""
    if object_id is not None and span.region is None:
        # The store's index of object ids gives the latest sighting and the count without reading them.
        track = tx.memories.object_track(span.collection, object_id, span.since, span.until)
        if track is None:
            return []
        (sighting,) = tx.memories.sightings([track[0]]).values()
        return [Track(object_id, sighting.label, [sighting], track[1])]
    if object_id is not None:
        source = tx.candidates(span.scope(Condition(("context", "object", "id"), "$eq", object_id)))
        # The latest sighting alone is read (the store walks its time order), the others only counted.
        latest = tx.memories.sightings(source.listed(1, order=NEWEST_FIRST))
        if not latest:
            return []
        (sighting,) = latest.values()
        count = len(source.listed(None, order="id"))
        return [Track(object_id, sighting.label, [sighting], count)]
    # Only a string label: an id of another type is not an id (``_object``).
    without_id = Condition(("context", "object", "id"), "$exists", False)
    source = tx.candidates(
        span.scope(All((Condition(("context", "object", "label"), "$eq", label), without_id)))
    )
    ids = source.listed(None, order=NEWEST_FIRST)
    fetched = tx.memories.sightings(ids)
    return _grouped(label, [fetched[m] for m in ids if m in fetched], radius)


def _grouped(label: str | None, newest_first: list[Sighting], radius: float) -> list[Track]:
    """Sightings of one label without id, as objects (``_by_place``), newest group first."""
    tracks = [Track(None, label, members) for members in _by_place(newest_first, _place, radius)]
    tracks.sort(key=lambda t: (t.sightings[0].observed_at, t.sightings[0].memory_id), reverse=True)
    return tracks


def _place(sighting: Sighting) -> tuple[Any, list[float] | None]:
    position = sighting.position
    return sighting.frame, position if _is_point(position) else None


def _by_place(
    newest_first: Sequence[_Item], place: Callable[[_Item], tuple[Any, list[float] | None]], radius: float
) -> list[list[_Item]]:
    """Sightings of one label without id, grouped into objects: in time order, each joins the group of its
    frame whose latest position is within ``radius``, else starts one; each group newest first."""
    groups: list[tuple[Any, list[float] | None, list[_Item]]] = []
    for item in reversed(newest_first):
        frame, position = place(item)
        for index, (group_frame, latest, members) in enumerate(groups):
            if group_frame == frame and _near(latest, position, radius):
                members.insert(0, item)
                groups[index] = (group_frame, position, members)
                break
        else:
            groups.append((frame, position, [item]))
    return [members for _, _, members in groups]


def map_tracks(newest_first: Sequence[MapSighting], n: int, radius: float) -> list[MapObject]:
    """The objects of one frame's sightings (newest first), most recently seen first, at most ``n``: each
    with its latest position and its track in ``observed_at`` order.

    An object is an id within a collection, or a label's sightings without id grouped within ``radius`` by ``_by_place``;
    a sighting with neither, or whose position is not 2 or 3 numbers, is left out."""
    by_key: dict[tuple[str, str | None, str | None], list[MapSighting]] = {}
    for sighting in newest_first:
        if not _is_point(sighting.position) or (sighting.object_id is None and sighting.label is None):
            continue
        label = None if sighting.object_id is not None else sighting.label
        by_key.setdefault((sighting.collection, sighting.object_id, label), []).append(sighting)
    tracks: list[tuple[str | None, list[MapSighting]]] = []
    for (_, object_id, _), sightings in by_key.items():
        if object_id is not None:
            tracks.append((object_id, sightings))
        else:
            tracks.extend(
                (None, group) for group in _by_place(sightings, lambda s: (None, s.position), radius)
            )
    tracks.sort(key=lambda t: (t[1][0].observed_at, t[1][0].memory_id), reverse=True)
    return [
        map_object(
            object_id,
            sightings[0].label,
            sightings[0].collection,
            [(s.memory_id, [float(v) for v in s.position], _utc(s.observed_at)) for s in reversed(sightings)],
        )
        for object_id, sightings in tracks[:n]
    ]


def _near(a: list[float] | None, b: list[float] | None, radius: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if len(a) != len(b):
        return False
    return math.dist(a, b) <= radius


def _inside(region: Region, sighting: ObjectSighting) -> bool:
    """Whether a sighting's position lies in ``region`` (its frame, its sphere or box, exactly)."""
    position = sighting["position"]
    if sighting["frame"] != region.frame or position is None or len(position) < region.dims:
        return False
    row = np.full((1, 3), np.nan)
    row[0, : len(position)] = position
    return bool(region.contains(row)[0])


def _distance(position: list[float] | None, region: Region) -> float:
    if position is None:
        return math.inf
    return math.dist(position[: region.dims], region.center)


def _is_point(value: Any) -> TypeGuard[list[float]]:
    return (
        isinstance(value, list)
        and len(value) in (2, 3)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    )
