"""The parse functions every surface goes through: text, names, JSON objects and payloads, robot ids, times.

Each returns a typed value or raises ``ValidationError`` naming the field and the accepted form. The
operations' input models (``robotmem.formats.inputs``) apply them to their parameters.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from robotmem.errors import ValidationError

PerceptionType = Literal["visual", "tactile", "auditory", "proprioceptive", "procedural"]
MAX_JSON_DEPTH = 32


def short_repr(value: Any) -> str:
    """Return ``repr(value)`` cut to 60 characters, for messages that show what was given."""
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
                f"{where}: the text {short_repr(node)} contains a NUL character, which filters cannot read; remove it"
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


def parse_robots(raw: list[str] | str | None) -> tuple[str, ...] | None:
    """Return the robot ids a recall is scoped to, or None for the whole fleet (``"self"`` is kept: see
    ``resolve_robots``).

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
        found.append(name)
    return tuple(dict.fromkeys(found))


def resolve_robots(robots: tuple[str, ...] | None, own: str) -> tuple[str, ...] | None:
    """Return ``robots`` (from ``parse_robots``) with ``"self"`` replaced by ``own``, each id once."""
    if robots is None:
        return None
    return tuple(dict.fromkeys(own if name == SELF_ROBOT else name for name in robots))


def parse_name(field: str, raw: Any) -> str:
    """Return a collection or session name: 1..200 printable characters."""
    text = parse_text(field, raw, max_chars=200)
    if not text.isprintable():
        raise ValidationError(f"{field}: must contain only printable characters")
    return text


def optional_name(field: str, raw: Any) -> str | None:
    """Return ``parse_name(field, raw)``, or None for None (the default applies)."""
    return None if raw is None else parse_name(field, raw)


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
            f"{field}: must be an ISO 8601 time such as 2026-01-01T12:00:00+00:00, got {short_repr(raw)}"
        )
    return moment.isoformat(timespec="microseconds")


def is_stored_timestamp(raw: Any) -> bool:
    """True when ``raw`` is already in the stored form ``parse_timestamp`` returns."""
    moment = read_timestamp(raw)
    return moment is not None and moment.isoformat(timespec="microseconds") == raw


# ---- event times and time windows ------------------------------------------------------------------

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
EARLIEST = datetime(1, 1, 2, tzinfo=timezone.utc)  # a day inside datetime's range in every zone
LATEST = datetime(9999, 12, 30, tzinfo=timezone.utc)
EventTime = str | int | float
_RELATIVE = re.compile(r"-(\d+(?:\.\d+)?)(s|m|h|d|w)")
_EPOCH_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_EVENT_FORM = "an ISO 8601 time with a zone (2026-01-01T12:00:00+00:00, …Z) or epoch seconds"
_BOUND_FORM = f"{_EVENT_FORM}, now, or a time before now such as -30m, -2h, -7d (units s, m, h, d, w)"


def _moment(field: str, raw: Any, form: str = _EVENT_FORM) -> datetime:
    """Return the moment ``raw`` names (ISO 8601 text with a zone, or epoch seconds as a number or its
    text), in UTC; raises ``ValidationError`` naming ``field`` otherwise."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise ValidationError(f"{field}: must be {form}, got {short_repr(raw)}")
    seconds: float | None = None
    if isinstance(raw, (int, float)):
        seconds = float(raw)
    else:
        text = raw.strip()
        if len(text) > MAX_TIMESTAMP_CHARS:
            raise ValidationError(f"{field}: is {len(text)} characters; the limit is {MAX_TIMESTAMP_CHARS}")
        if _EPOCH_TEXT.fullmatch(text):  # ASCII digits only: float() also reads "1_000" and other scripts'
            seconds = float(text)
        else:
            return _iso_moment(field, text, form)
    if not math.isfinite(seconds):
        raise ValidationError(f"{field}: must be a finite number of epoch seconds, got {short_repr(raw)}")
    if not (EARLIEST - EPOCH).total_seconds() <= seconds <= (LATEST - EPOCH).total_seconds():
        raise ValidationError(
            f"{field}: {short_repr(raw)} epoch seconds is out of range; times run from year 1 to year 9999"
        )
    return EPOCH + timedelta(seconds=seconds)


def _iso_moment(field: str, text: str, form: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text)
    except ValueError:
        raise ValidationError(f"{field}: must be {form}, got {short_repr(text)}") from None
    if moment.tzinfo is None:
        raise ValidationError(
            f"{field}: {short_repr(text)} has no zone; add one (Z or +00:00) so the moment is unambiguous"
        )
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:
        raise ValidationError(f"{field}: {short_repr(text)} is out of range once in UTC") from None


def parse_event_time(field: str, raw: Any) -> str | None:
    """Return when something happened as a stored time (UTC, microseconds, ``+00:00``), None for None.

    ``raw`` is ISO 8601 text with a zone or epoch seconds (a number, or its text); a time without a zone,
    or outside years 1 to 9999, raises ``ValidationError`` naming ``field``.
    """
    if raw is None:
        return None
    return _moment(field, raw).isoformat(timespec="microseconds")


TimeBound = datetime | timedelta  # a moment, or how far before now


def parse_time_bound(field: str, raw: Any) -> TimeBound | None:
    """Return a window bound: a moment (ISO 8601 with a zone, epoch seconds) or an offset before now
    (``now``, ``-30s``, ``-30m``, ``-2h``, ``-7d``, ``-1w``); None for None or empty text.

    Raises ``ValidationError`` naming ``field`` and the accepted forms.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text == "now":
            return timedelta(0)
        relative = _RELATIVE.fullmatch(text)
        if relative is not None:
            seconds = float(relative[1]) * _UNIT_SECONDS[relative[2]]
            if seconds > (LATEST - EARLIEST).total_seconds():
                raise ValidationError(f"{field}: {short_repr(raw)} reaches before year 1")
            return timedelta(seconds=seconds)
    return _moment(field, raw, _BOUND_FORM)


def _bound_at(field: str, bound: TimeBound | None, now: datetime) -> datetime | None:
    if bound is None:
        return None
    if isinstance(bound, timedelta):
        try:
            return now.astimezone(timezone.utc) - bound
        except OverflowError:
            raise ValidationError(f"{field}: {bound} before now is before year 1") from None
    return bound


def resolve_bound(field: str, bound: TimeBound | None, now: datetime) -> str | None:
    """Return one parsed bound (``parse_time_bound``) as a stored time, an offset counted back from ``now``;
    None for None. Raises ``ValidationError`` naming ``field`` when the offset reaches before year 1."""
    moment = _bound_at(field, bound, now)
    return None if moment is None else moment.isoformat(timespec="microseconds")


def resolve_window(
    since: TimeBound | None, until: TimeBound | None, now: datetime
) -> tuple[str | None, str | None]:
    """Return ``(since, until)`` as stored times, offsets counted back from ``now``.

    Raises ``ValidationError`` when ``since`` is after ``until``.
    """
    start, end = _bound_at("since", since, now), _bound_at("until", until, now)
    if start is not None and end is not None and start > end:
        raise ValidationError(
            f"since: {start.isoformat()} is after until ({end.isoformat()}); the window would be empty"
        )
    return (
        None if start is None else start.isoformat(timespec="microseconds"),
        None if end is None else end.isoformat(timespec="microseconds"),
    )
