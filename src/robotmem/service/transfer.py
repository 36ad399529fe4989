"""Export and import of memories as versioned JSON Lines.

The first line is a header ``{"format": "robotmem-export", "version": 1, "embedding_model", "dim",
...}``; every further line is one session (``{"record": "session", "session": {...}}``) or one
memory (``{"record": "memory", "memory": {...}, "superseded_by_uid", "merged_uids", "tags",
"perception", "vector"?}``). Memories are identified by their ``uid``, so importing a file twice
adds nothing; ids, session ids and lineage are remapped when they clash or are renewed. See
docs/transfer.md.
"""

from __future__ import annotations

import base64
import logging
import os
import uuid
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

from robotmem.errors import EmbeddingError, ValidationError
from robotmem.formats.export import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    MemoryLine,
    announced_counts,
    check_counts,
    export_line,
    file_model,
    max_line_bytes,
    parse_conflict,
    read_header,
    read_lines,
    read_records,
)
from robotmem.formats.results import ExportResult, ImportResult
from robotmem.formats.serialize import exported_result, imported_result
from robotmem.formats.validation import parse_name
from robotmem.service.backfill import Progress
from robotmem.service.engine import Engine
from robotmem.service.files import output_path
from robotmem.store.protocol import EmbeddedText, StoreTx
from robotmem.text.tokens import index_text

log = logging.getLogger("robotmem")
JsonDict = dict[str, Any]

IMPORT_BATCH_SIZE = 200
EMBED_BATCH_SIZE = 64
# Original ids above this are renewed on import: a kept id moves the id sequence, and ids beyond
# 2**53 cannot be told apart by a JavaScript client.
MAX_KEPT_ID = 2**53 - 1


@dataclass
class _ImportRun:
    """State of one import: mode, vector plan, id maps and counters."""

    mode: str
    collection: str | None
    file_model: tuple[str, int] | None
    target_model: tuple[str, int] | None
    embed: bool
    robot_id: str = ""  # owner of memories from files written before memories carried their robot
    session_ids: dict[str, str] = field(default_factory=dict)
    memory_ids: dict[str, int] = field(default_factory=dict)
    # (memory id, superseded_by uid, merged uids, fill only, file line)
    lineage: list[tuple[int, str | None, list[str], bool, int]] = field(default_factory=list)
    to_embed: list[tuple[int, str]] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def restart(self) -> None:
        """Forget what a rolled-back attempt recorded (the write is retried from the start)."""
        self.session_ids.clear()
        self.memory_ids.clear()
        self.lineage.clear()
        self.to_embed.clear()
        self.counts = {
            "memories": {"created": 0, "updated": 0, "skipped": 0},
            "sessions": {"created": 0, "updated": 0, "skipped": 0},
            "vectors": {"from_file": 0, "embedded": 0},
        }

    def records_read(self) -> dict[str, int]:
        """Return how many memory and session records this attempt has read."""
        return {name: sum(self.counts[name].values()) for name in ("memories", "sessions")}

    @property
    def file_vectors_usable(self) -> bool:
        return self.file_model is not None and self.file_model == self.target_model


