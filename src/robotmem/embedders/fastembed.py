"""Local ONNX embeddings through FastEmbed, loaded only from files already on this machine.

Robots are often offline, and a model fetched from a hub at run time fails there (FastEmbed's own
download retries take about 40 s before giving up). So this embedder never downloads: it loads the
model from ``cache_dir`` with ``local_files_only=True``, and when the files are missing it fails at
once with an ``EmbeddingError`` that says how to copy them over.
"""

from __future__ import annotations

import importlib
import importlib.util
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from robotmem.embedders.base import Vector, normalize_rows
from robotmem.embedders.prefixes import add_prefix
from robotmem.errors import EmbeddingError

DEFAULT_FASTEMBED_MODEL = "BAAI/bge-small-en-v1.5"
INSTALL_HINT = "pip install 'robotmem[onnx]'"
DEFAULT_BATCH_SIZE = 64


def default_cache_dir() -> Path:
    """FastEmbed's own default cache directory (``<temp dir>/fastembed_cache``)."""
    return Path(tempfile.gettempdir()) / "fastembed_cache"


def fastembed_installed() -> bool:
    """True when the ``fastembed`` package can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec("fastembed") is not None
    except (ImportError, ValueError):
        return False


def download_hint(model_name: str, cache_dir: Path) -> str:
    """Return the instructions that make ``model_name`` available offline in ``cache_dir``."""
    return (
        f"robotmem never downloads models at run time. On a machine with internet access run "
        f"python -c \"from fastembed import TextEmbedding; TextEmbedding('{model_name}', "
        f"cache_dir='{cache_dir}')\", copy the directory {cache_dir} to this machine and set "
        f"ROBOTMEM_ONNX_MODEL_DIR to where you copied it"
    )


class FastEmbedEmbedder:
    """Embeds text with a FastEmbed ONNX model (default ``BAAI/bge-small-en-v1.5``, 384-d).

    ``cache_dir`` is either a FastEmbed cache directory (as filled by ``TextEmbedding(name,
    cache_dir=...)``) or the directory of one model's files (the ONNX file, ``tokenizer.json``,
    ``config.json``...); None means FastEmbed's default cache in the temp directory. The model is
    loaded on first use (``embed_*``, ``available`` or ``status``), never downloaded.
    If ``fastembed`` is not installed, or the model files are missing, ``available`` is False,
    ``status`` says what to do, and ``embed_*`` raise ``EmbeddingError`` with the same text.
    ``is_query`` picks the query or passage prefix for models that expect one (e5; see ``prefixes``).
    """

    def __init__(
        self,
        model_name: str = DEFAULT_FASTEMBED_MODEL,
        cache_dir: str | Path | None = None,
        *,
        threads: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        self._model_name = model_name or DEFAULT_FASTEMBED_MODEL
        self._cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self._threads = threads
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None
        self._dim = 0
        self._error: str | None = None
        self._closed = False

    @property
    def model_id(self) -> str:
        """``fastembed/<model name>``."""
        return f"fastembed/{self._model_name}"

    @property
    def dim(self) -> int:
        """The vector length of the model, from FastEmbed's model list (the model itself is not loaded).

        Raises ``EmbeddingError`` when fastembed is not installed or does not know the model.
        """
        if self._dim == 0:
            try:
                self._dim = self._lookup_dim()
            except EmbeddingError as exc:
                raise EmbeddingError(f"{self.model_id}: {exc.message}") from None
        return self._dim

    @property
    def available(self) -> bool:
        """True once the model is loaded; the first read loads it (without any network access)."""
        try:
            self._ensure_loaded()
        except EmbeddingError:
            return False
        return True

    @property
    def status(self) -> str:
        """One line: loaded with its dimension, or why the model cannot be used."""
        try:
            self._ensure_loaded()
        except EmbeddingError as exc:
            return exc.message
        return f"{self.model_id}: loaded from {self._cache_dir} ({self._dim}-d)"

    def embed_one(self, text: str, *, is_query: bool = False) -> Vector:
        """Return the unit-length vector of ``text``; raises ``EmbeddingError`` when the model cannot run."""
        vector: Vector = self.embed_batch([text], is_query=is_query)[0]
        return vector

    def embed_batch(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        """Return one unit-length row per text as a ``(len(texts), dim)`` float32 matrix.

        Raises ``EmbeddingError`` when fastembed is missing, the model files are missing, or the
        model fails on the input.
        """
        if isinstance(texts, str):
            raise TypeError("embed_batch takes a sequence of texts, not a single str; use embed_one")
        model = self._ensure_loaded()
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        texts = add_prefix(texts, self._model_name, is_query=is_query)
        try:
            # query_embed / passage_embed, not embed: some models (jina v3) select a task there.
            embed = model.query_embed if is_query else model.passage_embed
            rows = list(embed(list(texts), batch_size=self._batch_size))
        except Exception as exc:  # onnxruntime and tokenizers raise their own types
            raise EmbeddingError(f"{self.model_id} failed to embed: {type(exc).__name__}: {exc}") from exc
        return normalize_rows(np.asarray(rows, dtype=np.float32).reshape(len(texts), -1))

    def close(self) -> None:
        """Drop the model; later calls raise ``EmbeddingError``."""
        with self._lock:
            self._closed = True
            self._model = None

    def _ensure_loaded(self) -> Any:
        with self._lock:
            if self._closed:
                raise EmbeddingError(f"{self.model_id}: the embedder is closed")
            if self._model is None and self._error is None:
                try:
                    self._model = self._load()
                except EmbeddingError as exc:
                    self._error = exc.message
            if self._error is not None:
                raise EmbeddingError(f"{self.model_id}: {self._error}")
            return self._model

    def _load(self) -> Any:
        if not fastembed_installed():
            raise EmbeddingError(f"fastembed is not installed; {INSTALL_HINT}")
        missing = f"model {self._model_name!r} is not available offline in {self._cache_dir}. "
        # Checked before importing fastembed: its import alone takes most of a second, and its
        # constructor would create the directory.
        if not self._cache_dir.is_dir() or not any(self._cache_dir.iterdir()):
            raise EmbeddingError(missing + download_hint(self._model_name, self._cache_dir))
        dim = self._lookup_dim()
        text_embedding = importlib.import_module("fastembed").TextEmbedding
        options: dict[str, Any] = {"cache_dir": str(self._cache_dir), "local_files_only": True}
        if any(self._cache_dir.glob("*.onnx")) or any(self._cache_dir.glob("onnx/*.onnx")):
            options["specific_model_path"] = str(self._cache_dir)
        try:
            model = text_embedding(self._model_name, threads=self._threads, **options)
        except Exception as exc:  # fastembed reports a missing file as ValueError, OSError or its own types
            raise EmbeddingError(
                f"{missing}({type(exc).__name__}: {exc}) " + download_hint(self._model_name, self._cache_dir)
            ) from None
        self._dim = dim
        return model

    def _lookup_dim(self) -> int:
        if not fastembed_installed():
            raise EmbeddingError(f"fastembed is not installed; {INSTALL_HINT}")
        text_embedding = importlib.import_module("fastembed").TextEmbedding
        try:
            return int(text_embedding.get_embedding_size(self._model_name))
        except ValueError:
            raise EmbeddingError(
                f"fastembed does not know the model {self._model_name!r}; set ROBOTMEM_EMBED_MODEL to one "
                "of TextEmbedding.list_supported_models(), e.g. BAAI/bge-small-en-v1.5"
            ) from None
