"""Input models of the seven operations (Pydantic) and the parse functions every surface goes through.

The models carry the SPEC defaults and limits, so REST and MCP schemas are generated from them;
limits that settings can change are checked again by the service with the configured values.
"""

from __future__ import annotations

import contextlib
import json
import math
from datetime import datetime, timezone
from typing import Annotated, Any, Literal, TypeVar

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from robotmem.errors import ValidationError

JsonObjectOrText = Annotated[
    dict[str, Any] | str | None,
    Field(description="A JSON object, or a string holding one."),
]
PerceptionType = Literal["visual", "tactile", "auditory", "proprioceptive", "procedural"]
MAX_JSON_DEPTH = 32


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class LearnInput(_Input):
    """Store one experience (an insight with its context)."""

    insight: str = Field(
        description="The lesson or finding, 1..300 characters after trimming.", max_length=100_000
    )
    context: JsonObjectOrText = Field(
        default=None, description="Context JSON with sections params, spatial, robot, task (≤64 KiB)."
    )
    collection: str | None = Field(default=None, description="Collection name (default: the instance's).")
    session_id: str | None = Field(default=None, description="Session (episode) the memory belongs to.")


class RecallInput(_Input):
    """Find the most relevant memories."""

    query: str = Field(
        default="", description="What to look for; may be empty when filters or spatial_sort are given."
    )
    n: int | None = Field(default=None, ge=1, le=100, description="How many memories to return (default 5).")
    min_confidence: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Lowest confidence (default 0.3)."
    )
    session_id: str | None = Field(default=None, description="Only memories of this session.")
    context_filter: JsonObjectOrText = Field(
        default=None, description='Structured filter, e.g. {"task.success": true}.'
    )
    spatial_sort: JsonObjectOrText = Field(
        default=None, description='{"field": "spatial.position", "target": [x, y, z], "max_distance": 0.5}.'
    )
    collection: str | None = Field(
        default=None, description="Collection to search (default: the instance's)."
    )
    include_data: bool = Field(default=False, description="Include perception data and metadata.")
    order: Literal["relevance", "time"] = Field(
        default="relevance", description="relevance, or time (oldest first)."
    )
    robots: list[str] | str | None = Field(
        default=None,
        description='Robot ids to search (a list or comma-separated; "self" = this robot); default the whole fleet.',
    )


class SavePerceptionInput(_Input):
    """Store a sensor reading or trajectory."""

    description: str = Field(description="What was perceived, at least 5 characters.", max_length=100_000)
    perception_type: PerceptionType = Field(default="visual")
    data: Any = Field(default=None, description="Payload: a string or any JSON value (size-capped).")
    metadata: Any = Field(default=None, description="Extra JSON about the payload (size-capped).")
    collection: str | None = None
    session_id: str | None = None


class ForgetInput(_Input):
    """Mark a memory as wrong so recall stops returning it."""

    memory_id: int = Field(ge=1, le=2**63 - 1)
    reason: str = Field(description="Why the memory is wrong.", max_length=10_000)


class UpdateInput(_Input):
    """Correct the text (and optionally the context) of a memory."""

    memory_id: int = Field(ge=1, le=2**63 - 1)
    new_content: str = Field(description="The corrected text, 1..300 characters.", max_length=100_000)
    context: JsonObjectOrText = Field(default=None, description="Replaces the stored context when given.")


class StartSessionInput(_Input):
    """Begin an episode."""

    context: JsonObjectOrText = None
    collection: str | None = None


class EndSessionInput(_Input):
    """End an episode: summarise, consolidate, decay, and return related memories."""

    session_id: str = Field(min_length=1)
    outcome_score: float | None = Field(
        default=None, ge=0.0, le=1.0, description="How well the episode went, 0..1."
    )


ModelT = TypeVar("ModelT", bound=BaseModel)


