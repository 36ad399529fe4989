"""The web page in a real headless Chromium: browse, search, detail, edit, forget, episodes and their
timelines, the map, parameters against outcome, keyboard use; on a small store and on the demo store.

Screenshots land in ``test-artifacts/web/`` (git-ignored). The tests use the system Chromium at
/usr/bin/chromium and are skipped (with the reason) when it is absent; no browser is downloaded. Every
test fails on an uncaught error or a console error of the page.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("flask_openapi3")

from benchmarks.web_render import served  # noqa: E402

from robotmem import RobotMemory  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
SCRIPT_PAYLOAD = "<script>window.__pwned = 1</script> note from the operator"
IMG_PAYLOAD = '<img src="x" onerror="window.__pwned = 2"> camera glitch'

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="no system Chromium at /usr/bin/chromium"),
]


def _sync_api() -> Any:
    """Playwright's sync API, imported at use: a fast run collects this module without loading it."""
    return pytest.importorskip("playwright.sync_api")


def seed(memory: RobotMemory) -> dict[str, Any]:
    session = memory.start_session(context={"robot": {"id": "arm-01"}, "task": "push"})["session_id"]
    grip = memory.learn(
        "grip_force=12.5N yields highest grasp success rate",
        context={
            "params": {"grip_force": {"value": 12.5, "unit": "N"}},
            "spatial": {"object_position": [1.3, 0.7, 0.42]},
            "robot": {"id": "arm-01", "type": "UR5"},
            "task": {"name": "grasp", "success": True},
        },
    )["memory_id"]
    failed = memory.learn(
        "Episode 3: failed, reward=-50, 50 steps",
        context={"spatial": {"object_position": [0.4, 0.2, 0.42]}, "task": {"success": False}},
    )["memory_id"]
    memory.learn(
        "机械臂抓取玻璃杯时夹持力不能超过20牛",
        context={"spatial": {"object_position": [0.9, 1.1, 0.42]}, "task": {"success": True}},
    )
    trajectory = memory.save_perception(
        "Grasp trajectory: 30 steps, success",
        perception_type="procedural",
        data={"sampled_actions": [[0.1, -0.3, 0.05, 0.8]]},
    )["memory_id"]
    memory.end_session(session, outcome_score=0.8)
    script = memory.learn(SCRIPT_PAYLOAD)["memory_id"]
    image = memory.learn(IMG_PAYLOAD, context={"robot": {"id": "<b>bold</b>"}})["memory_id"]
    return {
        "session": session,
        "grip": grip,
        "failed": failed,
        "trajectory": trajectory,
        "script": script,
        "image": image,
    }


@pytest.fixture
def site(memory: RobotMemory) -> Iterator[tuple[str, dict[str, Any]]]:
    ids = seed(memory)
    with served(memory) as base:
        yield base, ids


