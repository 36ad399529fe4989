"""RobotMemory methods for transfer (mixed into ``RobotMemory``)."""

from __future__ import annotations


class TransferMixin:
    """Methods that ``RobotMemory`` gains for transfer; they use its ``_read``/``_write`` helpers."""
