"""The export file format: JSON Lines with a versioned header (pure: no SQLite, no model).

See docs/transfer.md for the layout. Readers take lines of a bounded length, check every record by
the rules of the write operations (the ``parse_*`` functions of ``validation``, with the configured
limits), bring times to the stored UTC form, and name the file, line and field of anything refused.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, get_args

import numpy as np

from robotmem.config import Settings
from robotmem.errors import ValidationError
from robotmem.formats import strict_json
from robotmem.formats.validation import (
    MAX_JSON_DEPTH,
    PerceptionType,
    parse_event_time,
    parse_json_object,
    parse_name,
    parse_payload,
    parse_text,
    parse_timestamp,
)
from robotmem.query.vectors import FloatArray, unit_vector
from robotmem.text.classify import CATEGORIES
from robotmem.text.tokens import content_hash

JsonDict = dict[str, Any]

EXPORT_FORMAT = "robotmem-export"
EXPORT_VERSION = 1
CONFLICT_MODES = ("skip", "overwrite", "new-ids")
_MEMORY_TYPES = ("fact", "perception")
_STATUSES = ("active", "superseded", "invalidated")
PERCEPTION_TYPES: tuple[str, ...] = get_args(PerceptionType)
MAX_ID = 2**63 - 1  # SQLite's largest integer
_UID = re.compile(r"[0-9a-f]{32}")  # what robotmem writes: uuid4().hex, or lower(hex(randomblob(16)))
MAX_DIM = 65536
MAX_LIST_ITEMS = 10_000
MAX_SCOPE_CHARS = 1000
MAX_REASON_CHARS = 1000
# A stored memory context is the user's (at most max_context_bytes) plus what learn adds to it:
# parameters found in the text and the source marker.
STORED_CONTEXT_HEADROOM = 16384


def export_line(value: Any) -> str:
    """Return ``value`` as one compact JSON line (UTF-8 text kept as is)."""
    return strict_json.dumps(value, separators=(",", ":")) + "\n"


def payload_json(value: Any) -> str | None:
    """Return the stored form of a perception payload: compact JSON text, or None for None."""
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def parse_conflict(raw: Any) -> str:
    """Return the conflict mode; raises ``ValidationError`` unless it is skip, overwrite or new-ids."""
    if raw not in CONFLICT_MODES:
        raise ValidationError(f"conflict: {raw!r} is not a mode; expected one of {', '.join(CONFLICT_MODES)}")
    return str(raw)


@dataclass
class MemoryLine:
    """One parsed memory record of an export file; ``line`` is its line number."""

    line: int
    uid: str
    original_id: int | None
    fields: dict[str, Any]
    superseded_by_uid: str | None
    merged_uids: list[str]
    tags: list[tuple[str, str]]
    perception: tuple[str | None, str | None] | None
    vector: FloatArray | None


def _fail(path: Path, line: int, message: str) -> ValidationError:
    return ValidationError(f"{path}:{line}: {message}")


def max_line_bytes(settings: Settings) -> int:
    """Return the longest line an import reads: room for the largest record the limits allow.

    JSON escaping can make a payload up to six times longer (``\\u0001`` for one byte), plus 1 MiB
    for the fields around it and a vector.
    """
    payloads = settings.max_data_bytes + settings.max_metadata_bytes + settings.max_context_bytes
    return 6 * (payloads + 4 * max(settings.max_description_chars, settings.max_insight_chars)) + 2**20


def read_lines(handle: IO[bytes], path: Path, limit: int) -> Iterator[tuple[int, str]]:
    """Yield ``(line number, text)`` of a binary file, reading at most ``limit`` bytes per line.

    Raises ``ValidationError`` naming the line for a line longer than ``limit`` (the rest of it is
    never read) or one that is not UTF-8.
    """
    number = 0
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        number += 1
        if len(raw) > limit:
            raise _fail(path, number, f"the line is longer than {limit} bytes, more than any record may be")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _fail(path, number, f"not UTF-8 text (byte {exc.start + 1} of the line)") from None
        yield number, text


def _loads(text: str, path: Path, line: int) -> Any:
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise _fail(path, line, f"invalid JSON (nests deeper than {MAX_JSON_DEPTH} levels)") from None
    except ValueError as exc:
        raise _fail(path, line, f"invalid JSON ({exc})") from None
    # The line was valid UTF-8, so a lone surrogate can only come from a backslash-u escape.
    try:
        if "\\u" in text:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(
            path, line, "contains a lone surrogate (\\ud800-\\udfff), which is not valid Unicode text"
        ) from None
    except RecursionError:
        raise _fail(path, line, f"invalid JSON (nests deeper than {MAX_JSON_DEPTH} levels)") from None
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def read_header(lines: Iterator[tuple[int, str]], path: Path) -> JsonDict:
    """Read and check the header line; raises ``ValidationError`` for another format or a newer version."""
    first = next(lines, (1, ""))[1]
    try:
        header = _loads(first, path, 1) if first.strip() else None
    except ValidationError:
        header = None
    if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT:
        raise _fail(
            path, 1, f'not a robotmem export: the first line must be a {{"format": "{EXPORT_FORMAT}"}} header'
        )
    version = header.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise _fail(path, 1, f"header: version must be a positive integer, got {version!r}")
    if version > EXPORT_VERSION:
        raise _fail(
            path,
            1,
            f"export format version {version} is newer than this robotmem ({EXPORT_VERSION}); upgrade",
        )
    return header


def announced_counts(header: JsonDict, path: Path) -> dict[str, int]:
    """Return the record counts the header announces (``memories``, and ``sessions`` in newer files).

    An import compares them with the records it read, so a truncated or cut file is refused rather
    than imported in part. Raises ``ValidationError`` for a count that is not a non-negative integer.
    """
    counts: dict[str, int] = {}
    for name in ("memories", "sessions"):
        if name not in header:
            continue
        value = header[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ID:
            raise _fail(path, 1, f"header.{name}: must be a count (an integer >= 0), got {str(value)[:40]!r}")
        counts[name] = value
    return counts


def check_counts(announced: dict[str, int], found: dict[str, int], path: Path) -> None:
    """Raise ``ValidationError`` when the file holds another number of records than its header announces."""
    for name, expected in announced.items():
        if found.get(name, 0) != expected:
            kind = name.removesuffix("s").replace("memorie", "memory")
            raise _fail(
                path,
                1,
                f"header.{name}: announces {expected} {kind} records but the file holds "
                f"{found.get(name, 0)}; the file is truncated or was edited, so nothing was imported",
            )


def file_model(header: JsonDict, path: Path) -> tuple[str, int] | None:
    """Return the ``(embedding_model, dim)`` the header names, or None for a database without vectors."""
    model, dim = header.get("embedding_model"), header.get("dim")
    if model is None:
        return None
    if (
        not isinstance(model, str)
        or isinstance(dim, bool)
        or not isinstance(dim, int)
        or not 1 <= dim <= MAX_DIM
    ):
        raise _fail(
            path, 1, f"header: embedding_model must be a string and dim an integer within 1..{MAX_DIM}"
        )
    return model, dim


# ---- field rules: the write operations' own (validation.py), applied to stored columns ----------


def _number(field: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValidationError(f"{field}: must be a finite number, got {value!r:.60}")
    if not low <= value <= high:
        raise ValidationError(f"{field}: must be within {low:g}..{high:g}, got {value!r}")
    return float(value)


def _integer(field: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(f"{field}: must be an integer within {low}..{high}, got {str(value)[:40]}")
    return value


def _choice(field: str, value: Any, choices: tuple[str | None, ...]) -> Any:
    if value not in choices:
        shown = ", ".join("null" if c is None else c for c in choices)
        raise ValidationError(f"{field}: must be one of {shown}, got {str(value)[:40]!r}")
    return value


def _optional_text(field: str, value: Any, max_chars: int) -> str | None:
    return None if value is None else parse_text(field, value, min_chars=0, max_chars=max_chars)


def _optional_time(field: str, value: Any) -> str | None:
    return None if value is None else parse_timestamp(field, value)


def _uid(field: str, value: Any) -> str:
    if not isinstance(value, str) or not _UID.fullmatch(value):
        shown = repr(value) if isinstance(value, str) else type(value).__name__
        raise ValidationError(f"{field}: must be 32 lowercase hex digits (a robotmem uid), got {shown:.60}")
    return value


def _strings(field: str, value: Any, max_chars: int) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_LIST_ITEMS:
        raise ValidationError(f"{field}: must be a list of at most {MAX_LIST_ITEMS} strings")
    return [parse_text(f"{field}[{i}]", item, max_chars=max_chars) for i, item in enumerate(value)]


def check_memory_fields(memory: JsonDict, settings: Settings) -> JsonDict:
    """Return the columns of an exported memory checked by the write operations' rules, times in UTC.

    Content obeys the limits of ``learn`` (facts) or ``save_perception`` (perceptions), the context
    those of ``context``, names those of collections and sessions; numbers are finite and in range.
    ``content_hash`` is recomputed from the content; derived columns are left to the import.
    """
    fields = dict(memory)
    kind = fields["type"] = _choice("memory.type", memory.get("type"), _MEMORY_TYPES)
    if kind == "fact":
        content = parse_text("memory.content", memory.get("content"), max_chars=settings.max_insight_chars)
        fields["content_hash"] = content_hash(content)
        fields["perception_type"] = _choice("memory.perception_type", memory.get("perception_type"), (None,))
    else:
        content = parse_text(
            "memory.content", memory.get("content"), min_chars=5, max_chars=settings.max_description_chars
        )
        fields["content_hash"] = None
        fields["perception_type"] = _choice(
            "memory.perception_type", memory.get("perception_type"), PERCEPTION_TYPES
        )
    fields["content"] = content
    fields["collection"] = parse_name("memory.collection", memory.get("collection"))
    fields["category"] = _choice("memory.category", memory.get("category"), CATEGORIES)
    if (kind == "perception") != (fields["category"] == "perception"):
        raise ValidationError(
            f"memory.category: a {kind} {'has' if kind == 'perception' else 'never has'} "
            f"the category perception, got {fields['category']!r}"
        )
    fields["status"] = _choice("memory.status", memory.get("status", "active"), _STATUSES)
    confidence = _number("memory.confidence", memory.get("confidence"), 0.0, 1.0)
    fields["confidence"] = confidence
    base = memory.get("base_confidence")
    fields["base_confidence"] = (
        confidence if base is None else _number("memory.base_confidence", base, 0.0, 1.0)
    )
    fields["context"] = parse_json_object(
        "memory.context", memory.get("context"), settings.max_context_bytes + STORED_CONTEXT_HEADROOM
    )
    for name in ("scope_files", "scope_entities"):
        fields[name] = _strings(f"memory.{name}", memory.get(name), MAX_SCOPE_CHARS)
    session_id = memory.get("session_id")
    fields["session_id"] = None if session_id is None else parse_name("memory.session_id", session_id)
    robot = memory.get("robot_id")
    if robot is not None and (
        not isinstance(robot, str)
        or len(robot) > 200
        or any(not ch.isprintable() or ch.isspace() or ch == "," for ch in robot)
    ):
        raise ValidationError(
            "memory.robot_id: must be at most 200 printable characters without spaces or commas"
        )
    fields["human_summary"] = _optional_text(
        "memory.human_summary", memory.get("human_summary"), settings.max_description_chars
    )
    fields["invalidated_reason"] = _optional_text(
        "memory.invalidated_reason", memory.get("invalidated_reason"), MAX_REASON_CHARS
    )
    fields["access_count"] = _integer("memory.access_count", memory.get("access_count", 0), 0, MAX_ID)
    fields["created_at"] = parse_timestamp("memory.created_at", memory.get("created_at"))
    fields["updated_at"] = parse_timestamp("memory.updated_at", memory.get("updated_at"))
    # Files written before event time was recorded: the memory happened when it was stored.
    observed = memory.get("observed_at")
    fields["observed_at"] = (
        fields["created_at"] if observed is None else parse_event_time("memory.observed_at", observed)
    )
    fields["last_accessed"] = _optional_time("memory.last_accessed", memory.get("last_accessed"))
    return fields


def check_session_fields(session: JsonDict, settings: Settings) -> JsonDict:
    """Return an exported session (with ``outcome``) checked by ``start_session``/``end_session``'s rules."""
    fields = dict(session)
    fields["id"] = parse_name("session.id", session.get("id"))
    fields["collection"] = parse_name("session.collection", session.get("collection"))
    fields["context"] = parse_json_object(
        "session.context", session.get("context"), settings.max_context_bytes
    )
    fields["status"] = _choice("session.status", session.get("status", "active"), ("active", "ended"))
    summary = session.get("summary")
    fields["summary"] = (
        None if summary is None else parse_json_object("session.summary", summary, settings.max_context_bytes)
    )
    fields["created_at"] = parse_timestamp("session.created_at", session.get("created_at"))
    fields["ended_at"] = _optional_time("session.ended_at", session.get("ended_at"))
    outcome = session.get("outcome")
    if outcome is not None:
        if not isinstance(outcome, dict):
            raise ValidationError("session.outcome: must be an object or null")
        checked = dict(outcome)
        score = outcome.get("outcome_score")
        checked["outcome_score"] = (
            None if score is None else _number("session.outcome.outcome_score", score, 0.0, 1.0)
        )
        checked["memory_count"] = _integer(
            "session.outcome.memory_count", outcome.get("memory_count"), 0, MAX_ID
        )
        checked["summary"] = parse_json_object(
            "session.outcome.summary", outcome.get("summary"), settings.max_context_bytes
        )
        checked["created_at"] = parse_timestamp("session.outcome.created_at", outcome.get("created_at"))
        fields["outcome"] = checked
    return fields