def validate_input(model: type[ModelT], arguments: dict[str, Any]) -> ModelT:
    """Return ``model`` built from ``arguments``; raises ``ValidationError`` naming each bad field."""
    try:
        return model.model_validate(arguments)
    except pydantic.ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"]) or "input"
            detail = error["msg"]
            if error["type"] == "extra_forbidden":
                allowed = ", ".join(model.model_fields)
                detail = f"unknown parameter; accepted parameters are {allowed}"
            elif error["type"] != "missing":
                detail += f" (got {_short(error.get('input'))})"
            problems.append(f"{field}: {detail}")
        raise ValidationError("; ".join(problems)) from None


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except RecursionError:
        return f"a {type(value).__name__} nested too deeply to show"
    return text if len(text) <= 60 else text[:57] + "..."


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _depth(value: Any, limit: int) -> int:
    """Return the nesting depth of ``value`` (a scalar is 1), or a depth above ``limit`` once one is seen."""
    deepest = 1
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, level = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if children:
            if level + 1 > limit:
                return level + 1
            deepest = max(deepest, level + 1)
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def check_json_value(field: str, value: Any, max_bytes: int) -> str:
    """Return the compact JSON text of ``value``; raises ``ValidationError`` if it is not finite JSON,
    nests deeper than 32 levels or exceeds ``max_bytes``."""
    if _depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise ValidationError(f"{field}: nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:
        raise ValidationError(f"{field}: numbers must be finite (NaN and Infinity are not JSON)") from None
    except TypeError as exc:
        raise ValidationError(f"{field}: must contain only JSON values ({exc})") from None
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(
            f"{field}: contains a lone surrogate, which is not valid Unicode text"
        ) from None
    if size > max_bytes:
        raise ValidationError(f"{field}: is {size} bytes of JSON; the limit is {max_bytes}")
    return text


def parse_json_object(field: str, raw: Any, max_bytes: int) -> dict[str, Any]:
    """Return the object given as a dict or a JSON string (None or "" → {}).

    Raises ``ValidationError`` naming ``field`` for invalid JSON, a non-object, NaN/Infinity,
    nesting deeper than 32 or more than ``max_bytes``.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        if len(raw.encode("utf-8")) > max_bytes:
            raise ValidationError(f"{field}: is {len(raw.encode('utf-8'))} bytes; the limit is {max_bytes}")
        try:
            raw = json.loads(raw, parse_constant=_reject_constant)
        except ValueError as exc:
            raise ValidationError(f"{field}: is not valid JSON ({exc})") from None
        except RecursionError:
            raise ValidationError(f"{field}: nests deeper than {MAX_JSON_DEPTH} levels") from None
    if not isinstance(raw, dict):
        raise ValidationError(f"{field}: must be a JSON object, got {type(raw).__name__}")
    if not all(isinstance(key, str) for key in raw):
        raise ValidationError(f"{field}: object keys must be strings")
    check_json_value(field, raw, max_bytes)
    check_context_keys(field, raw)
    return raw


def context_key_problem(key: str) -> str | None:
    """Return why a filter or ``spatial_sort`` path could never reach the object key ``key``, or None.

    A path is dot-separated keys (``task.success``); a segment of digits indexes a list, a leading
    ``$`` marks an operator, and SQLite's JSON paths end a quoted key at a double quote.
    """
    if not key:
        return "is empty, and a path cannot name an empty key"
    if "." in key:
        return 'contains ".", which a path reads as a step into a nested object (nest the object instead)'
    if '"' in key:
        return "contains a double quote (\"), which SQLite's JSON paths cannot address"
    if key.startswith("$"):
        return 'starts with "$", which a filter reads as an operator'
    if key.isdigit():
        return "is all digits, which a path reads as a list index"
    return None


def filterable_key(key: str) -> str:
    """Return ``key`` made reachable by a filter path (see ``context_key_problem``).

    ``.`` becomes ``_`` and ``"`` becomes ``'``; a key that is empty, starts with ``$`` or is all
    digits gets a ``_`` in front. Integrations use it for names they read from data (a bag's outcome
    JSON, an observation's position names), which they do not choose.
    """
    name = key.replace(".", "_").replace('"', "'")
    if not name or name.startswith("$") or name.isdigit():
        name = "_" + name
    return name


def check_context_keys(field: str, value: Any) -> None:
    """Raise ``ValidationError`` for an object key, at any depth, that no filter path could reach, and for
    a key or text holding a NUL character.

    Such a key (empty, with ``.`` or ``"``, starting with ``$``, all digits: ``context_key_problem``)
    could be stored but never filtered or sorted on; SQLite reads a string only up to a NUL, and
    PostgreSQL cannot read a context holding one at all. Such contexts are refused when written instead
    of failing silently later. The message names where the key or text is and why.
    """
    stack: list[tuple[Any, str]] = [(value, field)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, dict):
            for key, child in node.items():
                problem = context_key_problem(key)
                if problem is not None:
                    raise ValidationError(
                        f"{where}: key {key!r} {problem}; rename it so filters and spatial_sort can reach it"
                    )
                if "\x00" in key:
                    raise ValidationError(f"{where}: key {key!r} contains a NUL character; remove it")
                stack.append((child, f"{where}.{key}"))
        elif isinstance(node, list):
            stack.extend((child, f"{where}.{index}") for index, child in enumerate(node))
        elif isinstance(node, str) and "\x00" in node:
            raise ValidationError(
                f"{where}: the text {_short(node)} contains a NUL character, which filters cannot read; remove it"
            )


def parse_payload(field: str, raw: Any, max_bytes: int) -> tuple[Any, str | None]:
    """Return ``(value, json_text)`` for perception data or metadata.

    A string holding JSON is parsed; any other string is kept as text. None stays None.
    """
    if raw is None:
        return None, None
    if isinstance(raw, str):
        try:
            with contextlib.suppress(ValueError):  # not JSON: keep the text as it is
                raw = json.loads(raw, parse_constant=_reject_constant)
        except RecursionError:
            raise ValidationError(f"{field}: nests deeper than {MAX_JSON_DEPTH} levels") from None
    if isinstance(raw, float) and not math.isfinite(raw):
        raise ValidationError(f"{field}: numbers must be finite (NaN and Infinity are not JSON)")
    return raw, check_json_value(field, raw, max_bytes)


def parse_text(field: str, raw: Any, *, min_chars: int = 1, max_chars: int | None = None) -> str:
    """Return ``raw`` stripped; raises ``ValidationError`` if not a string or outside the length bounds."""
    if not isinstance(raw, str):
        raise ValidationError(f"{field}: must be a string, got {type(raw).__name__}")
    text = raw.strip()
    if "\x00" in text:
        raise ValidationError(f"{field}: must not contain NUL characters")
    if len(text) < min_chars:
        what = "must not be empty" if min_chars == 1 else f"must be at least {min_chars} characters"
        raise ValidationError(f"{field}: {what} (got {len(text)})")
    if max_chars is not None and len(text) > max_chars:
        raise ValidationError(f"{field}: is {len(text)} characters; the limit is {max_chars}")
    return text


MAX_ROBOTS = 1000
SELF_ROBOT = "self"


def parse_robots(raw: list[str] | str | None, own: str) -> tuple[str, ...] | None:
    """Return the robot ids a recall is scoped to (``"self"`` becomes ``own``), or None for the whole fleet.

    ``raw`` is a list of ids or one comma-separated string. Raises ``ValidationError`` naming ``robots``
    for an empty list, an id that is empty, too long or has spaces, or more than ``MAX_ROBOTS`` ids.
    """
    if raw is None:
        return None
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    if not items or (isinstance(raw, str) and not raw.strip()):
        raise ValidationError("robots: give at least one robot id, or leave robots out for the whole fleet")
    if len(items) > MAX_ROBOTS:
        raise ValidationError(f"robots: {len(items)} robot ids; the limit is {MAX_ROBOTS}")
    found: list[str] = []
    for index, item in enumerate(items):
        name = item.strip() if isinstance(item, str) else item
        if not isinstance(name, str) or not 1 <= len(name) <= 200:
            raise ValidationError(f"robots[{index}]: a robot id is a string of 1..200 characters")
        if any(not ch.isprintable() or ch.isspace() for ch in name):
            raise ValidationError(f"robots[{index}]: {name!r} has spaces or unprintable characters")
        found.append(own if name == SELF_ROBOT else name)
    return tuple(dict.fromkeys(found))


def parse_name(field: str, raw: Any) -> str:
    """Return a collection or session name: 1..200 printable characters."""
    text = parse_text(field, raw, max_chars=200)
    if not text.isprintable():
        raise ValidationError(f"{field}: must contain only printable characters")
    return text


# ---- stored times ---------------------------------------------------------------------------------

MAX_TIMESTAMP_CHARS = 64


def read_timestamp(raw: Any) -> datetime | None:
    """Return the moment an ISO 8601 text names, in UTC, or None when it names none.

    The rule every stored time follows: a time with an offset (or ``Z``) is that moment; a time
    without one, and a date alone (midnight), are read as UTC.
    """
    if not isinstance(raw, str) or not 0 < len(raw) <= MAX_TIMESTAMP_CHARS:
        return None
    text = raw.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None:
            return moment.replace(tzinfo=timezone.utc)
        return moment.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None


def parse_timestamp(field: str, raw: Any) -> str:
    """Return ``raw`` as the stored form of a time: UTC, microseconds, ``+00:00``.

    Naive times and dates alone are read as UTC (see ``read_timestamp``). Raises ``ValidationError``
    naming ``field`` for anything that is not an ISO 8601 date or time.
    """
    moment = read_timestamp(raw)
    if moment is None:
        raise ValidationError(
            f"{field}: must be an ISO 8601 time such as 2026-01-01T12:00:00+00:00, got {_short(raw)}"
        )
    return moment.isoformat(timespec="microseconds")


def is_stored_timestamp(raw: Any) -> bool:
    """True when ``raw`` is already in the stored form ``parse_timestamp`` returns."""
    moment = read_timestamp(raw)
    return moment is not None and moment.isoformat(timespec="microseconds") == raw
