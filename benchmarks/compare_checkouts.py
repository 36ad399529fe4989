"""Time two checkouts of robotmem on the same workload, alternating, and print the ratios of their medians.

    python benchmarks/compare_checkouts.py BASELINE_DIR [--n 10000] [--rounds 4] [--repeat 30]

BASELINE_DIR is another checkout (``git worktree add /tmp/base <commit>``). Each round runs
``benchmarks.scale measure`` once in the baseline and once in this checkout, each with its own ``src`` first
on ``PYTHONPATH`` and its own benchmark code, so a change of code is measured and not a change of
settings (``benchmarks.run --compare`` does that). Alternating rounds spread the load of a shared machine
over both sides; the table gives, per operation, the median over rounds of each side's p50 and the ratio
this / baseline (below 1 = this checkout is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent


def measure(checkout: Path, n: int, repeat: int, out: Path) -> dict[str, Any]:
    """Run one ``benchmarks.scale measure`` in ``checkout``; return its result."""
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    command = [sys.executable, "-m", "benchmarks.scale", "measure", "--n", str(n), "--repeat", str(repeat)]
    command += ["--no-real-model", "--out", str(out)]
    subprocess.run(
        command, cwd=checkout, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def medians(results: list[dict[str, Any]]) -> dict[str, float]:
    """Operation → median over rounds of its p50 (ms), plus the per-second throughputs."""
    out: dict[str, float] = {}
    for name in results[0]["timings"]:
        out[name] = statistics.median(r["timings"][name]["p50"] for r in results if name in r["timings"])
    for key, value in results[0].items():
        if key.endswith("_per_second") and isinstance(value, (int, float)):
            out[key] = statistics.median(r[key] for r in results)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline", type=Path, help="the other checkout")
    parser.add_argument("--n", type=int, default=10_000, help="memories in the database (default 10000)")
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds (default 4)")
    parser.add_argument("--repeat", type=int, default=30, help="timed calls per operation and round")
    args = parser.parse_args(argv)
    sides: dict[str, list[dict[str, Any]]] = {"baseline": [], "this": []}
    with tempfile.TemporaryDirectory() as scratch:
        for round_index in range(args.rounds):
            for side, checkout in (("baseline", args.baseline.resolve()), ("this", HERE)):
                out = Path(scratch) / f"{side}-{round_index}.json"
                sides[side].append(measure(checkout, args.n, args.repeat, out))
            print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)
    base, this = medians(sides["baseline"]), medians(sides["this"])
    print(f"N={args.n:,}, {args.rounds} alternating rounds x {args.repeat} calls; medians of p50")
    print("| operation | baseline | this | this / baseline |")
    print("|---|---|---|---|")
    for name in base:
        if name in this:
            print(f"| {name} | {base[name]:.3f} | {this[name]:.3f} | {this[name] / base[name]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
