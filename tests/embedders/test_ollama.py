from __future__ import annotations

import math
import time

import numpy as np
import pytest

from robotmem.embedders.base import Embedder
from robotmem.embedders.ollama import OllamaEmbedder
from robotmem.errors import EmbeddingError

from .servers import FAKE_DIM, fake_vector


def make(server, clock=None, **kwargs):
    options = {"timeout_s": 2.0, **kwargs}
    if clock is not None:
        options["clock"] = clock
    return OllamaEmbedder(server.url, "nomic-embed-text", **options)


def unit(values):
    array = np.asarray(values, dtype=np.float32)
    return array / np.linalg.norm(array)


def test_embeds_and_normalises(ollama_server):
    embedder = make(ollama_server)
    vector = embedder.embed_one("grip the red cube")
    assert isinstance(embedder, Embedder)
    assert vector.dtype == np.float32
    assert vector.shape == (FAKE_DIM,)
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(vector, unit(fake_vector("search_document: grip the red cube")), rtol=1e-6)
    assert embedder.dim == FAKE_DIM
    assert embedder.model_id == "ollama/nomic-embed-text"
    assert embedder.available
    assert "ready" in embedder.status
    embedder.close()


def test_checks_the_model_once_then_posts_the_texts(ollama_server):
    embedder = make(ollama_server)
    embedder.embed_one("a")
    embedder.embed_one("b")
    paths = [(r.method, r.path) for r in ollama_server.requests]
    assert paths == [("GET", "/api/tags"), ("POST", "/api/embed"), ("POST", "/api/embed")]
    assert ollama_server.requests[1].body == {"model": "nomic-embed-text", "input": ["search_document: a"]}


def test_queries_and_passages_get_the_nomic_prefixes(ollama_server):
    embedder = make(ollama_server)
    query = embedder.embed_one("red cube", is_query=True)
    passage = embedder.embed_one("red cube")
    inputs = [r.body["input"] for r in ollama_server.embed_requests()]
    assert inputs == [["search_query: red cube"], ["search_document: red cube"]]
    np.testing.assert_allclose(query, unit(fake_vector("search_query: red cube")), rtol=1e-6)
    assert not np.allclose(query, passage)


def test_models_without_prefixes_get_the_text_as_is(ollama_server):
    OllamaEmbedder(ollama_server.url, "llama3:8b", 2.0).embed_one("red cube", is_query=True)
    assert ollama_server.embed_requests()[0].body["input"] == ["red cube"]


def test_batches_keep_the_order(ollama_server):
    embedder = make(ollama_server, batch_size=4)
    texts = [f"text {i}" for i in range(10)]
    matrix = embedder.embed_batch(texts)
    assert matrix.shape == (10, FAKE_DIM)
    assert [len(r.body["input"]) for r in ollama_server.embed_requests()] == [4, 4, 2]
    for row, text in zip(matrix, texts, strict=True):
        np.testing.assert_allclose(row, unit(fake_vector("search_document: " + text)), rtol=1e-6)


def test_default_batch_size_is_64(ollama_server):
    make(ollama_server).embed_batch([str(i) for i in range(130)])
    assert [len(r.body["input"]) for r in ollama_server.embed_requests()] == [64, 64, 2]


def test_empty_batch_sends_nothing(ollama_server):
    embedder = make(ollama_server, dim=FAKE_DIM)
    assert embedder.embed_batch([]).shape == (0, FAKE_DIM)
    assert ollama_server.requests == []


def test_dim_is_probed_lazily_when_not_configured(ollama_server):
    embedder = make(ollama_server)
    assert ollama_server.requests == []
    assert embedder.dim == FAKE_DIM
    assert len(ollama_server.embed_requests()) == 1
    assert embedder.dim == FAKE_DIM
    assert len(ollama_server.embed_requests()) == 1


def test_configured_dim_needs_no_request(ollama_server):
    embedder = make(ollama_server, dim=FAKE_DIM)
    assert embedder.dim == FAKE_DIM
    assert ollama_server.requests == []


def test_configured_dim_that_does_not_match_fails(ollama_server):
    embedder = make(ollama_server, dim=768)
    with pytest.raises(EmbeddingError, match="8-d vectors but embed_dim is 768"):
        embedder.embed_one("x")


