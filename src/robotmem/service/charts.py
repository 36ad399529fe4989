"""The web UI's map and its parameters-against-outcome plot: positions in one coordinate frame and a
time window with the objects seen there, and the success rate of ``task.success`` by bins of a numeric
parameter (or a grid of two).

The map shows one frame at a time (``spatial.frame``; ``query.regions.DEFAULT_FRAME`` when a memory names
none), by default the one most of its memories are in: positions of different frames are never drawn
together. Its objects are ``service/objects.py``'s ``map_tracks`` of the frame's sightings. Every view's
window bounds ``observed_at``, when things happened.

Success is ``task.success`` in a memory's context: true is a success, false a failure; a memory with
the parameter but without a boolean there is left out of the rates and counted (``left_out``). A
parameter is ``params.<key>`` holding a number or ``{"value": number, "unit": text}``; the unit most
values carry is used unless one is asked for, and values in another unit are left out and counted.
The store filters and extracts; the bins and their Wilson score intervals are computed here (with
``service/bins.py``), so every engine gives the same bins. The input models are the views' parameters,
declared once (as ``service/browse.py``'s); ``formats/serialize.py`` writes the results.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from robotmem.config import Settings
from robotmem.formats.inputs import TIME_BOUND, EventTimeInput, OperationInput, Whole, WholeOrNone
from robotmem.formats.results import Axis, MapResult, ParamFieldsResult, ParamOutcomeResult
from robotmem.formats.serialize import axis, map_result, param_fields_result, param_outcome_result
from robotmem.formats.validation import parse_time_bound, resolve_window
from robotmem.query.regions import MAX_FRAME_CHARS
from robotmem.records import MapPoint, MapSighting, ParamValue, RateBin, RateCell, ViewScope
from robotmem.service.bins import bin_edges, rate_bins, rate_cells
from robotmem.service.engine import Engine
from robotmem.service.objects import map_tracks
from robotmem.store.protocol import StoreTx

# The memory time that bounds a view's window: when it happened (not when it was stored).
WINDOW_TIME_FIELD = "observed_at"
# What the map draws (``MAP_LAYERS`` in static/explore.js draws each).
MAP_LAYERS = ("memories", "objects")
MAX_BINS = 100
MAX_OBJECTS = 1000
MAX_POINTS = 20000
_SPATIAL_FIELD = r"^spatial\.[^.\"\\\[\]]+$"
_PARAM_FIELD = r"^params\.[^.\"\\\[\]]+$"


# The memories a view covers: one collection (every one when omitted), a time window. Each view's model
# declares them in the order of its ``RobotMemory`` method's parameters.
ViewCollection = Annotated[str | None, Field(min_length=1, max_length=200, description="Collection name.")]
# A view's window is recall's (``formats/validation.parse_time_bound``): the same forms, both ends included.
ViewTime = datetime | EventTimeInput
Since = Annotated[ViewTime, Field(description=f"Memories observed at or after this time: {TIME_BOUND}.")]
Until = Annotated[ViewTime, Field(description=f"Memories observed at or before this time: {TIME_BOUND}.")]


class _ViewInput(OperationInput):
    """A view of the memories in one collection (every one when omitted) and a time window: the fields
    ``collection``, ``since`` and ``until`` each view declares. A ``datetime`` is read as its ISO text,
    so it needs a zone as the text does."""

    if TYPE_CHECKING:  # declared by each view, in its method's order
        collection: str | None
        since: ViewTime
        until: ViewTime
    __slots__ = ("_since", "_until")

    def scope(self, now: datetime) -> ViewScope:
        """The memories the view covers, the window's offsets counted back from ``now``. Raises
        ``ValidationError`` when ``since`` is after ``until``."""
        since, until = resolve_window(self._since, self._until, now)
        return ViewScope(self.collection, since, until, WINDOW_TIME_FIELD)

    def _check(self, settings: Settings) -> None:
        self._check_name("collection")
        self._since, self._until = (
            parse_time_bound(name, value.isoformat() if isinstance(value, datetime) else value)
            for name, value in (("since", self.since), ("until", self.until))
        )


class MapInput(_ViewInput):
    """Which positions the map shows."""

    field: str | None = Field(
        default=None,
        min_length=9,
        max_length=200,
        pattern=_SPATIAL_FIELD,
        description="spatial.<key> holding a coordinate list; default: the one most memories carry.",
    )
    collection: ViewCollection = None
    since: Since = None
    until: Until = None
    limit: Whole = Field(
        default=5000, ge=1, le=MAX_POINTS, description="Newest memories to plot, and newest object sightings."
    )
    frame: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_FRAME_CHARS,
        pattern=r"^[^\x00]+$",  # a stored context holds no NUL (formats/validation.py)
        description="Coordinate frame (spatial.frame) to show; default: the one most memories are in.",
    )
    objects: Whole = Field(
        default=200, ge=0, le=MAX_OBJECTS, description="Objects to draw, most recently seen first."
    )


class ParamFieldsInput(_ViewInput):
    """Which memories the parameter list covers."""

    collection: ViewCollection = None
    since: Since = None
    until: Until = None


class ParamOutcomeInput(_ViewInput):
    """A parameter (or two) against the outcome."""

    x: str = Field(min_length=8, max_length=200, pattern=_PARAM_FIELD, description="params.<key> on x.")
    y: str | None = Field(
        default=None, min_length=8, max_length=200, pattern=_PARAM_FIELD, description="params.<key> on y."
    )
    collection: ViewCollection = None
    since: Since = None
    until: Until = None
    x_unit: str | None = Field(default=None, max_length=50, description="Unit of x; default: the most used.")
    y_unit: str | None = Field(default=None, max_length=50, description="Unit of y; default: the most used.")
    bins: WholeOrNone = Field(default=None, ge=1, le=MAX_BINS, description="Bins on x; default: chosen.")
    y_bins: WholeOrNone = Field(default=None, ge=1, le=MAX_BINS, description="Bins on y; default: chosen.")
    points: Whole = Field(
        default=5000, ge=0, le=MAX_POINTS, description="Raw points to return, newest first."
    )


def map_view(engine: Engine, args: MapInput) -> MapResult:
    """Return positions at a ``spatial.<key>`` in one frame and a time window, and the objects seen there;
    see ``RobotMemory.map_view``."""
    scope = args.scope(engine.clock())

    def work(tx: StoreTx) -> MapResult:
        fields = tx.browse.spatial_field_counts(scope)
        chosen = args.field or (f"spatial.{fields[0][0]}" if fields else None)
        key = None if chosen is None else chosen.split(".", 1)[1]
        frames = [] if key is None else tx.browse.map_frame_counts(key, scope)
        frame = args.frame or (frames[0][0] if frames else None)
        points: list[MapPoint] = []
        sightings: list[MapSighting] = []
        total = seen = 0
        if key is not None and frame is not None:
            points, total = tx.browse.map_points(key, scope, args.limit, frame)
            sightings, seen = tx.browse.object_sightings(scope, frame, args.limit)
        objects = map_tracks(sightings, args.objects, engine.settings.object_group_radius)
        return map_result(
            chosen, fields, frame, frames, scope, MAP_LAYERS, points, total, args.limit, objects, seen
        )

    return engine.read(work)


def _most_used(per_unit: Counter[str]) -> str | None:
    """Return the unit most values carry (the first by name among equals; None for no unit)."""
    if not per_unit:
        return None
    return min(per_unit, key=lambda unit: (-per_unit[unit], unit)) or None


def param_fields(engine: Engine, args: ParamFieldsInput) -> ParamFieldsResult:
    """Return the numeric parameters with their units and counts; see ``RobotMemory.param_fields``."""
    rows = engine.read(lambda tx: tx.browse.param_field_counts(args.scope(engine.clock())))
    units: dict[str, Counter[str]] = {}
    for key, unit, count in rows:
        units.setdefault(key, Counter())[unit or ""] += count
    return param_fields_result((key, _most_used(per_unit), per_unit) for key, per_unit in units.items())


def param_outcome(engine: Engine, args: ParamOutcomeInput) -> ParamOutcomeResult:
    """Return the success rate by bins of a parameter (or a grid of two); see ``RobotMemory.param_outcome``."""
    scope = args.scope(engine.clock())
    x_key = args.x.split(".", 1)[1]
    y_key = None if args.y is None else args.y.split(".", 1)[1]
    x_rows, y_rows = engine.read(
        lambda tx: (
            tx.browse.param_values(x_key, scope),
            [] if y_key is None else tx.browse.param_values(y_key, scope),
        )
    )
    return _outcome(args, x_rows, y_rows)


def _chosen_unit(values: Sequence[ParamValue], asked: str | None) -> str | None:
    if asked is not None:
        return asked or None
    return _most_used(Counter(v.unit or "" for v in values))


def _axis(field: str, unit: str | None, values: Sequence[float], bins: int | None, grid: bool) -> Axis:
    edges = bin_edges(min(values), max(values), bins, len(values), grid=grid) if values else []
    return axis(field, unit, values, edges)


def _outcome(
    args: ParamOutcomeInput, x_rows: list[ParamValue], y_rows: list[ParamValue]
) -> ParamOutcomeResult:
    x_unit = _chosen_unit(x_rows, args.x_unit)
    in_unit = [v for v in x_rows if v.unit == x_unit]
    no_outcome = sum(v.success is None for v in in_unit)
    judged = [v for v in in_unit if v.success is not None]
    y_axis: Axis | None = None
    pairs: list[tuple[ParamValue, float | None]] = [(v, None) for v in judged]
    if args.y is not None:
        y_unit = _chosen_unit(y_rows, args.y_unit)
        y_by_id = {v.memory_id: v.value for v in y_rows if v.unit == y_unit}
        pairs = [(v, y_by_id[v.memory_id]) for v in judged if v.memory_id in y_by_id]
        y_axis = _axis(args.y, y_unit, [y for _, y in pairs if y is not None], args.y_bins, True)
    x_axis = _axis(args.x, x_unit, [v.value for v, _ in pairs], args.bins, args.y is not None)
    bins: list[RateBin] = []
    cells: list[RateCell] = []
    if pairs:
        bins = rate_bins(x_axis["edges"], [(v.value, bool(v.success)) for v, _ in pairs])
    if pairs and y_axis is not None:
        cells = rate_cells(
            x_axis["edges"],
            y_axis["edges"],
            [(v.value, y, bool(v.success)) for v, y in pairs if y is not None],
        )
    left_out = (no_outcome, len(x_rows) - len(in_unit), len(judged) - len(pairs))
    return param_outcome_result(x_axis, y_axis, pairs, left_out, bins, cells, args.points)
