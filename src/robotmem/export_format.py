"""The export file format: JSON Lines with a versioned header (pure: no SQLite, no model).

See docs/transfer.md for the layout. Readers name the file and line of anything malformed.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from robotmem.errors import ValidationError
from robotmem.vectors import FloatArray

JsonDict = dict[str, Any]

EXPORT_FORMAT = "robotmem-export"
EXPORT_VERSION = 1
CONFLICT_MODES = ("skip", "overwrite", "new-ids")
_MEMORY_TYPES = ("fact", "perception")
_STATUSES = ("active", "superseded", "invalidated")


def export_line(value: Any) -> str:
    """Return ``value`` as one compact JSON line (UTF-8 text kept as is)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


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


def read_header(handle: IO[str], path: Path) -> JsonDict:
    """Read and check the header line; raises ``ValidationError`` for another format or a newer version."""
    first = handle.readline()
    try:
        header = json.loads(first) if first.strip() else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT:
        raise _fail(
            path, 1, f'not a robotmem export: the first line must be a {{"format": "{EXPORT_FORMAT}"}} header'
        )
    version = header.get("version")
    if not isinstance(version, int) or version < 1:
        raise _fail(path, 1, f"header: version must be a positive integer, got {version!r}")
    if version > EXPORT_VERSION:
        raise _fail(
            path,
            1,
            f"export format version {version} is newer than this robotmem ({EXPORT_VERSION}); upgrade",
        )
    return header


def file_model(header: JsonDict, path: Path) -> tuple[str, int] | None:
    """Return the ``(embedding_model, dim)`` the header names, or None for a database without vectors."""
    model, dim = header.get("embedding_model"), header.get("dim")
    if model is None:
        return None
    if not isinstance(model, str) or isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise _fail(path, 1, "header: embedding_model must be a string and dim a positive integer")
    return model, dim


def parse_memory(record: JsonDict, line: int, path: Path, dim: int | None) -> MemoryLine:
    """Check one memory record and return it parsed; ``dim`` is the header's vector length.

    Raises ``ValidationError`` naming ``path:line`` and the field that is wrong.
    """
    memory = record.get("memory")
    if not isinstance(memory, dict):
        raise _fail(path, line, 'a memory record needs a "memory" object')
    uid = memory.get("uid")
    if not isinstance(uid, str) or not 1 <= len(uid) <= 64:
        raise _fail(path, line, "memory.uid must be a string of 1..64 characters")
    for name in ("collection", "content", "category", "created_at", "updated_at"):
        if not isinstance(memory.get(name), str):
            raise _fail(path, line, f"memory.{name} must be a string")
    if memory.get("type") not in _MEMORY_TYPES:
        raise _fail(path, line, f"memory.type must be one of {', '.join(_MEMORY_TYPES)}")
    if memory.get("status", "active") not in _STATUSES:
        raise _fail(path, line, f"memory.status must be one of {', '.join(_STATUSES)}")
    fields = dict(memory)
    for name in ("confidence", "base_confidence", "access_count"):
        value = fields.get(name)
        if (value is not None or name == "confidence") and (
            isinstance(value, bool) or not isinstance(value, (int, float))
        ):
            raise _fail(path, line, f"memory.{name} must be a number")
    fields.setdefault("base_confidence", fields["confidence"])
    if not isinstance(fields.get("context", {}), dict):
        raise _fail(path, line, "memory.context must be an object")
    for name in ("scope_files", "scope_entities", "merged_ids"):
        if not isinstance(fields.get(name, []), list):
            raise _fail(path, line, f"memory.{name} must be a list")
    tags = []
    for tag in record.get("tags") or []:
        if not isinstance(tag, dict) or not isinstance(tag.get("tag"), str):
            raise _fail(path, line, 'tags must be a list of {"tag", "source"} objects')
        tags.append((tag["tag"], str(tag.get("source") or "auto")))
    perception = record.get("perception")
    payload = None
    if isinstance(perception, dict):
        payload = (payload_json(perception.get("data")), payload_json(perception.get("metadata")))
    vector = None
    if record.get("vector") is not None and dim is not None:
        try:
            blob = base64.b64decode(record["vector"], validate=True)
        except (ValueError, TypeError):
            raise _fail(path, line, "vector must be base64 of little-endian float32 values") from None
        if len(blob) != 4 * dim:
            raise _fail(path, line, f"vector has {len(blob) // 4} dimensions; the header says {dim}")
        vector = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        if not np.all(np.isfinite(vector)):
            raise _fail(path, line, "vector contains NaN or infinite values")
    original = memory.get("id")
    return MemoryLine(
        line=line,
        uid=uid,
        original_id=original if isinstance(original, int) and not isinstance(original, bool) else None,
        fields=fields,
        superseded_by_uid=record.get("superseded_by_uid")
        if isinstance(record.get("superseded_by_uid"), str)
        else None,
        merged_uids=[u for u in record.get("merged_uids") or [] if isinstance(u, str)],
        tags=tags,
        perception=(payload or (None, None)) if memory.get("type") == "perception" else None,
        vector=vector,
    )


def read_records(handle: IO[str], path: Path, dim: int | None) -> Iterator[JsonDict | MemoryLine]:
    """Yield the records after the header: a session as its dict, a memory as a ``MemoryLine``.

    Raises ``ValidationError`` naming ``path:line`` for invalid JSON or an unknown record.
    """
    for number, text in enumerate(handle, start=2):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise _fail(path, number, f"invalid JSON ({exc})") from None
        kind = record.get("record") if isinstance(record, dict) else None
        if kind == "memory":
            yield parse_memory(record, number, path, dim)
        elif kind == "session":
            session = record.get("session")
            if not isinstance(session, dict) or not isinstance(session.get("id"), str):
                raise _fail(path, number, 'a session record needs a "session" object with a string "id"')
            yield session
        else:
            raise _fail(path, number, f'unknown record {kind!r}; expected "session" or "memory"')
