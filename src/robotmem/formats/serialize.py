"""The one place records become the JSON shapes (``robotmem.formats.results``) that every surface returns."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from robotmem.formats.results import (
    AroundResult,
    AutoInferred,
    Axis,
    BackfillResult,
    BackupResult,
    Bin,
    CategoriesResult,
    CategoryCount,
    Cell,
    CollectionsResult,
    CollectionSummary,
    ConsolidationReport,
    DoctorReport,
    EmbedderStatus,
    EmbeddingStatus,
    EndSessionResult,
    EpisodeFacets,
    ExportResult,
    FailuresResult,
    ForgetResult,
    ImportResult,
    IntegrityCheck,
    IntegrityResult,
    LastSeenResult,
    LearnResult,
    ListedEpisode,
    ListedMemory,
    ListedSession,
    MapObject,
    MapResult,
    MemoryDetail,
    MemoryPage,
    MemoryRecord,
    ObjectSighting,
    ParamField,
    ParamFieldsResult,
    ParamOutcomeResult,
    PerceptionResult,
    RecallHit,
    RecallResult,
    ReindexResult,
    RepairActions,
    RepairResult,
    SessionOutcome,
    SessionPage,
    SessionRecord,
    SessionSummary,
    SessionTimeline,
    SpatialPoint,
    SpatialPointsResult,
    StartSessionResult,
    Stats,
    SyncResult,
    UpdateResult,
)
from robotmem.records import (
    SECTIONS,
    EpisodeRow,
    Hit,
    IndexHealth,
    IntegrityReport,
    MapPoint,
    Memory,
    ParamValue,
    RateBin,
    RateCell,
    Session,
    SessionCounts,
    SessionRow,
    ViewScope,
)
from robotmem.rules.consolidation import ConsolidationPlan
from robotmem.rules.dedup import Duplicate
from robotmem.text.classify import Classification


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
        "observed_at": memory.observed_at,
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
        "relevance": None if hit.relevance is None else round(hit.relevance, 4),
    }
    if hit.spatial_distance is not None:
        # Never Infinity: spatial.distance already gives None past the float range, checked again here.
        far = hit.spatial_distance
        record["spatial_distance"] = round(far, 6) if math.isfinite(far) else None
    if include_data and hit.memory.type == "perception":
        record["data"] = hit.data
        record["metadata"] = hit.metadata
    return record


def recall_result(
    hits: Sequence[Hit],
    *,
    include_data: bool,
    mode: str,
    query_ms: float,
    collections: Sequence[str] = (),
    warnings: Sequence[str] = (),
    note: str | None = None,
) -> RecallResult:
    """Return recall's result: the hits best first, their count, the search that ran and its time, the
    collections searched, the filter's warnings, and why there are none when nothing was relevant."""
    return {
        "memories": [hit_to_dict(hit, include_data=include_data) for hit in hits],
        "total": len(hits),
        "mode": mode,  # type: ignore[typeddict-item]
        "query_ms": round(query_ms, 3),
        "collections": list(collections),
        "warnings": list(warnings),
        "note": note,
    }


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


def listed_episode(row: EpisodeRow) -> ListedEpisode:
    """Return a session with its counts, robot, task, outcome and duration in seconds."""
    session = row.row.session
    duration = None
    if session.ended_at is not None:
        try:
            elapsed = datetime.fromisoformat(session.ended_at) - datetime.fromisoformat(session.created_at)
            duration = round(elapsed.total_seconds(), 3)
        except (TypeError, ValueError):
            duration = None
    return {
        **listed_session(row.row),
        "robot": row.robot,
        "task": row.task,
        "outcome": row.outcome,
        "duration_s": duration,
    }