def export_memories(
    engine: Engine,
    path: str | os.PathLike[str],
    *,
    collection: str | None = None,
    vectors: bool = False,
    progress: Progress | None = None,
    force: bool = False,
) -> ExportResult:
    """Write every memory (of ``collection``, or all), its tags, lineage and sessions to ``path``.

    With ``vectors`` the stored vectors go along as base64 float32. The file is written beside
    ``path`` and renamed at the end, so a failed export leaves no partial file. ``path`` must not
    exist unless ``force`` (which replaces an ordinary file); it is never the database in use or its
    -wal/-shm (``service.files``). Returns ``{"status": "exported", "path", "memories", "sessions",
    "vectors", "embedding_model", "dim"}``. Raises ``ValidationError`` when ``path`` is refused or
    cannot be written, ``DatabaseError``.
    """
    if not isinstance(force, bool):
        raise ValidationError(f"force: must be true or false, got {force!r}")
    target = output_path(
        path, engine.store.location, replace=force, hint=", or pass force=True (--force) to replace it"
    )
    only = None if collection is None else parse_name("collection", collection)
    part_file = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.partial")

    def work(tx: StoreTx) -> tuple[dict[str, int], tuple[str, int] | None]:
        model = tx.vectors.stored_model()
        total = tx.transfer.count_memories(only)
        with_vectors = bool(vectors and model is not None)
        header = {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "embedding_model": None if model is None else model[0],
            "dim": None if model is None else model[1],
            "vectors": with_vectors,
            "collection": only,
            "memories": total,
            "sessions": tx.transfer.count_sessions(only),
            "schema_version": tx.transfer.schema_version(),
            "exported_at": engine.now(),
        }
        counts = {"memories": 0, "sessions": 0, "vectors": 0}
        with part_file.open("w", encoding="utf-8") as out:
            out.write(export_line(header))
            for session in tx.transfer.iter_sessions(only):
                out.write(export_line({"record": "session", "session": session}))
                counts["sessions"] += 1
            if progress is not None:
                progress("export", 0, total)
            for record in tx.transfer.iter_memories(only, with_vectors=with_vectors):
                blob = record.pop("vector")
                if blob is not None:
                    record["vector"] = base64.b64encode(blob).decode("ascii")
                    counts["vectors"] += 1
                out.write(export_line({"record": "memory", **record}))
                counts["memories"] += 1
                if progress is not None and counts["memories"] % 100 == 0:
                    progress("export", 100, total)
        if progress is not None:
            progress("export", counts["memories"] % 100, total)
        return counts, model

    try:
        counts, model = engine.read(work)
        os.replace(part_file, target)
    except OSError as exc:
        raise ValidationError(f"path: cannot write the export to {target} ({exc.strerror or exc})") from None
    finally:
        if part_file.exists():
            part_file.unlink()
    return exported_result(target, counts, model)


def import_memories(
    engine: Engine,
    path: str | os.PathLike[str],
    *,
    conflict: str = "skip",
    collection: str | None = None,
    progress: Progress | None = None,
    batch_size: int = IMPORT_BATCH_SIZE,
) -> ImportResult:
    """Import an export file, all or nothing; memories already present (same uid) follow ``conflict``.

    ``skip`` keeps the stored memory, ``overwrite`` replaces it with the file's, ``new-ids``
    imports every memory and session as new (fresh uids, ids and session ids). Original ids are
    kept where free (except in ``new-ids``); lineage and session references follow any remap.
    Every record is checked by the rules of the write operations and the whole file is written in
    one transaction with its lineage: a rejected record leaves the database as it was. Vectors come
    from the file when it holds vectors of the database's model; otherwise they are computed with
    the embedder after the commit, else the memories are left for backfill. ``collection`` moves
    everything into that collection. Returns ``{"status": "imported", "path", "conflict",
    "memories": {"created", "updated", "skipped"}, "sessions": {...}, "vectors": {"from_file",
    "embedded"}, "without_vector"}``. Raises ``ValidationError`` for an unreadable or malformed
    file (naming the line and field), ``DatabaseError``.
    """
    source = Path(path).expanduser()
    mode = parse_conflict(conflict)
    into = None if collection is None else parse_name("collection", collection)
    settings = engine.settings
    limit = max_line_bytes(settings)
    with _open_import(source) as handle:
        lines = read_lines(handle, source, limit)
        header = read_header(lines, source)
        run = _plan_import(engine, mode, into, file_model(header, source))
        announced = announced_counts(header, source)
        total = announced.get("memories", 0)
        dim = None if run.file_model is None else run.file_model[1]
        attempts = [0]

        def work(tx: StoreTx) -> None:
            nonlocal lines
            attempts[0] += 1
            if attempts[0] > 1:  # the write is retried after a lock: read the file again from the top
                if not handle.seekable():
                    raise ValidationError(
                        f"path: {source} cannot be read twice; import it from a regular file"
                    )
                handle.seek(0)
                lines = read_lines(handle, source, limit)
                read_header(lines, source)
            run.restart()
            if progress is not None:
                progress("import", 0, total)
            batch: list[JsonDict | MemoryLine] = []
            for _, record in read_records(lines, source, dim, settings):
                batch.append(record)
                if len(batch) >= batch_size:
                    _import_batch(tx, run, batch, progress, total)
                    batch = []
            if batch:
                _import_batch(tx, run, batch, progress, total)
            check_counts(announced, run.records_read(), source)
            _apply_lineage(tx, run, source)

        engine.write(work)
    _embed_imported(engine, run)
    left = engine.read(lambda tx: tx.jobs.count_without_vector())
    return imported_result(source, mode, run.counts, left)


