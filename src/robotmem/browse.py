"""RobotMemory methods for browse (mixed into ``RobotMemory``)."""

from __future__ import annotations


class BrowseMixin:
    """Methods that ``RobotMemory`` gains for browse; they use its ``_read``/``_write`` helpers."""
