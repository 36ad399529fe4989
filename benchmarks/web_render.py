"""Render time of each web UI view after its data has arrived, measured in the browser.

Builds the web demo's store with ``--episodes`` episodes (1,900 give about 10,000 memories; cached under
``build/web-bench/``), serves it on a loopback port and opens each view in headless Chromium
(``/usr/bin/chromium``) ``--repeat`` times. The page times every render itself: ``performance.now()``
from the moment its data is in hand to the DOM and plots drawn, recorded as the measure
``render:<view>``; this script reads those measures, so network and server time are not counted.

``--compare DIR`` also renders 10,000 random points as a scatter plot with each charting library whose
bundle is in ``DIR`` (uPlot through the page's own map; Observable Plot with d3; Vega-Lite through
Vega's canvas renderer), e.g. after
``cd DIR && npm pack @observablehq/plot@0.6.17 d3@7 vega@5 vega-lite@5`` and unpacking each tarball into
a folder named after it. ``--screenshots DIR`` saves one PNG of each view (palette-reduced, small).

    .venv/bin/python benchmarks/web_render.py --episodes 1900 --repeat 7
    .venv/bin/python benchmarks/web_render.py --episodes 1900 --compare /tmp/chartlibs

Prints one JSON object; exits 1 when a view's median render time exceeds ``--limit`` milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
# (name, hash to open, the measure it records)
VIEWS = [
    ("dashboard", "#/", "render:dashboard"),
    ("episodes", "#/sessions", "render:sessions"),
    ("map", "#/map", "render:map"),
    ("parameters", "#/params", "render:params"),
    ("failures", "#/failures", "render:failures"),
]


def build_store(path: Path, episodes: int) -> None:
    """Fill ``path`` with the demo's episodes unless it already holds them."""
    from robotmem import RobotMemory
    from robotmem.adapters.web.demo import _StepClock, seed_demo
    from robotmem.config import Settings

    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    clock = _StepClock(datetime.now(timezone.utc) - timedelta(days=30))
    settings = Settings(home=path.parent / "home")
    started = time.perf_counter()
    with RobotMemory(path, embed_backend="hash", settings=settings, clock=clock) as memory:
        seed_demo(memory, clock, episodes, days=30)
    print(f"built {path} in {time.perf_counter() - started:.0f} s", file=sys.stderr)


@contextmanager
def serving(path: Path) -> Iterator[str]:
    """The web UI of the store at ``path`` (hashing embedder) on a loopback port: its base address."""
    from robotmem import RobotMemory
    from robotmem.config import Settings

    settings = Settings(home=path.parent / "home")
    with RobotMemory(path, embed_backend="hash", settings=settings) as memory, served(memory) as base:
        yield base


@contextmanager
def served(memory: Any, **app: Any) -> Iterator[str]:
    """The web UI of an open ``RobotMemory`` (``create_app(memory, **app)``) on a loopback port (werkzeug,
    one thread per request), while the block runs: its base address. The browser tests serve with it too."""
    from werkzeug.serving import make_server

    from robotmem.adapters.web import create_app

    server = make_server("127.0.0.1", 0, create_app(memory, **app), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=5)


