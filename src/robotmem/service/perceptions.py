"""save_perception and save_perceptions: what the robot sensed or did, with its raw payload.

A robot streams perceptions far faster than one write transaction per reading allows; a batch is stored
with one validation pass, one model call and one transaction. A repeated description is stored again:
a sensor stream is not a duplicate.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from robotmem.errors import EmbeddingError, ValidationError
from robotmem.formats.results import PerceptionResult
from robotmem.formats.serialize import perception_results
from robotmem.formats.validation import SavePerceptionInput, parse_payload, parse_text, validate_input
from robotmem.records import NewMemory
from robotmem.service.engine import Engine
from robotmem.store.protocol import FloatArray, StoreTx
from robotmem.text.classify import classify_perception
from robotmem.text.tokens import index_text

log = logging.getLogger("robotmem")
FIELDS = ("description", "perception_type", "data", "metadata", "collection", "session_id")


def save_perception(
    engine: Engine,
    description: str,
    perception_type: str = "visual",
    data: Any = None,
    metadata: Any = None,
    collection: str | None = None,
    session_id: str | None = None,
) -> PerceptionResult:
    """Store one perception; see ``RobotMemory.save_perception``."""
    item = {
        "description": description,
        "perception_type": perception_type,
        "data": data,
        "metadata": metadata,
        "collection": collection,
        "session_id": session_id,
    }
    prepared = prepare(engine, item)
    vector = engine.embed(prepared["text"], is_query=False)
    vectors = [None if vector is None else vector.vector]
    return engine.write(lambda tx: insert(engine, tx, [prepared], vectors))[0]


def save_perceptions(engine: Engine, items: Sequence[Mapping[str, Any]]) -> list[PerceptionResult]:
    """Store every item as save_perception would, all or nothing; see ``RobotMemory.save_perceptions``."""
    prepared = [prepare(engine, item, where=f"items[{position}].") for position, item in enumerate(items)]
    vectors: list[FloatArray | None] = [None] * len(prepared)
    model, _ = engine.vector_model()
    if model is not None and prepared:
        try:
            matrix = engine.embedder.embed_batch([p["text"] for p in prepared])
            vectors = [np.asarray(row, dtype=np.float32) for row in matrix]
        except EmbeddingError as exc:
            log.warning("embedding failed, storing the perceptions without vectors: %s", exc)
    return engine.write(lambda tx: insert(engine, tx, prepared, vectors))


def insert(
    engine: Engine, tx: StoreTx, prepared: Sequence[dict[str, Any]], vectors: Sequence[FloatArray | None]
) -> list[PerceptionResult]:
    """Insert prepared perceptions with their vectors; return one save_perception result each."""
    sessions: dict[str | None, str | None] = {}  # one transaction: a session's state cannot change
    for p in prepared:
        if p["session_id"] not in sessions:
            sessions[p["session_id"]] = engine.session_for_write(tx, p["session_id"])
    now = engine.now()
    robot = engine.robot_id
    ids = engine.insert(
        tx,
        [
            NewMemory(
                collection=p["collection"],
                type="perception",
                content=p["text"],
                content_hash=None,
                category="perception",
                confidence=p["found"].confidence,
                context={"source": "save_perception"},
                scope_files=p["found"].scope_files,
                scope_entities=p["found"].scope_entities,
                session_id=sessions[p["session_id"]],
                perception_type=p["perception_type"],
                tags=("perception", p["perception_type"], *p["found"].tags),
                index_body=index_text(p["text"]),
                created_at=now,
                data_json=p["data_json"],
                metadata_json=p["metadata_json"],
                robot_id=robot,
            )
            for p in prepared
        ],
        vectors,
    )
    return perception_results(ids, prepared, [vector is not None for vector in vectors])


def prepare(engine: Engine, item: Mapping[str, Any], *, where: str = "") -> dict[str, Any]:
    """Validate one item of save_perception's parameters; errors are prefixed with ``where``."""
    if not isinstance(item, Mapping):
        raise ValidationError(f"{where.rstrip('.')}: expected an object, got {type(item).__name__}")
    unknown = sorted(set(item) - set(FIELDS))
    if unknown:
        raise ValidationError(f"{where}{unknown[0]}: unknown field; expected one of {', '.join(FIELDS)}")
    settings = engine.settings
    try:
        args = validate_input(SavePerceptionInput, {key: item.get(key) for key in FIELDS if key in item})
        text = parse_text(
            "description", args.description, min_chars=5, max_chars=settings.max_description_chars
        )
        _, data_json = parse_payload("data", args.data, settings.max_data_bytes)
        _, metadata_json = parse_payload("metadata", args.metadata, settings.max_metadata_bytes)
        collection = engine.collection_or_default(args.collection)
    except ValidationError as exc:
        if not where:
            raise
        raise ValidationError(f"{where}{exc.message}") from None
    return {
        "text": text,
        "perception_type": args.perception_type,
        "data_json": data_json,
        "metadata_json": metadata_json,
        "collection": collection,
        "session_id": args.session_id,
        "found": classify_perception(text),
    }