def episode_facets_result(
    robots: Iterable[tuple[str, int]], tasks: Iterable[tuple[str, int]]
) -> EpisodeFacets:
    """Return the robots and tasks sessions name with their session counts."""
    return {
        "robots": [{"robot": name, "sessions": count} for name, count in robots],
        "tasks": [{"task": name, "sessions": count} for name, count in tasks],
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
    return {
        "merged_groups": len(plan.merges),
        "superseded_count": plan.superseded_count,
        "compression_ratio": plan.compression_ratio,
        "avg_similarity": plan.avg_similarity,
    }


def session_summary(counts: SessionCounts) -> SessionSummary:
    """Return the summary an ended session stores and end_session reports."""
    return {
        "memory_count": counts.memory_count,
        "by_type": dict(counts.by_type),
        "by_category": dict(counts.by_category),
    }


def ended_session(
    session_id: str,
    summary: SessionSummary,
    decayed: int,
    plan: ConsolidationPlan,
    related: list[RecallHit],
) -> EndSessionResult:
    """Return end_session's result."""
    return {
        "status": "ended",
        "session_id": session_id,
        "summary": summary,
        "decayed_count": decayed,
        "consolidated": consolidation_report(plan),
        "related_memories": related,
    }


def category_counts(rows: Iterable[tuple[str, int]]) -> list[CategoryCount]:
    """Return ``[{"category", "count"}]`` from ``(category, count)`` rows."""
    return [{"category": name, "count": count} for name, count in rows]


def categories_result(rows: Iterable[tuple[str, int]]) -> CategoriesResult:
    """Return ``{"categories": [...]}`` from ``(category, count)`` rows."""
    return {"categories": category_counts(rows)}


def collection_summaries(rows: Iterable[tuple[str, int, int, int, str | None]]) -> list[CollectionSummary]:
    """Return one summary per ``(collection, memories, active, sessions, last_at)`` row."""
    return [
        {"collection": name, "memories": total, "active": active, "sessions": sessions, "last_at": last_at}
        for name, total, active, sessions, last_at in rows
    ]


def collections_result(rows: Iterable[tuple[str, int, int, int, str | None]]) -> CollectionsResult:
    """Return ``{"collections": [...]}`` from collection rows."""
    return {"collections": collection_summaries(rows)}


def session_outcome(row: SessionRow) -> SessionOutcome:
    """Return one ended session as the dashboard's outcome chart shows it."""
    listed = listed_session(row)
    return {
        "session_id": listed["session_id"],
        "created_at": listed["created_at"],
        "ended_at": listed["ended_at"],
        "outcome_score": listed["outcome_score"],
        "success_rate": listed["success_rate"],
        "memory_count": listed["memory_count"],
    }


def stats_result(
    collection: str | None,
    totals: Mapping[str, Any],
    categories: Iterable[tuple[str, int]],
    collections: Iterable[tuple[str, int, int, int, str | None]],
    outcomes: Sequence[SessionRow],
    spatial_fields: list[str],
) -> Stats:
    """Return the dashboard totals from the store's counts; ``outcomes`` newest first, shown oldest first."""
    by_status: dict[str, int] = totals["by_status"]
    by_type: dict[str, int] = totals["by_type"]
    sessions: dict[str, int] = totals["sessions"]
    return {
        "collection": collection,
        "memories": {
            "total": sum(by_status.values()),
            "active": by_status.get("active", 0),
            "by_status": by_status,
            "facts": by_type.get("fact", 0),
            "perceptions": by_type.get("perception", 0),
        },
        "last_24h": totals["created_since"],
        "sessions": {
            "total": sum(sessions.values()),
            "active": sessions.get("active", 0),
            "ended": sessions.get("ended", 0),
        },
        "categories": category_counts(categories),
        "collections": collection_summaries(collections),
        "session_outcomes": [session_outcome(row) for row in reversed(outcomes)],
        "spatial_fields": spatial_fields,
    }


def memory_page(memories: Iterable[Memory], total: int, limit: int, offset: int) -> MemoryPage:
    """Return one page of a memory listing."""
    return {
        "memories": [listed_memory(m) for m in memories],
        "total": total,
        "limit": limit,
        "offset": offset,
    }


def session_page(rows: Iterable[EpisodeRow], total: int, limit: int, offset: int) -> SessionPage:
    """Return one page of the session list."""
    return {
        "sessions": [listed_episode(row) for row in rows],
        "total": total,
        "limit": limit,
        "offset": offset,
    }


def session_timeline(row: EpisodeRow, memories: Sequence[Memory]) -> SessionTimeline:
    """Return a session with its memories in time order."""
    return {
        "session": listed_episode(row),
        "memories": [listed_memory(m) for m in memories],
        "total": len(memories),
    }


def failures_result(sessions: Iterable[EpisodeRow], memories: Iterable[Memory]) -> FailuresResult:
    """Return failed episodes and failure lessons."""
    return {
        "sessions": [listed_episode(row) for row in sessions],
        "memories": [listed_memory(m) for m in memories],
    }


def spatial_point_list(rows: Iterable[tuple[int, str, list[Any], Any]]) -> list[SpatialPoint]:
    """Return ``[{"memory_id", "content", "coordinates", "success"}]`` from store rows."""
    return [
        {"memory_id": memory_id, "content": content, "coordinates": coordinates, "success": success}
        for memory_id, content, coordinates, success in rows
    ]


def spatial_points_result(field: str, rows: Iterable[tuple[int, str, list[Any], Any]]) -> SpatialPointsResult:
    """Return the positions stored at ``field``."""
    return {"field": field, "points": spatial_point_list(rows)}


def map_result(
    field: str | None,
    fields: Iterable[tuple[str, int]],
    frame: str | None,
    frames: Iterable[tuple[str, int]],
    scope: ViewScope,
    layers: Sequence[str],
    points: Iterable[MapPoint],
    total: int,
    limit: int,
    objects: list[MapObject],
    sightings: int,
) -> MapResult:
    """Return the positions at ``field`` in ``frame`` and ``scope``'s window, with every spatial field and
    frame and its count, and the objects seen in the frame."""
    return {
        "field": field,
        "fields": [{"field": f"spatial.{key}", "memories": count} for key, count in fields],
        "frame": frame,
        "frames": [{"frame": name, "memories": count} for name, count in frames],
        "layers": list(layers),
        "time_field": scope.time_field,
        "since": scope.since,
        "until": scope.until,
        "points": [
            {
                "memory_id": p.memory_id,
                "type": p.type,
                "content": p.content,
                "coordinates": p.coordinates,
                "success": p.success,
                "time": p.time,
                "session_id": p.session_id,
            }
            for p in points
        ],
        "total": total,
        "limit": limit,
        "objects": objects,
        "sightings": sightings,
    }


def map_object(
    object_id: str | None, label: str | None, collection: str, track: Sequence[tuple[int, list[float], str]]
) -> MapObject:
    """Return an object on the map from its track ``(memory_id, position, observed_at UTC)``, oldest first."""
    memory_id, position, observed_at = track[-1]
    return {
        "object_id": object_id,
        "label": label,
        "collection": collection,
        "position": position,
        "observed_at": observed_at,
        "memory_id": memory_id,
        "sightings": len(track),
        "track": [{"memory_id": m, "position": p, "observed_at": t} for m, p, t in track],
    }


def param_fields_result(fields: Iterable[tuple[str, str | None, Mapping[str, int]]]) -> ParamFieldsResult:
    """Return each ``(key, chosen unit, memories per unit)`` as a parameter field, most carried first."""
    listed: list[ParamField] = [
        {
            "field": f"params.{key}",
            "unit": unit,
            "memories": sum(per_unit.values()),
            "units": dict(per_unit) if len(per_unit) > 1 else {},
        }
        for key, unit, per_unit in fields
    ]
    listed.sort(key=lambda f: (-f["memories"], f["field"]))
    return {"fields": listed}


def axis(field: str, unit: str | None, values: Sequence[float], edges: Sequence[float]) -> Axis:
    """Return a parameter's axis: its unit, the range of ``values`` and the edges of its bins."""
    lowest = min(values) if values else None
    highest = max(values) if values else None
    return {"field": field, "unit": unit, "min": lowest, "max": highest, "edges": list(edges)}


def rate_bin(found: RateBin) -> Bin:
    """Return one bin of the parameters view."""
    return {
        "lo": found.lo,
        "hi": found.hi,
        "count": found.count,
        "successes": found.successes,
        "rate": found.rate,
        "low": found.low,
        "high": found.high,
    }


def rate_cell(found: RateCell) -> Cell:
    """Return one cell of the parameters view's grid."""
    return {
        "x_bin": found.x_bin,
        "y_bin": found.y_bin,
        "count": found.count,
        "successes": found.successes,
        "rate": found.rate,
    }


def param_outcome_result(
    x: Axis,
    y: Axis | None,
    pairs: Sequence[tuple[ParamValue, float | None]],
    left_out: tuple[int, int, int],
    bins: Iterable[RateBin],
    cells: Iterable[RateCell],
    points: int,
) -> ParamOutcomeResult:
    """Return the success rate by bins of ``x`` (and the grid with ``y``), the judged values of ``pairs``
    (a value of x with its y) and the newest ``points`` of them; ``left_out`` counts the memories without
    an outcome, in another unit, and without y."""
    no_outcome, other_unit, no_y = left_out
    newest = sorted(pairs, key=lambda pair: -pair[0].memory_id)[:points]
    return {
        "x": x,
        "y": y,
        "success": "task.success: true is a success, false a failure",
        "interval": "Wilson score interval, 95 %",
        "judged": len(pairs),
        "successes": sum(bool(v.success) for v, _ in pairs),
        "left_out": {"no_outcome": no_outcome, "other_unit": other_unit, "no_y": no_y},
        "bins": [rate_bin(b) for b in bins],
        "cells": [rate_cell(c) for c in cells],
        "points": [
            {"memory_id": v.memory_id, "x": v.value, "y": value_y, "success": bool(v.success)}
            for v, value_y in newest
        ],
        "points_total": len(pairs),
    }


def embedder_status(model_id: str | None, available: bool, status: str) -> EmbedderStatus:
    """Return the embedder part of doctor and embedding_status."""
    return {"model_id": model_id, "available": available, "status": status}


def embedding_status(
    stored: tuple[str, int] | None,
    reindex: tuple[str, int] | None,
    staged: int,
    total: int,
    without_vector: int,
    embedder: EmbedderStatus,
    *,
    searchable: bool,
    reason: str,
    background: bool,
) -> EmbeddingStatus:
    """Return the database's model, memories without a vector, an unfinished reindex and the embedder."""
    return {
        "database_model": None if stored is None else {"model_id": stored[0], "dim": stored[1]},
        "without_vector": without_vector,
        "reindex": None
        if reindex is None
        else {"model_id": reindex[0], "dim": reindex[1], "staged": staged, "total": total},
        "embedder": embedder,
        "search_mode": "hybrid" if searchable else "bm25_only",
        "search_mode_reason": reason,
        "background_backfill": background,
    }


def integrity_check(report: IntegrityReport) -> IntegrityCheck:
    """Return the checks' findings as ``robotmem check``, ``doctor`` and ``repair`` show them."""
    check: IntegrityCheck = {
        "ok": report.ok,
        "integrity_check": list(report.integrity),
        "foreign_key_violations": report.foreign_keys,
        "problems": {**report.counts, "fts_stale": report.fts_stale},
        "examples": {name: ids for name, ids in report.samples.items() if ids},
        "active_without_vector": report.active_without_vector,
        "rows": report.rows,
    }
    if report.error:
        check["error"] = report.error
    return check


def integrity_result(database: str, report: IntegrityReport) -> IntegrityResult:
    """Return ``robotmem check``'s report."""
    return {"database": database, **integrity_check(report)}


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
    database: str, health: IndexHealth, embedder: EmbedderStatus, *, searchable: bool, reason: str
) -> DoctorReport:
    """Return ``robotmem doctor``'s report: store, index consistency, embedder and the search that runs."""
    in_sync = health.fts_missing_active == 0 and health.fts_rows == health.active
    return {
        "database": database,
        "expected_schema_version": health.expected_schema_version,
        "schema_version": health.schema_version,
        "journal_mode": health.journal_mode,
        "memories": {"total": health.memories, "active": health.active},
        "sessions": health.sessions,
        "fts": {"rows": health.fts_rows, "missing_active": health.fts_missing_active, "in_sync": in_sync},
        "vectors": {
            "stored": health.vectors_stored,
            "active_without_vector": health.active_without_vector,
            "stale": health.vectors_stale,
            "stored_model": health.stored_model,
        },
        "embedder": embedder,
        "search_mode": "hybrid" if searchable else "bm25_only",
        "search_mode_reason": reason,
        "ok": in_sync and health.vectors_stale == 0,
    }