def wait_until(page: Any, expression: str, timeout_s: float = 60.0) -> None:
    """Poll ``expression`` in the page (the page's CSP forbids the eval behind ``wait_for_function``)."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(f"() => Boolean({expression})"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{expression} did not hold within {timeout_s} s")
        time.sleep(0.01)


def last_measure(page: Any, name: str) -> float:
    wait_until(page, f"performance.getEntriesByName({json.dumps(name)}).length > 0")
    duration: float = page.evaluate(f"performance.getEntriesByName({json.dumps(name)}).at(-1).duration")
    return duration


def open_view(page: Any, hash_: str, measure: str) -> float:
    """Open a view afresh (by way of another view) and return its render time in milliseconds."""
    page.evaluate("location.hash = '#/doctor'")
    page.wait_for_selector("#doctor-report")
    page.evaluate("performance.clearMeasures()")
    page.evaluate(f"location.hash = {json.dumps(hash_)}")
    return last_measure(page, measure)


def heat_map(page: Any) -> float:
    page.evaluate("location.hash = '#/params'")
    page.wait_for_selector("#param-y")
    page.evaluate("performance.clearMeasures()")
    page.select_option("#param-y", "params.approach_speed")
    duration = last_measure(page, "render:params")
    page.select_option("#param-y", "")
    page.wait_for_selector("#param-bin-table")
    return duration


def episode(page: Any, busiest: bool = False) -> float:
    """Open the newest episode (or, ``busiest``, the one with most memories on the first page)."""
    page.evaluate("location.hash = '#/sessions'")
    page.wait_for_selector("main tbody tr a")
    rows = page.locator("main tbody tr").all()
    row = max(rows, key=lambda r: int(r.locator("td").last.inner_text())) if busiest else rows[0]
    return open_view(page, row.locator("a").first.get_attribute("href"), "render:session")


def time_views(page: Any, base: str, repeat: int) -> dict[str, list[float]]:
    page.goto(base + "/")
    last_measure(page, "render:dashboard")
    times: dict[str, list[float]] = {name: [] for name, _, _ in VIEWS}
    times.update({"parameters (heat map)": [], "episode timeline": []})
    for _ in range(repeat):
        for name, hash_, measure in VIEWS:
            times[name].append(open_view(page, hash_, measure))
        times["parameters (heat map)"].append(heat_map(page))
        times["episode timeline"].append(episode(page))
    return times


def data_sizes(page: Any) -> dict[str, int]:
    sizes: dict[str, int] = page.evaluate(
        """async () => {
            const get = async (path) => (await fetch(path)).json();
            const map = await get("/api/map?limit=10000");
            const params = await get("/api/params/outcome?x=params.grip_force&points=10000");
            const stats = await get("/api/stats");
            return {memories: stats.memories.total, sessions: stats.sessions.total,
                    map_points: map.points.length, parameter_points: params.points.length,
                    parameter_bins: params.bins.length};
        }"""
    )
    return sizes


def save_screenshots(page: Any, base: str, folder: Path) -> list[str]:
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    page.set_viewport_size({"width": 1100, "height": 900})
    shots = [("dashboard", "#/", "render:dashboard"), ("episodes", "#/sessions", "render:sessions")]
    shots += [("map", "#/map", "render:map"), ("parameters", "#/params", "render:params")]
    shots += [("heat-map", None, "heat"), ("episode", None, "episode")]
    for name, hash_, measure in shots:
        if measure == "heat":
            heat_map(page)
            page.evaluate("performance.clearMeasures()")
            page.select_option("#param-y", "params.approach_speed")
            last_measure(page, "render:params")
        elif measure == "episode":
            episode(page, busiest=True)
        else:
            open_view(page, hash_, measure)
        page.wait_for_timeout(300)
        target = folder / f"{name}.png"
        page.screenshot(path=str(target))
        Image.open(target).convert("RGB").quantize(colors=256).save(target, optimize=True)
        saved.append(str(target))
    return saved


COMPARE_PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head>
<body><div id="plot" style="width: 900px"></div></body></html>"""

# Each renders `points` ([{x, y, success}]) as an equal-aspect scatter coloured by success into #plot.
RENDERERS = {
    "uPlot 1.6.32 (the page's map)": """(points) => {
        const items = points.map((p) => ({x: p.x, y: p.y, success: p.success}));
        Charts.map(document.getElementById("plot"), {width: 900, height: 560, unit: "m", labels: ["x", "y"],
            layers: [{id: "memories", items}]});
    }""",
    "Observable Plot 0.6.17 + d3 7": """(points) => {
        const node = Plot.plot({width: 900, height: 560, aspectRatio: 1, color: {domain: [true, false],
            range: ["#1a7f37", "#cf222e"]}, marks: [Plot.dot(points, {x: "x", y: "y", fill: "success", r: 3.5})]});
        document.getElementById("plot").append(node);
    }""",
    "Vega-Lite 5 via Vega 5 (canvas)": """async (points) => {
        const spec = vegaLite.compile({width: 900, height: 560, data: {values: points},
            mark: {type: "circle", size: 40}, params: [{name: "grid", select: "interval", bind: "scales"}],
            encoding: {x: {field: "x", type: "quantitative"}, y: {field: "y", type: "quantitative"},
                       color: {field: "success", type: "nominal"}}}).spec;
        const view = new vega.View(vega.parse(spec), {renderer: "canvas", container: "#plot"});
        await view.runAsync();
    }""",
}
BUNDLES = {
    "uPlot 1.6.32 (the page's map)": [
        ROOT / "src/robotmem/adapters/web/static/vendor/uplot/uPlot.iife.min.js",
        ROOT / "src/robotmem/adapters/web/static/charts.js",
    ],
    "Observable Plot 0.6.17 + d3 7": [
        "d3-*/package/dist/d3.min.js",
        "observablehq-plot-*/package/dist/plot.umd.min.js",
    ],
    "Vega-Lite 5 via Vega 5 (canvas)": [
        "vega-5*/package/build/vega.min.js",
        "vega-lite-*/package/build/vega-lite.min.js",
    ],
}


