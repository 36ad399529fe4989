"""The operations' input models (Pydantic): each operation's parameters, declared once.

A model gives the names, types and defaults of one operation's parameters, the limits no setting
changes, and the descriptions the MCP and REST schemas are generated from. What a schema cannot state
— limits the settings set (``max_insight_chars``, ``max_context_bytes``, ``max_n``, …), name rules,
JSON objects, filters — the model's ``_check`` applies, in the order problems are reported, when the
model is validated with the settings (``validate_input(model, arguments, settings)``) or later
(``OperationInput.within``). The service receives a checked input and trusts it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Self, TypeVar

import pydantic
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictFloat, StrictInt, StrictStr
from pydantic_core import PydanticCustomError

from robotmem.config import Settings
from robotmem.errors import ValidationError
from robotmem.formats.validation import (
    PerceptionType,
    TimeBound,
    parse_event_time,
    parse_json_object,
    parse_name,
    parse_payload,
    parse_robots,
    parse_text,
    parse_time_bound,
    short_repr,
)
from robotmem.query.filters import Node, parse_filter
from robotmem.query.regions import (
    DEFAULT_FRAME,
    INDEXED_PATHS,
    Region,
    parse_centre,
    parse_frame,
    parse_radius,
    parse_region,
)
from robotmem.query.spatial import SpatialSort, parse_spatial_sort
from robotmem.rules.inheritance import check_session_robot, robot_id_problem

JsonObjectOrText = Annotated[
    dict[str, Any] | str | None,
    Field(description="A JSON object, or a string holding one."),
]
EventTimeInput = StrictStr | StrictInt | StrictFloat | None


def _not_true_or_false(value: Any) -> Any:
    if isinstance(value, bool):  # Python's True is 1: a count or an id given as a flag is a mistake
        raise PydanticCustomError("whole_number", "must be a whole number, not true or false")
    return value


# A count, a page size or an id: an integer, or its text (a query string's), never a bool.
Whole = Annotated[int, BeforeValidator(_not_true_or_false)]
# Optional, the None inside the Annotated: a Field's ge/le then reach JSON Schema as minimum/maximum.
WholeOrNone = Annotated[int | None, BeforeValidator(_not_true_or_false)]
OBSERVED_AT = (
    "When it happened: ISO 8601 with a zone (2026-01-01T12:00:00Z) or epoch seconds; default now. "
    "Recall's since, until and order=recent read it."
)
TIME_BOUND = "ISO 8601 with a zone, epoch seconds, now, or a time before now such as -30m, -2h, -7d"
MAX_QUERY_CHARS = 4000
MAX_MEMORY_ID = 2**63 - 1  # SQLite's largest integer


ALL_COLLECTIONS = "*"  # recall's collection that means every collection


def parse_memory_context(raw: Any, max_bytes: int) -> dict[str, Any]:
    """Return a memory's context, or a session's (which its memories inherit), as ``parse_json_object``
    does, its ``spatial.frame``, when given, a frame name (``regions.parse_frame``): a frame that is null, a
    number or empty would put the position in no frame a region or sort can name, while answers that
    report a sighting's frame would say "map"."""
    context = parse_json_object("context", raw, max_bytes)
    spatial = context.get("spatial")
    if isinstance(spatial, dict) and "frame" in spatial:
        if spatial["frame"] is None:
            raise ValidationError(
                "context.spatial.frame: is null; leave it out for the default frame "
                f"{DEFAULT_FRAME!r}, or name the frame"
            )
        parse_frame(spatial["frame"], "context.spatial.frame")
    return context


