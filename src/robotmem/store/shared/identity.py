"""Who a store is, for both engines: the robot id a store derives for itself when none is set."""

from __future__ import annotations

import socket


def derived_robot_id(store_id: str) -> str:
    """Return the robot id a store names itself by when no ``robot_id`` is set: host name and store id."""
    host = "".join(ch for ch in socket.gethostname() if ch.isprintable() and not ch.isspace())[:64]
    return f"{host or 'robot'}-{store_id[:8]}"
