"""What the HTTP embedders (Ollama, OpenAI-compatible) share: batching, checks, cooldown, dimension.

A subclass sends one batch with ``_post_batch`` and parses the answer into a list of rows; this base
validates the rows, L2-normalises them, learns the dimension and counts failures in a ``Cooldown``.
``embed_timeout_s`` is a deadline: each batch (with the readiness check before the first) gets its
whole answer within it, however slowly the server sends (``deadline.DeadlineClient``).
Models that expect task prefixes (nomic-embed-text, e5, mxbai) get them, chosen by ``is_query``.
While the cooldown runs, ``available`` is False and ``embed_*`` raise ``EmbeddingError`` without
touching the network; the first call after it tries again, and a success makes the embedder
available again.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

from robotmem.embedders.base import Vector, normalize_rows
from robotmem.embedders.cooldown import Cooldown
from robotmem.embedders.deadline import DeadlineClient
from robotmem.embedders.prefixes import add_prefix
from robotmem.errors import EmbeddingError, ValidationError

DEFAULT_BATCH_SIZE = 64
DIM_PROBE_TEXT = "dimension probe"
_BODY_EXCERPT_CHARS = 200


def make_timeout(timeout_s: float) -> httpx.Timeout:
    """Return an httpx timeout: ``timeout_s`` for each read, write and the pool, at most 5 s to connect.

    These bound single network operations; the whole request is bounded by ``DeadlineClient``.

    Raises ``ValidationError`` (naming ``embed_timeout_s``) when ``timeout_s`` is not a positive number.
    """
    if not timeout_s > 0 or math.isinf(timeout_s):
        raise ValidationError(f"embed_timeout_s must be a positive number of seconds, got {timeout_s!r}")
    return httpx.Timeout(timeout_s, connect=min(timeout_s, 5.0))


def body_excerpt(response: httpx.Response) -> str:
    """Return the start of a response body for an error message, preferring an ``error`` field."""
    try:
        payload = response.json()
    except (ValueError, UnicodeDecodeError):
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict):
            error = error.get("message", error)
        if error:
            return str(error)[:_BODY_EXCERPT_CHARS]
    return response.text[:_BODY_EXCERPT_CHARS].strip()


def decode_json(response: httpx.Response, what: str) -> Any:
    """Return the JSON body of ``response``; raises ``EmbeddingError`` naming ``what`` when it is not JSON."""
    try:
        return json.loads(response.content)
    except (ValueError, UnicodeDecodeError) as exc:
        raise EmbeddingError(f"{what} answered with invalid JSON ({exc}): {response.text[:80]!r}") from None


def rows_to_matrix(rows: Any, expected_rows: int, what: str) -> npt.NDArray[np.float32]:
    """Check that ``rows`` is ``expected_rows`` equal-length lists of finite numbers; return them as float32.

    Raises ``EmbeddingError`` (naming ``what``) for a wrong count, ragged or empty rows, values that
    are not numbers, and NaN or infinite values.
    """
    if not isinstance(rows, list):
        raise EmbeddingError(f"{what}: expected a list of vectors, got {type(rows).__name__}")
    if len(rows) != expected_rows:
        raise EmbeddingError(f"{what}: sent {expected_rows} texts but got {len(rows)} vectors")
    lengths = set()
    for row in rows:
        if not isinstance(row, list) or not all(
            isinstance(value, (int, float)) and not isinstance(value, bool) for value in row
        ):
            raise EmbeddingError(f"{what}: every vector must be a list of numbers")
        lengths.add(len(row))
    if len(lengths) > 1:
        raise EmbeddingError(f"{what}: vectors have different lengths {sorted(lengths)}")
    if 0 in lengths:
        raise EmbeddingError(f"{what}: got an empty vector")
    with np.errstate(over="ignore"):
        matrix = np.asarray(rows, dtype=np.float32).reshape(expected_rows, -1)
    if not np.all(np.isfinite(matrix)):
        raise EmbeddingError(f"{what}: vectors contain NaN or infinite values")
    return matrix


def is_loopback(url: str) -> bool:
    """True when ``url`` points at this machine (localhost, 127.0.0.0/8 or ::1)."""
    try:
        host = httpx.URL(url).host
    except (httpx.InvalidURL, TypeError):
        return False
    return host in ("localhost", "::1") or host.startswith("127.")


class RemoteEmbedder:
    """Base of the HTTP embedders; subclasses implement ``_check_ready`` and ``_post_batch``.

    ``dim`` is the expected vector length (0 = learn it from the first answer). Reading the ``dim``
    property before any embedding, with no expected length given, sends one probe request.
    """

    backend = "remote"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        timeout_s: float,
        dim: int = 0,
        batch_size: int = DEFAULT_BATCH_SIZE,
        clock: Callable[[], float] = time.monotonic,
        headers: dict[str, str] | None = None,
    ) -> None:
        if dim < 0:
            raise ValueError(f"dim must be >= 0, got {dim}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._model = model
        self._timeout_s = timeout_s
        self._expected_dim = dim
        self._dim = dim
        self._batch_size = batch_size
        self._cooldown = Cooldown(clock=clock)
        self._base_url = base_url.rstrip("/")
        # Proxy variables are for the outside world; a proxy cannot reach this machine's loopback.
        self._client = DeadlineClient(
            timeout=make_timeout(timeout_s), headers=headers or {}, trust_env=not is_loopback(self._base_url)
        )
        self._lock = threading.Lock()
        self._closed = False
        self._contacted = False

    # -- the protocol -----------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        """``<backend>/<model>``, e.g. ``ollama/nomic-embed-text``."""
        return f"{self.backend}/{self._model}"

    @property
    def dim(self) -> int:
        """The vector length: the configured one, else the one learned from the server.

        Before the first embedding (and with no configured length) this sends one probe request.
        Raises ``EmbeddingError`` when that probe fails or the embedder is cooling down.
        """
        if self._dim == 0:
            self.embed_batch([DIM_PROBE_TEXT])
        return self._dim

    @property
    def available(self) -> bool:
        """False while cooling down after a failure, after ``close()``, or when misconfigured."""
        return not self._closed and self._config_error() is None and self._cooldown.ready

    @property
    def status(self) -> str:
        """One line: the model, the server and whether it is ready, cooling down or misconfigured."""
        where = f"{self.model_id} at {self._location()}"
        config_error = self._config_error()
        if self._closed:
            return f"{where}: closed"
        if config_error is not None:
            return f"{where}: {config_error}"
        if not self._contacted and self._cooldown.failures == 0:
            return f"{where}: not contacted yet (checked on first use)"
        return f"{where}: {self._cooldown.describe()}"

    @property
    def cooldown(self) -> Cooldown:
        """The failure counter (``failures``, ``last_error``, ``remaining_s``)."""
        return self._cooldown

    def embed_one(self, text: str, *, is_query: bool = False) -> Vector:
        """Return the unit-length vector of ``text``.

        Raises ``EmbeddingError`` when the server fails, answers malformed data, or is cooling down.
        """
        vector: Vector = self.embed_batch([text], is_query=is_query)[0]
        return vector

    def embed_batch(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Return one unit-length row per text, as a ``(len(texts), dim)`` float32 matrix.

        Texts are sent in batches of ``batch_size``. Raises ``EmbeddingError`` when the server fails,
        answers malformed data, or is cooling down; each failed call counts once towards the cooldown.
        """
        if isinstance(texts, str):
            raise TypeError("embed_batch takes a sequence of texts, not a single str; use embed_one")
        if self._closed:
            raise EmbeddingError(f"{self.model_id}: the embedder is closed")
        config_error = self._config_error()
        if config_error is not None:
            raise EmbeddingError(f"{self.model_id} at {self._location()}: {config_error}")
        if not self._cooldown.ready:
            raise EmbeddingError(f"{self.model_id} at {self._location()}: {self._cooldown.describe()}")
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        try:
            # A lone surrogate (e.g. from a badly decoded argument) cannot be sent as UTF-8 JSON.
            prefixed = [
                text.encode("utf-8", "replace").decode("utf-8")
                for text in add_prefix(texts, self._model, is_query=is_query)
            ]
            # The readiness check shares the first batch's time limit.
            deadline = time.monotonic() + self._timeout_s
            self._check_ready(deadline)
            parts = []
            for start in range(0, len(prefixed), self._batch_size):
                parts.append(self._embed_chunk(prefixed[start : start + self._batch_size], deadline))
                deadline = time.monotonic() + self._timeout_s
        except EmbeddingError as exc:
            self._cooldown.record_failure(exc.message)
            raise
        self._cooldown.record_success()
        self._contacted = True
        return np.concatenate(parts, axis=0)

    def close(self) -> None:
        """Close the HTTP connections; later calls raise ``EmbeddingError``."""
        self._closed = True
        self._client.close()

    # -- for subclasses ---------------------------------------------------------------------------

    def _location(self) -> str:
        return self._base_url

    def _config_error(self) -> str | None:
        """A configuration problem no retry can fix (e.g. a missing key), or None."""
        return None

    def _check_ready(self, deadline: float) -> None:
        """Check once, before the first batch, that the server can serve the model, by ``deadline``."""

    def _post_batch(self, texts: list[str], deadline: float) -> Any:
        """Send one batch; return the list of vectors from the answer (still unchecked), by ``deadline``."""
        raise NotImplementedError

    def _send(self, method: str, url: str, what: str, deadline: float, **kwargs: Any) -> httpx.Response:
        """Send one request answered in full by ``deadline`` (``time.monotonic()``); map network errors
        and timeouts to ``EmbeddingError``."""
        try:
            return self._client.request(method, url, within_s=deadline - time.monotonic(), **kwargs)
        except httpx.TimeoutException:
            raise EmbeddingError(f"{what} did not answer within {self._timeout_s:g} s") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise EmbeddingError(f"cannot reach {what} ({type(exc).__name__}: {exc})") from None
        except RuntimeError:
            if self._closed:  # close() ran in another thread while this request was starting
                raise EmbeddingError(f"{self.model_id}: the embedder is closed") from None
            raise

    # -- internals --------------------------------------------------------------------------------

    def _embed_chunk(self, texts: list[str], deadline: float) -> npt.NDArray[np.float32]:
        what = f"{self.model_id} at {self._location()}"
        matrix = rows_to_matrix(self._post_batch(texts, deadline), len(texts), what)
        width = matrix.shape[1]
        with self._lock:
            if self._dim == 0:
                self._dim = width
            elif width != self._dim:
                if self._expected_dim:
                    raise EmbeddingError(
                        f"{what}: the model returns {width}-d vectors but embed_dim is {self._expected_dim}; "
                        f"set ROBOTMEM_EMBED_DIM={width} (or 0) or pick another model"
                    )
                raise EmbeddingError(
                    f"{what}: the model returned {width}-d vectors, earlier {self._dim}-d; "
                    "the model behind this name changed, restart to re-embed with it"
                )
        return normalize_rows(matrix)
