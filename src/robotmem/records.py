"""Plain records passed inside the core (frozen dataclasses; no behaviour beyond small derivations)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from robotmem.errors import ValidationError

SECTIONS = ("params", "spatial", "robot", "task")
PERCEPTION_TYPES = ("visual", "tactile", "auditory", "proprioceptive", "procedural")


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory as read from the database."""

    id: int
    collection: str
    type: str
    content: str
    human_summary: str | None
    category: str
    confidence: float
    tags: tuple[str, ...]
    session_id: str | None
    perception_type: str | None
    created_at: str
    updated_at: str
    access_count: int
    context: dict[str, Any]
    status: str = "active"
    superseded_by: int | None = None
    merged_ids: tuple[int, ...] = ()
    last_accessed: str | None = None
    scope_files: tuple[str, ...] = ()
    scope_entities: tuple[str, ...] = ()
    invalidated_reason: str | None = None
    has_embedding: bool = False
    robot_id: str = ""  # the robot whose experience this is
    uid: str = ""  # the id that names the memory in every store (``id`` is local to one)
    observed_at: str = ""  # when it happened (``created_at``: when it was stored)


@dataclass(frozen=True, slots=True)
class Hit:
    """A memory returned by recall with its normalised score."""

    memory: Memory
    score: float
    matched_by: frozenset[str] = field(default_factory=frozenset)
    spatial_distance: float | None = None
    relevance: float | None = None  # absolute, 0..1 (service/recall/relevance.py); None without a query
    data: Any = None
    metadata: Any = None


@dataclass(frozen=True, slots=True)
class Session:
    """One episode."""

    id: str
    collection: str
    context: dict[str, Any]
    status: str
    created_at: str
    ended_at: str | None
    outcome_score: float | None = None
    summary: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class NewMemory:
    """Everything needed to insert one memory."""

    collection: str
    type: str
    content: str
    content_hash: str | None
    category: str
    confidence: float
    context: dict[str, Any]
    scope_files: tuple[str, ...]
    scope_entities: tuple[str, ...]
    session_id: str | None
    perception_type: str | None
    tags: tuple[str, ...]
    index_body: str
    created_at: str
    human_summary: str | None = None
    data_json: str | None = None
    metadata_json: str | None = None
    robot_id: str = ""
    observed_at: str | None = None  # when it happened; None: when it was stored (``created_at``)


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """Filters of a memory listing; ``None`` means no constraint."""

    collection: str | None = None
    type: str | None = None
    status: str | None = "active"
    category: str | None = None
    perception_type: str | None = None
    session_id: str | None = None
    min_confidence: float | None = None
    max_confidence: float | None = None
    since: str | None = None
    until: str | None = None
    newest_first: bool = True


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A session with the counts the session list shows."""

    session: Session
    memory_count: int
    successes: int
    failures: int


@dataclass(frozen=True, slots=True)
class IntegrityReport:
    """What the checks found: SQLite's own verdict, counts per check and a few offending ids each."""

    integrity: tuple[str, ...]
    foreign_keys: int
    counts: dict[str, int]
    samples: dict[str, list[Any]]
    fts_stale: int
    active_without_vector: int
    rows: dict[str, int] = field(default_factory=dict)
    error: str | None = None  # set when the file is too damaged for the index checks to run

    @property
    def ok(self) -> bool:
        """True when SQLite reports no corruption and every derived index agrees with the tables."""
        return (
            self.error is None
            and self.integrity == ("ok",)
            and self.foreign_keys == 0
            and self.fts_stale == 0
            and not any(self.counts.values())
        )


@dataclass(frozen=True, slots=True)
class IndexHealth:
    """The counts ``robotmem doctor`` shows: schema, memories and whether FTS and vectors agree with them."""

    expected_schema_version: int
    schema_version: int
    journal_mode: str
    memories: int
    active: int
    sessions: int
    fts_rows: int
    fts_missing_active: int
    vectors_stored: int
    active_without_vector: int
    vectors_stale: int
    stored_model: tuple[str, int] | None


@dataclass(frozen=True, slots=True)
class SessionCounts:
    """A session's memories that are not invalidated: how many, by type and by category."""

    memory_count: int
    by_type: dict[str, int]
    by_category: dict[str, int]


def check_successor(memory_id: int, status: Any, superseded_by: Any, successor_uid: str | None) -> None:
    """Raise ``ValidationError`` for a superseded memory whose successor is missing (or is itself).

    Import refuses such a record (the lesson would be hidden with nothing in its place), so export
    says so at the memory rather than write a file that cannot be read back.
    """
    if status == "superseded" and (successor_uid is None or superseded_by == memory_id):
        raise ValidationError(
            f"memory {memory_id}: superseded, but its successor ({superseded_by}) is missing; "
            "`robotmem check` lists such memories and `robotmem repair` makes them active again"
        )


