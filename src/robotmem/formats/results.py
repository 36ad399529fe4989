"""The JSON shapes every surface returns (SPEC §2 and the inspection methods), as ``TypedDict``s.

``robotmem.formats.serialize`` is the one place they are built; the Python API, MCP (whose output schemas are
derived from these types), REST and the CLI return exactly them. Keys marked ``NotRequired`` appear only
in some results (say which in the comment).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, with_config
from typing_extensions import NotRequired, TypedDict

# The operations' results carry a docstring under each key: MCP's output schemas are derived from
# these types, and the docstrings become the field descriptions a client reads.
described = with_config(ConfigDict(use_attribute_docstrings=True))


class AutoInferred(TypedDict):
    """What classification inferred for a text."""

    category: str
    confidence: float
    tags: list[str]
    scope_files: list[str]
    scope_entities: list[str]
    params: dict[str, Any]


@described
class LearnResult(TypedDict):
    """Result of learn: ``created`` (memory_id, auto_inferred) or ``duplicate`` (method, existing_id,
    similarity)."""

    status: Literal["created", "duplicate"]
    """created: a new memory; duplicate: the experience is already stored (nothing was written)."""
    memory_id: NotRequired[int]
    """created: id of the new memory."""
    auto_inferred: NotRequired[AutoInferred]
    """created: category, confidence, tags, scope_files, scope_entities, params."""
    method: NotRequired[Literal["exact", "jaccard", "cosine"]]
    """duplicate: which check found it."""
    existing_id: NotRequired[int]
    """duplicate: id of the memory already stored."""
    similarity: NotRequired[float]
    """duplicate: similarity to it, 0..1."""


@described
class MemoryRecord(TypedDict):
    """A memory as recall, listings and the web show it: the context's four sections also at top level."""

    id: int
    collection: str
    type: str
    content: str
    human_summary: str | None
    category: str
    confidence: float
    tags: list[str]
    session_id: str | None
    perception_type: str | None
    created_at: str
    updated_at: str
    observed_at: str
    """When it happened (ISO 8601 UTC); created_at is when it was stored."""
    access_count: int
    robot_id: str
    """The robot whose experience it is (docs/fleet.md)."""
    uid: str
    """The 32-hex id that names this memory in every store of the fleet; id is local to one store."""
    context: dict[str, Any]
    params: dict[str, Any]
    spatial: dict[str, Any]
    robot: dict[str, Any]
    task: dict[str, Any]


@described
class RecallHit(MemoryRecord):
    """A recalled memory with its normalised score (best = 1.0) and the channels that found it."""

    score: float
    """Relevance after fusion, weights and sorting, normalised so the best is 1.0."""
    matched_by: list[str]
    """The channels that found it: text, vector."""
    relevance: float | None
    """How relevant it is to the query, 0..1, comparable across queries (0.5 = the calibrated floor); null
    without a query."""
    spatial_distance: NotRequired[float | None]
    """With spatial_sort: Euclidean distance to the target (null when not finite or without the field)."""
    data: NotRequired[Any]
    """Perceptions, with include_data: the stored payload."""
    metadata: NotRequired[Any]
    """Perceptions, with include_data: the stored metadata."""


@described
class RecallResult(TypedDict):
    """Result of recall."""

    memories: list[RecallHit]
    """Best first."""
    total: int
    """Number of memories returned."""
    mode: Literal["hybrid", "bm25_only", "vec_only", "filter_only"]
    """The search that ran (bm25_only when no embedder can run, filter_only for an empty query)."""
    query_ms: float
    """Time the recall took, in milliseconds."""
    collections: list[str]
    """The collections searched (every collection holding an active memory for collection "*")."""
    warnings: list[str]
    """Why the filter may match nothing: a path no memory in scope carries (with the nearest path that
    exists), or an operand of a type no stored value at its path has. Empty when nothing looks wrong."""
    note: str | None
    """With a query and no memories: why (nothing in scope reaches min_relevance); else null."""


class ListedMemory(MemoryRecord):
    """A memory in a listing of any status."""

    status: str
    superseded_by: int | None


class MemoryDetail(ListedMemory):
    """Everything stored about one memory."""

    merged_ids: list[int]
    last_accessed: str | None
    scope_files: list[str]
    scope_entities: list[str]
    invalidated_reason: str | None
    has_embedding: bool
    data: NotRequired[Any]  # perceptions
    metadata: NotRequired[Any]  # perceptions