def test_unknown_model_says_ollama_pull(ollama_server):
    embedder = OllamaEmbedder(ollama_server.url, "mxbai-embed-large", 2.0)
    with pytest.raises(EmbeddingError, match="ollama pull mxbai-embed-large"):
        embedder.embed_one("x")
    assert ollama_server.embed_requests() == []
    assert not embedder.available


def test_tagged_model_name_matches(ollama_server):
    assert OllamaEmbedder(ollama_server.url, "llama3:8b", 2.0).embed_one("x").shape == (FAKE_DIM,)
    with pytest.raises(EmbeddingError, match="ollama pull llama3:70b"):
        OllamaEmbedder(ollama_server.url, "llama3:70b", 2.0).embed_one("x")


def test_model_removed_after_the_check_says_ollama_pull(ollama_server, clock):
    embedder = make(ollama_server, clock)
    embedder.embed_one("x")
    ollama_server.models = []
    with pytest.raises(EmbeddingError, match="ollama pull nomic-embed-text"):
        embedder.embed_one("y")


def test_old_ollama_without_api_embed(ollama_server):
    ollama_server.embed_path = "/api/embeddings"
    with pytest.raises(EmbeddingError, match="needs Ollama 0.3.4 or newer"):
        make(ollama_server).embed_one("x")


def test_slow_server_times_out_within_the_timeout(ollama_server):
    embedder = make(ollama_server, timeout_s=0.3)
    ollama_server.delay_s = 3.0
    started = time.monotonic()
    with pytest.raises(EmbeddingError, match="did not answer within 0.3 s"):
        embedder.embed_one("x")
    assert time.monotonic() - started < 1.5
    assert not embedder.available


def test_unreachable_server(closed_port_url):
    embedder = OllamaEmbedder(closed_port_url, timeout_s=1.0)
    with pytest.raises(EmbeddingError, match="cannot reach Ollama"):
        embedder.embed_one("x")
    assert not embedder.available
    assert "cooling down for 60 s after 1 failure" in embedder.status


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors(ollama_server, status):
    ollama_server.fail_status = status
    with pytest.raises(EmbeddingError, match=f"HTTP {status}: simulated failure"):
        make(ollama_server).embed_one("x")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"<html>gateway</html>", "invalid JSON"),
        (b'{"embeddings": [[1, 2], [3, 4]', "invalid JSON"),
        (b'["not", "an", "object"]', "without an 'embeddings' field"),
        (b'{"embedding": [1, 2]}', "without an 'embeddings' field"),
        (b'{"embeddings": "nope"}', "expected a list of vectors"),
        (b'{"embeddings": [["a", "b"]]}', "list of numbers"),
        (b'{"embeddings": [[true, false]]}', "list of numbers"),
        (b'{"embeddings": [[]]}', "empty vector"),
        (b'{"embeddings": [[1.0, NaN]]}', "NaN or infinite"),
        (b'{"embeddings": [[1.0, Infinity]]}', "NaN or infinite"),
        (b'{"embeddings": [[1e300, 1.0]]}', "NaN or infinite"),
    ],
)
def test_malformed_answers_fail_and_count(ollama_server, raw, message):
    ollama_server.raw_body = raw
    embedder = make(ollama_server)
    with pytest.raises(EmbeddingError, match=message):
        embedder.embed_one("x")
    assert embedder.cooldown.failures == 1
    assert not embedder.available


def test_wrong_count_fails(ollama_server):
    ollama_server.mutate = lambda payload: {**payload, "embeddings": payload["embeddings"][:-1]}
    with pytest.raises(EmbeddingError, match="sent 3 texts but got 2 vectors"):
        make(ollama_server).embed_batch(["a", "b", "c"])


def test_ragged_vectors_fail(ollama_server):
    ollama_server.mutate = lambda payload: {"embeddings": [[1.0, 2.0], [1.0, 2.0, 3.0]]}
    with pytest.raises(EmbeddingError, match="different lengths"):
        make(ollama_server).embed_batch(["a", "b"])


def test_nan_from_a_normal_looking_answer_fails(ollama_server):
    ollama_server.mutate = lambda payload: {"embeddings": [[math.nan] * FAKE_DIM]}
    with pytest.raises(EmbeddingError, match="NaN"):
        make(ollama_server).embed_one("a")


