"""Gymnasium integration: ``from robotmem.gymnasium import RobotMemWrapper`` (needs ``robotmem[gym]``)."""

from robotmem.integrations.gymnasium import RecallConfig, RobotMemWrapper

__all__ = ["RecallConfig", "RobotMemWrapper"]