class OperationInput(BaseModel):
    """The parameters of one operation.

    Pydantic checks names, types and the static limits; ``_check`` then applies the settings' limits and
    the rules no schema states, when ``validate_input`` is given the settings, or through ``within`` for
    an input Pydantic alone built (a REST request body). Values parsed into another type than the
    field's (a filter tree, a context object) are kept in slots and read through properties: slots, not
    Pydantic's private attributes, which would cost every validation a few microseconds.
    """

    model_config = ConfigDict(extra="forbid", strict=False)
    __slots__ = ("_settings",)  # the settings the input was checked against; unset until it is

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):  # a slot: Pydantic's handling is for fields (and slower for other names)
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)

    def within(self, settings: Settings) -> Self:
        """Return this input checked against ``settings``: itself when it already is, else a checked copy.

        Raises ``ValidationError`` naming the field and the limit.
        """
        if getattr(self, "_settings", None) is settings:
            return self
        return self.model_copy()._checked_against(settings)

    def _checked_against(self, settings: Settings) -> Self:
        self._check(settings)
        self._settings = settings
        return self

    def _check(self, settings: Settings) -> None:
        """Apply what the schema cannot state, normalising fields in place; raises ``ValidationError``."""

    def _check_name(self, field: str) -> None:
        """Check the collection or session name in ``field`` when one is given (None: the default)."""
        raw = getattr(self, field)
        if raw is not None:
            setattr(self, field, parse_name(field, raw))

    def _check_robot(self) -> None:
        """Check the robot id a write names for itself, when it names one (None: the session's or the
        instance's)."""
        value = getattr(self, "robot_id", None)
        problem = robot_id_problem(value) if value is not None else None
        if problem is not None:
            raise ValidationError(f"robot_id: {problem}; got {value!r}")

    def _check_target(self) -> None:
        """Check the collection a write goes to: a name, and not ``*`` (which recall reads as every one)."""
        self._check_name("collection")
        if self.collection == ALL_COLLECTIONS:  # type: ignore[attr-defined]
            raise ValidationError(
                f"collection: {ALL_COLLECTIONS!r} means every collection to recall; name one collection to write to"
            )

    def _check_one_collection(self, operation: str) -> None:
        """Check the collection an object question asks: a name, and not ``*``. An object is an id within
        one collection, so an answer over every collection could hold two objects under one id."""
        self._check_name("collection")
        if self.collection == ALL_COLLECTIONS:  # type: ignore[attr-defined]
            raise ValidationError(
                f"collection: {ALL_COLLECTIONS!r} (every collection) is recall's; {operation} answers within "
                "one collection (an object is an id within its collection): name the collection"
            )


class LearnInput(OperationInput):
    """Store one experience (an insight with its context)."""

    insight: str = Field(
        description="The lesson or finding: 1 to max_insight_chars (default 300) characters after trimming."
    )
    context: JsonObjectOrText = Field(
        default=None,
        description="Context JSON with sections params, spatial, robot, task "
        "(at most max_context_bytes, default 64 KiB).",
    )
    collection: str | None = Field(default=None, description="Collection name (default: the instance's).")
    session_id: str | None = Field(default=None, description="Session (episode) the memory belongs to.")
    observed_at: EventTimeInput = Field(default=None, description=OBSERVED_AT)
    robot_id: str | None = Field(
        default=None,
        description="The robot that had this experience (default: the session context's robot id, else this "
        "instance's robot_id setting / ROBOTMEM_ROBOT_ID, else the store's own id).",
    )
    __slots__ = ("_context", "_observed")

    @property
    def context_object(self) -> dict[str, Any]:
        """The context as an object (``{}`` when none was given)."""
        return self._context

    @property
    def observed(self) -> str | None:
        """``observed_at`` as a stored time (None: now)."""
        return self._observed

    def _check(self, settings: Settings) -> None:
        self.insight = parse_text("insight", self.insight, max_chars=settings.max_insight_chars)
        self._context = parse_memory_context(self.context, settings.max_context_bytes)
        self._check_target()
        self._check_robot()
        self._check_name("session_id")
        self._observed = parse_event_time("observed_at", self.observed_at)


