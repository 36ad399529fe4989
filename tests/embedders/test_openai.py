from __future__ import annotations

import time

import numpy as np
import pytest

from robotmem.embedders.base import Embedder
from robotmem.embedders.openai import OpenAIEmbedder
from robotmem.errors import EmbeddingError

from .servers import FAKE_DIM, fake_vector


def make(server, clock=None, **kwargs):
    options = {"api_key": "sk-test", "model": "text-embedding-3-small", "timeout_s": 2.0, **kwargs}
    if clock is not None:
        options["clock"] = clock
    return OpenAIEmbedder(server.url, **options)


def unit(values):
    array = np.asarray(values, dtype=np.float32)
    return array / np.linalg.norm(array)


def test_embeds_sorts_by_index_and_normalises(openai_server):
    embedder = make(openai_server)
    texts = ["open the gripper", "close the gripper", "move to the bin"]
    matrix = embedder.embed_batch(texts)
    assert isinstance(embedder, Embedder)
    assert matrix.dtype == np.float32
    assert matrix.shape == (3, FAKE_DIM)
    for row, text in zip(matrix, texts, strict=True):
        np.testing.assert_allclose(row, unit(fake_vector(text)), rtol=1e-6)
    assert embedder.dim == FAKE_DIM
    assert embedder.model_id == "openai/text-embedding-3-small"
    assert embedder.available
    embedder.close()


def test_sends_the_key_and_the_model(openai_server):
    make(openai_server).embed_one("x")
    (request,) = openai_server.requests
    assert (request.method, request.path) == ("POST", "/v1/embeddings")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body == {"model": "text-embedding-3-small", "input": ["x"], "encoding_format": "float"}


def test_trailing_slash_in_base_url(openai_server):
    OpenAIEmbedder(openai_server.url + "/", "sk-test", "text-embedding-3-small", 2.0).embed_one("x")
    assert openai_server.requests[0].path == "/v1/embeddings"


def test_batches(openai_server):
    embedder = make(openai_server, batch_size=3)
    texts = [f"t{i}" for i in range(7)]
    matrix = embedder.embed_batch(texts)
    assert [len(r.body["input"]) for r in openai_server.requests] == [3, 3, 1]
    for row, text in zip(matrix, texts, strict=True):
        np.testing.assert_allclose(row, unit(fake_vector(text)), rtol=1e-6)


def test_dim_probe_and_configured_dim(openai_server):
    probing = make(openai_server)
    assert probing.dim == FAKE_DIM
    assert len(openai_server.requests) == 1
    configured = make(openai_server, dim=FAKE_DIM)
    assert configured.dim == FAKE_DIM
    assert len(openai_server.requests) == 1
    wrong = make(openai_server, dim=1536)
    with pytest.raises(EmbeddingError, match="embed_dim is 1536"):
        wrong.embed_one("x")


def test_missing_key_is_named_and_sends_nothing(openai_server):
    embedder = OpenAIEmbedder(openai_server.url, "", "text-embedding-3-small", 2.0)
    assert not embedder.available
    assert "ROBOTMEM_OPENAI_API_KEY" in embedder.status
    with pytest.raises(EmbeddingError, match="ROBOTMEM_OPENAI_API_KEY"):
        embedder.embed_one("x")
    with pytest.raises(EmbeddingError, match="ROBOTMEM_OPENAI_API_KEY"):
        _ = embedder.dim
    assert openai_server.requests == []


def test_wrong_key_is_rejected(openai_server):
    embedder = make(openai_server, api_key="sk-wrong")
    with pytest.raises(EmbeddingError, match=r"rejected the API key \(HTTP 401.*ROBOTMEM_OPENAI_API_KEY"):
        embedder.embed_one("x")
    assert openai_server.requests[0].headers["authorization"] == "Bearer sk-wrong"
    assert not embedder.available


def test_unknown_model(openai_server):
    embedder = make(openai_server, model="text-embedding-9")
    with pytest.raises(EmbeddingError, match="HTTP 404 for model 'text-embedding-9'.*does not exist"):
        embedder.embed_one("x")


def test_slow_server_times_out_within_the_timeout(openai_server):
    openai_server.delay_s = 3.0
    embedder = make(openai_server, timeout_s=0.3)
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="did not answer within 0.3 s"):
        embedder.embed_one("x")
    assert time.monotonic() - started < 1.5


