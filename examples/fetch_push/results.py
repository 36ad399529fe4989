"""Run the FetchPush protocol over several seeds, save the raw rows and report the statistics.

    python examples/fetch_push/results.py --seeds 5 --episodes 100 --out examples/fetch_push/results
    python examples/fetch_push/results.py --analyze-only --out examples/fetch_push/results

Writes ``episodes.csv`` (one row per episode), ``seeds.csv`` (success rate per seed and phase),
``summary.md`` (the tables below) and ``success_rate.png`` into ``--out``.

Reported: success rate per phase as mean ± s.d. over seeds; paired differences between phases
(per seed) with a two-sided paired t-test; the memory arm against the random-control arm.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import platform
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

PHASES = ("A_baseline", "B_write", "C_memory", "C_random")
PHASE_LABELS = {
    "A_baseline": "A: baseline",
    "B_write": "B: baseline + write",
    "C_memory": "C: recall + write (memory)",
    "C_random": "C: random control",
}
COMPARISONS = (
    ("C_memory", "A_baseline"),
    ("C_random", "A_baseline"),
    ("C_memory", "C_random"),
    ("B_write", "A_baseline"),
)
COLUMNS = (
    "seed",
    "phase",
    "episode",
    "layout_seed",
    "success",
    "final_distance",
    "episode_return",
    "steps",
    "lateral_offset",
    "stop_offset",
    "recalled",
    "recall_ms",
    "recall_matches_exact",
    "shift_lateral",
    "shift_stop",
    "shift_sigma",
    "memory_status",
    "k",
    "seconds",
)


def _run_one(
    seed: int, episodes: int, workdir: str, k: int, embed_backend: str | None
) -> list[dict[str, Any]]:
    from protocol import ProtocolConfig, run_seed

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    config = ProtocolConfig(
        seed=seed, episodes=episodes, workdir=Path(workdir) / f"seed_{seed}", k=k, embed_backend=embed_backend
    )
    started = time.perf_counter()
    rows = run_seed(config)
    print(f"seed {seed}: {len(rows)} episodes in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return rows


def run_all(seeds: list[int], episodes: int, k: int, workers: int, embed_backend: str | None) -> list[dict]:
    """Run every seed (in ``workers`` processes, each with a fresh database directory)."""
    with tempfile.TemporaryDirectory(prefix="fetch_push_") as workdir:
        if workers <= 1:
            batches = [_run_one(seed, episodes, workdir, k, embed_backend) for seed in seeds]
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(_run_one, seed, episodes, workdir, k, embed_backend) for seed in seeds]
                batches = [future.result() for future in futures]
    return [row for batch in batches for row in batch]


def write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """Write the per-episode rows as CSV (blank where a field does not apply)."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({column: row.get(column, "") for column in COLUMNS})


def read_rows(path: Path) -> list[dict[str, str]]:
    """Read ``episodes.csv``."""
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def success_table(rows: list[dict[str, Any]]) -> dict[str, dict[int, float]]:
    """Return ``{phase: {seed: success rate}}``."""
    table: dict[str, dict[int, list[int]]] = {phase: {} for phase in PHASES}
    for row in rows:
        table[row["phase"]].setdefault(int(row["seed"]), []).append(int(row["success"]))
    return {
        phase: {seed: float(np.mean(v)) for seed, v in sorted(by_seed.items())}
        for phase, by_seed in table.items()
    }