@pytest.fixture
def page() -> Iterator[Any]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with _sync_api().sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(
            viewport={"width": 1280, "height": 900}, locale="zh-CN", timezone_id="UTC"
        )
        tab = context.new_page()
        tab.errors = []  # type: ignore[attr-defined]
        tab.on("pageerror", lambda error: tab.errors.append(str(error)))  # type: ignore[attr-defined]
        tab.on(  # type: ignore[attr-defined]
            "console",
            lambda message: message.type == "error" and tab.errors.append(f"console: {message.text}"),
        )
        tab.on("dialog", lambda dialog: (tab.errors.append(f"dialog: {dialog.message}"), dialog.dismiss()))  # type: ignore[attr-defined]
        tab.set_default_timeout(15000)
        yield tab
        context.close()
        browser.close()


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_dashboard_search_detail_edit_forget(site: tuple[str, dict[str, Any]], page: Any) -> None:
    base, ids = site
    expect = _sync_api().expect
    page.goto(base + "/")
    expect(page.locator("#totals")).to_contain_text("6")  # 6 memories
    expect(page.locator("#totals")).to_contain_text("perceptions")
    expect(page.locator("#outcome-chart canvas")).to_have_count(1)
    expect(page.locator("table[aria-label='Categories'] tr").first).to_be_visible()
    expect(page.locator("#token")).to_be_hidden()  # this server needs no token
    shot(page, "01-dashboard")

    page.click("#nav a[data-view=memories]")
    expect(page.locator("#memory-results")).to_contain_text("机械臂抓取玻璃杯时夹持力不能超过20牛")
    shot(page, "02-memories-chinese")
    page.fill("#search-input", "grip force")
    page.press("#search-input", "Enter")
    expect(page.locator("#memory-results")).to_contain_text("hybrid")
    first_row = page.locator("#memory-results tbody tr").first
    expect(first_row).to_contain_text("grip_force=12.5N yields highest grasp success rate")
    expect(page.locator("#memory-results thead")).to_contain_text("relevance")
    expect(first_row.locator("td.relevance")).to_have_text(re.compile(r"^[01]\.\d\d$"))
    shot(page, "03-search")

    first_row.click()
    expect(page.locator("#memory-content")).to_have_text("grip_force=12.5N yields highest grasp success rate")
    expect(page.locator("[data-section=params]")).to_contain_text("12.5 N")
    expect(page.locator("[data-section=spatial]")).to_contain_text("[1.3,0.7,0.42]")
    expect(page.locator("[data-section=robot]")).to_contain_text("UR5")
    expect(page.locator("[data-section=task]")).to_contain_text("grasp")
    expect(page.locator("main")).to_contain_text("robot_id")
    expect(page.locator("main")).to_contain_text(memory_uid(page, base, ids["grip"]))
    shot(page, "04-detail")

    page.fill("#edit-content", "grip_force=14N yields highest grasp success rate on wet cups")
    page.click("#save-edit")
    expect(page.locator("#status")).to_contain_text("Saved memory")
    expect(page.locator("#memory-content")).to_have_text(
        "grip_force=14N yields highest grasp success rate on wet cups"
    )
    shot(page, "05-edited")
    page.goto(base + "/#/memories")
    page.fill("#search-input", "wet cups")
    page.press("#search-input", "Enter")
    expect(page.locator("#memory-results tbody tr").first).to_contain_text("grip_force=14N")

    page.goto(f"{base}/#/memory/{ids['failed']}")
    page.fill("#forget-reason", "the reward was logged wrong")
    page.click("#forget")
    expect(page.locator("#status")).to_contain_text(f"Forgot memory #{ids['failed']}")
    expect(page.locator("h2")).to_contain_text("invalidated")
    expect(page.locator("main")).to_contain_text("the reward was logged wrong")
    shot(page, "06-forgotten")

    page.goto(f"{base}/#/memory/{ids['trajectory']}")
    expect(page.locator("#payload")).to_contain_text("sampled_actions")
    assert page.errors == []  # type: ignore[attr-defined]


def memory_uid(page: Any, base: str, memory_id: int) -> str:
    uid: str = page.request.get(f"{base}/api/memory/{memory_id}").json()["uid"]
    return uid


def test_session_timeline_map_failures_and_doctor(site: tuple[str, dict[str, Any]], page: Any) -> None:
    base, ids = site
    expect = _sync_api().expect
    page.goto(base + "/#/sessions")
    expect(page.locator("main tbody tr")).to_have_count(1)
    row = page.locator("main tbody tr").first
    expect(row).to_contain_text("0.80")
    expect(row).to_contain_text("arm-01")
    expect(row).to_contain_text("push")
    expect(row.locator("[data-outcome]")).to_have_attribute("data-outcome", "success")
    row.click()
    timeline = page.locator("#timeline li")
    expect(timeline).to_have_count(4)
    expect(timeline.nth(0)).to_contain_text("grip_force=12.5N")
    expect(timeline.nth(3)).to_contain_text("Grasp trajectory")
    assert "ok" in (timeline.nth(0).get_attribute("class") or "")
    assert "bad" in (timeline.nth(1).get_attribute("class") or "")
    expect(page.locator("#timeline-chart canvas")).to_have_count(1)
    shot(page, "07-session-timeline")

    page.click("#nav a[data-view=map]")
    expect(page.locator("#map-summary")).to_contain_text(
        "Showing 3 of 3 memories with spatial.object_position"
    )
    page.select_option("#map-plane", "0,2")
    expect(page.locator("#map-summary")).to_contain_text("x–z")
    page.select_option("#map-plane", "0,1")
    shot(page, "08-map")
    click_point(page, "#map-plot", ids["failed"])
    expect(page.locator("#memory-content")).to_have_text("Episode 3: failed, reward=-50, 50 steps")

    page.click("#nav a[data-view=failures]")
    expect(page.locator("main")).to_contain_text("Episode 3: failed")
    expect(page.locator("main")).to_contain_text("No failed episode.")  # scored 0.80: not a failure
    shot(page, "09-failures")
    page.click("#nav a[data-view=doctor]")
    expect(page.locator("#doctor-report")).to_contain_text("search_mode")
    expect(page.locator("main h2")).to_contain_text("ok")
    shot(page, "10-doctor")
    assert page.errors == []  # type: ignore[attr-defined]


