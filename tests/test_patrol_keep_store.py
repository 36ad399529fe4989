"""The patrol benchmark's ``keep`` on SQLite: the store of a log is kept and asked again by the next run
(two versions of robotmem compared on one store), and a store of another log is built anew."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the benchmarks live beside src/, not in the package
    sys.path.insert(0, str(ROOT))

from benchmarks import patrol_robotmem  # noqa: E402
from benchmarks.patrol_data import PatrolLog, generate  # noqa: E402
from benchmarks.patrol_queries import make_queries  # noqa: E402

from robotmem.embedders.hashing import HashingEmbedder  # noqa: E402


def _inputs(log: PatrolLog) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    queries = [q for q in make_queries(log) if q["kind"] in ("last_seen_label", "around")][:10]
    names = {o.object_id for o in log.tracked if o.object_id} | {o.label for o in log.tracked}
    passages = sorted(set(log.texts) | names)
    asked = sorted({q["args"]["text"] for q in queries if q["args"].get("text")})
    hashing = HashingEmbedder(384)
    vectors = {
        "passage_texts": np.array(passages),
        "passage_vectors": hashing.embed_batch(passages),
        "query_texts": np.array(asked, dtype=str),
        "query_vectors": hashing.embed_batch(asked, is_query=True) if asked else np.zeros((0, 384)),
    }
    return queries, vectors


def test_a_kept_sqlite_store_is_asked_again_and_another_log_builds_its_own(tmp_path: Path) -> None:
    log = generate(200, seed=3)
    queries, vectors = _inputs(log)

    first = patrol_robotmem.run(log, queries, vectors, tmp_path, 1, keep=True)
    again = patrol_robotmem.run(log, queries, vectors, tmp_path, 1, keep=True)

    assert first["engine"] == "sqlite" and first["build_s"] > 0
    assert "build_s" not in again and again["answers"] == first["answers"]
    assert (tmp_path / f"kept-{len(log)}-3" / "patrol.db").exists()
    other = generate(120, seed=4)
    other_queries, other_vectors = _inputs(other)
    built = patrol_robotmem.run(other, other_queries, other_vectors, tmp_path, 1, keep=True)
    assert built["build_s"] > 0 and (tmp_path / f"kept-{len(other)}-4" / "patrol.db").exists()
    fresh = patrol_robotmem.run(log, queries, vectors, tmp_path, 1)  # without keep: built again
    assert fresh["build_s"] > 0 and fresh["answers"] == first["answers"]