def compare_libraries(browser: Any, folder: Path, repeat: int, count: int = 10000) -> dict[str, Any]:
    """Render ``count`` points with each library once, then ``repeat`` times more; return sizes and times."""
    import gzip
    import random

    rng = random.Random(3)
    points = [
        {"x": rng.gauss(1.2, 0.22), "y": rng.gauss(0.6, 0.14), "success": rng.random() < 0.4}
        for _ in range(count)
    ]
    results: dict[str, Any] = {}
    for name, patterns in BUNDLES.items():
        files = [p if isinstance(p, Path) else next(iter(sorted(folder.glob(p))), None) for p in patterns]
        if any(f is None for f in files):
            continue
        assert all(isinstance(f, Path) for f in files)
        sizes = [Path(f).read_bytes() for f in files if f is not None]
        page = browser.new_page(viewport={"width": 1000, "height": 700})
        page.set_content(COMPARE_PAGE)
        for f in files:
            page.add_script_tag(path=str(f))
        # The first render also compiles the library's code; the later ones are what a revisit costs.
        times = [
            page.evaluate(
                f"""async (points) => {{
                    const render = {RENDERERS[name]};
                    const old = document.getElementById("plot");
                    const fresh = document.createElement("div");
                    fresh.id = "plot";
                    fresh.style.width = "900px";
                    old.replaceWith(fresh);
                    const start = performance.now();
                    await render(points);
                    return performance.now() - start;
                }}""",
                points,
            )
            for _ in range(repeat + 1)
        ]
        page.close()
        results[name] = {
            "bytes": sum(len(b) for b in sizes),
            "gzip_bytes": sum(len(gzip.compress(b, 9)) for b in sizes),
            "first_ms": round(times[0], 1),
            "median_ms": round(statistics.median(times[1:]), 1),
            "times_ms": [round(t, 1) for t in times[1:]],
        }
    return results


def main() -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--episodes", type=int, default=1900)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--limit", type=float, default=300.0, help="median render time allowed per view (ms)")
    parser.add_argument("--store", type=Path, default=None, help="default build/web-bench/demo-<episodes>.db")
    parser.add_argument("--compare", type=Path, default=None, help="folder with unpacked charting libraries")
    parser.add_argument("--screenshots", type=Path, default=None, help="folder for one PNG per view")
    args = parser.parse_args()
    store = args.store or ROOT / "build" / "web-bench" / f"demo-{args.episodes}.db"
    build_store(store, args.episodes)
    report: dict[str, Any] = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    report["load_average"] = [round(x, 2) for x in os.getloadavg()]
    with serving(store) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(base + "/")
        report["data"] = data_sizes(page)
        times = time_views(page, base, args.repeat)
        report["render_ms"] = {
            name: {"median": round(statistics.median(t), 1), "max": round(max(t), 1), "runs": len(t)}
            for name, t in times.items()
        }
        if args.screenshots is not None:
            report["screenshots"] = save_screenshots(page, base, args.screenshots)
        if args.compare is not None:
            report["libraries_10k_points"] = compare_libraries(browser, args.compare, args.repeat)
        browser.close()
    print(json.dumps(report, indent=2))
    slow = [name for name, t in report["render_ms"].items() if t["median"] > args.limit]
    return 1 if slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
