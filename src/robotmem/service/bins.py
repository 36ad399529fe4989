"""The binning and intervals of the parameters-against-outcome view: round-width bins, which bin a value
falls in, each bin's success rate with its Wilson score interval, and a grid of two parameters' bins.

Pure functions: no store, no clock. The bins and cells are records; ``formats/serialize.py`` writes them.
"""

from __future__ import annotations

import bisect
import math
import sys
from collections.abc import Sequence

from robotmem.records import RateBin, RateCell

WILSON_Z = 1.959963984540054  # two-sided 95 %


def wilson_interval(successes: int, count: int, z: float = WILSON_Z) -> tuple[float, float]:
    """Return the Wilson score interval of ``successes`` out of ``count`` (default 95 %).

    Raises ``ValueError`` when ``count`` is not positive or ``successes`` is outside 0..count.
    """
    if count <= 0 or not 0 <= successes <= count:
        raise ValueError(f"wilson_interval: {successes} successes of {count}")
    rate = successes / count
    shrink = 1 + z * z / count
    centre = (rate + z * z / (2 * count)) / shrink
    half = z * math.sqrt(rate * (1 - rate) / count + z * z / (4 * count * count)) / shrink
    # At 0 and at every success the bound is exactly the rate; rounding would leave it a hair off.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == count else min(1.0, centre + half)
    return low, high


def _nice_step(span: float, bins: int) -> float:
    raw = span / bins
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if factor * power >= raw * (1 - 1e-12):
            return factor * power
    return 10.0 * power


def _tidy(value: float) -> float:
    return float(f"{value:.12g}")


def default_bins(count: int, grid: bool = False) -> int:
    """Return about how many bins ``count`` values get: √count (5 to 20), or per axis of a grid ∜count·1.5 (3 to 12)."""
    if grid:
        return min(12, max(3, round(math.sqrt(math.sqrt(max(count, 1))) * 1.5)))
    return min(20, max(5, round(math.sqrt(max(count, 1)))))


def bin_edges(
    lowest: float, highest: float, bins: int | None, count: int, *, grid: bool = False
) -> list[float]:
    """Return ascending edges of bins of one round width covering ``lowest..highest``.

    ``bins`` is the most bins wanted; without it about ``default_bins(count, grid)``, which a round width
    may exceed by one. Bin i holds ``edges[i] <= v < edges[i + 1]``; the last bin also holds its upper
    edge. A single value gets one bin of a round width around it. A range too narrow for floats to
    hold round widths in (next to zero, or far from it) gets one bin holding it.
    """
    if not (math.isfinite(lowest) and math.isfinite(highest)) or lowest > highest:
        raise ValueError(f"bin_edges: no range {lowest}..{highest}")
    wanted = bins if bins is not None else default_bins(count, grid)
    if highest == lowest:
        width = 10.0 ** math.floor(math.log10(abs(lowest))) if lowest else 1.0
        edges = [_tidy(lowest - width / 2), _tidy(lowest + width / 2)]
    elif (highest - lowest) / wanted < sys.float_info.min:
        edges = []
    else:
        edges = _round_edges(lowest, highest, bins, wanted)
    if _covers(edges, lowest, highest):
        return edges
    return [lowest, math.nextafter(highest, math.inf)]


def _covers(edges: Sequence[float], lowest: float, highest: float) -> bool:
    """Whether ``edges`` are finite, strictly ascending and cover ``lowest..highest``."""
    return (
        len(edges) >= 2
        and all(math.isfinite(edge) for edge in edges)
        and all(a < b for a, b in zip(edges, edges[1:], strict=False))
        and edges[0] <= lowest
        and highest <= edges[-1]
    )


def _round_edges(lowest: float, highest: float, bins: int | None, wanted: int) -> list[float]:
    step = _nice_step(highest - lowest, wanted)
    start = math.floor(lowest / step) * step
    count = max(1, math.floor((highest - start) / step) + 1)
    if bins is not None and count > bins:
        # A round width may need a bin more than asked: spread the range evenly instead.
        step, start, count = (highest - lowest) / bins, lowest, bins
    edges = [start + i * step for i in range(count + 1)]
    tidy = [_tidy(edge) for edge in edges]
    if all(a < b for a, b in zip(tidy, tidy[1:], strict=False)):
        edges = tidy
    return edges


def bin_index(edges: Sequence[float], value: float) -> int:
    """Return the bin of ``value`` among ``edges`` (``bin_edges``' rule), clamped to the first and last bin."""
    return min(max(bisect.bisect_right(edges, value) - 1, 0), len(edges) - 2)


def rate_bins(edges: Sequence[float], values: Sequence[tuple[float, bool]]) -> list[RateBin]:
    """Return each bin's count, successes, success rate and 95 % Wilson interval (None when empty)."""
    counts = [0] * (len(edges) - 1)
    wins = [0] * (len(edges) - 1)
    for value, success in values:
        index = bin_index(edges, value)
        counts[index] += 1
        wins[index] += success
    bins: list[RateBin] = []
    for index, (count, successes) in enumerate(zip(counts, wins, strict=True)):
        low, high = wilson_interval(successes, count) if count else (None, None)
        bins.append(
            RateBin(
                lo=edges[index],
                hi=edges[index + 1],
                count=count,
                successes=successes,
                rate=round(successes / count, 6) if count else None,
                low=None if low is None else round(low, 6),
                high=None if high is None else round(high, 6),
            )
        )
    return bins


def rate_cells(
    x_edges: Sequence[float], y_edges: Sequence[float], values: Sequence[tuple[float, float, bool]]
) -> list[RateCell]:
    """Return the non-empty cells of a grid of bins with their counts and success rates."""
    grid: dict[tuple[int, int], list[int]] = {}
    for x, y, success in values:
        tally = grid.setdefault((bin_index(x_edges, x), bin_index(y_edges, y)), [0, 0])
        tally[0] += 1
        tally[1] += success
    return [
        RateCell(x_bin=i, y_bin=j, count=n, successes=s, rate=round(s / n, 6))
        for (i, j), (n, s) in sorted(grid.items())
    ]
