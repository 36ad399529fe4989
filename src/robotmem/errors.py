"""The error classes every surface raises or maps.

Each class carries a stable ``code`` (used by REST and MCP) and the REST status it maps to.
"""

from __future__ import annotations


class RobotMemError(Exception):
    """Base class of every error robotmem raises on purpose."""

    code = "error"
    http_status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationError(RobotMemError):
    """The input is invalid; the message names the field and the accepted form."""

    code = "invalid_input"
    http_status = 400


class NotFoundError(RobotMemError):
    """No memory or session with that id."""

    code = "not_found"
    http_status = 404


class ConflictError(RobotMemError):
    """The current state forbids the change (e.g. editing a forgotten memory)."""

    code = "conflict"
    http_status = 409


class DatabaseError(RobotMemError):
    """The store failed: locked past the retries, disk full, read-only or corrupt file, server unreachable.

    ``transient`` is True only for a fault a retry can cure (another process held the lock): REST
    answers 503 for those and 500 for the rest, which need someone to act.
    """

    code = "storage"
    http_status = 500

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient
        if transient:
            self.http_status = 503


class EmbeddingError(RobotMemError):
    """The configured embedder cannot run."""

    code = "embedder"
    http_status = 503
