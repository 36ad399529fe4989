"""Which of two versions of one memory (same ``uid``) or one session (same id) a sync keeps (pure).

A version's rank is ``(state, updated_at, digest)``, compared in that order; the higher rank wins:

1. state: ``active`` < ``superseded`` < ``invalidated`` (a session: ``active`` < ``ended``). A memory
   only moves forward through these states in a store (an invalidated or superseded memory refuses
   edits), so a forget or a consolidation made on one robot is never undone by an edit made elsewhere
   without knowledge of it: a memory one robot found wrong stays retracted for the fleet.
2. ``updated_at`` (for a session, ``ended_at`` then ``created_at``): the later write wins.
3. ``digest``: a hash of the synced fields, so that two different versions written at the same
   microsecond still have one winner, the same on every robot.

Because the winner of any set of versions is their maximum under one total order, robots that
exchange versions in any order, any number of times, end with the same one (the merge is
commutative, associative and idempotent). Local bookkeeping is not synced and not hashed: access
counts, ``last_accessed``, the decayed ``confidence`` and its ``base_confidence`` (each store decays
by its own accesses), the local ``id`` and the vector state. Lineage (``superseded_by``,
``merged_ids``) travels by uid and is filled where the receiving store has none.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

MEMORY_STATES = {"active": 0, "superseded": 1, "invalidated": 2}
SESSION_STATES = {"active": 0, "ended": 1}
# Columns that belong to one store: never compared, never copied over the receiver's own.
LOCAL_MEMORY_FIELDS = frozenset(
    {
        "id",
        "access_count",
        "last_accessed",
        "confidence",
        "base_confidence",
        "embedding_model",
        "superseded_by",
        "merged_ids",
    }
)
Rank = tuple[int, str, str]


def _digest(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def memory_rank(record: Mapping[str, Any]) -> Rank:
    """Return the rank of an export record of a memory (``{"memory", "tags", "perception", ...}``)."""
    memory = record["memory"]
    synced = {key: value for key, value in memory.items() if key not in LOCAL_MEMORY_FIELDS}
    tags = sorted((str(t["tag"]), str(t.get("source") or "auto")) for t in record.get("tags") or [])
    content = {"memory": synced, "tags": tags, "perception": record.get("perception")}
    state = MEMORY_STATES.get(str(memory.get("status", "active")), 0)
    return state, str(memory.get("updated_at") or ""), _digest(content)


def session_rank(record: Mapping[str, Any]) -> Rank:
    """Return the rank of a session record (``sessions`` columns and ``"outcome"``)."""
    state = SESSION_STATES.get(str(record.get("status", "active")), 0)
    moment = str(record.get("ended_at") or record.get("created_at") or "")
    return state, moment, _digest(dict(record))


def incoming_wins(incoming: Rank, stored: Rank) -> bool | None:
    """Return True when ``incoming`` replaces ``stored``, False when ``stored`` stays, None when they are the
    same version."""
    if incoming == stored:
        return None
    return incoming > stored