def _open_import(source: Path) -> BinaryIO:
    try:
        return source.open("rb")
    except OSError as exc:
        raise ValidationError(f"path: cannot read {source} ({exc.strerror or exc})") from None


def _plan_import(
    engine: Engine, mode: str, into: str | None, file_model: tuple[str, int] | None
) -> _ImportRun:
    model, reason = engine.vector_model()
    stored = engine.read(lambda tx: tx.vectors.stored_model())
    target: tuple[str, int] | None = None if stored is None else (stored[0], int(stored[1]))
    if target is None and model is not None:
        target = model
    if model is None:
        log.info("import: new memories are left for backfill (%s)", reason)
    return _ImportRun(
        mode=mode,
        collection=into,
        file_model=file_model,
        target_model=target,
        embed=model is not None,
        robot_id=engine.robot_id,
    )


def _import_batch(
    tx: StoreTx,
    run: _ImportRun,
    batch: list[JsonDict | MemoryLine],
    progress: Progress | None,
    total: int,
) -> None:
    lines = [r for r in batch if isinstance(r, MemoryLine)]
    existing: dict[str, int] = {}
    if run.mode != "new-ids" and lines:
        existing = tx.transfer.ids_of([m.uid for m in lines])
    for record in batch:
        if isinstance(record, MemoryLine):
            _import_memory(tx, run, record, existing.get(record.uid))
        else:
            _import_session(tx, run, record)
    if progress is not None and lines:
        progress("import", len(lines), total)


def _embed_imported(engine: Engine, run: _ImportRun) -> None:
    """Embed the imported memories that got no vector from the file, batch by batch, after the commit.

    A failing embedder leaves the rest for backfill, as for any write made while it is down.
    """
    if not run.embed or not run.to_embed or run.target_model is None:
        return
    model = run.target_model
    for start in range(0, len(run.to_embed), EMBED_BATCH_SIZE):
        chunk = run.to_embed[start : start + EMBED_BATCH_SIZE]
        try:
            found = engine.embed_texts([text for _, text in chunk], is_query=False, dim=model[1])
        except EmbeddingError as exc:
            log.warning("import: embedding failed, the rest is left for backfill: %s", exc.message)
            return
        items = [(m, text, v) for (m, text), v in zip(chunk, found, strict=True) if v is not None]
        if items:
            run.counts["vectors"]["embedded"] += engine.write(
                partial(_store_embedded, items=items, model=model)
            )


def _store_embedded(tx: StoreTx, items: list[EmbeddedText], model: tuple[str, int]) -> int:
    return tx.jobs.store_backfilled(items, model[0], model[1])


def _import_session(tx: StoreTx, run: _ImportRun, session: JsonDict) -> None:
    fields = {key: value for key, value in session.items() if key != "outcome"}
    outcome = session.get("outcome") if isinstance(session.get("outcome"), dict) else None
    if run.collection is not None:
        fields["collection"] = run.collection
    counts = run.counts["sessions"]
    if run.mode == "new-ids":
        fields["id"] = run.session_ids[session["id"]] = uuid.uuid4().hex
    elif tx.transfer.session_exists(fields["id"]):
        if run.mode == "skip":
            counts["skipped"] += 1
            return
        counts["updated"] += 1
        tx.transfer.write_session(fields, outcome)
        return
    counts["created"] += 1
    tx.transfer.write_session(fields, outcome)