class RecallInput(OperationInput):
    """Find the most relevant memories."""

    query: str = Field(
        default="", description="What to look for; may be empty when filters or spatial_sort are given."
    )
    n: WholeOrNone = Field(
        default=None,
        ge=1,
        description="How many memories to return: default top_k (5), at most max_n (default 100).",
    )
    min_confidence: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Lowest confidence (default 0.3)."
    )
    session_id: str | None = Field(default=None, description="Only memories of this session.")
    context_filter: JsonObjectOrText = Field(
        default=None, description='Structured filter, e.g. {"task.success": true}.'
    )
    spatial_sort: JsonObjectOrText = Field(
        default=None,
        description='Nearest first: {"field": "spatial.position", "target": [x, y, z], "max_distance": 0.5, '
        '"frame": "map"}; only positions in that frame (default "map") are measured.',
    )
    collection: str | None = Field(
        default=None,
        description='Collection to search (default: the instance\'s); "*" searches every collection.',
    )
    include_data: bool = Field(default=False, description="Include perception data and metadata.")
    order: Literal["relevance", "time", "recent"] = Field(
        default="relevance",
        description="relevance; time (oldest stored first); or recent (newest observed_at first).",
    )
    robots: list[str] | str | None = Field(
        default=None,
        description='Robot ids to search (a list or comma-separated; "self" = this robot); default the whole fleet.',
    )
    since: EventTimeInput = Field(
        default=None, description=f"Only memories observed at or after this time: {TIME_BOUND}."
    )
    until: EventTimeInput = Field(
        default=None, description=f"Only memories observed at or before this time: {TIME_BOUND}."
    )
    min_relevance: float | None = Field(
        default=None,
        description="With a query, leave out memories less relevant than this (0..1). Default: the answer "
        "is empty only when no memory reaches the calibrated floor 0.5; 0 turns the gate off.",
    )
    region: JsonObjectOrText = Field(
        default=None,
        description="Only memories whose position lies in a region of one frame: a sphere (a circle with 2 "
        'coordinates) {"field": "spatial.position", "center": [x, y, z], "radius": 2.0, "frame": "map"} or a '
        'box {"field": "spatial.position", "min": [x, y, z], "max": [x, y, z], "frame": "map"}. Applied '
        "before any limit; combines with query, context_filter and spatial_sort.",
    )
    __slots__ = ("_filter", "_spatial", "_robots", "_since", "_until", "_region")

    @property
    def window(self) -> tuple[TimeBound | None, TimeBound | None]:
        """``(since, until)``: moments or offsets before now (None: unbounded)."""
        return self._since, self._until

    @property
    def region_parsed(self) -> Region | None:
        """The parsed ``region`` (None: none)."""
        return self._region

    @property
    def filter(self) -> Node | None:
        """The parsed ``context_filter`` (None: no filter)."""
        return self._filter

    @property
    def spatial(self) -> SpatialSort | None:
        """The parsed ``spatial_sort`` (None: none)."""
        return self._spatial

    @property
    def robot_ids(self) -> tuple[str, ...] | None:
        """The robot ids of ``robots``, ``"self"`` among them unresolved (None: the whole fleet)."""
        return self._robots

    def _check(self, settings: Settings) -> None:
        # The order in which problems have always been reported: not the order of the fields.
        self.query = parse_text("query", self.query, min_chars=0, max_chars=MAX_QUERY_CHARS)
        # Without n, top_k applies, which the settings keep within max_n.
        if self.n is not None and self.n > settings.max_n:
            raise ValidationError(f"n: is {self.n}; the limit is {settings.max_n}")
        self._check_name("collection")
        self._check_name("session_id")
        self._filter = parse_filter(self.context_filter, max_bytes=settings.max_filter_bytes)
        self._spatial = parse_spatial_sort(self.spatial_sort)
        self._region = parse_region(self.region)
        _check_one_frame(self._region, self._spatial)
        self._robots = parse_robots(self.robots)
        self._since = parse_time_bound("since", self.since)
        self._until = parse_time_bound("until", self.until)
        if self.min_relevance is not None and not 0.0 <= self.min_relevance <= 1.0:
            raise ValidationError(f"min_relevance: is {self.min_relevance}; expected a value within 0..1")