@described
class PerceptionResult(TypedDict):
    """Result of save_perception."""

    memory_id: int
    """Id of the new perception."""
    perception_type: str
    """visual, tactile, auditory, proprioceptive or procedural."""
    collection: str
    """Collection it was stored in."""
    has_embedding: bool
    """Whether the description got a vector now (else backfill adds it later)."""


@described
class ForgetResult(TypedDict):
    """Result of forget."""

    status: Literal["forgotten"]
    """Always forgotten: recall no longer returns the memory."""
    memory_id: int
    """Id of the forgotten memory."""
    content: str
    """Text of the forgotten memory."""
    reason: str
    """Why it was forgotten, as given."""


@described
class UpdateResult(TypedDict):
    """Result of update."""

    status: Literal["updated"]
    """Always updated."""
    memory_id: int
    """Id of the corrected memory."""
    old_content: str
    """Text before the correction."""
    new_content: str
    """Text after the correction."""
    auto_inferred: AutoInferred
    """Category, confidence, tags, scopes and params inferred again from the new text."""


@described
class StartSessionResult(TypedDict):
    """Result of start_session."""

    session_id: str
    """Pass it to end_session (and optionally to learn, save_perception and recall)."""
    collection: str
    """Collection of the episode."""
    active_memories_count: int
    """Active memories already in the collection."""


class SessionSummary(TypedDict):
    memory_count: int
    by_type: dict[str, int]
    by_category: dict[str, int]


class ConsolidationReport(TypedDict):
    merged_groups: int
    superseded_count: int
    compression_ratio: float
    avg_similarity: float


@described
class EndSessionResult(TypedDict):
    """Result of end_session."""

    status: Literal["ended"]
    """Always ended."""
    session_id: str
    """The episode that ended."""
    summary: SessionSummary
    """memory_count, by_type and by_category of the episode's memories."""
    decayed_count: int
    """Memories whose confidence decayed."""
    consolidated: ConsolidationReport
    """merged_groups, superseded_count, compression_ratio, avg_similarity."""
    related_memories: list[RecallHit]
    """Memories of other episodes related to this one, best first."""


class SessionRecord(TypedDict):
    session_id: str
    collection: str
    context: dict[str, Any]
    status: str
    created_at: str
    ended_at: str | None
    outcome_score: float | None
    summary: dict[str, Any] | None


class ListedSession(SessionRecord):
    """A session with its counts: memories, judged successes and failures."""

    memory_count: int
    successes: int
    failures: int
    success_rate: float | None


class ListedEpisode(ListedSession):
    """A session as the episode list shows it: robot, task, outcome and duration besides the counts."""

    robot: str | None
    task: str | None
    outcome: str  # success, failure or unknown (records.EpisodeRow)
    duration_s: float | None  # ended_at - created_at; None while the session runs


class RobotCount(TypedDict):
    robot: str
    sessions: int


class TaskCount(TypedDict):
    task: str
    sessions: int


class EpisodeFacets(TypedDict):
    """The robots and tasks sessions name, most sessions first."""

    robots: list[RobotCount]
    tasks: list[TaskCount]


class MemoryPage(TypedDict):
    memories: list[ListedMemory]
    total: int
    limit: int
    offset: int


class SessionPage(TypedDict):
    sessions: list[ListedEpisode]
    total: int
    limit: int
    offset: int


class SessionTimeline(TypedDict):
    session: ListedEpisode
    memories: list[ListedMemory]
    total: int


class CategoryCount(TypedDict):
    category: str
    count: int


class CollectionSummary(TypedDict):
    collection: str
    memories: int
    active: int
    sessions: int
    last_at: str | None


class CollectionsResult(TypedDict):
    collections: list[CollectionSummary]


class CategoriesResult(TypedDict):
    categories: list[CategoryCount]


class FailuresResult(TypedDict):
    sessions: list[ListedEpisode]
    memories: list[ListedMemory]


class SpatialPoint(TypedDict):
    memory_id: int
    content: str
    coordinates: list[Any]
    success: bool | None


class SpatialPointsResult(TypedDict):
    field: str
    points: list[SpatialPoint]


class FieldCount(TypedDict):
    field: str
    memories: int


class MapPointRecord(TypedDict):
    memory_id: int
    type: str
    content: str
    coordinates: list[Any]
    success: bool | None
    time: str
    session_id: str | None


