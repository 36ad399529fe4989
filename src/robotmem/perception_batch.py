"""RobotMemory.save_perceptions: many sensor readings in one call (mixed into ``RobotMemory``).

A robot streams perceptions far faster than one write transaction per reading allows; this stores a
batch with one validation pass, one model call and one transaction.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from robotmem.classify import classify_perception
from robotmem.errors import EmbeddingError, ValidationError
from robotmem.store import memories
from robotmem.text import index_text
from robotmem.validation import SavePerceptionInput, parse_payload, parse_text, validate_input

log = logging.getLogger("robotmem")
_FIELDS = ("description", "perception_type", "data", "metadata", "collection", "session_id")


class PerceptionBatchMixin:
    """Adds ``save_perceptions``; uses RobotMemory's ``_write``, ``_vector_state`` and ``_store_vector``."""

    def save_perceptions(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Store every item as ``save_perception(**item)`` would, all or nothing, in one transaction.

        Each item takes the parameters of ``save_perception`` (``description`` required). Returns one
        ``{"memory_id", "perception_type", "collection", "has_embedding"}`` per item, in order. Raises
        ``ValidationError`` naming the first invalid item (``items[3].description: ...``) before anything
        is written, ``NotFoundError``/``ConflictError`` for an unknown or ended session, ``DatabaseError``.
        """
        owner: Any = self
        prepared = [
            self._prepare_perception(owner, item, where=f"items[{position}].")
            for position, item in enumerate(items)
        ]
        vectors: list[Any] = [None] * len(prepared)
        index, _ = owner._vector_state()
        if index is not None and prepared:
            try:
                matrix = owner.embedder.embed_batch([p["text"] for p in prepared])
                vectors = [np.asarray(row, dtype=np.float32) for row in matrix]
            except EmbeddingError as exc:
                log.warning("embedding failed, storing the perceptions without vectors: %s", exc)

        def work(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            return self._insert_perceptions(owner, conn, prepared, vectors, owner._now())

        return owner._write(work)  # type: ignore[no-any-return]

    @staticmethod
    def _insert_perceptions(
        owner: Any,
        conn: sqlite3.Connection,
        prepared: Sequence[dict[str, Any]],
        vectors: Sequence[Any],
        now: str,
    ) -> list[dict[str, Any]]:
        """Insert prepared perceptions with their vectors; return one save_perception result each."""
        sessions: dict[str | None, str | None] = {}  # one transaction: a session's state cannot change
        for p in prepared:
            if p["session_id"] not in sessions:
                sessions[p["session_id"]] = owner._session_for_write(conn, p["session_id"])
        ids = memories.insert_many(
            conn,
            [
                memories.NewMemory(
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
                )
                for p in prepared
            ],
        )
        for memory_id, vector in zip(ids, vectors, strict=True):
            owner._store_vector(conn, memory_id, vector)
        return [
            {
                "memory_id": memory_id,
                "perception_type": p["perception_type"],
                "collection": p["collection"],
                "has_embedding": vector is not None,
            }
            for memory_id, p, vector in zip(ids, prepared, vectors, strict=True)
        ]

    @staticmethod
    def _prepare_perception(owner: Any, item: Mapping[str, Any], *, where: str = "") -> dict[str, Any]:
        """Validate one item of save_perception's parameters; errors are prefixed with ``where``."""
        if not isinstance(item, Mapping):
            raise ValidationError(f"{where.rstrip('.')}: expected an object, got {type(item).__name__}")
        unknown = sorted(set(item) - set(_FIELDS))
        if unknown:
            raise ValidationError(f"{where}{unknown[0]}: unknown field; expected one of {', '.join(_FIELDS)}")
        try:
            args = validate_input(SavePerceptionInput, {key: item.get(key) for key in _FIELDS if key in item})
            text = parse_text(
                "description", args.description, min_chars=5, max_chars=owner.settings.max_description_chars
            )
            _, data_json = parse_payload("data", args.data, owner.settings.max_data_bytes)
            _, metadata_json = parse_payload("metadata", args.metadata, owner.settings.max_metadata_bytes)
            collection = owner._collection(args.collection)
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
