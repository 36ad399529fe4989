"""Connections to robot-learning frameworks; each module needs its optional extra installed.

``robotmem.integrations.gymnasium`` - ``RobotMemWrapper`` for Gymnasium environments (``robotmem[gym]``).
"""
