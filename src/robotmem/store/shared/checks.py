"""The integrity checks and repairs whose rules are the same on both engines: ``SharedMaintenance``, the base
of each engine's ``Maintenance``.

Written once here: the checks of the references between tables (the same SQL text in both dialects), the
times and confidences (read in Python on both, by the rule of ``formats.validation``), the counts of a
report and the steps of a repair in their order. Each engine adds the SQL of its own derived data (its
text index, its vectors, its context-value index) beside the code that runs it.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from robotmem.formats.validation import is_stored_timestamp, read_timestamp
from robotmem.records import IndexHealth, IntegrityReport
from robotmem.text.tokens import index_text


@dataclass(frozen=True, slots=True)
class Placeholders:
    """How a driver writes the placeholder of a named parameter."""

    pattern: str

    def __call__(self, name: str) -> str:
        return self.pattern.format(name)


NAMED = Placeholders(":{}")  # sqlite3
PYFORMAT = Placeholders("%({})s")  # psycopg


class Rows(Protocol):
    """What both drivers' cursors give: the rows, and how many rows a statement changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """What both drivers' connections give: ``execute`` with parameters by name."""

    def execute(self, sql: str, params: Any = ..., /) -> Rows: ...


SAMPLE = 20  # offending ids a report lists per check

SUPERSEDED_WITHOUT_SUCCESSOR = (
    "m.status = 'superseded' AND (m.superseded_by IS NULL OR m.superseded_by = m.id "
    "OR NOT EXISTS (SELECT 1 FROM memories r WHERE r.id = m.superseded_by))"
)
# name: (id expression, FROM ... WHERE ...) of the offending rows, in both dialects.
REFERENCE_CHECKS: dict[str, tuple[str, str]] = {
    "tags_dangling": (
        "DISTINCT t.memory_id",
        "FROM memory_tags t WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = t.memory_id)",
    ),
    "payloads_dangling": (
        "p.memory_id",
        "FROM perception_payloads p WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = p.memory_id)",
    ),
    "sessions_missing": (
        "s.id",
        "FROM (SELECT DISTINCT session_id AS id FROM memories WHERE session_id IS NOT NULL "
        "UNION SELECT session_id FROM session_outcomes) s WHERE NOT EXISTS "
        "(SELECT 1 FROM sessions x WHERE x.id = s.id)",
    ),
    "sessions_inconsistent": (
        "s.id",
        "FROM sessions s WHERE (s.status = 'ended') != (s.ended_at IS NOT NULL)",
    ),
    "supersede_dangling": (
        "m.id",
        "FROM memories m WHERE m.superseded_by IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM memories r WHERE r.id = m.superseded_by)",
    ),
    # Superseded memories are hidden from recall; without a successor the lesson is lost to it.
    "superseded_without_successor": ("m.id", f"FROM memories m WHERE {SUPERSEDED_WITHOUT_SUCCESSOR}"),
}


def stored_time(value: Any) -> str | None:
    """Return the time ``value`` names in the stored UTC form, or None when it names none."""
    moment = read_timestamp(value)
    return None if moment is None else moment.isoformat(timespec="microseconds")


def is_unit(value: Any) -> bool:
    """True when ``value`` is a number within 0..1 (what a confidence must be)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def clamped_unit(value: Any) -> float:
    """Return ``value`` clamped into 0..1; anything that is not a number (text, NaN) becomes 0."""
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
    return 0.0 if math.isnan(number) else min(1.0, max(0.0, float(number)))


def _is_time(value: Any, nullable: bool = False) -> bool:
    return (nullable and value is None) or is_stored_timestamp(value)


