"""RobotMemory methods for maintenance (mixed into ``RobotMemory``)."""

from __future__ import annotations


class MaintenanceMixin:
    """Methods that ``RobotMemory`` gains for maintenance; they use its ``_read``/``_write`` helpers."""