class FrameCount(TypedDict):
    frame: str
    memories: int


class TrackPoint(TypedDict):
    memory_id: int
    position: list[float]
    observed_at: str  # ISO 8601 UTC


class MapObject(TypedDict):
    """An object on one frame's map: its latest sighting there and its track (sightings, oldest first)."""

    object_id: str | None
    label: str | None
    collection: str
    position: list[float]
    observed_at: str  # ISO 8601 UTC
    memory_id: int
    sightings: int
    track: list[TrackPoint]


class MapResult(TypedDict):
    """Positions at one spatial field in one coordinate frame, and the objects seen in that frame."""

    field: str | None
    fields: list[FieldCount]
    frame: str | None
    frames: list[FrameCount]
    layers: list[str]
    time_field: str
    since: str | None
    until: str | None
    points: list[MapPointRecord]
    total: int
    limit: int
    objects: list[MapObject]
    sightings: int  # object sightings in the frame and window (the newest ``limit`` make the tracks)


class ParamField(TypedDict):
    field: str
    unit: str | None
    memories: int
    units: dict[str, int]  # memories per unit ("" for none), when they differ


class ParamFieldsResult(TypedDict):
    fields: list[ParamField]


class Axis(TypedDict):
    field: str
    unit: str | None
    min: float | None
    max: float | None
    edges: list[float]


class Bin(TypedDict):
    """One bin of a parameter: its range, count, successes, success rate and 95 % Wilson interval."""

    lo: float
    hi: float
    count: int
    successes: int
    rate: float | None
    low: float | None
    high: float | None


class Cell(TypedDict):
    """One non-empty cell of the grid of two parameters' bins."""

    x_bin: int
    y_bin: int
    count: int
    successes: int
    rate: float


class ParamPoint(TypedDict):
    memory_id: int
    x: float
    y: float | None
    success: bool


class LeftOut(TypedDict):
    no_outcome: int
    other_unit: int
    no_y: int


class ParamOutcomeResult(TypedDict):
    x: Axis
    y: Axis | None
    success: str
    interval: str
    judged: int
    successes: int
    left_out: LeftOut
    bins: list[Bin]
    cells: list[Cell]
    points: list[ParamPoint]
    points_total: int


class MemoryCounts(TypedDict):
    total: int
    active: int


class MemoryTotals(MemoryCounts):
    by_status: dict[str, int]
    facts: int
    perceptions: int


class SessionTotals(TypedDict):
    total: int
    active: int
    ended: int


class SessionOutcome(TypedDict):
    """One ended session on the dashboard's outcome chart."""

    session_id: str
    created_at: str
    ended_at: str | None
    outcome_score: float | None
    success_rate: float | None
    memory_count: int


class Stats(TypedDict):
    """Dashboard totals."""

    collection: str | None
    memories: MemoryTotals
    last_24h: int
    sessions: SessionTotals
    categories: list[CategoryCount]
    collections: list[CollectionSummary]
    session_outcomes: list[SessionOutcome]
    spatial_fields: list[str]


class EmbedderStatus(TypedDict):
    model_id: str | None
    available: bool
    status: str


class FtsHealth(TypedDict):
    rows: int
    missing_active: int
    in_sync: bool


class VectorHealth(TypedDict):
    stored: int
    active_without_vector: int
    stale: int
    stored_model: tuple[str, int] | None
    """(model_id, dim) of the stored vectors; null before the first vector."""


class DoctorReport(TypedDict):
    """Health of the database, its indexes and the embedder (``robotmem doctor``)."""

    database: str
    expected_schema_version: int
    schema_version: int
    journal_mode: str
    memories: MemoryCounts
    sessions: int
    fts: FtsHealth
    vectors: VectorHealth
    embedder: EmbedderStatus
    search_mode: Literal["hybrid", "bm25_only"]
    search_mode_reason: str
    ok: bool


class IntegrityCheck(TypedDict):
    """SQLite's verdict and every derived-index check (``problems`` and ``examples`` are keyed by check)."""

    ok: bool
    integrity_check: list[str]
    foreign_key_violations: int
    problems: dict[str, int]
    examples: dict[str, list[Any]]
    active_without_vector: int
    rows: dict[str, int]
    error: NotRequired[str]
    """Set when the file is too damaged for the index checks to run."""


class IntegrityResult(IntegrityCheck):
    """``robotmem check``: the checks of one database, changing nothing."""

    database: str


