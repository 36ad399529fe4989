"""Exact numpy cosine search versus sqlite-vec ``vec0`` KNN at 100k × 384 (the design choice of vectors.py).

Runs in its own environment, because robotmem does not depend on sqlite-vec::

    python3 -m venv .venv-vec && .venv-vec/bin/pip install numpy sqlean.py sqlite-vec
    .venv-vec/bin/python benchmarks/vector_search.py [--n 100000] [--dim 384] [--repeat 30]

Both sides search the same random unit vectors for the top 50 by cosine (numpy: one matrix product and
``argpartition``; vec0: ``WHERE embedding MATCH ? AND k = 50`` with ``distance_metric=cosine``), and the
script checks that they return the same ids. It also times the filtered case robotmem needs: the best 50
among an allowed subset of ids (30 %), which numpy does with a mask and vec0 does by over-fetching.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _timed(operation: Callable[[int], Any], repeat: int) -> dict[str, float]:
    samples = []
    for i in range(repeat + 2):
        started = time.perf_counter()
        operation(i)
        if i >= 2:
            samples.append((time.perf_counter() - started) * 1000)
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))],
    }


def _connect() -> Any:
    import sqlean  # a SQLite build that can load extensions even where the system one cannot
    import sqlite_vec

    conn = sqlean.connect(":memory:")
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    return conn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((args.n, args.dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    queries = rng.standard_normal((64, args.dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    ids = np.arange(1, args.n + 1, dtype=np.int64)
    allowed = rng.random(args.n) < 0.3

    def numpy_top(i: int, mask: np.ndarray | None = None) -> list[int]:
        scores = matrix @ queries[i % len(queries)]
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        head = np.argpartition(-scores, args.k - 1)[: args.k]
        head = head[np.argsort(-scores[head], kind="stable")]
        return [int(x) for x in ids[head]]

    conn = _connect()
    versions = conn.execute("SELECT sqlite_version(), vec_version()").fetchone()
    started = time.perf_counter()
    conn.execute(f"CREATE VIRTUAL TABLE vec USING vec0(embedding float[{args.dim}] distance_metric=cosine)")
    with conn:
        conn.executemany(
            "INSERT INTO vec (rowid, embedding) VALUES (?, ?)",
            ((int(ids[row]), matrix[row].tobytes()) for row in range(args.n)),
        )
    vec_load_s = time.perf_counter() - started

    def vec_top(i: int, fetch: int | None = None) -> list[int]:
        rows = conn.execute(
            "SELECT rowid FROM vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (queries[i % len(queries)].tobytes(), fetch or args.k),
        ).fetchall()
        return [int(r[0]) for r in rows]

    allowed_ids = set(ids[allowed].tolist())

    def vec_filtered(i: int) -> list[int]:
        fetch = args.k * 4
        while True:
            found = [m for m in vec_top(i, fetch) if m in allowed_ids]
            if len(found) >= args.k or fetch >= args.n:
                return found[: args.k]
            fetch = min(fetch * 4, args.n)

    agree = sum(numpy_top(i) == vec_top(i) for i in range(16))
    result = {
        "n": args.n,
        "dim": args.dim,
        "k": args.k,
        "sqlite": versions[0],
        "sqlite_vec": versions[1],
        "numpy": np.__version__,
        "numpy_exact_ms": _timed(numpy_top, args.repeat),
        "vec0_knn_ms": _timed(vec_top, args.repeat),
        "numpy_exact_filtered_30pct_ms": _timed(lambda i: numpy_top(i, allowed), args.repeat),
        "vec0_knn_filtered_30pct_ms": _timed(vec_filtered, max(5, args.repeat // 3)),
        "same_top_k_of_16_queries": agree,
        "vec0_load_s": vec_load_s,
        "numpy_matrix_mb": matrix.nbytes / 2**20,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