def parse_memory(record: JsonDict, line: int, path: Path, dim: int | None, settings: Settings) -> MemoryLine:
    """Check one memory record and return it parsed; ``dim`` is the header's vector length.

    Raises ``ValidationError`` naming ``path:line`` and the field that is wrong.
    """
    memory = record.get("memory")
    if not isinstance(memory, dict):
        raise _fail(path, line, 'a memory record needs a "memory" object')
    try:
        uid = _uid("memory.uid", memory.get("uid"))
        original = memory.get("id")
        if original is not None:
            _integer("memory.id", original, 1, MAX_ID)
        fields = check_memory_fields(memory, settings)
        superseded_by_uid = record.get("superseded_by_uid")
        if superseded_by_uid is not None:
            superseded_by_uid = _uid("superseded_by_uid", superseded_by_uid)
            if superseded_by_uid == uid:
                raise ValidationError("superseded_by_uid: a memory cannot supersede itself")
        elif fields["status"] == "superseded":
            raise ValidationError(
                "superseded_by_uid: a superseded memory must name the memory that superseded it "
                "(without one it would be hidden from recall with nothing in its place)"
            )
        merged = record.get("merged_uids") or []
        if not isinstance(merged, list) or len(merged) > MAX_LIST_ITEMS:
            raise ValidationError(f"merged_uids: must be a list of at most {MAX_LIST_ITEMS} uids")
        merged_uids = [_uid(f"merged_uids[{i}]", u) for i, u in enumerate(merged)]
        tags = _tags(record.get("tags"))
        perception = None
        if fields["type"] == "perception":
            payload = record.get("perception")
            if payload is not None and not isinstance(payload, dict):
                raise ValidationError('perception: must be an object {"data", "metadata"} or null')
            payload = payload or {}
            perception = (
                parse_payload("perception.data", payload.get("data"), settings.max_data_bytes)[1],
                parse_payload("perception.metadata", payload.get("metadata"), settings.max_metadata_bytes)[1],
            )
        vector = record_vector(record.get("vector"), dim)
    except ValidationError as exc:
        raise _fail(path, line, exc.message) from None
    return MemoryLine(
        line=line,
        uid=uid,
        original_id=original,
        fields=fields,
        superseded_by_uid=superseded_by_uid,
        merged_uids=merged_uids,
        tags=tags,
        perception=perception,
        vector=vector,
    )


