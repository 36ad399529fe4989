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


def learn(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """``RobotMemory.learn`` on the default instance."""
    return default_memory().learn(*args, **kwargs)


def recall(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """``RobotMemory.recall`` on the default instance."""
    return default_memory().recall(*args, **kwargs)


def save_perception(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """``RobotMemory.save_perception`` on the default instance."""
    return default_memory().save_perception(*args, **kwargs)


def forget(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """``RobotMemory.forget`` on the default instance."""
    return default_memory().forget(*args, **kwargs)


def update(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """``RobotMemory.update`` on the default instance."""
    return default_memory().update(*args, **kwargs)


def start_session(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """``RobotMemory.start_session`` on the default instance."""
    return default_memory().start_session(*args, **kwargs)


def end_session(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """``RobotMemory.end_session`` on the default instance."""
    return default_memory().end_session(*args, **kwargs)


__all__ = [
    "ConflictError",
    "DatabaseError",
    "EmbeddingError",
    "NotFoundError",
    "RobotMemError",
    "RobotMemory",
    "ValidationError",
    "__version__",
    "default_memory",
    "end_session",
    "forget",
    "learn",
    "recall",
    "save_perception",
    "start_session",
    "update",
]