def test_unreachable_server(closed_port_url):
    embedder = OpenAIEmbedder(closed_port_url + "/v1", "sk-test", timeout_s=1.0)
    with pytest.raises(EmbeddingError, match="cannot reach the embeddings API"):
        embedder.embed_one("x")
    assert not embedder.available


@pytest.mark.parametrize("status", [429, 500, 502])
def test_server_errors(openai_server, status):
    openai_server.fail_status = status
    with pytest.raises(EmbeddingError, match=f"HTTP {status}: simulated failure"):
        make(openai_server).embed_one("x")


def drop_last(payload):
    return {**payload, "data": payload["data"][1:]}


def duplicate_index(payload):
    data = [dict(item, index=0) for item in payload["data"]]
    return {**payload, "data": data}


def string_index(payload):
    return {**payload, "data": [dict(item, index=str(item["index"])) for item in payload["data"]]}


def nan_vector(payload):
    return {**payload, "data": [dict(item, embedding=[float("nan")] * FAKE_DIM) for item in payload["data"]]}


def ragged(payload):
    data = [dict(item, embedding=item["embedding"][: 2 + item["index"]]) for item in payload["data"]]
    return {**payload, "data": data}


def base64_vector(payload):
    return {**payload, "data": [dict(item, embedding="AAAAAA==") for item in payload["data"]]}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (drop_last, "sent 2 texts but got 1 vectors"),
        (duplicate_index, r"'index' values are not 0..1"),
        (string_index, "integer 'index'"),
        (nan_vector, "NaN"),
        (ragged, "different lengths"),
        (base64_vector, "list of numbers"),
        (lambda payload: {"object": "list"}, "without a 'data' list"),
        (lambda payload: [1, 2], "without a 'data' list"),
    ],
)
def test_malformed_answers_fail_and_count(openai_server, mutate, message):
    openai_server.mutate = mutate
    embedder = make(openai_server)
    with pytest.raises(EmbeddingError, match=message):
        embedder.embed_batch(["a", "b"])
    assert embedder.cooldown.failures == 1


def test_invalid_json(openai_server):
    openai_server.raw_body = b"upstream connect error"
    with pytest.raises(EmbeddingError, match="invalid JSON"):
        make(openai_server).embed_one("x")


def test_changed_dimension_fails(openai_server):
    embedder = make(openai_server)
    embedder.embed_one("a")
    openai_server.dim = 16
    with pytest.raises(EmbeddingError, match="16-d vectors, earlier 8-d"):
        embedder.embed_one("a")


def test_cooling_down_raises_without_network_then_recovers(openai_server, clock):
    embedder = make(openai_server, clock)
    openai_server.fail_status = 503
    with pytest.raises(EmbeddingError, match="HTTP 503"):
        embedder.embed_one("a")
    assert len(openai_server.requests) == 1
    openai_server.fail_status = None

    assert not embedder.available
    assert "cooling down for 60 s after 1 failure" in embedder.status
    with pytest.raises(EmbeddingError, match="cooling down"):
        embedder.embed_one("a")
    assert len(openai_server.requests) == 1

    clock.advance(60)
    assert embedder.available
    assert embedder.embed_one("a").shape == (FAKE_DIM,)
    assert len(openai_server.requests) == 2
    assert embedder.cooldown.failures == 0
    assert embedder.status.endswith(": ready")


def test_failure_after_cooldown_backs_off_longer(openai_server, clock):
    embedder = make(openai_server, clock)
    openai_server.fail_status = 500
    with pytest.raises(EmbeddingError):
        embedder.embed_one("a")
    clock.advance(60)
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        embedder.embed_one("a")
    assert embedder.cooldown.remaining_s == 120.0


def test_concurrent_calls_share_one_client(openai_server):
    from concurrent.futures import ThreadPoolExecutor

    embedder = make(openai_server)
    texts = [f"text {i}" for i in range(40)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        vectors = list(pool.map(embedder.embed_one, texts))
    for vector, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(vector, unit(fake_vector(text)), rtol=1e-6)
    assert embedder.cooldown.failures == 0


def test_a_key_no_header_can_carry_leaves_the_embedder_unavailable(openai_server):
    embedder = OpenAIEmbedder(openai_server.url, "sk-clé", "text-embedding-3-small", 2.0)
    assert not embedder.available
    assert "other than ASCII" in embedder.status
    with pytest.raises(EmbeddingError, match="other than ASCII"):
        embedder.embed_one("a")
    assert openai_server.requests == []
