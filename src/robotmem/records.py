"""Plain records passed inside the core (frozen dataclasses; no behaviour beyond small derivations)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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


@dataclass(frozen=True, slots=True)
class Hit:
    """A memory returned by recall with its normalised score."""

    memory: Memory
    score: float
    matched_by: frozenset[str] = field(default_factory=frozenset)
    spatial_distance: float | None = None
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