def click_point(page: Any, plot: str, memory_id: int) -> None:
    """Click the map's point of ``memory_id`` where the plot's scales put it on the screen."""
    point = page.evaluate(
        """async ([id]) => {
            const found = await (await fetch(`/api/memory/${id}`)).json();
            return found.spatial.object_position;
        }""",
        [memory_id],
    )
    left, top = page.evaluate(
        """([plot, x, y]) => {
            const u = document.querySelector(plot).uplot;
            const rect = u.over.getBoundingClientRect();
            return [rect.left + u.valToPos(x, "x"), rect.top + u.valToPos(y, "y")];
        }""",
        [plot, point[0], point[1]],
    )
    page.mouse.click(left, top)


def test_stored_markup_never_executes(site: tuple[str, dict[str, Any]], page: Any) -> None:
    base, ids = site
    expect = _sync_api().expect
    page.goto(base + "/#/memories")
    expect(page.locator("#memory-results")).to_contain_text(SCRIPT_PAYLOAD)
    expect(page.locator("#memory-results")).to_contain_text(IMG_PAYLOAD)
    for memory_id, payload in ((ids["script"], SCRIPT_PAYLOAD), (ids["image"], IMG_PAYLOAD)):
        page.goto(f"{base}/#/memory/{memory_id}")
        expect(page.locator("#memory-content")).to_have_text(payload)
    expect(page.locator("[data-section=robot]")).to_contain_text("<b>bold</b>")
    shot(page, "11-markup-is-text")
    page.goto(base + "/#/memories")
    page.fill("#search-input", "operator")
    page.press("#search-input", "Enter")
    expect(page.locator("#memory-results")).to_contain_text(SCRIPT_PAYLOAD)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("main script, main img").count() == 0
    assert page.errors == []  # type: ignore[attr-defined]


# ---- the demo store: thousands of memories ----------------------------------------------------------

DEMO_EPISODES = 400  # about 2,100 memories


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, RobotMemory]]:
    """The web demo's store (``adapters/web/demo.py``) served on a loopback port."""
    from datetime import datetime, timedelta, timezone

    from robotmem.adapters.web.demo import _StepClock, seed_demo
    from robotmem.config import Settings

    home = tmp_path_factory.mktemp("demo")
    clock = _StepClock(datetime.now(timezone.utc) - timedelta(days=7))
    settings = Settings(home=home / "home")
    with RobotMemory(home / "demo.db", embed_backend="hash", settings=settings, clock=clock) as memory:
        seed_demo(memory, clock, DEMO_EPISODES)
        with served(memory) as base:
            yield base, memory


def scale_of(page: Any, plot: str) -> dict[str, float]:
    """Pixels per unit on x and y and the x span, measured from the plot's rendered scales."""
    measured: dict[str, float] = page.evaluate(
        """(plot) => {
            const u = document.querySelector(plot).uplot;
            return {
                x: u.valToPos(1, "x") - u.valToPos(0, "x"),
                y: u.valToPos(0, "y") - u.valToPos(1, "y"),
                span: u.scales.x.max - u.scales.x.min,
            };
        }""",
        plot,
    )
    return measured


