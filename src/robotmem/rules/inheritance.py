"""What a memory takes from the session it is written in: its robot id and the session's context (pure).

A session's context names the robot (``{"robot_id": "arm-01"}`` or ``{"robot": {"id": "arm-01"}}``) and
the task. Every memory written in the session (``learn``, ``save_perception``, and ``update`` with a new
context) is stored with:

* ``robot_id``: the session context's robot id when it names one, else the instance's (the
  ``robot_id`` setting, ``ROBOTMEM_ROBOT_ID``, else the id the store derives for itself);
* ``context``: the session's context under the memory's own, merged key by key at every depth, the
  memory's own value winning wherever both hold one (the top-level ``robot_id`` key is not copied: it is
  the record's ``robot_id``). So ``{"task.name": "pick"}`` finds the memories of a session started with
  ``{"task": {"name": "pick"}}``, on both engines and through every recall path, because the merged
  context is what is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from robotmem.errors import ValidationError

ROBOT_ID_KEY = "robot_id"  # a session context's top-level robot id (the README's and MCP's example)
MAX_ROBOT_ID_CHARS = 200


def robot_id_problem(value: Any) -> str | None:
    """Return why ``value`` cannot be a robot id (the ``robot_id`` setting's rule), or None."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ROBOT_ID_CHARS:
        return f"a robot id is a string of 1..{MAX_ROBOT_ID_CHARS} characters"
    if any(not ch.isprintable() or ch.isspace() or ch == "," for ch in value):
        return "a robot id has no spaces, commas or unprintable characters"
    return None


def named_robot(context: Mapping[str, Any]) -> tuple[str, Any] | None:
    """Return ``(path, value)`` of the robot id a session context names (``robot_id``, else ``robot.id``),
    or None when it names none."""
    if ROBOT_ID_KEY in context:
        return ROBOT_ID_KEY, context[ROBOT_ID_KEY]
    robot = context.get("robot")
    if isinstance(robot, Mapping) and "id" in robot:
        return "robot.id", robot["id"]
    return None


def check_session_robot(field: str, context: Mapping[str, Any]) -> None:
    """Raise ``ValidationError`` when the session context ``field`` names a robot id that is not one."""
    named = named_robot(context)
    if named is None:
        return
    path, value = named
    problem = robot_id_problem(value)
    if problem is not None:
        raise ValidationError(f"{field}.{path}: {problem}; got {value!r}")


def session_robot_id(context: Mapping[str, Any] | None) -> str | None:
    """Return the robot id a session's context names, or None (none named, or not a valid id)."""
    named = named_robot(context or {})
    if named is None or robot_id_problem(named[1]) is not None:
        return None
    value: str = named[1]
    return value


def inherited_context(session: Mapping[str, Any] | None, own: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``own`` over ``session``: every key of both, the memory's own value winning; objects both hold
    are merged the same way at every depth. The session's top-level ``robot_id`` is left out."""
    if not session:
        return dict(own)
    base = {key: value for key, value in session.items() if key != ROBOT_ID_KEY}
    return _merged(base, own)


def _merged(base: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(base)
    for key, value in own.items():
        below = result.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            result[key] = _merged(below, value)
        else:
            result[key] = value
    return result