class RepairActions(TypedDict):
    """What a repair rebuilt or fixed, as counts (``reindexed``: whether ``REINDEX`` ran)."""

    reindexed: bool
    fts_rows_indexed: int
    vectors_tombstoned: int
    vectors_unmarked: int
    vectors_remarked: int
    tags_deleted: int
    payloads_deleted: int
    sessions_recreated: int
    sessions_fixed: int
    supersede_links_cleared: int
    times_normalised: int
    times_replaced: int
    confidences_clamped: int
    context_values_indexed: int
    columns_rewritten: int
    superseded_restored: int
    vectors_renormalised: int  # stored vectors scaled back to unit length (the vector rule)
    vectors_dropped: int  # stored vectors that could not be: dropped for backfill


class RepairResult(TypedDict):
    database: str
    ok: bool
    repaired: RepairActions
    before: IntegrityCheck
    after: IntegrityCheck


class BackupResult(TypedDict):
    status: Literal["backed_up"]
    path: str
    bytes: int
    memories: int
    integrity_check: str
    duration_ms: float


class ExportResult(TypedDict):
    status: Literal["exported"]
    path: str
    memories: int
    sessions: int
    vectors: int
    embedding_model: str | None
    dim: int | None


class ImportResult(TypedDict):
    status: Literal["imported"]
    path: str
    conflict: str
    memories: dict[str, int]
    sessions: dict[str, int]
    vectors: dict[str, int]
    without_vector: int


class SyncResult(TypedDict):
    status: Literal["synced"]
    fleet: str
    robot_id: str
    fleet_store_id: str
    direction: str
    # Per kind ("memories", "sessions"): created, updated, unchanged, kept (the receiver's version won),
    # refused (beyond the syncing robot's limits).
    pushed: dict[str, dict[str, int]] | None
    pulled: dict[str, dict[str, int]] | None
    without_vector: int


class BackfillResult(TypedDict):
    status: Literal["complete", "stopped", "unavailable"]
    embedded: int
    remaining: int
    model_id: str | None
    reason: str


class ReindexResult(TypedDict):
    status: Literal["complete", "up_to_date"]
    model_id: str
    dim: int
    previous_model: list[Any] | None
    embedded: int
    resumed: bool
    vectors: int | None
    without_vector: int


class ModelRef(TypedDict):
    model_id: str
    dim: int


class ReindexProgress(ModelRef):
    """An unfinished reindex: its target model and how many of ``total`` vectors are staged."""

    staged: int
    total: int


class EmbeddingStatus(TypedDict):
    database_model: ModelRef | None
    without_vector: int
    reindex: ReindexProgress | None
    embedder: EmbedderStatus
    search_mode: Literal["hybrid", "bm25_only"]
    search_mode_reason: str
    background_backfill: bool


@described
class ObjectSighting(TypedDict):
    """An object and where it was seen last (``last_seen``, ``around``)."""

    object_id: str | None
    """The id its sightings name (null for an object known by its label alone)."""
    label: str | None
    """Its label (the latest a sighting gave)."""
    position: list[float] | None
    """Where it was seen: [x, y] or [x, y, z] in ``frame``."""
    frame: str
    """The coordinate frame of the position ("map" when the sighting named none)."""
    observed_at: str
    """When that sighting happened, ISO 8601 UTC."""
    memory_id: int
    """The memory of that sighting."""
    sightings: int
    """How many sightings of the object the question covered."""
    distance: NotRequired[float]
    """``around``: from the asked position."""


@described
class LastSeenResult(TypedDict):
    """Result of last_seen."""

    objects: list[ObjectSighting]
    """Each matching object's latest sighting, best match first (empty: no such object seen)."""
    warnings: NotRequired[list[str]]
    """Only when nothing was found and the region's frame holds no position: says so, with the frames that do."""
    note: NotRequired[str]
    """Only when nothing was found: why (no sighting names that id, none in the window asked, no object
    seen is named by the description, no sighting at all in this scope)."""


@described
class AroundResult(TypedDict):
    """Result of around."""

    objects: list[ObjectSighting]
    """Objects whose latest sighting lies within the radius, nearest first."""
    memories: list[RecallHit]
    """The most recent memories within the radius."""
    warnings: NotRequired[list[str]]
    """Only when nothing is around and the frame holds no position: says so, with the frames that do."""