def _check_one_frame(region: Region | None, spatial: SpatialSort | None) -> None:
    """Refuse a region and a spatial sort of one path in two frames: positions of different frames never
    compare, so the sort would measure none of the memories the region keeps."""
    if region is None or spatial is None or region.path != spatial.path or region.frame == spatial.frame:
        return
    raise ValidationError(
        f"spatial_sort.frame: {spatial.frame!r} is not region.frame {region.frame!r}; positions of "
        "different frames never compare: ask both in one frame"
    )


class SavePerceptionInput(OperationInput):
    """Store a sensor reading or trajectory."""

    description: str = Field(
        description="What was perceived: 5 to max_description_chars (default 2000) characters after trimming."
    )
    perception_type: PerceptionType = Field(default="visual")
    data: Any = Field(
        default=None,
        description="Payload: a string or any JSON value (at most max_data_bytes, default 4 MiB).",
    )
    metadata: Any = Field(
        default=None,
        description="Extra JSON about the payload (at most max_metadata_bytes, default 64 KiB).",
    )
    collection: str | None = None
    session_id: str | None = None
    context: JsonObjectOrText = Field(
        default=None,
        description="Context JSON as learn takes it (spatial, robot, task, …): filterable and sortable "
        "(at most max_context_bytes, default 64 KiB).",
    )
    observed_at: EventTimeInput = Field(default=None, description=OBSERVED_AT)
    robot_id: str | None = Field(
        default=None,
        description="The robot that had this experience (default: the session context's robot id, else this "
        "instance's robot_id setting / ROBOTMEM_ROBOT_ID, else the store's own id).",
    )
    __slots__ = ("_data_json", "_metadata_json", "_context", "_observed")

    @property
    def context_object(self) -> dict[str, Any]:
        """The context as an object (``{}`` when none was given)."""
        return self._context

    @property
    def observed(self) -> str | None:
        """``observed_at`` as a stored time (None: now)."""
        return self._observed

    @property
    def data_json(self) -> str | None:
        """``data`` as compact JSON text (a text that is not JSON is stored as a JSON string)."""
        return self._data_json

    @property
    def metadata_json(self) -> str | None:
        """``metadata`` as compact JSON text."""
        return self._metadata_json

    def _check(self, settings: Settings) -> None:
        self.description = parse_text(
            "description", self.description, min_chars=5, max_chars=settings.max_description_chars
        )
        _, self._data_json = parse_payload("data", self.data, settings.max_data_bytes)
        _, self._metadata_json = parse_payload("metadata", self.metadata, settings.max_metadata_bytes)
        self._context = parse_memory_context(self.context, settings.max_context_bytes)
        self._observed = parse_event_time("observed_at", self.observed_at)
        self._check_target()
        self._check_name("session_id")
        self._check_robot()


class MemoryIdInput(OperationInput):
    """Read one memory in any status."""

    memory_id: Whole = Field(
        ge=1,
        le=MAX_MEMORY_ID,
        description="Id of the memory, as returned by learn, save_perception or recall.",
    )


class ForgetInput(MemoryIdInput):
    """Mark a memory as wrong so recall stops returning it."""

    reason: str = Field(description="Why the memory is wrong.", max_length=10_000)

    def _check(self, settings: Settings) -> None:
        self.reason = parse_text("reason", self.reason, max_chars=1000)


