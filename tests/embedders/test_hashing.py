from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from robotmem.embedders.base import Embedder
from robotmem.embedders.hashing import HashingEmbedder
from robotmem.embedders.none import NullEmbedder
from robotmem.errors import EmbeddingError


def cosine(a, b):
    return float(np.dot(a, b))


def test_protocol_and_identity():
    embedder = HashingEmbedder()
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == "hash-256"
    assert embedder.dim == 256
    assert embedder.available
    assert "hash-256" in embedder.status
    vector = embedder.embed_one("grasp the red cube")
    assert vector.dtype == np.float32
    assert vector.shape == (256,)
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-6)


def test_known_vector_is_stable_across_runs():
    # blake2b, not Python's salted hash(): the same text maps to the same buckets on every run.
    vector = HashingEmbedder(dim=16).embed_one("cube")
    assert (
        np.flatnonzero(vector).tolist() == np.flatnonzero(HashingEmbedder(dim=16).embed_one("cube")).tolist()
    )
    assert HashingEmbedder(dim=16).embed_one("cube").tobytes() == vector.tobytes()


def test_shared_words_raise_the_cosine():
    embedder = HashingEmbedder()
    query = embedder.embed_one("grasp the red cube", is_query=True)
    related = embedder.embed_one("the red cube slipped during grasp")
    unrelated = embedder.embed_one("battery voltage dropped below threshold")
    assert cosine(query, related) > cosine(query, unrelated) + 0.2


def test_trigrams_match_word_forms():
    embedder = HashingEmbedder()
    base = embedder.embed_one("grasping")
    assert cosine(base, embedder.embed_one("grasped")) > cosine(base, embedder.embed_one("voltage"))


def test_batch_matches_single_and_empty_text_is_zero():
    embedder = HashingEmbedder(dim=64)
    texts = ["a b c", "", "抓取 红色 方块", "a b c"]
    matrix = embedder.embed_batch(texts)
    assert matrix.shape == (4, 64)
    np.testing.assert_array_equal(matrix[0], embedder.embed_one("a b c"))
    np.testing.assert_array_equal(matrix[0], matrix[3])
    assert not matrix[1].any()
    assert np.linalg.norm(matrix[2]) == pytest.approx(1.0, abs=1e-6)
    assert embedder.embed_batch([]).shape == (0, 64)


def test_invalid_dim():
    with pytest.raises(ValueError):
        HashingEmbedder(dim=0)


@given(st.text(max_size=200))
def test_any_text_gives_a_unit_or_zero_vector(text):
    vector = HashingEmbedder(dim=32).embed_one(text)
    assert np.all(np.isfinite(vector))
    norm = float(np.linalg.norm(vector))
    assert norm == pytest.approx(1.0, abs=1e-5) or norm == 0.0


def test_null_embedder_is_never_available():
    embedder = NullEmbedder()
    assert isinstance(embedder, Embedder)
    assert not embedder.available
    assert embedder.status == "no embedder configured (embed_backend=none)"
    assert embedder.model_id == "none"
    assert embedder.dim == 0
    with pytest.raises(EmbeddingError, match="embed_backend=none"):
        embedder.embed_one("x")
    with pytest.raises(EmbeddingError, match="embed_backend=none"):
        embedder.embed_batch(["x"])
    embedder.close()