def linked_ids(records: Iterable[Mapping[str, Any]]) -> list[int]:
    """The ids exported ``records`` name as a successor or as merged memories (their uids are needed)."""
    linked: set[int] = set()
    for record in records:
        if record.get("superseded_by") is not None:
            linked.add(int(record["superseded_by"]))
        linked.update(int(i) for i in record.get("merged_ids") or [])
    return sorted(linked)


def export_entries(
    records: Iterable[dict[str, Any]],
    uids: Mapping[int, str],
    tags: Mapping[int, list[Any]],
    perception: Mapping[int, dict[str, Any]],
    vectors: Mapping[int, bytes],
) -> Iterator[dict[str, Any]]:
    """One export entry per memory record: the record, its links by uid, tags, payload and vector bytes.

    ``uids`` maps ``linked_ids(records)`` to uids; a superseded memory whose successor is missing
    raises ``ValidationError`` (``check_successor``).
    """
    for record in records:
        memory_id = int(record["id"])
        superseded_by = record.get("superseded_by")
        successor = None if superseded_by is None else uids.get(int(superseded_by))
        check_successor(memory_id, record.get("status"), superseded_by, successor)
        yield {
            "memory": record,
            "superseded_by_uid": successor,
            "merged_uids": [uids[i] for i in record.get("merged_ids") or [] if i in uids],
            "tags": tags.get(memory_id, []),
            "perception": perception.get(memory_id),
            "vector": vectors.get(memory_id),
        }


# ---- the web UI's views: map, parameters against outcome, episodes -------------------------------------

# The time a view's window bounds. Only ``created_at`` is stored now; a time of observation can join it.
VIEW_TIME_FIELDS = ("created_at", "observed_at")
OUTCOMES = ("success", "failure", "unknown")


@dataclass(frozen=True, slots=True)
class ViewScope:
    """The active memories a view covers: one collection (every one when None), ``since <= time <= until``.

    ``time_field`` names the memory's time the window bounds (one of ``VIEW_TIME_FIELDS``).
    """

    collection: str | None = None
    since: str | None = None
    until: str | None = None
    time_field: str = "created_at"


@dataclass(frozen=True, slots=True)
class MapPoint:
    """A memory at a position: the coordinate list stored at one ``spatial.<key>``."""

    memory_id: int
    type: str
    content: str
    coordinates: list[Any]
    success: bool | None
    time: str
    session_id: str | None


@dataclass(frozen=True, slots=True)
class Sighting:
    """What a memory says of the object it saw: ``context.object``'s id and label (texts, else None), the
    position at ``spatial.position`` (as stored, when a list), its frame (``spatial.frame`` when a text, the
    default frame when none is named, else None) and when it was observed (stored form)."""

    memory_id: int
    object_id: str | None
    label: str | None
    position: list[Any] | None
    frame: str | None
    observed_at: str


@dataclass(frozen=True, slots=True)
class MapSighting:
    """A memory naming an object (``context.object``) at its ``spatial.position``, on one frame's map."""

    memory_id: int
    collection: str
    object_id: str | None  # the object's id when a text, else None
    label: str | None  # its label when a text, else None
    position: list[Any]
    observed_at: str


@dataclass(frozen=True, slots=True)
class ParamValue:
    """A numeric parameter of one memory (``params.<key>`` as a number or ``{"value", "unit"}``)."""

    memory_id: int
    value: float
    unit: str | None
    success: bool | None


@dataclass(frozen=True, slots=True)
class EpisodeQuery:
    """Which sessions an episode list shows; ``outcome`` follows the rule of ``EpisodeRow.outcome``."""

    collection: str | None = None
    status: str | None = None
    robot: str | None = None
    task: str | None = None
    outcome: str | None = None
    session_id: str | None = None
    threshold: float = 0.5
    newest_first: bool = True


@dataclass(frozen=True, slots=True)
class EpisodeRow:
    """A session with its counts, robot, task and outcome.

    ``robot``: the session context's ``robot.id``, else ``robot`` when it is text, else ``robot_id``, else
    the ``robot_id`` of its memories (the least, when they differ). ``task``: ``task.name``, else ``task``
    when it is text. ``outcome``: with an ``outcome_score``, ``failure`` below the threshold and
    ``success`` otherwise; without one, the same test on the success rate of its judged memories
    (``task.success`` true or false); ``unknown`` when it has neither.
    """

    row: SessionRow
    robot: str | None
    task: str | None
    outcome: str


@dataclass(frozen=True, slots=True)
class RateBin:
    """A bin of a parameter (``lo <= value < hi``): memories, successes, success rate and its 95 % Wilson
    interval (``rate``, ``low``, ``high`` are None when the bin is empty)."""

    lo: float
    hi: float
    count: int
    successes: int
    rate: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True, slots=True)
class RateCell:
    """A non-empty cell of the grid of two parameters' bins, with its memories and success rate."""

    x_bin: int
    y_bin: int
    count: int
    successes: int
    rate: float
