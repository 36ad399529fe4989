"""The JSON shapes every surface returns (SPEC §2 and the inspection methods), as ``TypedDict``s.

``robotmem.serialize`` is the one place they are built; the Python API, MCP (whose output schemas are
derived from these types), REST and the CLI return exactly them. Keys marked ``NotRequired`` appear only
in some results (say which in the comment).
"""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import NotRequired, TypedDict


class AutoInferred(TypedDict):
    """What classification inferred for a text."""

    category: str
    confidence: float
    tags: list[str]
    scope_files: list[str]
    scope_entities: list[str]
    params: dict[str, Any]


class LearnResult(TypedDict):
    """``created`` (memory_id, auto_inferred) or ``duplicate`` (method, existing_id, similarity)."""

    status: Literal["created", "duplicate"]
    memory_id: NotRequired[int]
    auto_inferred: NotRequired[AutoInferred]
    method: NotRequired[Literal["exact", "jaccard", "cosine"]]
    existing_id: NotRequired[int]
    similarity: NotRequired[float]


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
    access_count: int
    context: dict[str, Any]
    params: dict[str, Any]
    spatial: dict[str, Any]
    robot: dict[str, Any]
    task: dict[str, Any]


class RecallHit(MemoryRecord):
    """A recalled memory with its normalised score (best = 1.0) and the channels that found it."""

    score: float
    matched_by: list[str]
    spatial_distance: NotRequired[float | None]  # with spatial_sort (null when not finite)
    data: NotRequired[Any]  # perceptions, with include_data
    metadata: NotRequired[Any]  # perceptions, with include_data


class RecallResult(TypedDict):
    memories: list[RecallHit]
    total: int
    mode: Literal["hybrid", "bm25_only", "vec_only", "filter_only"]
    query_ms: float


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


class PerceptionResult(TypedDict):
    memory_id: int
    perception_type: str
    collection: str
    has_embedding: bool


class ForgetResult(TypedDict):
    status: Literal["forgotten"]
    memory_id: int
    content: str
    reason: str


class UpdateResult(TypedDict):
    status: Literal["updated"]
    memory_id: int
    old_content: str
    new_content: str
    auto_inferred: AutoInferred


class StartSessionResult(TypedDict):
    session_id: str
    collection: str
    active_memories_count: int


class SessionSummary(TypedDict):
    memory_count: int
    by_type: dict[str, int]
    by_category: dict[str, int]


class ConsolidationReport(TypedDict):
    merged_groups: int
    superseded_count: int
    compression_ratio: float
    avg_similarity: float


class EndSessionResult(TypedDict):
    status: Literal["ended"]
    session_id: str
    summary: SessionSummary
    decayed_count: int
    consolidated: ConsolidationReport
    related_memories: list[RecallHit]


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


class MemoryPage(TypedDict):
    memories: list[ListedMemory]
    total: int
    limit: int
    offset: int


class SessionPage(TypedDict):
    sessions: list[ListedSession]
    total: int
    limit: int
    offset: int


class SessionTimeline(TypedDict):
    session: ListedSession
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
    sessions: list[ListedSession]
    memories: list[ListedMemory]


class SpatialPoint(TypedDict):
    memory_id: int
    content: str
    coordinates: list[Any]
    success: bool | None


class SpatialPointsResult(TypedDict):
    field: str
    points: list[SpatialPoint]


class Stats(TypedDict):
    """Dashboard totals."""

    collection: str | None
    memories: dict[str, Any]
    last_24h: int
    sessions: dict[str, int]
    categories: list[CategoryCount]
    collections: list[CollectionSummary]
    session_outcomes: list[dict[str, Any]]
    spatial_fields: list[str]


class EmbedderStatus(TypedDict):
    model_id: str | None
    available: bool
    status: str


class DoctorReport(TypedDict):
    """Health of the database, its indexes and the embedder (``robotmem doctor``)."""

    database: str
    expected_schema_version: int
    schema_version: int
    journal_mode: str
    memories: dict[str, int]
    sessions: int
    fts: dict[str, Any]
    vectors: dict[str, Any]
    embedder: EmbedderStatus
    search_mode: Literal["hybrid", "bm25_only"]
    search_mode_reason: str
    ok: bool


class IntegrityResult(TypedDict):
    """``robotmem check``: SQLite's verdict and every derived-index check, changing nothing."""

    database: str
    ok: bool
    integrity_check: list[str]
    foreign_key_violations: int
    problems: dict[str, int]
    examples: dict[str, list[Any]]
    active_without_vector: int
    rows: dict[str, int]
    error: NotRequired[str]


class RepairResult(TypedDict):
    database: str
    ok: bool
    repaired: dict[str, Any]
    before: dict[str, Any]
    after: dict[str, Any]


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


class EmbeddingStatus(TypedDict):
    database_model: dict[str, Any] | None
    without_vector: int
    reindex: dict[str, Any] | None
    embedder: EmbedderStatus
    search_mode: Literal["hybrid", "bm25_only"]
    search_mode_reason: str
    background_backfill: bool
