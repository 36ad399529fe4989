"""The one place records become the JSON shapes of SPEC §2 that every surface returns."""

from __future__ import annotations

from typing import Any

from robotmem.records import SECTIONS, Hit, Memory, Session


def memory_to_dict(memory: Memory) -> dict[str, Any]:
    """Return the public record of ``memory``: fields, parsed context, and the four sections lifted."""
    record: dict[str, Any] = {
        "id": memory.id,
        "collection": memory.collection,
        "type": memory.type,
        "content": memory.content,
        "human_summary": memory.human_summary,
        "category": memory.category,
        "confidence": memory.confidence,
        "tags": list(memory.tags),
        "session_id": memory.session_id,
        "perception_type": memory.perception_type,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "access_count": memory.access_count,
        "context": memory.context,
    }
    for section in SECTIONS:
        value = memory.context.get(section)
        record[section] = value if isinstance(value, dict) else {}
    return record


def memory_detail(memory: Memory, data: Any, metadata: Any) -> dict[str, Any]:
    """Return the full record shown by a detail view: status, lineage and perception payload included."""
    record = memory_to_dict(memory)
    record.update(
        status=memory.status,
        superseded_by=memory.superseded_by,
        merged_ids=list(memory.merged_ids),
        last_accessed=memory.last_accessed,
        scope_files=list(memory.scope_files),
        scope_entities=list(memory.scope_entities),
        invalidated_reason=memory.invalidated_reason,
        has_embedding=memory.has_embedding,
    )
    if memory.type == "perception":
        record["data"] = data
        record["metadata"] = metadata
    return record


def hit_to_dict(hit: Hit, *, include_data: bool) -> dict[str, Any]:
    """Return the recall record of ``hit``: the memory, its score, and the payload when asked."""
    record = memory_to_dict(hit.memory)
    record["score"] = round(hit.score, 6)
    record["matched_by"] = sorted(hit.matched_by)
    if hit.spatial_distance is not None:
        record["spatial_distance"] = round(hit.spatial_distance, 6)
    if include_data and hit.memory.type == "perception":
        record["data"] = hit.data
        record["metadata"] = hit.metadata
    return record


def session_to_dict(session: Session) -> dict[str, Any]:
    """Return the public record of ``session``."""
    return {
        "session_id": session.id,
        "collection": session.collection,
        "context": session.context,
        "status": session.status,
        "created_at": session.created_at,
        "ended_at": session.ended_at,
        "outcome_score": session.outcome_score,
        "summary": session.summary,
    }