class SharedMaintenance(ABC):
    """The checks and repairs of ``Maintenance`` whose SQL or rules are the same on both engines.

    An engine supplies its placeholders (``_mark``), how to count its text index and vectors
    (``_ROW_COUNTS``), its checks (``REFERENCE_CHECKS`` and those of its own derived data) and the
    abstract steps below.
    """

    _conn: Connection
    _mark: Placeholders
    # Row counts of the report beyond memories, active memories and sessions: the text index, the vectors.
    _ROW_COUNTS: dict[str, str]

    @abstractmethod
    def _checks(self) -> dict[str, tuple[str, str]]: ...

    @abstractmethod
    def _fts_stale(self) -> list[int]:
        """Return the active memories whose text index entry differs from what their content gives."""

    @abstractmethod
    def _repair_storage(self, report: IntegrityReport) -> dict[str, Any]:
        """Repair the storage itself: ``reindexed`` (its own indexes), ``columns_rewritten``."""

    @abstractmethod
    def _rebuild_derived(self) -> dict[str, int]:
        """Rebuild the text index and the context-value index, make the vectors agree with the memories."""

    @abstractmethod
    def _schema_state(self) -> tuple[int, int, str]:
        """Return (the schema version this code writes, the stored one, the journal mode)."""

    @abstractmethod
    def _stored_model(self) -> tuple[str, int] | None: ...

    @abstractmethod
    def _invalid_vectors(self) -> list[int]:
        """Return, by id, the memories whose stored vector or episode vector of the database's model breaks
        the vector rule (``query.vectors``: ``dim`` finite numbers, not all zero, unit length)."""

    @abstractmethod
    def _repair_vector_values(self) -> dict[str, int]:
        """Bring every stored vector back under the vector rule: ``vectors_renormalised``, ``vectors_dropped``.

        A vector of ``dim`` finite numbers that are not all zero is scaled to unit length (its direction,
        which cosine compares, is kept); any other is dropped, the memory unmarked so backfill embeds it
        again (an episode vector alone is dropped: ``episode_vector_weight`` fills it on the next write).
        """

    def _checked_in_python(self) -> dict[str, list[Any]]:
        """Return the offending ids of the engine's checks made outside SQL (none by default)."""
        return {}

    def _count(self, sql: str) -> int:
        return int(self._conn.execute(sql).fetchone()[0])

    def _check_count(self, name: str) -> int:
        column, body = self._checks()[name]
        return self._count(f"SELECT COUNT(*) FROM (SELECT {column} {body}) x")

    def _check_ids(self, name: str) -> list[Any]:
        column, body = self._checks()[name]
        return [row[0] for row in self._conn.execute(f"SELECT {column} {body}")]

    def _report(self, integrity: tuple[str, ...], foreign_keys: int) -> IntegrityReport:
        """Run every check on one snapshot; the caller holds a read transaction."""
        counts: dict[str, int] = {}
        samples: dict[str, list[Any]] = {}
        for name, (column, body) in self._checks().items():
            counts[name] = self._count(f"SELECT COUNT(*) FROM (SELECT {column} {body}) x")
            samples[name] = [row[0] for row in self._conn.execute(f"SELECT {column} {body} LIMIT {SAMPLE}")]
        memory_times, session_times, confidences = self._bad_values()
        found = {
            "times_invalid": [row[0] for row in memory_times],
            "session_times_invalid": [row[0] for row in session_times],
            "confidence_invalid": [row[0] for row in confidences],
            "vectors_invalid": self._invalid_vectors(),
            **self._checked_in_python(),
        }
        for name, ids in found.items():
            counts[name], samples[name] = len(ids), ids[:SAMPLE]
        stale = self._fts_stale()
        samples["fts_stale"] = stale[:SAMPLE]
        return IntegrityReport(
            integrity=integrity,
            foreign_keys=foreign_keys,
            counts=counts,
            samples=samples,
            fts_stale=len(stale),
            active_without_vector=self._without_vector(),
            rows=self._rows(),
        )

    def _rows(self) -> dict[str, int]:
        bodies = {
            "memories": "FROM memories",
            "active": "FROM memories WHERE status = 'active'",
            **self._ROW_COUNTS,
            "sessions": "FROM sessions",
        }
        return {name: self._count(f"SELECT COUNT(*) {body}") for name, body in bodies.items()}

    def _without_vector(self) -> int:
        return self._count(
            "SELECT COUNT(*) FROM memories WHERE status = 'active' AND embedding_model IS NULL"
        )

    def _bad_values(self) -> tuple[list[Any], list[Any], list[Any]]:
        """Return the rows with a time not in the stored UTC form (memories, sessions) and the memories
        with a confidence outside 0..1: decay, time order and recall's ``min_confidence`` misread them.

        Times are read in Python on both engines, by the rule ``formats.validation`` writes them with.
        """
        memory_times: list[Any] = []
        confidences: list[Any] = []
        for row in self._conn.execute(
            "SELECT id, created_at, updated_at, last_accessed, confidence, base_confidence, observed_at "
            "FROM memories ORDER BY id"
        ):
            memory_id, created, updated, accessed, confidence, base, observed = row
            times = (created, updated, observed)
            if not (all(_is_time(t) for t in times) and _is_time(accessed, nullable=True)):
                memory_times.append((memory_id, created, updated, accessed, observed))
            if not (is_unit(confidence) and is_unit(base)):
                confidences.append((memory_id, confidence, base))
        session_times = [
            (session_id, created, ended, status)
            for session_id, created, ended, status in self._conn.execute(
                "SELECT id, created_at, ended_at, status FROM sessions ORDER BY id"
            )
            if not (_is_time(created) and _is_time(ended, nullable=True))
        ]
        return memory_times, session_times, confidences

    def repair(self, report: IntegrityReport, now: str) -> dict[str, Any]:
        """Repair what ``report`` found, in one transaction; return how many rows each step changed.

        The storage first, then values and references (a restored memory needs its text indexed), then
        the derived indexes are rebuilt from the memories, and the vectors left are held to the vector rule.
        """
        actions = self._repair_storage(report)
        actions.update(self._repair_references(now))
        actions.update(self._repair_values(now))
        actions.update(self._rebuild_derived())
        actions.update(self._repair_vector_values())
        return actions

    def _index_texts(self) -> Iterator[tuple[int, str]]:
        """Return (id, indexed text) of every active memory, for a rebuild of the text index."""
        rows = self._conn.execute("SELECT id, content FROM memories WHERE status = 'active' ORDER BY id")
        return ((int(memory_id), index_text(content)) for memory_id, content in rows.fetchall())

    def _repair_references(self, now: str) -> dict[str, int]:
        """Remove rows that point at missing memories and recreate sessions that memories still name.

        A recreated session is marked ended (its real start and end are unknown; ``created_at`` is the
        time of its oldest memory) so the memories keep their episode and a replay by session still works.
        """
        conn, p = self._conn, self._mark
        tags = conn.execute(
            "DELETE FROM memory_tags WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = memory_tags.memory_id)"
        ).rowcount
        payloads = conn.execute(
            "DELETE FROM perception_payloads WHERE NOT EXISTS "
            "(SELECT 1 FROM memories m WHERE m.id = perception_payloads.memory_id)"
        ).rowcount
        missing = self._check_ids("sessions_missing")
        for session_id in missing:
            row = conn.execute(
                f"SELECT MIN(collection), MIN(created_at) FROM memories WHERE session_id = {p('id')}",
                {"id": session_id},
            ).fetchone()
            conn.execute(
                "INSERT INTO sessions (id, collection, context, status, summary, created_at, ended_at) "
                f"VALUES ({p('id')}, {p('collection')}, {p('context')}, 'ended', NULL, {p('created')}, {p('now')})",
                {
                    "id": session_id,
                    "context": '{"recreated_by": "repair"}',
                    "collection": row[0] if row and row[0] is not None else "default",
                    "created": row[1] if row and row[1] is not None else now,
                    "now": now,
                },
            )
        fixed_sessions = conn.execute(
            f"UPDATE sessions SET ended_at = {p('now')} WHERE status = 'ended' AND ended_at IS NULL",
            {"now": now},
        ).rowcount
        closed = conn.execute(
            "UPDATE sessions SET status = 'ended' WHERE status = 'active' AND ended_at IS NOT NULL"
        ).rowcount
        # A superseded memory whose successor is gone (or is itself) is recalled again: hidden with
        # nothing in its place, its lesson would be lost.
        restored = conn.execute(
            "UPDATE memories SET status = 'active', superseded_by = NULL WHERE id IN "
            f"(SELECT m.id FROM memories m WHERE {SUPERSEDED_WITHOUT_SUCCESSOR})"
        ).rowcount
        unlinked = conn.execute(
            "UPDATE memories SET superseded_by = NULL WHERE superseded_by IS NOT NULL "
            "AND NOT EXISTS (SELECT 1 FROM memories r WHERE r.id = memories.superseded_by)"
        ).rowcount
        return {
            "tags_deleted": tags,
            "payloads_deleted": payloads,
            "sessions_recreated": len(missing),
            "sessions_fixed": fixed_sessions + closed,
            "supersede_links_cleared": unlinked,
            "superseded_restored": restored,
        }

    def _repair_values(self, now: str) -> dict[str, int]:
        """Bring stored times to the UTC form and confidences into 0..1, row by row.

        A time that can be read (naive, date only, another offset) is rewritten as the same moment in
        UTC. One that cannot is replaced: ``created_at`` by ``updated_at`` (or the repair time),
        ``updated_at`` and ``observed_at`` by ``created_at``, ``last_accessed`` by NULL, a session's ``ended_at`` by the
        repair time. A confidence outside 0..1 is clamped into it (a text becomes 0).
        """
        conn, p = self._conn, self._mark
        memory_times, session_times, confidences = self._bad_values()
        replaced = 0
        for memory_id, created, updated, accessed, observed in memory_times:
            new_created, new_updated = stored_time(created), stored_time(updated)
            new_accessed = None if accessed is None else stored_time(accessed)
            new_observed = stored_time(observed)
            replaced += (
                (new_created is None)
                + (new_updated is None)
                + (accessed is not None and new_accessed is None)
                + (new_observed is None)
            )
            new_created = new_created or new_updated or now
            conn.execute(
                f"UPDATE memories SET created_at = {p('c')}, updated_at = {p('u')}, last_accessed = {p('a')}, "
                f"observed_at = {p('o')} WHERE id = {p('id')}",
                {
                    "c": new_created,
                    "u": new_updated or new_created,
                    "a": new_accessed,
                    "o": new_observed or new_created,
                    "id": memory_id,
                },
            )
        for session_id, created, ended, status in session_times:
            new_created = stored_time(created)
            new_ended = None if ended is None else stored_time(ended)
            replaced += (new_created is None) + (ended is not None and new_ended is None)
            conn.execute(
                f"UPDATE sessions SET created_at = {p('c')}, ended_at = {p('e')} WHERE id = {p('id')}",
                {
                    "c": new_created or now,
                    "e": new_ended if new_ended is not None or status != "ended" else now,
                    "id": session_id,
                },
            )
        for memory_id, confidence, base in confidences:
            conn.execute(
                f"UPDATE memories SET confidence = {p('c')}, base_confidence = {p('b')} WHERE id = {p('id')}",
                {"c": clamped_unit(confidence), "b": clamped_unit(base), "id": memory_id},
            )
        return {
            "times_normalised": len(memory_times) + len(session_times),
            "times_replaced": replaced,
            "confidences_clamped": len(confidences),
        }

    def index_report(self) -> IndexHealth:
        """Return schema version, row counts, text index and vector consistency figures for ``robotmem doctor``."""
        rows = self._rows()
        expected, version, journal_mode = self._schema_state()
        return IndexHealth(
            expected_schema_version=expected,
            schema_version=version,
            journal_mode=journal_mode,
            memories=rows["memories"],
            active=rows["active"],
            sessions=rows["sessions"],
            fts_rows=rows["fts"],
            fts_missing_active=self._check_count("fts_missing"),
            vectors_stored=rows["vectors"],
            active_without_vector=self._without_vector(),
            vectors_stale=self._check_count("vectors_stale"),
            stored_model=self._stored_model(),
        )
