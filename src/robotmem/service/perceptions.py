"""save_perception and save_perceptions: what the robot sensed or did, with its raw payload.

A robot streams perceptions far faster than one write transaction per reading allows; a batch is stored
with one validation pass, one model call and one transaction. A repeated description is stored again:
a sensor stream is not a duplicate.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from robotmem.errors import EmbeddingError
from robotmem.formats.inputs import SavePerceptionInput
from robotmem.formats.results import PerceptionResult
from robotmem.formats.serialize import perception_results
from robotmem.records import NewMemory
from robotmem.rules.inheritance import inherited_context
from robotmem.service.engine import Engine
from robotmem.store.protocol import FloatArray, StoreTx
from robotmem.text.classify import Classification, classify_perception
from robotmem.text.tokens import index_text

log = logging.getLogger("robotmem")


@dataclass(frozen=True, slots=True)
class Perception:
    """A checked perception with what is derived from it before the write: its collection and classification."""

    args: SavePerceptionInput
    collection: str
    found: Classification


def save_perception(engine: Engine, args: SavePerceptionInput) -> PerceptionResult:
    """Store one perception; see ``RobotMemory.save_perception``."""
    perception = _prepare(engine, args)
    vector = engine.embed(args.description, is_query=False)
    vectors = [None if vector is None else vector.vector]
    return engine.write(lambda tx: insert(engine, tx, [perception], vectors))[0]


def save_perceptions(engine: Engine, batch: Sequence[SavePerceptionInput]) -> list[PerceptionResult]:
    """Store every item as save_perception would, all or nothing; see ``RobotMemory.save_perceptions``."""
    prepared = [_prepare(engine, args) for args in batch]
    vectors: list[FloatArray | None] = [None] * len(prepared)
    model, _ = engine.vector_model()
    if model is not None and prepared:
        try:
            vectors = engine.embed_texts([p.args.description for p in prepared], is_query=False, dim=model[1])
        except EmbeddingError as exc:
            log.warning("embedding failed, storing the perceptions without vectors: %s", exc)
    return engine.write(lambda tx: insert(engine, tx, prepared, vectors))


def insert(
    engine: Engine, tx: StoreTx, prepared: Sequence[Perception], vectors: Sequence[FloatArray | None]
) -> list[PerceptionResult]:
    """Insert prepared perceptions with their vectors; return one save_perception result each."""
    sessions: dict[str | None, str | None] = {}  # one transaction: a session's state cannot change
    for p in prepared:
        if p.args.session_id not in sessions:
            sessions[p.args.session_id] = engine.session_for_write(tx, p.args.session_id)
    now = engine.now()
    own = engine.robot_id
    inherited = {session: engine.inheritance(tx, session, own) for session in set(sessions.values())}
    ids = engine.insert(
        tx,
        [
            NewMemory(
                collection=p.collection,
                type="perception",
                content=p.args.description,
                content_hash=None,
                category="perception",
                confidence=p.found.confidence,
                context=inherited_context(
                    inherited[sessions[p.args.session_id]][1],
                    {**p.args.context_object, "source": "save_perception"},
                ),
                scope_files=p.found.scope_files,
                scope_entities=p.found.scope_entities,
                session_id=sessions[p.args.session_id],
                perception_type=p.args.perception_type,
                tags=("perception", p.args.perception_type, *p.found.tags),
                index_body=index_text(p.args.description),
                created_at=now,
                data_json=p.args.data_json,
                metadata_json=p.args.metadata_json,
                robot_id=p.args.robot_id or inherited[sessions[p.args.session_id]][0],
                observed_at=p.args.observed,
            )
            for p in prepared
        ],
        vectors,
    )
    return perception_results(
        ids,
        [{"perception_type": p.args.perception_type, "collection": p.collection} for p in prepared],
        [vector is not None for vector in vectors],
    )


def _prepare(engine: Engine, args: SavePerceptionInput) -> Perception:
    return Perception(args, engine.collection_for(args.collection), classify_perception(args.description))
