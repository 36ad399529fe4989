"""robotmem: experience memory for robots — learn, recall, perceive, forget, update, sessions.

``RobotMemory`` is the API; the module functions delegate to a default instance created on first use
(``$ROBOTMEM_HOME/memory.db``, settings from the environment).
"""

from __future__ import annotations

import threading
from typing import Any

from robotmem.errors import (
    ConflictError,
    DatabaseError,
    EmbeddingError,
    NotFoundError,
    RobotMemError,
    ValidationError,
)
from robotmem.formats.results import (
    AroundResult,
    EndSessionResult,
    ForgetResult,
    LastSeenResult,
    LearnResult,
    PerceptionResult,
    RecallResult,
    StartSessionResult,
    UpdateResult,
)
from robotmem.service import RobotMemory

__version__ = "0.1.0"

_default: RobotMemory | None = None
_default_lock = threading.Lock()


def default_memory() -> RobotMemory:
    """Return the process-wide default ``RobotMemory``, creating it on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = RobotMemory()
        return _default


def learn(
    insight: str,
    context: dict[str, Any] | str | None = None,
    collection: str | None = None,
    session_id: str | None = None,
    observed_at: str | float | None = None,
    robot_id: str | None = None,
) -> LearnResult:
    """``RobotMemory.learn`` on the default instance."""
    return default_memory().learn(insight, context, collection, session_id, observed_at, robot_id)


def recall(
    query: str = "",
    n: int | None = None,
    min_confidence: float | None = None,
    session_id: str | None = None,
    context_filter: dict[str, Any] | str | None = None,
    spatial_sort: dict[str, Any] | str | None = None,
    collection: str | None = None,
    include_data: bool = False,
    order: str = "relevance",
    robots: list[str] | str | None = None,
    since: str | float | None = None,
    until: str | float | None = None,
    min_relevance: float | None = None,
    region: dict[str, Any] | str | None = None,
) -> RecallResult:
    """``RobotMemory.recall`` on the default instance."""
    return default_memory().recall(
        query, n, min_confidence, session_id, context_filter, spatial_sort, collection, include_data, order,
        robots, since, until, min_relevance, region,
    )  # fmt: skip


def last_seen(
    query: str = "",
    object_id: str | None = None,
    n: int = 5,
    since: str | float | None = None,
    until: str | float | None = None,
    region: dict[str, Any] | str | None = None,
    as_of: str | float | None = None,
    collection: str | None = None,
) -> LastSeenResult:
    """``RobotMemory.last_seen`` on the default instance."""
    return default_memory().last_seen(query, object_id, n, since, until, region, as_of, collection)


def around(
    position: list[float],
    radius: float,
    frame: str | None = None,
    since: str | float | None = None,
    n: int = 10,
    collection: str | None = None,
) -> AroundResult:
    """``RobotMemory.around`` on the default instance."""
    return default_memory().around(position, radius, frame, since, n, collection)


def save_perception(
    description: str,
    perception_type: str = "visual",
    data: Any = None,
    metadata: Any = None,
    collection: str | None = None,
    session_id: str | None = None,
    context: dict[str, Any] | str | None = None,
    observed_at: str | float | None = None,
    robot_id: str | None = None,
) -> PerceptionResult:
    """``RobotMemory.save_perception`` on the default instance."""
    return default_memory().save_perception(
        description, perception_type, data, metadata, collection, session_id, context, observed_at, robot_id
    )


def forget(memory_id: int, reason: str) -> ForgetResult:
    """``RobotMemory.forget`` on the default instance."""
    return default_memory().forget(memory_id, reason)


def update(
    memory_id: int,
    new_content: str,
    context: dict[str, Any] | str | None = None,
    observed_at: str | float | None = None,
) -> UpdateResult:
    """``RobotMemory.update`` on the default instance."""
    return default_memory().update(memory_id, new_content, context, observed_at)


def start_session(
    context: dict[str, Any] | str | None = None, collection: str | None = None
) -> StartSessionResult:
    """``RobotMemory.start_session`` on the default instance."""
    return default_memory().start_session(context, collection)


def end_session(session_id: str, outcome_score: float | None = None) -> EndSessionResult:
    """``RobotMemory.end_session`` on the default instance."""
    return default_memory().end_session(session_id, outcome_score)


__all__ = [
    "AroundResult",
    "ConflictError",
    "DatabaseError",
    "EmbeddingError",
    "EndSessionResult",
    "ForgetResult",
    "LastSeenResult",
    "LearnResult",
    "NotFoundError",
    "PerceptionResult",
    "RecallResult",
    "RobotMemError",
    "RobotMemory",
    "StartSessionResult",
    "UpdateResult",
    "ValidationError",
    "__version__",
    "around",
    "default_memory",
    "end_session",
    "forget",
    "last_seen",
    "learn",
    "recall",
    "save_perception",
    "start_session",
    "update",
]
