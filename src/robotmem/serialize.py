"""The one place records become the JSON shapes (``robotmem.results``) that every surface returns."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from robotmem.classify import Classification
from robotmem.consolidation import ConsolidationPlan
from robotmem.dedup import Duplicate
from robotmem.records import SECTIONS, Hit, IntegrityReport, Memory, Session, SessionRow
from robotmem.results import (
    AutoInferred,
    BackfillResult,
    BackupResult,
    CategoryCount,
    ConsolidationReport,
    DoctorReport,
    EmbedderStatus,
    EndSessionResult,
    ExportResult,
    ForgetResult,
    ImportResult,
    IntegrityResult,
    LearnResult,
    ListedMemory,
    ListedSession,
    MemoryDetail,
    MemoryRecord,
    PerceptionResult,
    RecallHit,
    ReindexResult,
    RepairResult,
    SessionRecord,
    SessionSummary,
    SpatialPoint,
    StartSessionResult,
    SyncResult,
    UpdateResult,
)


def memory_to_dict(memory: Memory) -> MemoryRecord:
    """Return the public record of ``memory``: fields, parsed context, and the four sections lifted."""
    sections = {
        section: value if isinstance(value := memory.context.get(section), dict) else {}
        for section in SECTIONS
    }
    return {
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
        "robot_id": memory.robot_id,
        "uid": memory.uid,
        "context": memory.context,
        "params": sections["params"],
        "spatial": sections["spatial"],
        "robot": sections["robot"],
        "task": sections["task"],
    }


def listed_memory(memory: Memory) -> ListedMemory:
    """Return the record of ``memory`` in a listing: the public record with its status and successor."""
    return {**memory_to_dict(memory), "status": memory.status, "superseded_by": memory.superseded_by}


def memory_detail(memory: Memory, data: Any, metadata: Any) -> MemoryDetail:
    """Return the full record shown by a detail view: status, lineage and perception payload included."""
    # The perception payload keys are set below, only for perceptions.
    record: MemoryDetail = {
        **listed_memory(memory),  # type: ignore[typeddict-item]
        "merged_ids": list(memory.merged_ids),
        "last_accessed": memory.last_accessed,
        "scope_files": list(memory.scope_files),
        "scope_entities": list(memory.scope_entities),
        "invalidated_reason": memory.invalidated_reason,
        "has_embedding": memory.has_embedding,
    }
    if memory.type == "perception":
        record["data"] = data
        record["metadata"] = metadata
    return record


def hit_to_dict(hit: Hit, *, include_data: bool) -> RecallHit:
    """Return the recall record of ``hit``: the memory, its score, and the payload when asked."""
    # The optional keys are set below when they apply.
    record: RecallHit = {
        **memory_to_dict(hit.memory),  # type: ignore[typeddict-item]
        "score": round(hit.score, 6),
        "matched_by": sorted(hit.matched_by),
    }
    if hit.spatial_distance is not None:
        # Never Infinity: spatial.distance already gives None past the float range, checked again here.
        far = hit.spatial_distance
        record["spatial_distance"] = round(far, 6) if math.isfinite(far) else None
    if include_data and hit.memory.type == "perception":
        record["data"] = hit.data
        record["metadata"] = hit.metadata
    return record


def session_to_dict(session: Session) -> SessionRecord:
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


def listed_session(row: SessionRow) -> ListedSession:
    """Return a session with its counts and the success rate of its judged memories."""
    judged = row.successes + row.failures
    return {
        **session_to_dict(row.session),
        "memory_count": row.memory_count,
        "successes": row.successes,
        "failures": row.failures,
        "success_rate": round(row.successes / judged, 6) if judged else None,
    }


def auto_inferred(found: Classification, params: dict[str, Any]) -> AutoInferred:
    """Return what classification inferred, with the ``params`` stored in the context."""
    return {
        "category": found.category,
        "confidence": found.confidence,
        "tags": list(found.tags),
        "scope_files": list(found.scope_files),
        "scope_entities": list(found.scope_entities),
        "params": params,
    }


def duplicate_result(duplicate: Duplicate) -> LearnResult:
    """Return learn's result when the text repeats a stored memory."""
    return {
        "status": "duplicate",
        "method": duplicate.method,  # type: ignore[typeddict-item]
        "existing_id": duplicate.existing_id,
        "similarity": duplicate.similarity,
    }