def _tags(raw: Any) -> list[tuple[str, str]]:
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_LIST_ITEMS:
        raise ValidationError(f'tags: must be a list of at most {MAX_LIST_ITEMS} {{"tag", "source"}} objects')
    tags = []
    for i, tag in enumerate(raw):
        if not isinstance(tag, dict):
            raise ValidationError(f'tags[{i}]: must be a {{"tag", "source"}} object')
        source = tag.get("source")
        tags.append(
            (
                parse_name(f"tags[{i}].tag", tag.get("tag")),
                "auto" if source is None else parse_name(f"tags[{i}].source", source),
            )
        )
    return tags


def record_vector(raw: Any, dim: int | None) -> FloatArray | None:
    """Return the vector of a record through the vector rule (``vectors.unit_vector``), or None without one.

    ``raw`` is base64 text of little-endian float32 values (an export file) or those bytes (a store, in
    sync); ``dim`` is the model's dimension (None: vectors are not taken). The vector is scaled to unit
    length; raises ``ValidationError`` naming ``vector`` when it is not ``dim`` finite numbers or is all
    zeros.
    """
    if raw is None or dim is None:
        return None
    if isinstance(raw, (bytes, bytearray, memoryview)):
        blob = bytes(raw)
    elif isinstance(raw, str):
        try:
            blob = base64.b64decode(raw, validate=True)
        except ValueError:
            raise ValidationError("vector: must be base64 of little-endian float32 values") from None
    else:
        raise ValidationError("vector: must be base64 of little-endian float32 values")
    if len(blob) % 4:
        raise ValidationError("vector: must be base64 of little-endian float32 values")
    return unit_vector(np.frombuffer(blob, dtype="<f4"), dim, "vector")


