"""Precision and recall of the duplicate decision on labelled pairs, in learn and in consolidation.

Run from the repository root:

    python benchmarks/dedup_eval.py [--baseline DIR] [--embed-backend auto] [--cost-rounds N] [--json results.json]

``benchmarks/data/dedup_pairs.jsonl`` holds pairs of lessons labelled ``duplicate`` (exact repeats, case,
punctuation and filler-word variants) or ``distinct`` (a lesson and its opposite: negation, negating prefix,
antonym, on/off state, swapped order; another object, action or modal), in English and Chinese, in two
splits: ``dev`` (the pairs the first word lists were written with) and ``heldout`` (written after them, not
used to tune anything).

learn: for each pair, ``learn(first)`` then ``learn(second)`` in a collection of its own, in one database with
the chosen embedder (the bundled model by default, so the cosine check takes part); the pair is called a
duplicate when the second call returns ``status: "duplicate"``.
consolidation: ``consolidation.plan_consolidation`` on the pair and an unrelated lesson of the same category
(at least three candidates are needed), at the default ``consolidation_jaccard``; the pair is called a
duplicate when one of them would be superseded by the other.

Precision = pairs called duplicate that are labelled duplicate / pairs called duplicate; recall = labelled
duplicates called duplicate / labelled duplicates. The cost of the decision itself (``dedup.same_experience``
per pair, median wall and CPU time of 30 passes over all pairs, every cache the dedup module holds cleared
before each) is printed too; ``--cost-rounds N`` times it again in N runs of each checkout taken in turn,
so a change of load on the machine hits both sides. ``--baseline DIR`` runs the same script against another
checkout's ``src`` (``git worktree add /tmp/base main``) in a subprocess and prints both side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "dedup_pairs.jsonl"
# "dev": the pairs the first word lists were written with; "heldout": pairs written afterwards and left untuned.
SCOPES = ("all", "en", "zh", "dev", "heldout")
UNRELATED = "The battery of robot 3 lasts four hours on the warehouse floor"


def load_pairs(path: Path) -> list[dict[str, str]]:
    """Return the labelled pairs of ``path`` (one JSON object per line)."""
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        pair = json.loads(line)
        if (
            pair.get("label") not in ("duplicate", "distinct")
            or not pair.get("first")
            or not pair.get("second")
        ):
            raise SystemExit(f"{path}:{number}: needs label duplicate|distinct, first and second")
        pairs.append(pair)
    return pairs


def learn_decisions(pairs: list[dict[str, str]], backend: str) -> dict[str, str]:
    """Return pair id → the method that called it a duplicate at learn ("" when both were stored)."""
    from robotmem import RobotMemory
    from robotmem.config import Settings

    decisions = {}
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(home=Path(scratch) / "home")
        with RobotMemory(Path(scratch) / "pairs.db", embed_backend=backend, settings=settings) as memory:
            for pair in pairs:
                collection = f"pair-{pair['id']}"
                memory.learn(pair["first"], collection=collection)
                second = memory.learn(pair["second"], collection=collection)
                decisions[pair["id"]] = (
                    str(second.get("method", "")) if second["status"] == "duplicate" else ""
                )
    return decisions


def consolidation_decisions(pairs: list[dict[str, str]]) -> dict[str, bool]:
    """Return pair id → whether end_session's planner would merge the two lessons."""
    from robotmem.config import Settings
    from robotmem.rules.consolidation import Candidate, plan_consolidation

    threshold = Settings().consolidation_jaccard
    decisions = {}
    for pair in pairs:
        texts = (pair["first"], pair["second"], UNRELATED)
        candidates = [
            Candidate(i, "observation", 0.8, 0, "2026-01-01T00:00:00+00:00", t) for i, t in enumerate(texts)
        ]
        plan = plan_consolidation(candidates, threshold)
        decisions[pair["id"]] = any({0, 1} <= {m.representative, *m.merged} for m in plan.merges)
    return decisions


def scores(pairs: list[dict[str, str]], called: dict[str, bool]) -> dict[str, Any]:
    """Return precision, recall and the counts behind them, overall, per language and per split."""
    out: dict[str, Any] = {}
    for scope in SCOPES:
        chosen = [p for p in pairs if scope == "all" or scope in (p["lang"], p.get("split", "dev"))]
        tp = sum(1 for p in chosen if called[p["id"]] and p["label"] == "duplicate")
        fp = sum(1 for p in chosen if called[p["id"]] and p["label"] == "distinct")
        fn = sum(1 for p in chosen if not called[p["id"]] and p["label"] == "duplicate")
        out[scope] = {
            "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
            "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0,
            "true_positive": tp,
            "false_positive": fp,
            "false_negative": fn,
        }
    out["swallowed"] = sorted(p["id"] for p in pairs if called[p["id"]] and p["label"] == "distinct")
    out["missed"] = sorted(p["id"] for p in pairs if not called[p["id"]] and p["label"] == "duplicate")
    return out


