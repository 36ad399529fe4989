"""doctor, integrity_report, repair and backup: the health of the store and copies of it."""

from __future__ import annotations

import os
import time
from pathlib import PurePath
from urllib.parse import urlsplit

from robotmem.formats.results import BackupResult, DoctorReport, IntegrityResult, RepairResult
from robotmem.formats.serialize import (
    backup_result,
    doctor_report,
    embedder_status,
    integrity_result,
    repair_result,
)
from robotmem.records import IntegrityReport
from robotmem.service.engine import Engine
from robotmem.service.files import output_path
from robotmem.store import is_server_address
from robotmem.store.protocol import StoreTx


def doctor(engine: Engine) -> DoctorReport:
    """Return a health report of the store, its indexes and the embedder; see ``RobotMemory.doctor``."""
    embedder = engine.embedder
    model, reason = engine.vector_model()
    health = engine.read(lambda tx: tx.maintenance.index_report())
    status = embedder_status(
        embedder.model_id if embedder.available else None, embedder.available, embedder.status
    )
    return doctor_report(engine.store.location, health, status, searchable=model is not None, reason=reason)


def database_name(location: str) -> str:
    """The name of the store at ``location``: a file's name, or a server database's name alone (no path,
    host or user), for reports that leave the machine."""
    if is_server_address(location):
        return urlsplit(location).path.lstrip("/")
    return PurePath(location).name


def integrity_report(engine: Engine) -> IntegrityResult:
    """Check the store and every derived index, changing nothing; see ``RobotMemory.integrity_report``."""
    report: IntegrityReport = engine.read(lambda tx: tx.maintenance.check())
    return integrity_result(engine.store.location, report)


def repair(engine: Engine) -> RepairResult:
    """Rebuild the derived indexes from the memories in one transaction; see ``RobotMemory.repair``."""
    before: IntegrityReport = engine.read(lambda tx: tx.maintenance.check())
    now = engine.now()

    def work(tx: StoreTx) -> dict[str, object]:
        return tx.maintenance.repair(before, now)

    actions = engine.write(work)
    after: IntegrityReport = engine.read(lambda tx: tx.maintenance.check())
    return repair_result(engine.store.location, actions, before, after)


def backup(engine: Engine, path: str | os.PathLike[str]) -> BackupResult:
    """Copy the database to the new file ``path``; see ``RobotMemory.backup``."""
    target = output_path(path, engine.store.location, replace=False)
    started = time.perf_counter()
    count = engine.store.backup(target)
    return backup_result(target, count, (time.perf_counter() - started) * 1000)