def created_result(memory_id: int, inferred: AutoInferred) -> LearnResult:
    """Return learn's result for a new memory."""
    return {"status": "created", "memory_id": memory_id, "auto_inferred": inferred}


def updated_result(memory: Memory, new_content: str, inferred: AutoInferred) -> UpdateResult:
    """Return update's result: the text before and after, and what was inferred again."""
    return {
        "status": "updated",
        "memory_id": memory.id,
        "old_content": memory.content,
        "new_content": new_content,
        "auto_inferred": inferred,
    }


def forgotten(memory: Memory, reason: str) -> ForgetResult:
    """Return forget's result."""
    return {"status": "forgotten", "memory_id": memory.id, "content": memory.content, "reason": reason}


def perception_results(
    ids: Sequence[int], prepared: Sequence[Mapping[str, Any]], has_vector: Sequence[bool]
) -> list[PerceptionResult]:
    """Return one save_perception result per stored perception."""
    return [
        {
            "memory_id": memory_id,
            "perception_type": item["perception_type"],
            "collection": item["collection"],
            "has_embedding": embedded,
        }
        for memory_id, item, embedded in zip(ids, prepared, has_vector, strict=True)
    ]


def started_session(session_id: str, collection: str, active_memories: int) -> StartSessionResult:
    """Return start_session's result."""
    return {"session_id": session_id, "collection": collection, "active_memories_count": active_memories}


def consolidation_report(plan: ConsolidationPlan) -> ConsolidationReport:
    """Return what consolidation did: groups merged, memories superseded, share remaining, mean similarity."""
    report = plan.report()
    return {
        "merged_groups": int(report["merged_groups"]),
        "superseded_count": int(report["superseded_count"]),
        "compression_ratio": float(report["compression_ratio"]),
        "avg_similarity": float(report["avg_similarity"]),
    }


def ended_session(
    session_id: str,
    summary: dict[str, Any],
    decayed: int,
    plan: ConsolidationPlan,
    related: list[RecallHit],
) -> EndSessionResult:
    """Return end_session's result."""
    shaped: SessionSummary = {
        "memory_count": int(summary["memory_count"]),
        "by_type": dict(summary["by_type"]),
        "by_category": dict(summary["by_category"]),
    }
    return {
        "status": "ended",
        "session_id": session_id,
        "summary": shaped,
        "decayed_count": decayed,
        "consolidated": consolidation_report(plan),
        "related_memories": related,
    }


def category_counts(rows: Iterable[tuple[str, int]]) -> list[CategoryCount]:
    """Return ``[{"category", "count"}]`` from ``(category, count)`` rows."""
    return [{"category": name, "count": count} for name, count in rows]


def spatial_point_list(rows: Iterable[tuple[int, str, list[Any], Any]]) -> list[SpatialPoint]:
    """Return ``[{"memory_id", "content", "coordinates", "success"}]`` from store rows."""
    return [
        {"memory_id": memory_id, "content": content, "coordinates": coordinates, "success": success}
        for memory_id, content, coordinates, success in rows
    ]


def embedder_status(model_id: str | None, available: bool, status: str) -> EmbedderStatus:
    """Return the embedder part of doctor and embedding_status."""
    return {"model_id": model_id, "available": available, "status": status}


def integrity_result(database: str, report: IntegrityReport) -> IntegrityResult:
    """Return ``robotmem check``'s report."""
    return {"database": database, **report.to_dict()}  # type: ignore[typeddict-item]