def repair_actions(actions: Mapping[str, Any]) -> RepairActions:
    """Return what a repair did from the store's counts (``reindexed``: whether ``REINDEX`` ran)."""
    return {
        "reindexed": bool(actions["reindexed"]),
        "fts_rows_indexed": int(actions["fts_rows_indexed"]),
        "vectors_tombstoned": int(actions["vectors_tombstoned"]),
        "vectors_unmarked": int(actions["vectors_unmarked"]),
        "vectors_remarked": int(actions["vectors_remarked"]),
        "tags_deleted": int(actions["tags_deleted"]),
        "payloads_deleted": int(actions["payloads_deleted"]),
        "sessions_recreated": int(actions["sessions_recreated"]),
        "sessions_fixed": int(actions["sessions_fixed"]),
        "supersede_links_cleared": int(actions["supersede_links_cleared"]),
        "times_normalised": int(actions["times_normalised"]),
        "times_replaced": int(actions["times_replaced"]),
        "confidences_clamped": int(actions["confidences_clamped"]),
        "context_values_indexed": int(actions["context_values_indexed"]),
        "columns_rewritten": int(actions["columns_rewritten"]),
        "superseded_restored": int(actions["superseded_restored"]),
        "vectors_renormalised": int(actions["vectors_renormalised"]),
        "vectors_dropped": int(actions["vectors_dropped"]),
    }


