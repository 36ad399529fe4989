"""What the service needs from a storage engine: the contract every store implements.

A ``Store`` runs units of work in transactions: ``read(work)`` on one consistent snapshot, ``write(work)``
all or nothing (retried when another writer holds the lock). ``work`` receives a ``StoreTx`` whose
tables (``memories``, ``sessions``, ``vectors``, ``jobs``, ``transfer``, ``browse``, ``maintenance``,
``sync``) hold the operations, and whose ``candidates`` opens the recall channels over one scope. The service
never sees SQL, a connection or an index: ``robotmem.store.sqlite`` implements this contract on one
SQLite file, and a second engine implements the same methods on its own storage, so that the service,
filter, surface and reliability tests can run against either.

Identity: ``id`` is an integer local to one store (stable, never reused); ``uid`` (a 32-hex random
string, kept by export, import and sync) names a memory across stores; ``robot_id`` says whose experience
it is. Times are ISO 8601 UTC strings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from robotmem.query.filters import Node
from robotmem.query.regions import Region
from robotmem.query.spatial import SpatialSort
from robotmem.records import (
    EpisodeQuery,
    EpisodeRow,
    IndexHealth,
    IntegrityReport,
    MapPoint,
    MapSighting,
    Memory,
    MemoryQuery,
    NewMemory,
    ParamValue,
    Session,
    SessionCounts,
    SessionRow,
    Sighting,
    ViewScope,
)
from robotmem.rules.consolidation import Candidate

T = TypeVar("T")
FloatArray = npt.NDArray[np.float32]
# A depth larger than any store: "every match", for a channel asked for all its candidates.
EVERY = 2**62
# (memory_id, content, vector) of one embedded memory.
EmbeddedText = tuple[int, str, FloatArray]
# The vector of each memory of a batch, None for a memory without one.
VectorBatch = Sequence[FloatArray | None]
# (collection, memories, active memories, sessions, latest activity) of one collection.
CollectionRow = tuple[str, int, int, int, str | None]


@dataclass(frozen=True, slots=True)
class RecallScope:
    """The memories one recall may return: active, in ``collection``, confident enough, and passing ``filter``."""

    collection: str
    min_confidence: float
    session_id: str | None = None
    exclude_session: str | None = None
    filter: Node | None = None
    region: Region | None = None  # only memories whose position lies in it (the engine's spatial index)

    @property
    def narrowed(self) -> bool:
        """Whether a filter, a region or a session keeps part of the collection (min_confidence does not)."""
        return self.filter is not None or self.region is not None or self.session_id is not None


@dataclass(frozen=True, slots=True)
class VectorQuery:
    """A query embedding and the model that made it (only vectors of that model are compared)."""

    vector: FloatArray
    model_id: str
    dim: int


@dataclass(frozen=True, slots=True)
class NamedValues:
    """The context values a query names, as the memories of the recall's collection carry them.

    ``memories``: memories in the collection (any status); ``carried_by``: value → how many of them carry
    it (the candidates that some memory of the collection carries, each carried by at most ``max_share``
    of ``memories``); ``carriers``: id → the values of ``carried_by`` it carries, for the memories of the
    scope that carry any.
    """

    memories: int = 0
    carried_by: dict[str, int] = field(default_factory=dict)
    carriers: dict[int, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChannelQuery:
    """What one recall asks of its ranked channels.

    ``words``: the BM25 query words (quoted tokens; empty: no text channel); ``vector``: the query embedding
    (None: no vector channel); ``depth``: how many of each channel's best; ``min_coverage`` > 0 leaves out
    text matches whose query words carry less than that share of the query's IDF; ``k1`` and ``b``: the BM25
    constants (an engine whose constants are fixed, FTS5's 1.2 and 0.75, scores other ones itself);
    ``episode_vectors``: also rank the episode vectors (``VectorTable.put_episode``) of the query's model.
    """

    words: Sequence[str] = ()
    vector: VectorQuery | None = None
    depth: int = 50
    min_coverage: float = 0.0
    k1: float = 1.2
    b: float = 0.75
    episode_vectors: bool = False


@dataclass(frozen=True, slots=True)
class Ranked:
    """Each channel's ``(id, score)`` candidates, best first: BM25 (higher is better) and cosine similarity."""

    text: list[tuple[int, float]] = field(default_factory=list)
    vectors: list[tuple[int, float]] = field(default_factory=list)
    episode_vectors: list[tuple[int, float]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Marks:
    """Which of some memories are real-world experience (``env.sim_or_real`` is ``"real"``) and which are a
    given robot's own."""

    real_world: set[int] = field(default_factory=set)
    own: set[int] = field(default_factory=set)


class CandidateSource(Protocol):
    """The questions one recall asks about its scope, on the recall's read snapshot.

    Every answer holds only memories the scope allows, so no limit hides a memory that passes the filters.
    """

    def ranked(self, query: ChannelQuery) -> Ranked:
        """Return each channel's ``query.depth`` best candidates (ties by smaller id); an engine whose
        channels run in different places may run them side by side."""
        ...

    def text_matches(self, words: Sequence[str], min_coverage: float, ids: Collection[int]) -> set[int]:
        """Return the ids among ``ids`` that the text channel with no depth limit would return: the text half
        of a spatial recall's relevance gate, asked only about the nearest memories and the pool."""
        ...

    def text_coverage(self, words: Sequence[str], ids: Collection[int]) -> dict[int, float] | None:
        """Return id → the share of the words' IDFs (over the whole index, as the text channel's
        ``min_coverage``) that each of ``ids`` holds, 0 for none, in one pass; None when this source cannot
        (a word the index splits into several terms, or no postings in this process): ask ``text_matches``
        at each coverage then."""
        ...

    def nearest(self, spatial: SpatialSort, n: int) -> dict[int, float]:
        """Return id → distance of the ``n`` nearest memories with a point at ``spatial.path`` of the target's
        dimension, within ``max_distance`` when set, with every tie at the n-th distance."""
        ...

    def listed(self, limit: int | None, *, order: str, exclude: Collection[int] = ()) -> list[int]:
        """Return up to ``limit`` (None: every) ids not in ``exclude``, in ``order``: ``"id"`` (smallest
        first), ``"oldest"`` or ``"newest"`` (by ``created_at``, ties by id in the same direction), or
        ``"recent"`` (newest ``observed_at`` first, ties by larger id)."""
        ...

    def marks(self, ids: Iterable[int], robot_id: str | None) -> Marks:
        """Return which of ``ids`` are real-world experience and which are ``robot_id``'s own (none for None)."""
        ...

    def episodes(self, ids: Iterable[int]) -> list[list[int]]:
        """Return, for each session holding one of ``ids``, the ids of that session in ``created_at``
        order (ties by id), sessions in order of their smallest id."""
        ...

    def named_values(self, candidates: Collection[str], max_share: float) -> NamedValues:
        """Return which of ``candidates`` (``naming.value_candidates`` of the query) are context values of
        the collection's memories (``naming.context_values``: which strings count, folded how), how many
        memories of the collection (any status) carry each, and which memories of the scope carry them.

        A value carried by more than ``max_share`` of the collection's memories is left out (it names no
        memory in particular), and its carriers are not read. An engine keeps an index of (collection,
        value) → memories for this (SQLite: a table kept by triggers, ``store/sqlite/values.py``); a
        lookup must not read every context.
        """
        ...


class MemoryTable(Protocol):
    """Rows of memories with everything that changes with them: text index, tags, payloads."""

    def insert_many(
        self, news: Sequence[NewMemory], vectors: VectorBatch | None = None, model_id: str | None = None
    ) -> list[int]:
        """Insert every memory (text index, tags, payload included) in order; return their new ids.

        ``vectors`` (one per memory, None for none) of the model ``model_id`` are stored with them, in the
        same rows where the engine keeps vectors inline.
        """
        ...

    def get(self, memory_id: int) -> Memory:
        """Return the memory in any status; raises ``NotFoundError``."""
        ...

    def get_active(self, memory_id: int) -> Memory:
        """Return the active memory; raises ``NotFoundError``, or ``ConflictError`` when it is not active."""
        ...

    def fetch(self, ids: Sequence[int]) -> dict[int, Memory]:
        """Return id → memory for the existing ids among ``ids`` (any status)."""
        ...

    def sightings(self, ids: Sequence[int]) -> dict[int, Sighting]:
        """Return id → what each existing memory of ``ids`` says of the object it saw (``Sighting``): the
        few context values an object question needs, without reading whole records."""
        ...

    def objects_of(self, ids: Sequence[int]) -> dict[int, tuple[str | None, str | None]]:
        """Return id → ``(object id, label)`` of each existing memory of ``ids``, as ``sightings`` reads them
        (a text, else None): the two values that say which object a memory saw, without its position."""
        ...

    def objects_named(self, ids: Sequence[int]) -> set[tuple[str | None, str | None]]:
        """Return the objects the memories ``ids`` name, as ``sightings`` reads them: ``(id, None)`` for an
        object id, ``(None, label)`` for a label without id."""
        ...

    def object_track(
        self, collection: str, object_id: str, since: str | None, until: str | None
    ) -> tuple[int, int] | None:
        """Return ``(id, count)`` of the active sightings of ``object_id`` (the text at ``context.object.id``)
        in ``collection`` observed in ``[since, until]`` (stored times; None: unbounded): the newest one
        (by ``observed_at``, then id) and how many there are; None when there is none. From an index: a
        store of a million sightings answers it without reading them."""
        ...

    def latest_by_object(self, collection: str, since: str | None, most: int) -> list[tuple[str, int]] | None:
        """Return ``(object id, memory id)`` of each object's newest active sighting in ``collection``
        observed at or after ``since`` (a stored time; None: unbounded), by object id; None when the
        collection names more than ``most`` object ids. From the index of ``object_track``: one seek per
        object, whatever the number of sightings."""
        ...

    def contents(self, ids: Sequence[int]) -> list[tuple[int, str]]:
        """Return ``(id, content)`` of the existing ids among ``ids``, by id."""
        ...

    def payload(self, memory_id: int) -> tuple[Any, Any]:
        """Return the parsed ``(data, metadata)`` of a perception, ``(None, None)`` when absent."""
        ...

    def payloads(self, ids: Sequence[int]) -> dict[int, tuple[Any, Any]]:
        """Return id → parsed ``(data, metadata)`` for the perceptions among ``ids``."""
        ...

    def find_exact(self, collection: str, digest: str) -> int | None:
        """Return the id of an active fact of ``collection`` with this content hash, if any."""
        ...

    def facts_with_numbers(self, collection: str, text: str, limit: int) -> list[tuple[int, str]] | None:
        """Return ``(id, content)`` of the active facts of ``collection`` that hold every number of ``text``.

        Returns None when ``text`` has no number or more than ``limit`` facts qualify (too many to screen).
        """
        ...

    def jaccard_candidates(self, collection: str, text: str, limit: int, threshold: float) -> list[int]:
        """Return up to ``limit`` active facts of ``collection`` sharing words with ``text``, best match first,
        among which every fact with word Jaccard ≥ ``threshold`` to ``text`` is found."""
        ...

    def active_facts_among(self, ids: Sequence[int], collection: str) -> set[int]:
        """Return the ids among ``ids`` of active facts in ``collection``."""
        ...

    def replace_content(
        self,
        memory_id: int,
        *,
        content: str,
        digest: str,
        category: str,
        confidence: float,
        context: dict[str, Any],
        scope_files: tuple[str, ...],
        scope_entities: tuple[str, ...],
        tags: tuple[str, ...],
        index_body: str,
        now: str,
        observed_at: str | None = None,
    ) -> None:
        """Rewrite the text of a memory and everything derived from it; its vector is left to the caller.

        ``observed_at`` (stored form) replaces when the memory happened; None keeps it."""
        ...

    def invalidate(self, memory_id: int, reason: str, now: str) -> None:
        """Mark the memory invalidated and take it out of the text index."""
        ...

    def supersede(self, representative: int, merged: Sequence[int], now: str) -> None:
        """Mark ``merged`` superseded by ``representative`` and record them on it."""
        ...

    def decay(self, collection: str, now: str, protected: Sequence[str], rate: float) -> int:
        """Recompute confidence from ``base_confidence`` and days since last access; return how many changed."""
        ...

    def consolidation_candidates(self, session_id: str, collection: str) -> list[Candidate]:
        """Return the active facts of the session that consolidation may consider."""
        ...

    def latest_in_session(self, session_id: str) -> str | None:
        """Return the content of the session's latest active memory (by ``created_at``, then id), if any."""
        ...

    def session_texts(self, session_id: str, limit: int) -> list[str]:
        """Return the contents of the session's active memories, oldest id first."""
        ...


class SessionTable(Protocol):
    """Episodes and their outcomes."""

    def create(self, session_id: str, collection: str, context: dict[str, Any], now: str) -> None:
        """Insert a new active session."""
        ...

    def get(self, session_id: str) -> Session:
        """Return the session; raises ``NotFoundError``."""
        ...

    def get_active(self, session_id: str) -> Session:
        """Return the session if still active; raises ``NotFoundError`` or ``ConflictError``."""
        ...

    def end(self, session_id: str, outcome_score: float | None, summary: Mapping[str, Any], now: str) -> None:
        """Mark the session ended and store its outcome and summary."""
        ...

    def summarize(self, session_id: str) -> SessionCounts:
        """Return the counts of its memories that are not invalidated: in all, by type, by category."""
        ...

    def active_memory_count(self, collection: str) -> int:
        """Return the number of active memories in ``collection``."""
        ...


class VectorTable(Protocol):
    """Stored vectors: one per embedded memory, of the database's one model."""

    def put(self, memory_id: int, vector: FloatArray, model_id: str) -> None:
        """Store the vector and mark the memory embedded with ``model_id``."""
        ...

    def put_episode(self, memory_id: int, vector: FloatArray, model_id: str) -> None:
        """Store the memory's episode vector: its text after its predecessor's in the session, embedded
        together (``episode_vector_weight``); ``drop`` removes it with the memory's own vector."""
        ...

    def drop(self, memory_id: int) -> None:
        """Remove the memory's vector (and episode vector) from every search."""
        ...

    def stored_model(self) -> tuple[str, int] | None:
        """Return ``(model_id, dim)`` of the stored vectors, or None before the first vector."""
        ...

    def record_model(self, model_id: str, dim: int) -> None:
        """Record the model whose vectors the store holds."""
        ...

    def most_similar(self, query: VectorQuery, first: int, min_similarity: float) -> list[tuple[int, float]]:
        """Return up to ``first`` ``(id, cosine)`` pairs with cosine ≥ ``min_similarity`` over every stored
        vector of the query's model, most similar first."""
        ...

    def cosines(self, ids: Collection[int], query: VectorQuery) -> dict[int, float]:
        """Return id → cosine to the unit vector ``query.vector`` of those of ``ids`` that have a vector of
        the query's model (the others are left out)."""
        ...


class EmbeddingJobs(Protocol):
    """Backfill (memories without a vector) and re-embedding with a new model (staged, then swapped)."""

    def count_without_vector(self) -> int:
        """Return how many active memories have no vector."""
        ...

    def without_vector(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        """Return up to ``limit`` ``(id, content)`` of active memories without a vector, id above ``after_id``."""
        ...

    def store_backfilled(self, items: Sequence[EmbeddedText], model_id: str, dim: int) -> int:
        """Store the vectors of memories still active, without a vector and holding the text embedded; return
        how many were stored. Stores none when the store meanwhile recorded another model (a re-embedding
        finished)."""
        ...

    def reindex_target(self) -> tuple[str, int] | None:
        """Return the ``(model_id, dim)`` of an unfinished re-embedding, or None."""
        ...

    def begin_reindex(self, model_id: str, dim: int) -> bool:
        """Start or continue staging vectors of ``model_id``; return True when earlier staged vectors are kept
        (those staged for another model are discarded)."""
        ...

    def unstaged(self, after_id: int, limit: int) -> list[tuple[int, str]]:
        """Return up to ``limit`` ``(id, content)`` of active memories above ``after_id`` without a staged
        vector (one staged for an older text of the memory does not count)."""
        ...

    def stage(self, items: Sequence[EmbeddedText], model_id: str) -> None:
        """Stage the vectors of ``items`` (``(id, embedded text, vector)``) for the swap."""
        ...

    def staging_progress(self) -> tuple[int, int]:
        """Return ``(staged, total)``: active memories with a valid staged vector, and all active memories."""
        ...

    def swap_reindex(self, model_id: str, dim: int) -> tuple[int, int]:
        """Replace every stored vector by the staged ones and record ``model_id`` as the store's model.

        Active memories without a valid staged vector (written during the run) are left for backfill.
        Returns ``(vectors stored, active memories left without a vector)``.
        """
        ...


class TransferRows(Protocol):
    """Whole rows for export and import (every column, lineage by uid).

    Records have one shape on both engines (``store/shared/records.py``), so a file exported from one
    imports into the other.
    """

    def schema_version(self) -> int: ...

    def count_memories(self, collection: str | None) -> int:
        """Return how many memories (of any status) ``collection`` holds, or all collections for None."""
        ...

    def count_sessions(self, collection: str | None) -> int:
        """Return how many sessions ``iter_sessions(collection)`` yields."""
        ...

    def iter_sessions(self, collection: str | None) -> Iterator[dict[str, Any]]:
        """Yield the sessions of ``collection`` (or all) and those its memories name, oldest first, each
        ``{column: value}`` with ``"outcome"`` (its outcome row without ``session_id``, or None)."""
        ...

    def iter_memories(self, collection: str | None, *, with_vectors: bool) -> Iterator[dict[str, Any]]:
        """Yield every memory of ``collection`` (or all) in id order as an export record.

        A record is ``{"memory": {column: value}, "superseded_by_uid", "merged_uids", "tags": [{"tag",
        "source"}], "perception": {"data", "metadata"} | None, "vector": bytes | None}``; JSON columns
        come parsed; vectors are read only ``with_vectors`` and only those of the recorded model. Raises
        ``ValidationError`` naming a row export cannot carry: a superseded memory whose successor is
        missing, or on SQLite a value of the wrong kind (``store/sqlite/columns.py``).
        """
        ...

    def ids_of(self, uids: Sequence[str]) -> dict[str, int]:
        """Return uid → id for the stored memories among ``uids``."""
        ...

    def insert_memory(self, uid: str, fields: dict[str, Any], keep_id: int | None) -> int:
        """Insert an imported memory row (no text index, tags or payload) and return its id: ``keep_id``
        when no memory has that id. Identity, lineage and the vector state in ``fields`` are not copied."""
        ...

    def overwrite_memory(self, memory_id: int, fields: dict[str, Any]) -> None:
        """Replace the stored columns of ``memory_id`` by ``fields`` (as ``insert_memory`` copies them) and
        drop its vector."""
        ...

    def write_derived(
        self,
        memory_id: int,
        *,
        index_body: str | None,
        tags: Sequence[tuple[str, str]],
        perception: tuple[str | None, str | None] | None,
    ) -> None:
        """Replace the text-index entry (None: none), the ``(tag, source)`` tags and the perception payload
        ``(data JSON, metadata JSON)`` of an imported memory."""
        ...

    def set_lineage(
        self, memory_id: int, superseded_by: int | None, merged_ids: Sequence[int], *, fill_only: bool
    ) -> None:
        """Set ``superseded_by`` and ``merged_ids``; with ``fill_only`` only where they are still empty."""
        ...

    def session_exists(self, session_id: str) -> bool: ...

    def write_session(self, fields: dict[str, Any], outcome: dict[str, Any] | None) -> None:
        """Insert or replace the session ``fields["id"]`` and its outcome row (none for None)."""
        ...


@dataclass(frozen=True, slots=True)
class StoreIdentity:
    """Who a store is: ``store_id`` names it as a sync peer (random, fixed at creation); ``robot_id`` is the
    robot its memories belong to when the ``robot_id`` setting is empty (derived once, then stored)."""

    store_id: str
    robot_id: str


@dataclass(frozen=True, slots=True)
class SyncCursor:
    """How far a store has synced with one peer: change sequence numbers, its own and the peer's."""

    pushed_memories: int = 0
    pushed_sessions: int = 0
    pulled_memories: int = 0
    pulled_sessions: int = 0


class SyncRows(Protocol):
    """What ``robotmem sync`` reads and writes beyond the export rows: identity, change order, cursors.

    Every write to a memory (its row, tags, text) or a session (its row, outcome) gives it the next
    number of a per-store change sequence, committed in the order of the numbers, so that "every change
    after n" read at any time misses nothing that commits later. Records have the shape of
    ``TransferRows.iter_memories`` / ``iter_sessions``.
    """

    def identity(self) -> StoreIdentity: ...

    def last_change(self) -> tuple[int, int]:
        """Return the highest change number given so far to a memory and to a session."""
        ...

    def changed_memories(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        """Return the export records (vector included) of up to ``limit`` memories changed after ``after``,
        in change order, each once at its latest change; and the last change number examined
        (``after`` when nothing changed)."""
        ...

    def changed_sessions(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        """Return the records (with ``"outcome"``) of up to ``limit`` sessions changed after ``after``, in
        change order; and the last change number examined (``after`` when nothing changed)."""
        ...

    def memories_by_uid(
        self, uids: Sequence[str], *, with_vectors: bool = False
    ) -> dict[str, tuple[int, dict[str, Any]]]:
        """Return uid → ``(id, export record)`` for the stored memories among ``uids`` (the vector only
        ``with_vectors``)."""
        ...

    def sessions_by_id(self, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Return session id → session record (with ``"outcome"``) for the stored sessions among them."""
        ...

    def cursor(self, peer: str) -> SyncCursor:
        """Return the cursor kept for the peer store ``peer`` (all zero before the first sync)."""
        ...

    def save_cursor(self, peer: str, location: str, cursor: SyncCursor, now: str) -> None:
        """Record ``cursor`` for ``peer`` (at ``location``, for messages) and when it was reached."""
        ...


class BrowseQueries(Protocol):
    """Read-only views behind the web UI."""

    def list_memories(self, query: MemoryQuery, limit: int, offset: int) -> tuple[list[Memory], int]: ...

    def totals(self, collection: str | None, since: str) -> dict[str, Any]: ...

    def category_counts(self, collection: str | None) -> list[tuple[str, int]]: ...

    def collection_rows(self) -> list[CollectionRow]: ...

    def list_sessions(
        self, collection: str | None, status: str | None, limit: int, offset: int, newest_first: bool = True
    ) -> tuple[list[SessionRow], int]: ...

    def session_memory_ids(self, session_id: str) -> list[int]: ...

    def failure_memory_ids(self, collection: str | None, limit: int) -> list[int]: ...

    def spatial_fields(self, collection: str | None) -> list[str]: ...

    def spatial_points(
        self, key: str, collection: str | None, limit: int
    ) -> list[tuple[int, str, list[Any], Any]]: ...

    # The web UI's map, parameters and episodes: the episodes in store/shared/browse.py (one SQL for both
    # dialects), the views that read inside a context in each engine's browse.py.

    def spatial_field_counts(self, scope: ViewScope) -> list[tuple[str, int]]:
        """Return ``(key, memories)`` of each ``spatial.<key>`` holding a list, most carried first, then by key."""
        ...

    def position_frames(self) -> list[str]:
        """Return the frames in which the spatial index (``spatial.position``) holds a position of an active
        memory, of any collection, by name: an index lookup per frame, for recall's frame warnings."""
        ...

    def map_frame_counts(self, key: str, scope: ViewScope) -> list[tuple[str, int]]:
        """Return ``(frame, memories)`` of the memories with a list at ``spatial.<key>`` or an object
        sighting (``context.object`` and a ``spatial.position`` list), most first, then by name; a memory
        naming no frame is in ``query.regions.DEFAULT_FRAME``, one naming a frame that is not a text in none."""
        ...

    def map_points(
        self, key: str, scope: ViewScope, limit: int, frame: str | None = None
    ) -> tuple[list[MapPoint], int]:
        """Return the newest ``limit`` memories (by the scope's time field) with a list at ``spatial.<key>``
        and in ``frame`` when given, and how many have one."""
        ...

    def object_sightings(self, scope: ViewScope, frame: str, limit: int) -> tuple[list[MapSighting], int]:
        """Return the newest ``limit`` object sightings in ``frame`` (memories whose ``context.object`` is an
        object naming a text id or label and whose ``spatial.position`` is a list), by ``observed_at`` then
        id, and how many there are."""
        ...

    def param_field_counts(self, scope: ViewScope) -> list[tuple[str, str | None, int]]:
        """Return ``(key, unit, memories)`` of the numeric ``params.<key>``, most carried first."""
        ...

    def param_values(self, key: str, scope: ViewScope) -> list[ParamValue]:
        """Return every numeric value of ``params.<key>`` in scope, by memory id."""
        ...

    def episodes(self, query: EpisodeQuery, limit: int, offset: int) -> tuple[list[EpisodeRow], int]:
        """Return one page of sessions passing ``query`` (time order) and how many pass in all."""
        ...

    def episode_facets(self, collection: str | None) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        """Return ``(robot, sessions)`` and ``(task, sessions)`` pairs, most sessions first, then by name."""
        ...


class Maintenance(Protocol):
    """Checks of the derived indexes against the memories, and their rebuild."""

    def check(self) -> IntegrityReport: ...

    def repair(self, report: IntegrityReport, now: str) -> dict[str, Any]: ...

    def index_report(self) -> IndexHealth: ...


class StoreTx(Protocol):
    """One transaction's view of the store."""

    @property
    def memories(self) -> MemoryTable: ...

    @property
    def sessions(self) -> SessionTable: ...

    @property
    def vectors(self) -> VectorTable: ...

    @property
    def jobs(self) -> EmbeddingJobs: ...

    @property
    def transfer(self) -> TransferRows: ...

    @property
    def browse(self) -> BrowseQueries: ...

    @property
    def maintenance(self) -> Maintenance: ...

    @property
    def sync(self) -> SyncRows: ...

    def candidates(self, scope: RecallScope) -> CandidateSource:
        """Return the recall channels over ``scope`` on this transaction's snapshot."""
        ...


class Store(Protocol):
    """A storage engine: transactions, the access log, and its lifecycle."""

    @property
    def location(self) -> str:
        """What the store is, for messages and reports (a file path, a server without credentials)."""
        ...

    def read(self, work: Callable[[StoreTx], T]) -> T:
        """Run ``work`` on one consistent snapshot; raises ``DatabaseError`` when the engine fails."""
        ...

    def write(self, work: Callable[[StoreTx], T]) -> T:
        """Run ``work`` in one transaction, committed together or not at all; raises ``DatabaseError``."""
        ...

    def record_access(self, ids: Iterable[int]) -> None:
        """Count one access for each id, without making the caller wait for a write."""
        ...

    def settle_access(self) -> None:
        """Write the access counts queued by ``record_access`` now, so a decision that reads them
        (which memory consolidation keeps) does not depend on when the background write ran."""
        ...

    def warm_up(self, model_id: str | None, dim: int | None) -> None:
        """Load what the first recall would load (indexes, caches) now."""
        ...

    def backup(self, target: Path) -> int:
        """Write a consistent, verified copy of the whole store to the new file ``target``.

        Returns the number of memories in the copy; ``target`` never holds a partial copy. Raises
        ``DatabaseError`` when the copy cannot be made or fails its check.
        """
        ...

    def close(self) -> None:
        """Flush queued access counts and release every connection."""
        ...
