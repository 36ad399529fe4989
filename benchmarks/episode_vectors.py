"""The indexing cost of episode vectors (``episode_vector_weight``): learn with and without them.

    python -m benchmarks.episode_vectors [--sessions 8]

The first ``--sessions`` sessions of ``benchmarks/data/episode_eval.jsonl`` are learned in order into two
stores with the bundled model, one with episode vectors on and one off, alternating session by session so
both see the same machine load. Reported: per-learn wall time and process CPU time (medians; the model runs
on its own threads), their ratio, and the bytes the episode vectors add per memory.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness import ROOT, markdown_table

from robotmem import RobotMemory
from robotmem.config import Settings
from robotmem.evaluation import load_eval_set

EPISODE_FILE = ROOT / "benchmarks" / "data" / "episode_eval.jsonl"


def run(sessions: int) -> str:
    eval_set = load_eval_set(EPISODE_FILE)
    order: list[str] = []
    for d in eval_set.documents:
        if d.session is not None and d.session not in order:
            order.append(d.session)
    chosen = order[:sessions]
    samples: dict[str, dict[str, list[float]]] = {
        "off": {"wall": [], "cpu": []},
        "on": {"wall": [], "cpu": []},
    }
    with tempfile.TemporaryDirectory(prefix="robotmem-episode-vectors-") as home:
        base = Settings(home=Path(home), embed_backend="auto")
        mems = {
            label: RobotMemory(
                Path(home) / f"{label}.db",
                settings=base.replace(episode_vector_weight=1.0 if label == "on" else 0.0),
            )
            for label in ("off", "on")
        }
        try:
            for mem in mems.values():
                mem.warm_up()
                mem.learn("warm-up lesson: the model is loaded", collection="warm-up")
            for number, session in enumerate(chosen):
                for label in ("off", "on") if number % 2 == 0 else ("on", "off"):
                    mem = mems[label]
                    started = mem.start_session(collection="episodes")["session_id"]
                    for d in (d for d in eval_set.documents if d.session == session):
                        wall, cpu = time.perf_counter(), time.process_time()
                        mem.learn(d.text, context=dict(d.context), collection="episodes", session_id=started)
                        samples[label]["cpu"].append((time.process_time() - cpu) * 1000)
                        samples[label]["wall"].append((time.perf_counter() - wall) * 1000)
            paths = {label: mem.path for label, mem in mems.items()}
        finally:
            for mem in mems.values():
                mem.close()
        conn = sqlite3.connect(paths["on"])
        try:
            count, size = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(length(embedding)), 0) FROM memory_episode_vectors"
            ).fetchone()
        finally:
            conn.close()

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    rows = [
        [
            f"learn p50 {kind} ms",
            f"{median(samples['off'][kind]):.1f}",
            f"{median(samples['on'][kind]):.1f}",
            f"{median(samples['on'][kind]) / median(samples['off'][kind]):.2f}",
        ]
        for kind in ("wall", "cpu")
    ]
    learned = len(samples["on"]["wall"])
    return "\n".join(
        [
            f"{len(chosen)} sessions, {learned} memories each way; {count} episode vectors "
            f"({size / max(count, 1):.0f} bytes each, {size / max(learned, 1):.0f} per memory learned)",
            "",
            markdown_table(["measure", "episode vectors off", "on", "on / off"], rows),
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    args = parser.parse_args(argv)
    print(run(args.sessions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