def _import_memory(
    tx: StoreTx,
    run: _ImportRun,
    line: MemoryLine,
    existing_id: int | None,
) -> None:
    counts = run.counts["memories"]
    if existing_id is not None and run.mode == "skip":
        run.memory_ids[line.uid] = existing_id
        if line.superseded_by_uid is not None or line.merged_uids:
            run.lineage.append((existing_id, line.superseded_by_uid, line.merged_uids, True, line.line))
        counts["skipped"] += 1
        return
    fields = dict(line.fields)
    if not isinstance(fields.get("robot_id"), str) or not fields["robot_id"]:
        fields["robot_id"] = run.robot_id
    if run.collection is not None:
        fields["collection"] = run.collection
    session_id = fields.get("session_id")
    if isinstance(session_id, str):
        fields["session_id"] = run.session_ids.get(session_id, session_id)
    if existing_id is not None:
        memory_id = existing_id
        tx.transfer.overwrite_memory(memory_id, fields)
        counts["updated"] += 1
    else:
        uid = uuid.uuid4().hex if run.mode == "new-ids" else line.uid
        keep = None if run.mode == "new-ids" or (line.original_id or 0) > MAX_KEPT_ID else line.original_id
        memory_id = tx.transfer.insert_memory(uid, fields, keep)
        counts["created"] += 1
    run.memory_ids[line.uid] = memory_id
    if existing_id is not None or line.superseded_by_uid is not None or line.merged_uids:
        run.lineage.append((memory_id, line.superseded_by_uid, line.merged_uids, False, line.line))
    is_active = fields.get("status", "active") == "active"
    tx.transfer.write_derived(
        memory_id,
        index_body=index_text(fields["content"]) if is_active else None,
        tags=line.tags,
        perception=line.perception,
    )
    if not is_active:
        return
    if line.vector is not None and run.file_vectors_usable and run.target_model is not None:
        stored = tx.vectors.stored_model()
        if stored is None:
            tx.vectors.record_model(*run.target_model)
        if stored is None or tuple(stored) == run.target_model:
            tx.vectors.put(memory_id, line.vector, run.target_model[0])
            run.counts["vectors"]["from_file"] += 1
            return
    run.to_embed.append((memory_id, fields["content"]))


def _apply_lineage(tx: StoreTx, run: _ImportRun, source: Path) -> None:
    """Link the imported memories by uid; raises ``ValidationError`` for a successor found nowhere.

    A ``superseded_by_uid`` must name a memory of the file or (except with ``new-ids``) of the
    database: a superseded memory is hidden from recall, so without its successor the lesson would be
    lost. A merged uid that is missing is only left out of ``merged_ids``.
    """
    wanted = {uid for _, sup, merged, _, _ in run.lineage for uid in ([sup] if sup else []) + merged}
    unresolved = sorted(uid for uid in wanted if uid not in run.memory_ids)
    resolved = dict(run.memory_ids)
    if unresolved and run.mode != "new-ids":
        resolved.update(tx.transfer.ids_of(unresolved))
    for memory_id, sup, merged, fill_only, line in run.lineage:
        if sup is not None and sup not in resolved:
            where = "not in the file" if run.mode == "new-ids" else "neither in the file nor in the database"
            raise ValidationError(
                f"{source}:{line}: superseded_by_uid: {sup} is {where}; a superseded memory "
                "needs its successor, so nothing was imported"
            )
        superseded_by = resolved.get(sup) if sup is not None else None
        merged_ids = [resolved[uid] for uid in merged if uid in resolved]
        tx.transfer.set_lineage(memory_id, superseded_by, merged_ids, fill_only=fill_only)