def repair_result(
    database: str, actions: Mapping[str, Any], before: IntegrityReport, after: IntegrityReport
) -> RepairResult:
    """Return ``robotmem repair``'s result: what was rebuilt, and the checks before and after."""
    return {
        "database": database,
        "ok": after.ok,
        "repaired": repair_actions(actions),
        "before": integrity_check(before),
        "after": integrity_check(after),
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


def exported_result(target: Path, counts: Mapping[str, int], model: tuple[str, int] | None) -> ExportResult:
    """Return export's result: the file, how many memories, sessions and vectors it holds, and their model."""
    return {
        "status": "exported",
        "path": str(target),
        "memories": int(counts["memories"]),
        "sessions": int(counts["sessions"]),
        "vectors": int(counts["vectors"]),
        "embedding_model": None if model is None else model[0],
        "dim": None if model is None else model[1],
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


def object_sighting(
    object_id: str | None,
    label: str | None,
    position: list[float] | None,
    frame: str,
    observed_at: str,
    memory_id: int,
    sightings: int,
) -> ObjectSighting:
    """Return an object's sighting as ``last_seen`` and ``around`` list it (``observed_at`` in ISO 8601 UTC)."""
    return {
        "object_id": object_id,
        "label": label,
        "position": position,
        "frame": frame,
        "observed_at": observed_at,
        "memory_id": memory_id,
        "sightings": sightings,
    }


def with_distance(sighting: ObjectSighting, distance: float) -> ObjectSighting:
    """Return ``sighting`` with its distance from the asked position (``around``)."""
    return {**sighting, "distance": distance}


def last_seen_result(
    objects: Sequence[ObjectSighting], warnings: Sequence[str] = (), note: str | None = None
) -> LastSeenResult:
    """Return ``last_seen``'s result: the objects best match first (and ``warnings`` and ``note`` when
    there are any)."""
    result: LastSeenResult = {"objects": list(objects)}
    if warnings:
        result["warnings"] = list(warnings)
    if note is not None:
        result["note"] = note
    return result


def around_result(
    objects: Sequence[ObjectSighting], hits: Sequence[Hit], warnings: Sequence[str] = ()
) -> AroundResult:
    """Return ``around``'s result: the objects nearest first, the memories there as recall gives them (and
    ``warnings`` when there are any)."""
    result: AroundResult = {
        "objects": list(objects),
        "memories": [hit_to_dict(hit, include_data=False) for hit in hits],
    }
    if warnings:
        result["warnings"] = list(warnings)
    return result
