"""``RobotMemory``: the one API every surface (SDK, MCP, REST, CLI) calls.

Each method is a one-line delegation to a feature module (``robotmem.service.*``) with the method's
engine; this class is the table of contents of the API. An operation's method builds its input model
(``robotmem.formats.inputs``) from its own parameters and checks it once against the settings; ``run``
takes an input a surface has built already. Every method returns the JSON-ready shape of
``robotmem.formats.results`` and raises ``RobotMemError`` subclasses.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from robotmem.config import Settings, load_settings
from robotmem.embedders import Embedder
from robotmem.formats.inputs import (
    AroundInput,
    EndSessionInput,
    ForgetInput,
    LastSeenInput,
    LearnInput,
    MemoryIdInput,
    OperationInput,
    RecallInput,
    SavePerceptionInput,
    StartSessionInput,
    UpdateInput,
    validate_input,
    validate_items,
)
from robotmem.formats.results import (
    AroundResult,
    BackfillResult,
    BackupResult,
    CategoriesResult,
    CollectionsResult,
    DoctorReport,
    EmbeddingStatus,
    EndSessionResult,
    EpisodeFacets,
    ExportResult,
    FailuresResult,
    ForgetResult,
    ImportResult,
    IntegrityResult,
    LastSeenResult,
    LearnResult,
    MapResult,
    MemoryDetail,
    MemoryPage,
    ParamFieldsResult,
    ParamOutcomeResult,
    PerceptionResult,
    RecallResult,
    ReindexResult,
    RepairResult,
    SessionPage,
    SessionRecord,
    SessionTimeline,
    SpatialPointsResult,
    StartSessionResult,
    Stats,
    SyncResult,
    UpdateResult,
)
from robotmem.formats.validation import parse_name
from robotmem.service import (
    backfill,
    browse,
    charts,
    maintenance,
    memories,
    objects,
    operations,
    perceptions,
    recall,
    sessions,
    sync,
    transfer,
)
from robotmem.service.backfill import DEFAULT_BATCH_SIZE, BackgroundBackfill, Progress
from robotmem.service.browse import (
    CategoriesInput,
    CollectionInput,
    EpisodeFacetsInput,
    ListMemoriesInput,
    ListSessionsInput,
    RecentFailuresInput,
    SpatialPointsInput,
)
from robotmem.service.charts import MapInput, ParamFieldsInput, ParamOutcomeInput
from robotmem.service.engine import Engine, iso, utc_now
from robotmem.service.transfer import IMPORT_BATCH_SIZE
from robotmem.store import is_server_address, open_store

InputT = TypeVar("InputT", bound=OperationInput)


class RobotMemory:
    """Experience memory on one SQLite file, or on a PostgreSQL server shared by a fleet.

    ``db_path`` defaults to ``$ROBOTMEM_HOME/memory.db`` (or the ``database_url`` setting); a
    ``postgresql://`` address there opens a PostgreSQL store (extra ``robotmem[postgres]``); ``collection`` is where writes go and
    recall looks unless told otherwise; ``embed_backend`` overrides the configured backend
    (``auto``, ``bundled``, ``onnx``, ``ollama``, ``openai``, ``hash``, ``none``). Settings not
    given come from ``load_settings(os.environ)``. Every method returns the JSON-ready dict of
    SPEC §2 and raises ``RobotMemError`` subclasses. One instance may be shared across threads.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str] | None = None,
        collection: str | None = None,
        embed_backend: str | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        base = settings if settings is not None else load_settings(os.environ)
        location = os.fspath(db_path) if db_path is not None else None
        server = location is not None and is_server_address(location)
        chosen = base.replace(
            # converted (and an empty one refused) with the other settings; a file given here is used
            # even when the settings name a server, and a server address instead of the settings' file
            db_path=None if server else db_path,
            database_url=location if server else ("" if location is not None else None),
            collection=parse_name("collection", collection) if collection is not None else None,
            embed_backend=embed_backend,
        )
        self.path = chosen.database
        self.collection = chosen.collection
        store = open_store(chosen, lambda: iso(clock()))
        self.location = store.location
        self._engine = Engine(store, chosen, embedder=embedder, clock=clock)
        self._background = BackgroundBackfill(self._engine)

    @property
    def settings(self) -> Settings:
        """The settings in use; assigning new ones changes later calls (limits, thresholds, ranking)."""
        return self._engine.settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        self._engine.settings = value

    @property
    def engine(self) -> Engine:
        """The engine the feature modules run on (store, settings, clock, embedder)."""
        return self._engine

    @property
    def embedder(self) -> Embedder:
        """The embedder in use (created on first use)."""
        return self._engine.embedder

    # ---- the seven operations ---------------------------------------------------------------------

    def learn(
        self,
        insight: str,
        context: dict[str, Any] | str | None = None,
        collection: str | None = None,
        session_id: str | None = None,
        observed_at: str | float | None = None,
        robot_id: str | None = None,
    ) -> LearnResult:
        """Store an experience; return ``{"status": "created", ...}`` or ``{"status": "duplicate", ...}``.

        ``observed_at`` is when it happened (ISO 8601 with a zone, or epoch seconds; default now);
        ``robot_id`` the robot that had it (default: the session context's, else the instance's robot id;
        docs/fleet.md). Raises ``ValidationError`` (empty or too-long insight, bad context JSON), ``NotFoundError``
        or ``ConflictError`` (unknown or ended session), ``DatabaseError``.
        """
        return memories.learn(self._engine, self._input(LearnInput, locals()))

    def recall(
        self,
        query: str = "",
        n: int | None = None,
        min_confidence: float | None = None,
        session_id: str | None = None,
        context_filter: dict[str, Any] | str | None = None,
        spatial_sort: dict[str, Any] | str | None = None,
        collection: str | None = None,
        include_data: bool = False,
        order: str = "relevance",
        robots: list[str] | str | None = None,
        since: str | float | None = None,
        until: str | float | None = None,
        min_relevance: float | None = None,
        region: dict[str, Any] | str | None = None,
    ) -> RecallResult:
        """Return ``{"memories", "total", "mode", "query_ms", "collections", "warnings", "note"}`` for the
        most relevant memories: ``collections`` names the collections searched (``collection="*"``: every
        one), ``warnings`` why the filter may match nothing (docs/filters.md).

        ``region`` keeps only memories whose position lies in a sphere/circle or box of one frame
        (docs/where-and-when.md), before any limit.

        With a query, each memory carries its ``relevance`` (0..1, comparable across queries). A query no
        memory is relevant to (none reaches the embedding model's calibrated floor, 0.5) returns no
        memories, and ``note`` says why; a ``min_relevance`` given also leaves out each memory below it
        (0 keeps them all).

        ``since``/``until`` keep memories observed in that window (ISO 8601 with a zone, epoch seconds,
        ``now``, or before now: ``-30m``, ``-2h``, ``-7d``), before any limit; ``order="recent"`` returns
        the newest ``observed_at`` first.

        ``robots`` scopes recall to those robot ids (``"self"`` is this robot: the current session's when
        its context names one; a list or a comma-separated string); by default every robot's memories in
        the store are searched, this robot's own scored ``own_robot_boost`` times higher. Raises ``ValidationError`` for a bad ``n``/``min_confidence``/
        filter/spatial sort/``robots``.
        """
        return recall.recall(self._engine, self._input(RecallInput, locals()))

    def last_seen(
        self,
        query: str = "",
        object_id: str | None = None,
        n: int = 5,
        since: str | float | None = None,
        until: str | float | None = None,
        region: dict[str, Any] | str | None = None,
        as_of: str | float | None = None,
        collection: str | None = None,
    ) -> LastSeenResult:
        """Return ``{"objects": [...]}``: for each matching object its latest sighting, best match first.

        An object is what sightings name in ``context.object`` (``id``, ``label``); ``object_id`` asks for
        one (and then alone decides: ``query`` is not read), ``query`` describes it in words (only sightings
        whose words match count, so an unknown object finds nothing); ``as_of`` asks where it was at that
        time; ``since``/``until``/``region`` narrow the sightings. Each object: ``object_id``, ``label``,
        ``position``, ``frame``, ``observed_at`` (ISO 8601 UTC), ``memory_id``, ``sightings``; an empty
        answer says why in ``note``. Raises ``ValidationError`` for a bad region or time.
        """
        return objects.last_seen(self._engine, self._input(LastSeenInput, locals()))

    def around(
        self,
        position: list[float],
        radius: float,
        frame: str | None = None,
        since: str | float | None = None,
        n: int = 10,
        collection: str | None = None,
    ) -> AroundResult:
        """Return ``{"objects", "memories"}``: the objects whose latest sighting lies within ``radius`` of
        ``position`` in ``frame`` (default "map"), nearest first with their ``distance``, and the most
        recent memories there. Raises ``ValidationError`` for a bad position, radius, frame or time."""
        return objects.around(self._engine, self._input(AroundInput, locals()))

    def save_perception(
        self,
        description: str,
        perception_type: str = "visual",
        data: Any = None,
        metadata: Any = None,
        collection: str | None = None,
        session_id: str | None = None,
        context: dict[str, Any] | str | None = None,
        observed_at: str | float | None = None,
        robot_id: str | None = None,
    ) -> PerceptionResult:
        """Store a perception; return ``{"memory_id", "perception_type", "collection", "has_embedding"}``.

        Repeated descriptions are stored again: a sensor stream is not a duplicate. ``context`` is filtered
        and sorted on like a learned memory's (``metadata`` stays with the payload); ``observed_at`` is
        when it was sensed (default now); ``robot_id`` the robot that sensed it (as ``learn``'s).
        """
        return perceptions.save_perception(self._engine, self._input(SavePerceptionInput, locals()))

    def save_perceptions(self, items: Sequence[Mapping[str, Any]]) -> list[PerceptionResult]:
        """Store every item as ``save_perception(**item)`` would, all or nothing, in one transaction.

        Each item takes the parameters of ``save_perception`` (``description`` required). Returns one
        ``{"memory_id", "perception_type", "collection", "has_embedding"}`` per item, in order. Raises
        ``ValidationError`` naming the first invalid item (``items[3].description: ...``) before anything
        is written, ``NotFoundError``/``ConflictError`` for an unknown or ended session, ``DatabaseError``.
        """
        return perceptions.save_perceptions(
            self._engine, validate_items(SavePerceptionInput, items, self._engine.settings)
        )

    def forget(self, memory_id: int, reason: str) -> ForgetResult:
        """Invalidate a memory so no search path returns it; raises ``NotFoundError``/``ConflictError``."""
        return memories.forget(self._engine, self._input(ForgetInput, locals()))

    def update(
        self,
        memory_id: int,
        new_content: str,
        context: dict[str, Any] | str | None = None,
        observed_at: str | float | None = None,
    ) -> UpdateResult:
        """Replace a memory's text (and context, ``observed_at`` when given) and re-index it everywhere."""
        return memories.update(self._engine, self._input(UpdateInput, locals()))

    def start_session(
        self, context: dict[str, Any] | str | None = None, collection: str | None = None
    ) -> StartSessionResult:
        """Begin an episode; later writes of this instance without a session join it."""
        return sessions.start_session(self._engine, self._input(StartSessionInput, locals()))

    def end_session(self, session_id: str, outcome_score: float | None = None) -> EndSessionResult:
        """End an episode: store the outcome, consolidate, decay, and return related memories."""
        return sessions.end_session(self._engine, self._input(EndSessionInput, locals()))

    def run(self, args: OperationInput) -> Mapping[str, Any]:
        """Run the operation whose input ``args`` is (``LearnInput`` → ``learn``, ``RecallInput`` → ``recall``,
        the browse views' inputs too) and return its result, as that method would.

        For surfaces that build the input model themselves (MCP, REST): an input validated with these
        settings (``validate_input(model, arguments, memory.settings)``) runs as it is, any other is checked
        against them first. Raises ``ValidationError`` and the operation's errors; ``TypeError`` for a model
        that is not an operation's input.
        """
        return operations.run(self._engine, args)

    def _input(self, model: type[InputT], parameters: dict[str, Any]) -> InputT:
        """``model`` from a method's parameters (its ``locals()``, ``self`` left out), checked against the settings."""
        arguments = dict(parameters)
        del arguments["self"]
        return validate_input(model, arguments, self._engine.settings)

    # ---- inspection -------------------------------------------------------------------------------

    def get_memory(self, memory_id: int) -> MemoryDetail:
        """Return the full record of a memory in any status, with perception payload and lineage."""
        return memories.get_memory(self._engine, self._input(MemoryIdInput, locals()))

    def get_session(self, session_id: str) -> SessionRecord:
        """Return a session with its outcome; raises ``NotFoundError``."""
        return sessions.get_session(self._engine, session_id)

    def doctor(self) -> DoctorReport:
        """Return a health report: database, index consistency, embedder status and search mode."""
        return maintenance.doctor(self._engine)

    def warm_up(self) -> None:
        """Load the embedder, the vector index and the recall mirror now instead of on first use."""
        self._engine.warm_up()

    # ---- browse (dashboards, the web UI) ----------------------------------------------------------

    def stats(self, collection: str | None = None) -> Stats:
        """Return dashboard totals: memories by status and type, the last 24 h, sessions, categories,
        collections, per-session outcomes over time (oldest first) and the spatial fields in use.

        ``collection`` None covers every collection. Raises ``ValidationError`` for a bad name.
        """
        return browse.stats(self._engine, self._input(CollectionInput, locals()))

    def list_memories(
        self,
        collection: str | None = None,
        type: str | None = None,
        status: str = "active",
        category: str | None = None,
        perception_type: str | None = None,
        session_id: str | None = None,
        min_confidence: float | None = None,
        max_confidence: float | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int = 50,
        offset: int = 0,
        order: str = "newest",
    ) -> MemoryPage:
        """Return ``{"memories", "total", "limit", "offset"}``: one page of memories in time order.

        ``status`` is active, superseded, invalidated or any; ``since``/``until`` bound ``created_at``
        (naive times are UTC); ``collection`` None covers every collection. Raises ``ValidationError``.
        """
        return browse.list_memories(self._engine, self._input(ListMemoriesInput, locals()))

    def list_sessions(
        self,
        collection: str | None = None,
        status: str | None = None,
        limit: int = 50,
        offset: int = 0,
        order: str = "newest",
        robot: str | None = None,
        task: str | None = None,
        outcome: str | None = None,
        threshold: float = browse.FAILURE_THRESHOLD,
    ) -> SessionPage:
        """Return ``{"sessions", "total", "limit", "offset"}``; each session has its outcome score, memory
        count, the success rate of its judged memories, ``robot``, ``task``, ``outcome`` and ``duration_s``.

        ``robot``, ``task`` and ``outcome`` (success, failure, unknown) filter by the rules of
        ``records.EpisodeRow``: an ``outcome_score`` below ``threshold`` is a failure, and without a score
        so is a success rate below it. Raises ``ValidationError``.
        """
        return browse.list_sessions(self._engine, self._input(ListSessionsInput, locals()))

    def episode_facets(self, collection: str | None = None) -> EpisodeFacets:
        """Return ``{"robots": [{"robot", "sessions"}], "tasks": [{"task", "sessions"}]}``, most first."""
        return browse.episode_facets(self._engine, self._input(EpisodeFacetsInput, locals()))

    def session_memories(self, session_id: str) -> SessionTimeline:
        """Return ``{"session", "memories", "total"}``: the episode's memories of every status in time order.

        Raises ``NotFoundError`` when there is no such session.
        """
        return browse.session_memories(self._engine, session_id)

    def collections(self) -> CollectionsResult:
        """Return ``{"collections": [{"collection", "memories", "active", "sessions", "last_at"}]}``."""
        return browse.collections(self._engine)

    def categories(self, collection: str | None = None) -> CategoriesResult:
        """Return ``{"categories": [{"category", "count"}]}`` over active memories, largest first."""
        return browse.categories(self._engine, self._input(CategoriesInput, locals()))

    def recent_failures(
        self, collection: str | None = None, limit: int = 20, max_outcome: float = browse.FAILURE_THRESHOLD
    ) -> FailuresResult:
        """Return ``{"sessions", "memories"}``: failed episodes (ended, with an ``outcome_score`` below
        ``max_outcome``, or without one a success rate of judged memories below it) and failure lessons
        (``task.success`` false, the failure tag, or the categories root_cause, postmortem and gotcha),
        newest first. Raises ``ValidationError``."""
        return browse.recent_failures(self._engine, self._input(RecentFailuresInput, locals()))

    def spatial_points(
        self, field: str, collection: str | None = None, limit: int = 500
    ) -> SpatialPointsResult:
        """Return ``{"field", "points": [{"memory_id", "content", "coordinates", "success"}]}`` for active
        memories whose context holds a list at ``field`` (``spatial.<key>``). Raises ``ValidationError``."""
        return browse.spatial_points(self._engine, self._input(SpatialPointsInput, locals()))

    def map_view(
        self,
        field: str | None = None,
        collection: str | None = None,
        since: datetime | str | float | None = None,
        until: datetime | str | float | None = None,
        limit: int = 5000,
        frame: str | None = None,
        objects: int = 200,
    ) -> MapResult:
        """Return the positions at ``field`` (``spatial.<key>``; default the one most memories carry) of
        active memories observed from ``since`` to ``until`` (both included; the forms ``recall`` takes) in one coordinate ``frame`` (default the one most
        of them are in), newest ``limit`` first, with ``task.success``; and the ``objects`` (at most that
        many, most recently seen first) sighted in that frame and window, each with its latest position
        and its track (the newest ``limit`` sightings).

        Also ``fields`` and ``frames`` (each with its count), ``total``, ``sightings`` and ``time_field``.
        Raises ``ValidationError``.
        """
        return charts.map_view(self._engine, self._input(MapInput, locals()))

    def param_fields(
        self,
        collection: str | None = None,
        since: datetime | str | float | None = None,
        until: datetime | str | float | None = None,
    ) -> ParamFieldsResult:
        """Return ``{"fields": [{"field", "unit", "memories", "units"}]}``: the numeric ``params.*`` of
        active memories, most carried first. Raises ``ValidationError``."""
        return charts.param_fields(self._engine, self._input(ParamFieldsInput, locals()))

    def param_outcome(
        self,
        x: str,
        y: str | None = None,
        collection: str | None = None,
        since: datetime | str | float | None = None,
        until: datetime | str | float | None = None,
        x_unit: str | None = None,
        y_unit: str | None = None,
        bins: int | None = None,
        y_bins: int | None = None,
        points: int = 5000,
    ) -> ParamOutcomeResult:
        """Return the success rate (``task.success``) by bins of parameter ``x``, with counts and 95 %
        Wilson intervals, the raw points, and with ``y`` the grid of both; memories left out are counted.

        See ``service/charts.py`` for the rules. Raises ``ValidationError``.
        """
        return charts.param_outcome(self._engine, self._input(ParamOutcomeInput, locals()))

    # ---- maintenance ------------------------------------------------------------------------------

    def integrity_report(self) -> IntegrityResult:
        """Check the file and every derived index against the memories table, changing nothing.

        Returns ``{"database", "ok", "integrity_check", "foreign_key_violations", "problems",
        "examples", "active_without_vector", "rows"}``; ``problems`` counts FTS rows missing,
        orphaned or stale, vectors stale or orphaned, dangling tags and payloads, missing or
        inconsistent sessions. Memories without a vector are not a problem (backfill embeds them).
        Raises ``DatabaseError`` when SQLite cannot read the file.
        """
        return maintenance.integrity_report(self._engine)

    def repair(self) -> RepairResult:
        """Rebuild the derived indexes from the memories table in one transaction and report the result.

        Rebuilds the FTS table from each active memory's content, turns vectors of non-active or
        deleted memories into tombstones, unmarks memories whose vector is missing (backfill embeds
        them again), deletes tags and payloads of deleted memories, recreates sessions that memories
        still name, runs ``REINDEX`` when SQLite reports damage, rewrites stored times in the UTC form
        and clamps confidences into 0..1. The content of a memory is never changed and no memory is
        deleted. Returns ``{"database", "ok", "repaired", "before", "after"}``; raises
        ``DatabaseError`` when the file is too damaged to write (restore a backup then).
        """
        return maintenance.repair(self._engine)

    def backup(self, path: str | os.PathLike[str]) -> BackupResult:
        """Copy the database to the new file ``path`` with SQLite's online backup API.

        Other processes keep reading and writing meanwhile; the copy is one consistent snapshot in
        rollback-journal mode (a single self-contained file). It is written under a temporary name,
        checked with ``integrity_check`` and only then renamed to ``path``, so ``path`` never holds a
        partial copy. Returns ``{"status": "backed_up", "path", "bytes", "memories", "integrity_check",
        "duration_ms"}``. Raises ``ValidationError`` when ``path`` exists or its directory does not,
        ``DatabaseError`` when the copy fails (disk full, read-only directory, damaged source).
        """
        return maintenance.backup(self._engine, path)

    # ---- export and import ------------------------------------------------------------------------

    def export_memories(
        self,
        path: str | os.PathLike[str],
        *,
        collection: str | None = None,
        vectors: bool = False,
        progress: Progress | None = None,
        force: bool = False,
    ) -> ExportResult:
        """Write every memory (of ``collection``, or all), its tags, lineage and sessions to ``path``.

        With ``vectors`` the stored vectors go along as base64 float32. The file is written beside
        ``path`` and renamed at the end, so a failed export leaves no partial file. An existing
        ``path`` is refused unless ``force`` (an ordinary file is then replaced); the database in
        use and its -wal/-shm files are refused always, also through symlinks and hard links.
        Returns ``{"status": "exported", "path", "memories", "sessions", "vectors",
        "embedding_model", "dim"}``. Raises ``ValidationError`` when ``path`` is refused or cannot
        be written, ``DatabaseError``.
        """
        return transfer.export_memories(
            self._engine, path, collection=collection, vectors=vectors, progress=progress, force=force
        )

    def sync(
        self, fleet: str | os.PathLike[str], *, direction: str = "both", full: bool = False
    ) -> SyncResult:
        """Push this store's changes to the fleet store ``fleet`` and pull the fleet's (docs/fleet.md).

        ``fleet`` is a SQLite file path (created when missing) or a server DSN when that engine is
        installed; ``direction`` is ``both``, ``push`` or ``pull``; ``full`` compares everything instead of
        only what changed since the last sync (after restoring either store). Memories match by uid, sessions by id;
        a version replaces another only by the rule of ``robotmem.rules.versions`` (forget and consolidation win
        over edits, else the later ``updated_at``), so running it again writes nothing. Returns
        ``{"status": "synced", "fleet", "robot_id", "fleet_store_id", "direction", "pushed", "pulled",
        "without_vector"}`` with ``{"memories"|"sessions": {"created", "updated", "unchanged", "kept", "refused"}}``
        per direction. Raises ``ValidationError`` (bad fleet or direction), ``DatabaseError``.
        """
        return sync.sync(self._engine, os.fspath(fleet), direction=direction, full=full)

    def import_memories(
        self,
        path: str | os.PathLike[str],
        *,
        conflict: str = "skip",
        collection: str | None = None,
        progress: Progress | None = None,
        batch_size: int = IMPORT_BATCH_SIZE,
    ) -> ImportResult:
        """Import an export file; memories already present (same uid) are handled by ``conflict``.

        ``skip`` keeps the stored memory, ``overwrite`` replaces it with the file's, ``new-ids``
        imports every memory and session as new (fresh uids, ids and session ids). Original ids are
        kept where free (except in ``new-ids``); lineage and session references follow any remap.
        Vectors come from the file when it holds vectors of the database's model, else they are
        computed with the embedder, else the memories are left for backfill. ``collection`` moves
        everything into that collection. Returns ``{"status": "imported", "path", "conflict",
        "memories": {"created", "updated", "skipped"}, "sessions": {...}, "vectors": {"from_file",
        "embedded"}, "without_vector"}``. Raises ``ValidationError`` for an unreadable or malformed
        file (naming the line), ``DatabaseError``.
        """
        return transfer.import_memories(
            self._engine,
            path,
            conflict=conflict,
            collection=collection,
            progress=progress,
            batch_size=batch_size,
        )

    # ---- vectors: backfill and re-embedding -------------------------------------------------------

    def backfill(
        self, batch_size: int = DEFAULT_BATCH_SIZE, progress: Progress | None = None
    ) -> BackfillResult:
        """Embed active memories that have no vector; return what was done.

        Returns ``{"status": "complete"|"stopped"|"unavailable", "embedded", "remaining", "model_id",
        "reason"}``: ``unavailable`` when the embedder cannot run or differs from the database's model
        (``reason`` says why and what to do), ``stopped`` when the embedder failed part-way. Raises
        ``ValidationError`` for a bad ``batch_size`` and ``DatabaseError``.
        """
        return backfill.backfill(self._engine, batch_size, progress)

    def start_background_backfill(
        self, interval_s: float = 30.0, batch_size: int = DEFAULT_BATCH_SIZE
    ) -> bool:
        """Start a daemon thread that backfills vectors every ``interval_s`` seconds; stops on ``close()``.

        Each round runs only while the embedder is available and matches the database's model, and
        embeds batches of memories that have no vector. Returns False when the thread already runs.
        Raises ``ValidationError`` for a non-positive interval or a bad batch size.
        """
        return self._background.start(interval_s, batch_size)

    def stop_background_backfill(self, timeout_s: float = 5.0) -> None:
        """Stop the background backfill thread (if any) and wait up to ``timeout_s`` for it to finish."""
        self._background.stop(timeout_s)

    @property
    def background_backfill_running(self) -> bool:
        """True while the background backfill thread is alive."""
        return self._background.running

    def reindex(
        self, batch_size: int = DEFAULT_BATCH_SIZE, progress: Progress | None = None
    ) -> ReindexResult:
        """Re-embed every active memory with the configured embedder and make its model the database's.

        Resumable: vectors are staged and committed per batch; a rerun with the same model continues
        where an interrupted one stopped. The old vectors stay in use until the swap. Returns
        ``{"status": "complete"|"up_to_date", "model_id", "dim", "previous_model", "embedded",
        "resumed", "vectors", "without_vector"}``. Raises ``EmbeddingError`` when the embedder cannot
        run (staged batches are kept), ``ValidationError`` for a bad ``batch_size``, ``DatabaseError``.
        """
        return backfill.reindex(self._engine, batch_size, progress)

    def embedding_status(self) -> EmbeddingStatus:
        """Return the database's model, the embedder, memories without a vector and any unfinished reindex."""
        return backfill.embedding_status(self._engine, self._background.running)

    # ---- lifecycle --------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop background work, flush queued access counts and close the database."""
        backfill.close(self._engine, self._background)

    def __enter__(self) -> RobotMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