def all_memories(memory: RobotMemory) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while True:
        page = memory.list_memories(limit=500, offset=len(found), order="oldest")
        found += page["memories"]
        if len(found) >= page["total"]:
            return found


def test_map_has_equal_scales_zooms_pans_and_opens_points(demo: tuple[str, RobotMemory], page: Any) -> None:
    base, memory = demo
    expect = _sync_api().expect
    assert memory.stats()["memories"]["total"] > 2000
    page.goto(base + "/#/map")
    expect(page.locator("#map-plot canvas")).to_have_count(1)
    # The field most memories carry, not the alphabetically first (charging_dock has four).
    assert page.locator("#map-field").input_value() == "spatial.object_position"
    total = memory.map_view()["total"]
    expect(page.locator("#map-summary")).to_contain_text(
        f"Showing {total} of {total} memories with spatial.object_position"
    )
    before = scale_of(page, "#map-plot")
    assert before["x"] == pytest.approx(before["y"], rel=1e-9) and before["x"] > 10
    shot(page, "20-map")

    box = page.locator("#map-plot .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 3, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -400)
    zoomed = scale_of(page, "#map-plot")
    assert zoomed["x"] > before["x"] * 1.5 and zoomed["x"] == pytest.approx(zoomed["y"], rel=1e-9)
    page.mouse.move(box["x"] + 200, box["y"] + 200)
    page.mouse.down()
    page.mouse.move(box["x"] + 260, box["y"] + 230, steps=4)
    page.mouse.up()
    panned = scale_of(page, "#map-plot")
    assert panned["x"] == pytest.approx(zoomed["x"]) and panned["span"] == pytest.approx(zoomed["span"])
    page.keyboard.press("0")  # the plot has no focus yet: nothing happens
    page.locator("#map-plot .uplot").focus()
    page.keyboard.press("0")
    assert scale_of(page, "#map-plot")["x"] == pytest.approx(before["x"], rel=1e-6)

    # A point with no other within 10 pixels opens its own memory when clicked.
    target = page.evaluate(
        """async () => {
            const u = document.querySelector("#map-plot").uplot;
            const points = (await (await fetch("/api/map?limit=10000")).json()).points;
            const at = points.map((p) => [p, u.valToPos(p.coordinates[0], "x"), u.valToPos(p.coordinates[1], "y")]);
            const width = u.over.clientWidth, height = u.over.clientHeight;
            for (const [p, x, y] of at) {
                if (x < 20 || y < 20 || x > width - 20 || y > height - 20) continue;
                if (at.every(([q, qx, qy]) => q === p || Math.hypot(qx - x, qy - y) > 10)) return p.memory_id;
            }
            return null;
        }"""
    )
    assert target is not None
    click_point(page, "#map-plot", target)
    expect(page).to_have_url(f"{base}/#/memory/{target}")
    expect(page.locator("#memory-content")).to_have_text(memory.get_memory(target)["content"])
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_map_follows_a_resized_window_with_equal_scales(demo: tuple[str, RobotMemory], page: Any) -> None:
    base, _ = demo
    expect = _sync_api().expect
    page.goto(base + "/#/map")
    expect(page.locator("#map-plot canvas")).to_have_count(1)
    wide = page.evaluate("() => document.querySelector('#map-plot').uplot.width")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.set_viewport_size({"width": 760, "height": 900})
    page.wait_for_function(f"() => document.querySelector('#map-plot').uplot.width < {wide} - 200")
    narrow = scale_of(page, "#map-plot")
    assert narrow["x"] == pytest.approx(narrow["y"], rel=1e-9)
    assert page.evaluate("() => document.querySelector('#map-plot').uplot.width") <= 760
    assert not [url for url in requests if "/api/" in url]  # drawn again from what it had
    assert page.errors == []  # type: ignore[attr-defined]


def test_map_time_window_counts_what_the_store_counts(demo: tuple[str, RobotMemory], page: Any) -> None:
    base, memory = demo
    expect = _sync_api().expect
    page.goto(base + "/#/map")
    expect(page.locator("#map-plot canvas")).to_have_count(1)
    times = sorted(m["observed_at"] for m in all_memories(memory))
    since, until = times[len(times) // 4][:16], times[len(times) // 2][:16]
    page.select_option("#map-window", "custom")
    page.fill("#map-since", since)
    page.fill("#map-until", until)
    page.locator("#map-until").dispatch_event("change")
    expected = memory.map_view(since=since + "Z", until=until + "Z")["total"]  # the page runs in UTC
    assert 0 < expected < memory.map_view()["total"]
    expect(page.locator("#map-summary")).to_contain_text(f"of {expected} memories with")
    shot(page, "21-map-window")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_refused_window_leaves_no_plot_of_the_last_one(demo: tuple[str, RobotMemory], page: Any) -> None:
    base, _ = demo
    expect = _sync_api().expect
    page.goto(base + "/#/map")
    expect(page.locator("#map-plot canvas")).to_have_count(1)
    page.select_option("#map-window", "custom")
    page.fill("#map-since", "2026-03-02T12:00")
    page.fill("#map-until", "2026-03-01T12:00")
    page.locator("#map-until").dispatch_event("change")
    expect(page.locator("#status")).to_contain_text("since:")
    expect(page.locator("#status")).to_have_class("error")
    expect(page.locator("#map-plot canvas")).to_have_count(0)
    expect(page.locator("#map-summary")).to_contain_text("Nothing shown")
    expect(page.locator("#map-controls")).to_be_visible()  # the window can be corrected where it was set
    page.fill("#map-until", "2026-03-03T12:00")
    page.locator("#map-until").dispatch_event("change")
    expect(page.locator("#status")).to_have_text("")
    expect(page.locator("#map-summary")).not_to_contain_text("Nothing shown")


OBJECT_RGB = (0x82, 0x50, 0xDF)  # Charts.COLOR.object

# What the map drew: each object marker's centre pixel, and per track the midpoint pixels of its segments
# longer than 12 CSS pixels, read from the canvas.
DRAWN = """() => {
    const u = document.querySelector("#map-plot").uplot;
    const layer = (id) => u.layers.find((l) => l.id === id);
    const ctx = u.ctx, ratio = uPlot.pxRatio || 1;
    const pixel = (x, y) => Array.from(ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data.slice(0, 3));
    const at = (p) => [u.valToPos(p.x, "x", true), u.valToPos(p.y, "y", true)];
    const objects = layer("objects");
    return {
        drawn: u.drawn,
        memories: layer("memories").items.map((i) => i.point.memory_id),
        markers: objects.items.map((i) => ({ id: i.object.memory_id, rgb: pixel(...at(i)) })),
        tracks: objects.lines.map((line) => line.slice(1).flatMap((p, k) => {
            const [x0, y0] = at(line[k]), [x1, y1] = at(p);
            return Math.hypot(x1 - x0, y1 - y0) > 12 * ratio ? [pixel((x0 + x1) / 2, (y0 + y1) / 2)] : [];
        })),
    };
}"""

# Whether each object label, drawn right of its marker as charts.js draws it, ends inside the plot area.
LABELS_INSIDE = """() => {
    const u = document.querySelector("#map-plot").uplot;
    const objects = u.layers.find((l) => l.id === "objects");
    const ratio = uPlot.pxRatio || 1, radius = objects.radius || 3.5;
    u.ctx.font = `600 ${11 * ratio}px sans-serif`;
    return objects.items.every((item) => {
        const right = u.valToPos(item.x, "x") + radius * 1.8 + 3 + u.ctx.measureText(objects.label(item)).width / ratio;
        return right <= u.over.clientWidth + 1;
    });
}"""


def test_map_draws_objects_and_tracks_one_frame_at_a_time(demo: tuple[str, RobotMemory], page: Any) -> None:
    base, memory = demo
    expect = _sync_api().expect
    page.goto(base + "/#/map")
    expect(page.locator("#map-plot canvas")).to_have_count(1)
    frames = memory.map_view()["frames"]
    assert [f["frame"] for f in frames] == ["map", "odom"]
    assert page.locator("#map-frame").input_value() == "map"  # the frame most memories are in
    for frame in ("map", "odom"):
        if frame != "map":
            page.select_option("#map-frame", frame)
        expect(page.locator("#map-summary")).to_contain_text(f"in frame {frame}")
        data = memory.map_view(frame=frame, limit=10000)
        objects = data["objects"]
        assert objects and all(o["sightings"] == len(o["track"]) >= 2 for o in objects)
        seen = page.evaluate(DRAWN)
        # One marker per object, at its latest position in the object colour; one line per track.
        assert seen["drawn"]["objects"] == {"items": len(objects), "lines": len(objects)}
        assert sorted(m["id"] for m in seen["markers"]) == sorted(o["memory_id"] for o in objects)
        for marker in seen["markers"]:
            assert all(abs(c - e) <= 8 for c, e in zip(marker["rgb"], OBJECT_RGB, strict=True)), marker
        # The objects that moved have long segments, each drawn in the object colour (blended: 70 %).
        moved = [midpoints for midpoints in seen["tracks"] if midpoints]
        assert len(moved) >= 1
        for midpoints in moved:
            assert any(b - g > 50 and r - g > 15 for r, g, b in midpoints), midpoints
        # Only this frame's memories are drawn.
        assert sorted(seen["memories"]) == sorted(p["memory_id"] for p in data["points"])
        # Fitted, every object's label ends inside the plot (room is kept right of the points for them).
        assert page.evaluate(LABELS_INSIDE), frame
        shot(page, f"22-map-objects-{frame}")
    assert memory.map_view(frame="odom")["total"] == 0 < memory.map_view()["total"]
    expect(page.locator("#map-summary")).to_contain_text("Showing 0 of 0 memories")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_label_at_the_right_edge_of_the_map_stays_in_view(tmp_path: Path, page: Any) -> None:
    """The object farthest right carries the longest label: fitted, the map keeps room for it."""
    expect = _sync_api().expect
    with RobotMemory(tmp_path / "edge.db", embed_backend="hash") as memory:
        for x, label in ((0.0, "cone"), (25.0, "pallet"), (50.0, "traffic cone by the loading dock")):
            memory.learn(
                f"saw the {label}", context={"object": {"label": label}, "spatial": {"position": [x, 2.0]}}
            )
        memory.learn("the arm reached over the bench", context={"spatial": {"position": [10.0, 1.0, 0.8]}})
        with served(memory) as base:
            page.goto(base + "/#/map")
            expect(page.locator("#map-plot canvas")).to_have_count(1)
            assert page.evaluate(LABELS_INSIDE)
            shot(page, "23-map-edge-label")
            # On x–z the objects, seen at [x, y] only, are not drawn: the summary says why, not "0 objects".
            page.select_option("#map-plane", "0,2")
            expect(page.locator("#map-summary")).to_contain_text("0 objects seen in this frame")
            expect(page.locator("#map-summary")).to_contain_text("3 more have no z")


def test_parameter_bins_match_the_stores_counts(demo: tuple[str, RobotMemory], page: Any) -> None:
    base, memory = demo
    expect = _sync_api().expect
    page.goto(base + "/#/params")
    expect(page.locator("#param-plot canvas")).to_have_count(1)
    assert page.locator("#param-x").input_value() == "params.grip_force"
    values = [
        (m["params"]["grip_force"]["value"], m["task"]["success"])
        for m in all_memories(memory)
        if isinstance(m["params"].get("grip_force"), dict)
        and m["params"]["grip_force"].get("unit") == "N"
        and isinstance(m["task"].get("success"), bool)
    ]
    rows = page.locator("#param-bin-table tbody tr")
    expect(rows.first).to_be_visible()
    shown = [
        (float(r.get_attribute("data-lo")), float(r.get_attribute("data-hi")), int(r.get_attribute("data-count")),
         int(r.get_attribute("data-successes")))
        for r in rows.all()
    ]  # fmt: skip
    assert sum(count for _, _, count, _ in shown) == len(values) > 500
    for index, (lo, hi, count, successes) in enumerate(shown):
        last = index == len(shown) - 1
        inside = [ok for value, ok in values if lo <= value < hi or (last and value == hi)]
        assert (count, successes) == (len(inside), sum(inside)), (lo, hi)
    expect(page.locator("#param-summary")).to_contain_text(f"{len(values)} memories judged by task.success")
    shot(page, "22-params")

    page.select_option("#param-y", "params.approach_speed")
    expect(page.locator("#param-summary")).to_contain_text("Each cell")
    expect(page.locator("#param-plot canvas")).to_have_count(1)
    grid = memory.param_outcome("params.grip_force", y="params.approach_speed")
    page.locator("details.panel summary").click()
    cells = page.locator("details.panel tbody tr")
    expect(cells).to_have_count(len(grid["cells"]))
    assert sum(int(c.locator("td").nth(2).inner_text()) for c in cells.all()) == grid["judged"]
    shot(page, "23-params-heatmap")
    assert page.errors == []  # type: ignore[attr-defined]


def test_episodes_filter_and_open_their_timeline(demo: tuple[str, RobotMemory], page: Any) -> None:
    base, memory = demo
    expect = _sync_api().expect
    page.goto(base + "/#/sessions")
    expect(page.locator("#episode-count")).to_contain_text(f"of {DEMO_EPISODES}")
    shot(page, "24-episodes")
    page.select_option("#episode-outcome", "failure")
    failed = memory.list_sessions(outcome="failure")["total"]
    expect(page.locator("#episode-count")).to_contain_text(f"of {failed}")
    page.select_option("#episode-robot", "arm-02")
    both = memory.list_sessions(outcome="failure", robot="arm-02")["total"]
    expect(page.locator("#episode-count")).to_contain_text(f"of {both}")
    rows = page.locator("main tbody tr")
    for row in rows.all():
        assert row.locator("[data-outcome]").get_attribute("data-outcome") == "failure"
        expect(row.locator("td").nth(2)).to_have_text("arm-02")
    rows.first.click()
    expect(page.locator("#timeline-chart canvas")).to_have_count(1)
    expect(page.locator("#episode-outcome")).to_contain_text("failure")
    first = page.locator("#timeline li a").first.inner_text().lstrip("#")
    shot(page, "25-episode-timeline")
    # The first mark of the timeline opens the first memory.
    memories = memory.session_memories(page.url.rsplit("/", 1)[-1])["memories"]
    assert str(memories[0]["id"]) == first
    left, top = page.evaluate(
        """(time) => {
            const u = document.querySelector("#timeline-chart").uplot;
            const rect = u.over.getBoundingClientRect();
            return [rect.left + u.valToPos(Date.parse(time) / 1000, "x"), rect.top + u.valToPos(0, "y")];
        }""",
        memories[0]["created_at"],
    )
    page.mouse.click(left, top)
    expect(page).to_have_url(f"{base}/#/memory/{first}")

    page.goto(base + "/#/failures")
    outcomes = page.locator("main table").first.locator("[data-outcome]")
    expect(outcomes.first).to_be_visible()
    assert {o.get_attribute("data-outcome") for o in outcomes.all()} == {"failure"}
    assert page.errors == []  # type: ignore[attr-defined]


def test_an_error_banner_clears_once_the_filter_is_fixed(demo: tuple[str, RobotMemory], page: Any) -> None:
    base, _ = demo
    expect = _sync_api().expect
    page.goto(base + "/#/memories")
    page.fill("#memory-filters input[name=context_filter]", '{"task.success": {"$less": 1}}')
    page.press("#search-input", "Enter")
    expect(page.locator("#status")).to_contain_text("$less")
    expect(page.locator("#status")).to_have_class("error")
    page.fill("#memory-filters input[name=context_filter]", '{"task.success": true}')
    page.press("#search-input", "Enter")
    expect(page.locator("#memory-results")).to_contain_text("found")
    expect(page.locator("#status")).to_have_text("")
    expect(page.locator("#status")).not_to_have_class("error")
    # Chromium logs the refused request itself; the page adds nothing.
    assert page.errors == [  # type: ignore[attr-defined]
        "console: Failed to load resource: the server responded with a status of 400 (BAD REQUEST)"
    ]


def test_keyboard_reaches_every_view_and_drives_the_map(demo: tuple[str, RobotMemory], page: Any) -> None:
    base, _ = demo
    expect = _sync_api().expect
    page.goto(base + "/")
    expect(page.locator("#totals")).to_be_visible()
    focused = []
    for _ in range(8):
        page.keyboard.press("Tab")
        focused.append(page.evaluate("document.activeElement.textContent.trim()"))
    assert focused[:8] == [
        "robotmem",
        "Dashboard",
        "Memories",
        "Episodes",
        "Map",
        "Parameters",
        "Failures",
        "Doctor",
    ]
    page.locator("#nav a[data-view=sessions]").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#episode-count")).to_be_visible()
    page.locator("main tbody tr a").first.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#timeline-chart canvas")).to_have_count(1)

    page.locator("#nav a[data-view=map]").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#map-plot canvas")).to_have_count(1)
    page.locator("#map-plane").focus()
    for _ in range(6):  # past the window selector, on to the map
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('uplot')"):
            break
    assert page.evaluate("document.activeElement.getAttribute('aria-roledescription')") == "map"
    start = scale_of(page, "#map-plot")
    page.keyboard.press("+")
    zoomed = scale_of(page, "#map-plot")
    assert zoomed["span"] == pytest.approx(start["span"] * 0.8)
    center = page.evaluate(
        "(() => { const u = document.querySelector('#map-plot').uplot; return u.scales.x.min; })()"
    )
    page.keyboard.press("ArrowRight")
    moved = page.evaluate(
        "(() => { const u = document.querySelector('#map-plot').uplot; return u.scales.x.min; })()"
    )
    assert moved > center
    assert scale_of(page, "#map-plot")["x"] == pytest.approx(scale_of(page, "#map-plot")["y"], rel=1e-9)
    page.keyboard.press("0")
    assert scale_of(page, "#map-plot")["span"] == pytest.approx(start["span"])
    shot(page, "26-map-keyboard")
    assert page.errors == []  # type: ignore[attr-defined]


def test_token_box_shows_only_when_the_server_needs_one(memory: RobotMemory, page: Any) -> None:
    expect = _sync_api().expect
    with served(memory, token="s3cret") as base:
        page.goto(f"{base}/")
        expect(page.locator("#token")).to_be_visible()
        assert "token" in (page.locator("#token").get_attribute("title") or "")


def test_search_under_all_searches_every_collection(
    site: tuple[str, dict[str, Any]], memory: RobotMemory, page: Any
) -> None:
    base, _ = site
    expect = _sync_api().expect
    memory.learn("the gripper slipped on the lab bench", collection="lab")
    page.goto(base + "/#/memories")
    expect(page.locator("#collection option[value=lab]")).to_have_count(1)
    page.fill("#search-input", "gripper slipped bench grip force")
    page.press("#search-input", "Enter")
    summary = page.locator("#search-summary")
    expect(summary).to_contain_text("in collections default, lab")
    expect(page.locator("#memory-results")).to_contain_text("the gripper slipped on the lab bench")
    expect(page.locator("#memory-results")).to_contain_text("grip_force=12.5N")
    shot(page, "10-search-all-collections")
    page.select_option("#collection", "lab")
    page.goto(base + "/#/memories")
    page.fill("#search-input", "gripper slipped bench grip force")
    page.press("#search-input", "Enter")
    expect(summary).to_contain_text("in collection lab")
    expect(page.locator("#memory-results")).to_contain_text("the gripper slipped on the lab bench")
    expect(page.locator("#memory-results")).not_to_contain_text("grip_force=12.5N")
    page.select_option("#collection", "")
    page.goto(base + "/#/memories")
    page.fill("input[name=context_filter]", '{"task.sucess": true}')
    page.fill("#search-input", "grip force")
    page.press("#search-input", "Enter")
    expect(page.locator("#memory-results p.warning")).to_have_text(
        "Filter warning: context_filter: no memory in collections 'default', 'lab' carries `task.sucess`; "
        "did you mean `task.success`?"
    )
    shot(page, "11-filter-warning")
    assert page.errors == []  # type: ignore[attr-defined]