def decision_cost_us(pairs: list[dict[str, str]], repeat: int = 30) -> tuple[float, float]:
    """Return the median wall and CPU time of ``dedup.same_experience`` per pair in µs, nothing cached
    between repeats (CPU time is the steadier of the two on a loaded machine)."""
    from robotmem.rules import dedup
    from robotmem.text.tokens import word_set

    word_set("机器人")  # the CJK dictionary loads once per process, outside the timing
    # the cached text readers dedup imports (whichever a checkout has: polarity, content_words)
    caches = [value.cache_clear for value in vars(dedup).values() if hasattr(value, "cache_clear")]
    texts = [(p["first"], p["second"]) for p in pairs]
    wall, cpu = [], []
    for _ in range(repeat):
        for clear in caches:
            clear()
        start, start_cpu = time.perf_counter(), time.process_time()
        for first, second in texts:
            dedup.same_experience(first, second)
        wall.append((time.perf_counter() - start) / len(texts) * 1e6)
        cpu.append((time.process_time() - start_cpu) / len(texts) * 1e6)
    return round(statistics.median(wall), 2), round(statistics.median(cpu), 2)


def measure(backend: str) -> dict[str, Any]:
    """Score this interpreter's robotmem on the labelled pairs."""
    pairs = load_pairs(DATA)
    cost, cost_cpu = decision_cost_us(pairs)
    learned = learn_decisions(pairs, backend)
    methods: dict[str, int] = {}
    for method in learned.values():
        if method:
            methods[method] = methods.get(method, 0) + 1
    return {
        "pairs": len(pairs),
        "duplicates": sum(1 for p in pairs if p["label"] == "duplicate"),
        "distinct": sum(1 for p in pairs if p["label"] == "distinct"),
        "learn": scores(pairs, {k: bool(v) for k, v in learned.items()}),
        "learn_methods": methods,
        "consolidation": scores(pairs, consolidation_decisions(pairs)),
        "same_experience_us": cost,
        "same_experience_cpu_us": cost_cpu,
    }


def in_checkout(checkout: Path, backend: str) -> dict[str, Any]:
    """Run ``measure`` with ``checkout``'s ``src`` first on the path (this script and data stay the same)."""
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "side.json"
        command = [sys.executable, __file__, "--embed-backend", backend, "--side", str(out)]
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def cost_in_checkout(checkout: Path) -> tuple[float, float]:
    """Run ``decision_cost_us`` alone with ``checkout``'s ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    command = [sys.executable, __file__, "--cost-only"]
    wall, cpu = json.loads(
        subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    )
    return float(wall), float(cpu)


def alternating_costs(checkouts: dict[str, Path], rounds: int) -> dict[str, tuple[float, float]]:
    """Return each checkout's median wall and CPU cost over ``rounds`` runs taken in turn (load shifts hit all)."""
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in checkouts}
    for _ in range(rounds):
        for name, checkout in checkouts.items():
            runs[name].append(cost_in_checkout(checkout))
    return {
        name: (
            round(statistics.median(w for w, _ in costs), 2),
            round(statistics.median(c for _, c in costs), 2),
        )
        for name, costs in runs.items()
    }


def table(sides: dict[str, dict[str, Any]]) -> str:
    """Render the precision/recall of every side, learn and consolidation, overall and per language."""
    names = list(sides)
    lines = [
        "| decision | scope | " + " | ".join(f"{n} precision | {n} recall" for n in names) + " |",
        "|---|---|" + "---|---|" * len(names),
    ]
    for decision in ("learn", "consolidation"):
        for scope in SCOPES:
            cells = [
                f"{s[decision][scope]['precision']:.3f} | {s[decision][scope]['recall']:.3f}"
                for s in sides.values()
            ]
            lines.append(f"| {decision} | {scope} | " + " | ".join(cells) + " |")
    for decision in ("learn", "consolidation"):
        for name, side in sides.items():
            lines.append(
                f"{name} {decision}: {len(side[decision]['swallowed'])} of {side['distinct']} distinct pairs called "
                f"duplicates {side[decision]['swallowed'][:12]}; {len(side[decision]['missed'])} of "
                f"{side['duplicates']} duplicates missed {side[decision]['missed'][:12]}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout to measure beside this one")
    parser.add_argument(
        "--embed-backend", default="auto", help="embedder for learn (default auto: the bundled model)"
    )
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument(
        "--cost-rounds",
        type=int,
        default=0,
        help="also time the decision in this many alternating runs of each checkout and print the medians",
    )
    parser.add_argument("--side", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cost-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cost_only:
        print(json.dumps(decision_cost_us(load_pairs(DATA))))
        return 0
    if args.side is not None:
        args.side.write_text(json.dumps(measure(args.embed_backend)), encoding="utf-8")
        return 0
    sides: dict[str, dict[str, Any]] = {}
    if args.baseline is not None:
        sides["baseline"] = in_checkout(args.baseline, args.embed_backend)
    sides["this"] = in_checkout(ROOT, args.embed_backend)
    first = next(iter(sides.values()))
    print(
        f"{first['pairs']} pairs ({first['duplicates']} duplicate, {first['distinct']} distinct), embedder {args.embed_backend}"
    )
    print(table(sides))
    for name, side in sides.items():
        print(
            f"{name} learn methods: {side['learn_methods']}; same_experience {side['same_experience_us']} µs "
            f"per pair (CPU {side['same_experience_cpu_us']} µs)"
        )
    if args.cost_rounds > 0:
        checkouts = {"this": ROOT} if args.baseline is None else {"baseline": args.baseline, "this": ROOT}
        costs = alternating_costs(checkouts, args.cost_rounds)
        for name, (wall, cpu) in costs.items():
            sides[name]["alternating_cost_us"] = {"wall": wall, "cpu": cpu, "rounds": args.cost_rounds}
            print(
                f"{name} same_experience over {args.cost_rounds} alternating runs: {wall} µs per pair (CPU {cpu} µs)"
            )
    if args.json is not None:
        args.json.write_text(json.dumps(sides, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