class UpdateInput(MemoryIdInput):
    """Correct the text (and optionally the context) of a memory."""

    new_content: str = Field(
        description="The corrected text: 1 to max_insight_chars (default 300) characters after trimming."
    )
    context: JsonObjectOrText = Field(default=None, description="Replaces the stored context when given.")
    observed_at: EventTimeInput = Field(
        default=None,
        description="Corrects when it happened: ISO 8601 with a zone or epoch seconds; default: kept.",
    )
    __slots__ = ("_context", "_observed")

    @property
    def context_object(self) -> dict[str, Any] | None:
        """The new context as an object; None keeps the stored one."""
        return self._context

    @property
    def observed(self) -> str | None:
        """The corrected ``observed_at`` as a stored time (None: keep the stored one)."""
        return self._observed

    def _check(self, settings: Settings) -> None:
        self.new_content = parse_text("new_content", self.new_content, max_chars=settings.max_insight_chars)
        self._context = (
            None if self.context is None else parse_memory_context(self.context, settings.max_context_bytes)
        )
        self._observed = parse_event_time("observed_at", self.observed_at)


class StartSessionInput(OperationInput):
    """Begin an episode."""

    context: JsonObjectOrText = Field(
        default=None,
        description='The episode\'s context, e.g. {"robot_id": "arm-01", "task": {"name": "pick"}}: the memories '
        "written in the session take its robot id (robot_id or robot.id) and carry its keys under their own.",
    )
    collection: str | None = None
    __slots__ = ("_context",)

    @property
    def context_object(self) -> dict[str, Any]:
        """The episode's context as an object (``{}`` when none was given)."""
        return self._context

    def _check(self, settings: Settings) -> None:
        self._context = parse_memory_context(self.context, settings.max_context_bytes)
        check_session_robot("context", self._context)
        self._check_target()


class EndSessionInput(OperationInput):
    """End an episode: summarise, consolidate, decay, and return related memories."""

    session_id: str = Field(min_length=1)
    outcome_score: float | None = Field(
        default=None, ge=0.0, le=1.0, description="How well the episode went, 0..1."
    )

    def _check(self, settings: Settings) -> None:
        self.session_id = parse_name("session_id", self.session_id)


ModelT = TypeVar("ModelT", bound=BaseModel)
InputT = TypeVar("InputT", bound=OperationInput)


def validate_input(
    model: type[ModelT], arguments: Mapping[str, Any], settings: Settings | None = None
) -> ModelT:
    """Return ``model`` built from ``arguments``; raises ``ValidationError`` naming each bad field.

    With ``settings``, an ``OperationInput`` is also checked against them (its ``_check``): the one
    validation of a call.
    """
    try:
        parsed = model.model_validate(arguments if isinstance(arguments, dict) else dict(arguments))
    except pydantic.ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"]) or "input"
            detail = error["msg"]
            if error["type"] == "extra_forbidden":
                allowed = ", ".join(model.model_fields)
                detail = f"unknown parameter; accepted parameters are {allowed}"
            elif error["type"] != "missing":
                detail += f" (got {short_repr(error.get('input'))})"
            problems.append(f"{field}: {detail}")
        raise ValidationError("; ".join(problems)) from None
    if settings is not None and isinstance(parsed, OperationInput):
        parsed._checked_against(settings)
    return parsed


def validate_items(
    model: type[InputT], items: Sequence[Mapping[str, Any]], settings: Settings, *, field: str = "items"
) -> list[InputT]:
    """Return one checked ``model`` per item, in order; raises ``ValidationError`` naming the first bad
    item (``items[3].description: ...``) before any later item is looked at."""
    accepted = tuple(model.model_fields)
    parsed = []
    for position, item in enumerate(items):
        where = f"{field}[{position}]"
        if not isinstance(item, Mapping):
            raise ValidationError(f"{where}: expected an object, got {type(item).__name__}")
        unknown = sorted(set(item) - set(accepted))
        if unknown:
            raise ValidationError(
                f"{where}.{unknown[0]}: unknown field; expected one of {', '.join(accepted)}"
            )
        try:
            parsed.append(validate_input(model, item, settings))
        except ValidationError as exc:
            raise ValidationError(f"{where}.{exc.message}") from None
    return parsed


