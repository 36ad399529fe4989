"""``robotmem sync``: exchange memories and sessions with a fleet store, incrementally and idempotently.

A robot works on its own store offline; when connected, ``sync`` pushes what changed here since the
last sync with that fleet store and pulls what changed there. Each side's changes are read in the
order of its change sequence (``robotmem.store.protocol.SyncRows``) from the cursor this store keeps
for the peer, so a sync reads only what is new. Memories are matched by ``uid`` and sessions by id:
nothing is duplicated, and a version is written only when it wins the rule of ``robotmem.rules.versions``
(forget and consolidation win over edits; otherwise the later ``updated_at``; then a digest), so
running sync again writes nothing. Every batch is one transaction on the receiving store, which
reads the versions it holds inside that transaction: robots syncing with one fleet at once never
overwrite each other's newer versions. See docs/fleet.md.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robotmem.config import Settings
from robotmem.errors import ValidationError
from robotmem.formats.export import MemoryLine, check_session_fields, parse_memory, record_vector
from robotmem.formats.results import SyncResult
from robotmem.formats.serialize import synced_result
from robotmem.formats.validation import parse_text
from robotmem.rules.versions import LOCAL_MEMORY_FIELDS, incoming_wins, memory_rank, session_rank
from robotmem.service.engine import Engine
from robotmem.store import is_server_address, open_store
from robotmem.store.protocol import Store, StoreTx, SyncCursor
from robotmem.text.tokens import index_text

log = logging.getLogger("robotmem")
JsonDict = dict[str, Any]

SYNC_BATCH_SIZE = 500
DIRECTIONS = ("both", "push", "pull")
# Kept by the receiving store whatever the incoming version says.
_NOT_COPIED = LOCAL_MEMORY_FIELDS - {"confidence", "base_confidence"}


def _counts() -> dict[str, dict[str, int]]:
    names = ("created", "updated", "unchanged", "kept", "refused")
    return {"memories": dict.fromkeys(names, 0), "sessions": dict.fromkeys(names, 0)}


@dataclass
class _Leg:
    """One direction of a sync: its counts, the change numbers reached on the sending store, and the
    versions the receiver kept (they go back to the sender, which would otherwise never see them again)."""

    memories_after: int
    sessions_after: int
    counts: dict[str, dict[str, int]] = field(default_factory=_counts)
    without_vector: int = 0
    kept_memories: list[str] = field(default_factory=list)
    kept_sessions: list[str] = field(default_factory=list)
    # Whether a receiver without vectors may take the sender's model (a robot only when its own embedder
    # is that model: otherwise it would be locked to a model it cannot query with).
    may_adopt: Callable[[str], bool] = lambda model_id: True
    # The limits a received memory must meet (those of the robot running the sync).
    limits: Settings = field(default_factory=Settings)


def sync(
    engine: Engine,
    fleet: str | Path,
    *,
    direction: str = "both",
    full: bool = False,
    batch_size: int = SYNC_BATCH_SIZE,
    fleet_store: Callable[[], Store] | None = None,
) -> SyncResult:
    """Push this store's changes to ``fleet`` and pull the fleet's; see ``RobotMemory.sync``.

    ``full`` ignores the cursor and compares everything; ``fleet_store`` opens the peer instead of
    ``fleet`` (a store of another engine, in tests).
    """
    location = parse_text("fleet", str(fleet), max_chars=4096)
    if direction not in DIRECTIONS:
        raise ValidationError(
            f"direction: {direction!r} is not a direction; expected one of {', '.join(DIRECTIONS)}"
        )
    if not 1 <= batch_size <= 10_000:
        raise ValidationError(f"batch_size: is {batch_size}; expected 1..10000")
    peer = fleet_store() if fleet_store is not None else open_fleet(engine, location)
    try:
        mine = engine.read(lambda tx: tx.sync.identity())
        theirs = peer.read(lambda tx: tx.sync.identity())
        if mine.store_id == theirs.store_id:
            raise ValidationError(f"fleet: {location} is this robot's own store (or a copy of it)")
        kept = SyncCursor() if full else engine.read(lambda tx: tx.sync.cursor(theirs.store_id))
        cursor = _checked_cursor(engine.store, peer, kept)
        push = _Leg(cursor.pushed_memories, cursor.pushed_sessions, limits=engine.settings)
        pull = _Leg(
            cursor.pulled_memories,
            cursor.pulled_sessions,
            may_adopt=lambda m: m == engine.embedder.model_id,
            limits=engine.settings,
        )
        if direction in ("both", "push"):
            _send(engine.store, peer, push, pull, batch_size)
            cursor = dataclasses.replace(
                cursor, pushed_memories=push.memories_after, pushed_sessions=push.sessions_after
            )
            _save(engine, theirs.store_id, peer.location, cursor)
        if direction in ("both", "pull"):
            _send(peer, engine.store, pull, push, batch_size)
            cursor = dataclasses.replace(
                cursor, pulled_memories=pull.memories_after, pulled_sessions=pull.sessions_after
            )
            _save(engine, theirs.store_id, peer.location, cursor)
    finally:
        if fleet_store is None:
            peer.close()
    return synced_result(
        peer.location,
        engine.robot_id,
        theirs.store_id,
        direction,
        push.counts if direction != "pull" else None,
        pull.counts if direction != "push" else None,
        push.without_vector + pull.without_vector,
    )


def open_fleet(engine: Engine, location: str) -> Store:
    """Open the fleet store at ``location``: a SQLite file path, or a server DSN when that engine is installed.

    Raises ``ValidationError`` for a DSN no installed engine serves, ``DatabaseError`` when it cannot be opened.
    """
    settings = engine.settings
    if is_server_address(location):
        chosen = settings.replace(database_url=location)
    elif "://" in location:
        scheme = location.split("://", 1)[0]
        raise ValidationError(
            f"fleet: {scheme}:// stores need an engine this robotmem lacks; give the path of a SQLite file "
            "or a postgresql:// address"
        )
    else:
        path = Path(location).expanduser()
        if not path.parent.is_dir():
            raise ValidationError(f"fleet: the directory of {path} does not exist")
        chosen = settings.replace(db_path=path, database_url="")
    return open_store(chosen, engine.now)


def _checked_cursor(local: Store, peer: Store, cursor: SyncCursor) -> SyncCursor:
    """Restart a side from zero when its change numbers are behind the cursor (restored from a backup)."""
    mine = local.read(lambda tx: tx.sync.last_change())
    theirs = peer.read(lambda tx: tx.sync.last_change())
    if mine[0] < cursor.pushed_memories or mine[1] < cursor.pushed_sessions:
        log.warning("sync: this store is behind its sync cursor (restored?); pushing everything again")
        cursor = dataclasses.replace(cursor, pushed_memories=0, pushed_sessions=0)
    if theirs[0] < cursor.pulled_memories or theirs[1] < cursor.pulled_sessions:
        log.warning(
            "sync: the fleet store is behind this robot's cursor (restored?); pulling everything again"
        )
        cursor = dataclasses.replace(cursor, pulled_memories=0, pulled_sessions=0)
    return cursor


def _save(engine: Engine, peer_id: str, location: str, cursor: SyncCursor) -> None:
    now = engine.now()
    engine.write(lambda tx: tx.sync.save_cursor(peer_id, location, cursor, now))


def _send(source: Store, target: Store, leg: _Leg, back: _Leg, batch_size: int) -> None:
    """Apply every session, then every memory, that changed on ``source`` after ``leg``'s cursor to
    ``target``; versions ``target`` kept are applied back to ``source`` (counted in ``back``)."""
    while True:
        sessions, last = source.read(lambda tx: tx.sync.changed_sessions(leg.sessions_after, batch_size))
        if last == leg.sessions_after:
            break
        target.write(functools.partial(_apply_sessions, sessions=sessions, leg=leg))
        leg.sessions_after = last
    if leg.kept_sessions:
        winners = list(target.read(lambda tx: tx.sync.sessions_by_id(leg.kept_sessions)).values())
        source.write(lambda tx: _apply_sessions(tx, winners, back))
    source_model = source.read(lambda tx: tx.vectors.stored_model())
    pending: list[tuple[str, str | None, list[str]]] = []
    while True:
        records, last = source.read(lambda tx: tx.sync.changed_memories(leg.memories_after, batch_size))
        if last == leg.memories_after:
            break
        pending = _deliver(target, records, source.location, source_model, leg, pending)
        leg.memories_after = last
    if leg.kept_memories:
        kept = target.read(lambda tx: tx.sync.memories_by_uid(leg.kept_memories, with_vectors=True))
        target_model = target.read(lambda tx: tx.vectors.stored_model())
        _deliver(source, [record for _, record in kept.values()], target.location, target_model, back, [])
    if pending:
        log.warning(
            "sync: %d memories name a successor or merged memory that is in neither store", len(pending)
        )


def _deliver(
    target: Store,
    records: list[JsonDict],
    location: str,
    model: tuple[str, int] | None,
    leg: _Leg,
    pending: list[tuple[str, str | None, list[str]]],
) -> list[tuple[str, str | None, list[str]]]:
    lines: list[MemoryLine] = []
    accepted: list[JsonDict] = []
    for record in records:
        without_vector = {key: value for key, value in record.items() if key != "vector"}
        try:
            lines.append(parse_memory(without_vector, 0, Path(location), None, leg.limits))
        except ValidationError as exc:
            # One memory this robot's limits refuse must not stop every later sync: it is left out, named.
            uid = (record.get("memory") or {}).get("uid")
            log.warning("sync: memory %s from %s is left out: %s", uid, location, exc.message)
            leg.counts["memories"]["refused"] += 1
            continue
        accepted.append(record)
    return target.write(lambda tx: _apply_memories(tx, lines, accepted, model, leg, pending))


def _apply_sessions(tx: StoreTx, sessions: list[JsonDict], leg: _Leg) -> None:
    counts = leg.counts["sessions"]
    stored = tx.sync.sessions_by_id([str(s["id"]) for s in sessions])
    for session in sessions:
        checked = _checked_session(session, leg)
        if checked is None:
            continue
        here = stored.get(str(session["id"]))
        verdict = True if here is None else incoming_wins(session_rank(session), session_rank(here))
        if verdict is None:
            counts["unchanged"] += 1
            continue
        if not verdict:
            counts["kept"] += 1
            leg.kept_sessions.append(str(session["id"]))
            continue
        counts["created" if here is None else "updated"] += 1
        fields = {key: value for key, value in checked.items() if key != "outcome"}
        tx.transfer.write_session(
            fields, checked.get("outcome") if isinstance(checked.get("outcome"), dict) else None
        )


def _checked_session(session: JsonDict, leg: _Leg) -> JsonDict | None:
    """Return a received session checked by import's rules (``formats.export.check_session_fields``), or
    None, counted as refused and named in the log, when they refuse it."""
    try:
        return check_session_fields(session, leg.limits)
    except ValidationError as exc:
        log.warning("sync: session %s is left out: %s", session.get("id"), exc.message)
        leg.counts["sessions"]["refused"] += 1
        return None


def _apply_memories(
    tx: StoreTx,
    lines: list[MemoryLine],
    records: list[JsonDict],
    model: tuple[str, int] | None,
    leg: _Leg,
    pending: list[tuple[str, str | None, list[str]]],
) -> list[tuple[str, str | None, list[str]]]:
    """Write the winning versions of one batch; return the lineage still waiting for its memories."""
    counts = leg.counts["memories"]
    stored = tx.sync.memories_by_uid([line.uid for line in lines])
    ids = {uid: memory_id for uid, (memory_id, _) in stored.items()}
    lineage: list[tuple[str, str | None, list[str], bool]] = []
    for line, record in zip(lines, records, strict=True):
        here = stored.get(line.uid)
        verdict = True if here is None else incoming_wins(memory_rank(record), memory_rank(here[1]))
        if verdict is None or verdict is False:
            counts["unchanged" if verdict is None else "kept"] += 1
            if verdict is False:
                leg.kept_memories.append(line.uid)
            lineage.append((line.uid, line.superseded_by_uid, line.merged_uids, True))
            continue
        fields = {key: value for key, value in line.fields.items() if key not in _NOT_COPIED}
        if here is None:
            ids[line.uid] = tx.transfer.insert_memory(line.uid, fields, None)
            counts["created"] += 1
        else:
            tx.transfer.overwrite_memory(ids[line.uid], fields)
            counts["updated"] += 1
        lineage.append((line.uid, line.superseded_by_uid, line.merged_uids, False))
        is_active = fields.get("status", "active") == "active"
        tx.transfer.write_derived(
            ids[line.uid],
            index_body=index_text(str(fields["content"])) if is_active else None,
            tags=line.tags,
            perception=line.perception,
        )
        if is_active and not _put_vector(tx, ids[line.uid], record.get("vector"), model, leg.may_adopt):
            leg.without_vector += 1
    return _apply_lineage(tx, ids, lineage, pending)


def _put_vector(
    tx: StoreTx, memory_id: int, blob: Any, model: tuple[str, int] | None, may_adopt: Callable[[str], bool]
) -> bool:
    """Store the sender's vector when both stores use its model and it passes import's vector rule
    (``formats.export.record_vector``: scaled to unit length, refused when not finite, of another
    dimension or all zeros); return whether the memory has one now. A refused vector leaves the memory
    for backfill: the memory itself is not refused for it."""
    if blob is None or model is None:
        return False
    try:
        vector = record_vector(blob, model[1])
    except ValidationError as exc:
        log.warning(
            "sync: the vector of memory %d is not stored (backfill embeds it): %s", memory_id, exc.message
        )
        return False
    if vector is None:
        return False
    stored = tx.vectors.stored_model()
    if stored is None:
        if not may_adopt(model[0]):
            return False
        tx.vectors.record_model(*model)
    elif (stored[0], int(stored[1])) != model:
        return False  # another model here: backfill embeds it
    tx.vectors.put(memory_id, vector, model[0])
    return True


def _apply_lineage(
    tx: StoreTx,
    ids: dict[str, int],
    lineage: list[tuple[str, str | None, list[str], bool]],
    pending: list[tuple[str, str | None, list[str]]],
) -> list[tuple[str, str | None, list[str]]]:
    """Set ``superseded_by``/``merged_ids`` by uid: replaced for written versions, filled where empty for
    kept ones; links to memories this store lacks so far wait for a later batch."""
    wanted = [(uid, sup, merged, fill) for uid, sup, merged, fill in lineage if sup is not None or merged]
    wanted += [(uid, sup, merged, True) for uid, sup, merged in pending]
    named = {u for _, sup, merged, _ in wanted for u in ([sup] if sup else []) + merged}
    known = dict(ids)
    known.update(tx.transfer.ids_of(sorted(u for u in named if u not in known)))
    missing_self = [uid for uid, *_ in wanted if uid not in known]
    known.update(tx.transfer.ids_of(missing_self))
    waiting: list[tuple[str, str | None, list[str]]] = []
    for uid, sup, merged, fill in wanted:
        if uid not in known:
            continue
        if (sup is not None and sup not in known) or any(u not in known for u in merged):
            waiting.append((uid, sup, merged))
        superseded_by = known.get(sup) if sup is not None else None
        merged_ids = [known[u] for u in merged if u in known]
        tx.transfer.set_lineage(known[uid], superseded_by, merged_ids, fill_only=fill)
    return waiting