def backfill_result(
    status: str, embedded: int, remaining: int, model_id: str | None, reason: str
) -> BackfillResult:
    """Return backfill's result."""
    return {
        "status": status,  # type: ignore[typeddict-item]
        "embedded": embedded,
        "remaining": remaining,
        "model_id": model_id,
        "reason": reason,
    }


def doctor_report(
    database: str, indexes: dict[str, Any], embedder: EmbedderStatus, *, searchable: bool, reason: str
) -> DoctorReport:
    """Return ``robotmem doctor``'s report: store, index consistency, embedder and the search that runs."""
    report: dict[str, Any] = {"database": database, **indexes}
    report["embedder"] = embedder
    report["search_mode"] = "hybrid" if searchable else "bm25_only"
    report["search_mode_reason"] = reason
    report["ok"] = bool(report["fts"]["in_sync"] and report["vectors"]["stale"] == 0)
    return report  # type: ignore[return-value]


def repair_result(
    database: str, actions: dict[str, Any], before: IntegrityReport, after: IntegrityReport
) -> RepairResult:
    """Return ``robotmem repair``'s result: what was rebuilt, and the checks before and after."""
    return {
        "database": database,
        "ok": after.ok,
        "repaired": actions,
        "before": before.to_dict(),
        "after": after.to_dict(),
    }


def backup_result(target: Path, memories: int, duration_ms: float) -> BackupResult:
    """Return ``robotmem backup``'s result."""
    return {
        "status": "backed_up",
        "path": str(target),
        "bytes": target.stat().st_size,
        "memories": memories,
        "integrity_check": "ok",
        "duration_ms": round(duration_ms, 3),
    }


def reindex_result(
    model_id: str,
    dim: int,
    previous: tuple[str, int] | None,
    status: str,
    embedded: int,
    resumed: bool,
    vectors: int | None,
    without_vector: int,
) -> ReindexResult:
    """Return reindex's result."""
    return {
        "model_id": model_id,
        "dim": dim,
        "previous_model": None if previous is None else list(previous),
        "status": status,  # type: ignore[typeddict-item]
        "embedded": embedded,
        "resumed": resumed,
        "vectors": vectors,
        "without_vector": without_vector,
    }


def exported_result(target: Path, counts: Mapping[str, Any]) -> ExportResult:
    """Return export's result: the file and how many memories, sessions and vectors it holds."""
    return {
        "status": "exported",
        "path": str(target),
        "memories": int(counts["memories"]),
        "sessions": int(counts["sessions"]),
        "vectors": int(counts["vectors"]),
        "embedding_model": counts["embedding_model"],
        "dim": counts["dim"],
    }


def synced_result(
    fleet: str,
    robot_id: str,
    fleet_store_id: str,
    direction: str,
    pushed: Mapping[str, dict[str, int]] | None,
    pulled: Mapping[str, dict[str, int]] | None,
    without_vector: int,
) -> SyncResult:
    """Return sync's result: per direction and kind, what was created, updated, unchanged or kept."""
    return {
        "status": "synced",
        "fleet": fleet,
        "robot_id": robot_id,
        "fleet_store_id": fleet_store_id,
        "direction": direction,
        "pushed": None if pushed is None else {kind: dict(c) for kind, c in pushed.items()},
        "pulled": None if pulled is None else {kind: dict(c) for kind, c in pulled.items()},
        "without_vector": without_vector,
    }


def imported_result(
    source: Path, conflict: str, counts: Mapping[str, dict[str, int]], without_vector: int
) -> ImportResult:
    """Return import's result: what was created, updated or skipped, and where vectors came from."""
    return {
        "status": "imported",
        "path": str(source),
        "conflict": conflict,
        "memories": dict(counts["memories"]),
        "sessions": dict(counts["sessions"]),
        "vectors": dict(counts["vectors"]),
        "without_vector": without_vector,
    }