# ---- where and when: objects ------------------------------------------------------------------------


class LastSeenInput(OperationInput):
    """Where each matching object was last seen."""

    query: str = Field(
        default="",
        description='The object in words, any language ("the red mug", "红色杯子"): the objects it names (its '
        "label or id, or every word asked is one of the label's). Empty with object_id, or to list the objects "
        "seen most recently, newest first.",
    )
    object_id: str | None = Field(
        default=None,
        description='The object\'s id as sightings name it (context.object.id, e.g. "mug-3"); given, it '
        "alone decides which object, and query is not read.",
    )
    n: Whole = Field(default=5, ge=1, le=100, description="How many objects to return, best match first.")
    since: EventTimeInput = Field(
        default=None, description=f"Only sightings at or after this time: {TIME_BOUND}."
    )
    until: EventTimeInput = Field(
        default=None, description=f"Only sightings at or before this time: {TIME_BOUND}."
    )
    region: JsonObjectOrText = Field(
        default=None,
        description='Only sightings in this region: {"center": [x, y, z], "radius": r, "frame": "map"} '
        'or {"min": [...], "max": [...], "frame": "map"}.',
    )
    as_of: EventTimeInput = Field(
        default=None,
        description="Where the object was at this time: its latest sighting at or before it "
        f'("where was the pallet before it was moved?"); {TIME_BOUND}.',
    )
    collection: str | None = Field(
        default=None, description='Collection to search (default: the instance\'s); one collection, not "*".'
    )
    __slots__ = ("_region", "_window")

    @property
    def region_parsed(self) -> Region | None:
        return self._region

    @property
    def window(self) -> tuple[TimeBound | None, TimeBound | None, TimeBound | None]:
        """``since``, ``until`` and ``as_of``: moments or offsets before now (None: unbounded)."""
        return self._window

    def _check(self, settings: Settings) -> None:
        self.query = parse_text("query", self.query, min_chars=0, max_chars=MAX_QUERY_CHARS)
        if self.object_id is not None and not (0 < len(self.object_id) <= 200):
            raise ValidationError(f"object_id: must be 1..200 characters, got {len(self.object_id)}")
        self._check_one_collection("last_seen")
        self._region = parse_region(self.region)
        self._window = (
            parse_time_bound("since", self.since),
            parse_time_bound("until", self.until),
            parse_time_bound("as_of", self.as_of),
        )


class AroundInput(OperationInput):
    """The objects near a position now, and the latest memories there."""

    position: list[StrictFloat | StrictInt] = Field(
        min_length=2,
        max_length=3,
        description="Where: [x, y] or [x, y, z] in the frame (the robot's position).",
    )
    radius: StrictFloat | StrictInt = Field(
        ge=0.0, description="How far from the position, in the frame's units (metres)."
    )
    frame: str | None = Field(
        default=None, description='The coordinate frame of the position (default "map").'
    )
    since: EventTimeInput = Field(
        default=None, description=f"Only objects last seen at or after this time: {TIME_BOUND}."
    )
    n: Whole = Field(default=10, ge=1, le=100, description="How many objects and memories to return.")
    collection: str | None = Field(
        default=None, description='Collection to search (default: the instance\'s); one collection, not "*".'
    )
    __slots__ = ("_region", "_since")

    @property
    def region_parsed(self) -> Region:
        return self._region

    @property
    def since_parsed(self) -> TimeBound | None:
        """``since``: a moment or an offset before now (None: unbounded)."""
        return self._since

    def _check(self, settings: Settings) -> None:
        self._check_one_collection("around")
        center, radius = parse_centre(self.position, "position"), parse_radius(self.radius, "radius")
        frame = parse_frame(self.frame, "frame")
        self._region = Region(INDEXED_PATHS[0], frame, center=center, radius=radius)
        self._since = parse_time_bound("since", self.since)