def test_changed_dimension_fails(ollama_server, clock):
    embedder = make(ollama_server, clock)
    embedder.embed_one("a")
    ollama_server.dim = 4
    with pytest.raises(EmbeddingError, match="4-d vectors, earlier 8-d"):
        embedder.embed_one("b")


def test_cooling_down_raises_without_network_then_recovers(ollama_server, clock):
    embedder = make(ollama_server, clock)
    ollama_server.fail_status = 500
    with pytest.raises(EmbeddingError):
        embedder.embed_one("a")
    requests_after_failure = len(ollama_server.requests)
    assert not embedder.available
    ollama_server.fail_status = None

    clock.advance(59)
    with pytest.raises(EmbeddingError, match="cooling down for 1 s after 1 failure"):
        embedder.embed_one("a")
    with pytest.raises(EmbeddingError, match="cooling down"):
        embedder.embed_batch(["a", "b"])
    assert len(ollama_server.requests) == requests_after_failure

    clock.advance(1)
    assert embedder.available
    assert embedder.embed_one("a").shape == (FAKE_DIM,)
    assert embedder.available
    assert embedder.cooldown.failures == 0


def test_repeated_failures_back_off_longer(ollama_server, clock):
    embedder = make(ollama_server, clock)
    ollama_server.fail_status = 500
    waits = []
    for _ in range(5):
        with pytest.raises(EmbeddingError):
            embedder.embed_one("a")
        waits.append(embedder.cooldown.remaining_s)
        clock.advance(embedder.cooldown.remaining_s)
    assert waits == [60.0, 120.0, 240.0, 300.0, 300.0]


def test_closed_embedder_raises(ollama_server):
    embedder = make(ollama_server)
    embedder.close()
    assert not embedder.available
    with pytest.raises(EmbeddingError, match="closed"):
        embedder.embed_one("x")


def test_embed_batch_rejects_a_bare_string(ollama_server):
    with pytest.raises(TypeError):
        make(ollama_server).embed_batch("abc")


def test_proxy_variables_do_not_capture_a_local_server(ollama_server, monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    assert make(ollama_server).embed_one("x").shape == (FAKE_DIM,)


def test_is_loopback():
    from robotmem.embedders.remote import is_loopback

    assert is_loopback("http://127.0.0.1:11434")
    assert is_loopback("http://localhost:11434/")
    assert is_loopback("http://[::1]:11434")
    assert not is_loopback("http://gpu-box.lan:11434")
    assert not is_loopback("https://api.openai.com/v1")


def test_dim_probe_failure_raises_and_starts_the_cooldown(ollama_server, clock):
    ollama_server.fail_status = 500
    embedder = make(ollama_server, clock)
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        _ = embedder.dim
    with pytest.raises(EmbeddingError, match="cooling down"):
        _ = embedder.dim
    ollama_server.fail_status = None
    clock.advance(60)
    assert embedder.dim == FAKE_DIM


def test_status_before_and_after_first_contact(ollama_server):
    embedder = make(ollama_server)
    assert embedder.status.endswith("not contacted yet (checked on first use)")
    embedder.embed_one("x")
    assert embedder.status == f"ollama/nomic-embed-text at {ollama_server.url}: ready"


def test_text_with_a_lone_surrogate_is_sent_replaced(ollama_server):
    embedder = make(ollama_server)
    assert embedder.embed_one("bad \udcff byte").shape == (FAKE_DIM,)
    assert ollama_server.embed_requests()[0].body["input"] == ["search_document: bad ? byte"]
    assert embedder.cooldown.failures == 0


@pytest.mark.parametrize("timeout_s", [0, -1.0, float("nan"), float("inf")])
def test_invalid_timeout_names_the_setting(timeout_s):
    from robotmem.errors import ValidationError

    with pytest.raises(ValidationError, match="embed_timeout_s"):
        OllamaEmbedder(timeout_s=timeout_s)


def test_invalid_url_is_an_embedding_error():
    embedder = OllamaEmbedder("http://[bad", timeout_s=1.0)
    with pytest.raises(EmbeddingError, match="cannot reach"):
        embedder.embed_one("x")