def read_records(
    lines: Iterator[tuple[int, str]], path: Path, dim: int | None, settings: Settings
) -> Iterator[tuple[int, JsonDict | MemoryLine]]:
    """Yield ``(line, record)`` after the header: a session as its checked dict, a memory as a ``MemoryLine``.

    Raises ``ValidationError`` naming ``path:line`` (and the field) for invalid JSON, an unknown record,
    a field the write operations would reject, or a uid given twice.
    """
    seen: dict[str, int] = {}
    for number, text in lines:
        if not text.strip():
            continue
        record = _loads(text, path, number)
        kind = record.get("record") if isinstance(record, dict) else None
        if kind == "memory":
            memory = parse_memory(record, number, path, dim, settings)
            first = seen.setdefault(memory.uid, number)
            if first != number:
                raise _fail(path, number, f"memory.uid: {memory.uid} is already the uid of line {first}")
            yield number, memory
        elif kind == "session":
            session = record.get("session")
            if not isinstance(session, dict):
                raise _fail(path, number, 'a session record needs a "session" object')
            try:
                yield number, check_session_fields(session, settings)
            except ValidationError as exc:
                raise _fail(path, number, exc.message) from None
        else:
            raise _fail(path, number, f'unknown record {str(kind)[:40]!r}; expected "session" or "memory"')