def paired_test(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """Return mean and s.d. of ``a - b`` and the two-sided paired t-test p-value (nan if undefined)."""
    from scipy import stats

    diff = np.subtract(a, b)
    sd = float(np.std(diff, ddof=1)) if len(diff) > 1 else float("nan")
    if len(diff) < 2 or sd == 0.0:
        p = float("nan") if sd != 0.0 or np.mean(diff) != 0.0 else 1.0
    else:
        p = float(stats.ttest_rel(a, b).pvalue)
    return float(np.mean(diff)), sd, p


def discordant_pairs(rows: list[dict[str, Any]], left: str, right: str) -> tuple[int, int, float]:
    """Return (left only succeeded, right only succeeded, exact McNemar p) over paired episodes.

    Phases A, C_memory and C_random share layout and noise per (seed, episode), so each such pair
    differs only in the parameter shift.
    """
    from scipy import stats

    outcome = {(r["phase"], r["seed"], r["episode"]): int(r["success"]) for r in rows}
    keys = [(seed, episode) for phase, seed, episode in outcome if phase == left]
    left_only = sum(1 for key in keys if outcome[(left, *key)] > outcome.get((right, *key), 1))
    right_only = sum(1 for key in keys if outcome[(left, *key)] < outcome.get((right, *key), 0))
    total = left_only + right_only
    p = float(stats.binomtest(left_only, total, 0.5).pvalue) if total else 1.0
    return left_only, right_only, p


def summarize(rows: list[dict[str, Any]], elapsed_s: float | None = None) -> str:
    """Return the Markdown report: per-phase rates, paired differences, recall checks."""
    table = success_table(rows)
    seeds = sorted(table["A_baseline"])
    episodes = len([r for r in rows if r["phase"] == "A_baseline"]) // max(len(seeds), 1)
    lines = [
        f"Seeds: {len(seeds)} ({', '.join(map(str, seeds))}); episodes per phase and seed: {episodes}.",
        "",
    ]
    if elapsed_s is not None:
        lines += [f"Wall time: {elapsed_s:.0f} s.", ""]
    lines += ["| phase | success rate (mean ± s.d. over seeds) | per seed |", "|---|---|---|"]
    for phase in PHASES:
        rates = [table[phase].get(s, float("nan")) for s in seeds]
        sd = np.std(rates, ddof=1) if len(rates) > 1 else float("nan")
        per_seed = ", ".join(f"{100 * r:.0f}" for r in rates)
        lines.append(f"| {PHASE_LABELS[phase]} | {100 * np.mean(rates):.1f}% ± {100 * sd:.1f} | {per_seed} |")
    lines += ["", "| paired difference | mean ± s.d. (pp) | paired t-test p |", "|---|---|---|"]
    for left, right in COMPARISONS:
        mean, sd, p = paired_test([table[left][s] for s in seeds], [table[right][s] for s in seeds])
        lines.append(f"| {left} − {right} | {100 * mean:+.1f} ± {100 * sd:.1f} | {p:.3g} |")
    lines += [
        "",
        "Episode-level check (same layout and noise in A and both C arms; exact McNemar test):",
        "",
        "| pair | only the first succeeded | only the second succeeded | p |",
        "|---|---|---|---|",
    ]
    for left, right in COMPARISONS[:3]:
        left_only, right_only, p = discordant_pairs(rows, left, right)
        lines.append(f"| {left} vs {right} | {left_only} | {right_only} | {p:.3g} |")
    recall_rows = [r for r in rows if r["phase"] in ("C_memory", "C_random")]
    if recall_rows:
        exact = np.mean(
            [int(r["recall_matches_exact"]) for r in recall_rows if r["recall_matches_exact"] != ""]
        )
        ms = [float(r["recall_ms"]) for r in recall_rows if r["recall_ms"] not in ("", None)]
        shift = [float(r["shift_sigma"]) for r in rows if r["phase"] == "C_memory"]
        stop = [float(r["shift_stop"]) for r in rows if r["phase"] == "C_memory"]
        lateral = [float(r["shift_lateral"]) for r in rows if r["phase"] == "C_memory"]
        statuses = sorted({str(r.get("memory_status", "")) for r in rows if r["phase"] != "A_baseline"})
        lines += [
            "",
            f"Recall returned exactly the k nearest stored successes (checked by brute force): "
            f"{100 * exact:.1f}% of phase C episodes.",
            f"Recall latency: median {np.median(ms):.2f} ms, max {np.max(ms):.2f} ms." if ms else "",
            f"Memory arm parameter shift: stop_offset {1000 * np.mean(stop):+.1f} mm, "
            f"lateral_offset {1000 * np.mean(lateral):+.1f} mm on average; "
            f"size {np.mean(shift):.2f} noise s.d. (the control arm moves the same size in a random direction).",
            f"learn statuses seen: {', '.join(statuses)}.",
        ]
    return "\n".join(line for line in lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Save a bar chart of success rate per phase, with one line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = success_table(rows)
    seeds = sorted(table["A_baseline"])
    means = [100 * np.mean(list(table[p].values())) for p in PHASES]
    sds = [100 * np.std(list(table[p].values()), ddof=1) if len(seeds) > 1 else 0.0 for p in PHASES]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    x = np.arange(len(PHASES))
    ax.bar(x, means, yerr=sds, capsize=5, color=["#9aa5b1", "#9aa5b1", "#2f7ed8", "#e8a33d"], alpha=0.85)
    for seed in seeds:
        ax.plot(x, [100 * table[p][seed] for p in PHASES], color="black", alpha=0.3, marker="o", lw=1)
    ax.set_xticks(x, [PHASE_LABELS[p].replace(": ", ":\n") for p in PHASES])
    ax.set_ylabel("success rate (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"FetchPush-v4: success per phase ({len(seeds)} seeds, mean ± s.d.; lines = seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_info(args: argparse.Namespace, seeds: list[int], elapsed: float) -> dict[str, Any]:
    """Return how the run was made: settings, wall time, machine and package versions."""
    from importlib.metadata import version

    return {
        "seeds": seeds,
        "episodes_per_phase": args.episodes,
        "k": args.k,
        "workers": args.workers,
        "embed_backend": args.embed_backend,
        "wall_time_s": round(elapsed, 1),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "packages": {name: version(name) for name in ("gymnasium", "gymnasium-robotics", "mujoco", "numpy")},
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=5, help="number of seeds (0..N-1)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--episodes", type=int, default=100, help="episodes per phase and seed")
    parser.add_argument("--k", type=int, default=5, help="successful episodes recalled per episode")
    parser.add_argument("--workers", type=int, default=2, help="parallel processes (one seed each)")
    parser.add_argument("--embed-backend", default="none", help='robotmem embedder ("none", "hash", ...)')
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--analyze-only", action="store_true", help="re-read episodes.csv, skip running")
    args = parser.parse_args(argv)

    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / "episodes.csv"
    info_path = args.out / "run_info.json"
    elapsed: float | None = None
    if args.analyze_only:
        rows: list[dict[str, Any]] = list(read_rows(csv_path))
        if info_path.exists():
            elapsed = json.loads(info_path.read_text()).get("wall_time_s")
    else:
        started = time.perf_counter()
        seeds = list(range(args.first_seed, args.first_seed + args.seeds))
        embed = None if args.embed_backend == "default" else args.embed_backend
        rows = run_all(seeds, args.episodes, args.k, args.workers, embed)
        elapsed = time.perf_counter() - started
        write_rows(rows, csv_path)
        info_path.write_text(json.dumps(run_info(args, seeds, elapsed), indent=2) + "\n")
        rows = list(read_rows(csv_path))
    seeds_path = args.out / "seeds.csv"
    table = success_table(rows)
    with seeds_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["seed", *PHASES])
        for seed in sorted(table["A_baseline"]):
            writer.writerow([seed, *(f"{table[p][seed]:.4f}" for p in PHASES)])
    report = summarize(rows, elapsed)
    (args.out / "summary.md").write_text(report)
    plot(rows, args.out / "success_rate.png")
    print(report)
    print(f"wrote {csv_path}, {seeds_path}, {args.out / 'summary.md'}, {args.out / 'success_rate.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
