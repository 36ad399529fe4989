"""Timing helpers shared by the benchmarks: repeated measurement, percentiles, machine facts, tables.

Every timing is wall-clock ``time.perf_counter`` in milliseconds. Results are plain dicts so a run can be
written as JSON, compared with another run, and rendered as Markdown.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import resource
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robotmem.embedders.base import Vector

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "benchmarks" / ".cache"


def ensure_cache() -> Path:
    """Create the cache folder with a ``.gitignore`` that keeps its databases and results out of git."""
    CACHE.mkdir(parents=True, exist_ok=True)
    ignore = CACHE / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    return CACHE


@dataclass(frozen=True, slots=True)
class Timing:
    """Summary of repeated measurements of one operation, in milliseconds."""

    name: str
    runs: int
    p50: float
    p95: float
    mean: float
    min: float
    max: float
    cpu_p50: float = float("nan")  # process CPU time: less sensitive than wall time to other busy processes

    def as_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return asdict(self)


def percentile(values: Sequence[float], share: float) -> float:
    """Return the ``share`` (0..1) percentile of ``values`` by linear interpolation; NaN when empty."""
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values, dtype=np.float64), share * 100))


def summarize(name: str, samples_ms: Sequence[float], cpu_ms: Sequence[float] = ()) -> Timing:
    """Return the :class:`Timing` of wall-time ``samples_ms`` (and CPU-time ``cpu_ms`` when given)."""
    return Timing(
        name=name,
        runs=len(samples_ms),
        p50=percentile(samples_ms, 0.50),
        p95=percentile(samples_ms, 0.95),
        mean=statistics.fmean(samples_ms) if samples_ms else float("nan"),
        min=min(samples_ms) if samples_ms else float("nan"),
        max=max(samples_ms) if samples_ms else float("nan"),
        cpu_p50=percentile(cpu_ms, 0.50),
    )


def measure(name: str, operation: Callable[[int], object], *, repeat: int, warmup: int = 2) -> Timing:
    """Call ``operation(i)`` ``warmup`` times untimed, then ``repeat`` times timed; return the summary.

    ``i`` counts from 0 over warm-up and timed calls together, so an operation can pick a fresh input
    each time. The garbage collector is paused around each timed call, as a long-running robot process
    would amortise it, and run between calls.
    """
    samples: list[float] = []
    cpu: list[float] = []
    for i in range(warmup + repeat):
        gc.collect()
        gc.disable()
        cpu_started = time.process_time()
        started = time.perf_counter()
        try:
            operation(i)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            cpu_elapsed = (time.process_time() - cpu_started) * 1000
            gc.enable()
        if i >= warmup:
            samples.append(elapsed)
            cpu.append(cpu_elapsed)
    return summarize(name, samples, cpu)


def timed(operation: Callable[[], object]) -> float:
    """Return the wall time of one call in milliseconds."""
    started = time.perf_counter()
    operation()
    return (time.perf_counter() - started) * 1000


def peak_rss_mb() -> float:
    """Return this process's peak resident set size in MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def machine() -> dict[str, Any]:
    """Return the facts needed to read the numbers: CPU, cores, load, Python, SQLite, numpy."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = [round(value, 2) for value in os.getloadavg()]
    except OSError:
        load = []
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "load_average": load,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "numpy": np.__version__,
        "platform": platform.platform(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


class PrecomputedEmbedder:
    """Wraps an embedder and serves vectors computed earlier, so a timing excludes the model.

    ``prime`` embeds texts in one batch ahead of time; ``embed_one`` and ``embed_batch`` return the
    cached vector when there is one and ask the wrapped embedder otherwise. ``model_id`` and ``dim``
    are the wrapped embedder's, so the vectors mix with those already stored.
    """

    def __init__(self, base: Any) -> None:
        self.base = base
        self._cache: dict[tuple[str, bool], Vector] = {}

    @property
    def model_id(self) -> str:
        return str(self.base.model_id)

    @property
    def dim(self) -> int:
        return int(self.base.dim)

    @property
    def available(self) -> bool:
        return bool(self.base.available)

    @property
    def status(self) -> str:
        return f"precomputed vectors of {self.base.status}"

    def prime(self, texts: Iterable[str], *, is_query: bool = False) -> None:
        """Embed every text not cached yet, in batches of 64."""
        missing = [t for t in dict.fromkeys(texts) if (t, is_query) not in self._cache]
        for start in range(0, len(missing), 64):
            chunk = missing[start : start + 64]
            for text, vector in zip(chunk, self.base.embed_batch(chunk, is_query=is_query), strict=True):
                self._cache[(text, is_query)] = np.asarray(vector, dtype=np.float32)

    def load(self, texts: Sequence[str], vectors: Any, *, is_query: bool = False) -> None:
        """Take vectors computed elsewhere (row i is the vector of ``texts[i]``) into the cache."""
        for text, vector in zip(texts, vectors, strict=True):
            self._cache[(str(text), is_query)] = np.asarray(vector, dtype=np.float32)

    def embed_one(self, text: str, *, is_query: bool = False) -> Vector:
        cached = self._cache.get((text, is_query))
        if cached is not None:
            return cached
        vector: Vector = np.asarray(self.base.embed_one(text, is_query=is_query), dtype=np.float32)
        self._cache[(text, is_query)] = vector
        return vector

    def embed_batch(self, texts: Sequence[str], *, is_query: bool = False) -> Any:
        self.prime(texts, is_query=is_query)
        return np.stack([self._cache[(t, is_query)] for t in texts]) if texts else np.zeros((0, self.dim))

    def close(self) -> None:
        self.base.close()


def ratio(left: float, right: float) -> float:
    """Return ``left / right`` (NaN when ``right`` is zero)."""
    return left / right if right else float("nan")


def fmt(value: Any, digits: int = 2) -> str:
    """Format a number for a table cell (integers plain, floats with ``digits`` decimals)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:  # NaN
            return "—"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return str(value)


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Return a Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(fmt(cell) for cell in row) + " |")
    return "\n".join(lines)


def write_json(path: Path, payload: Mapping[str, Any]) -> None:
    """Write ``payload`` as indented JSON, creating the directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
