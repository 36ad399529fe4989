"""The vector table's questions, alike on both engines (the store contract, asked beneath the service)."""

from __future__ import annotations

import numpy as np
import pytest

from robotmem import RobotMemory


def test_similarity_gives_the_cosine_of_each_asked_memory_with_a_vector(hash64: RobotMemory) -> None:
    mem = hash64
    ids = [
        mem.learn(text)["memory_id"] for text in ("wet mug slipped", "battery swap done", "dock at 0.05 m/s")
    ]
    query = mem.engine.embed("the mug slipped", is_query=True)
    assert query is not None
    passages = mem.engine.embed_texts(
        ["wet mug slipped", "battery swap done", "dock at 0.05 m/s"], is_query=False, dim=query.dim
    )
    expected = {m: float(np.dot(v, query.vector)) for m, v in zip(ids, passages, strict=True)}

    found = mem.engine.read(lambda tx: tx.vectors.similarity(query, [*ids, 10_000]))

    assert found == pytest.approx(expected, abs=1e-5)  # the unknown id is left out
    assert mem.engine.read(lambda tx: tx.vectors.similarity(query, [])) == {}
