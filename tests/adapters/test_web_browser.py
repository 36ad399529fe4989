"""The web page in a real headless Chromium: browse, search, detail, edit, forget, timeline, spatial plot.

Screenshots land in ``test-artifacts/web/``. The tests use the system Chromium at /usr/bin/chromium
and are skipped (with the reason) when it is absent; no browser is downloaded.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("flask_openapi3")

from werkzeug.serving import make_server  # noqa: E402

from robotmem import RobotMemory  # noqa: E402
from robotmem.adapters.web import create_app  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
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
    server = make_server("127.0.0.1", 0, create_app(memory), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", ids
    server.shutdown()
    thread.join(timeout=5)


@pytest.fixture
def page() -> Iterator[Any]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with _sync_api().sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
        tab = context.new_page()
        tab.errors = []  # type: ignore[attr-defined]
        tab.on("pageerror", lambda error: tab.errors.append(str(error)))  # type: ignore[attr-defined]
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
    expect(page.locator("svg[aria-label='Success per session'] circle")).to_have_count(1)
    expect(page.locator("svg[aria-label='Categories'] rect").first).to_be_visible()
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


def test_session_timeline_spatial_plot_failures_and_doctor(
    site: tuple[str, dict[str, Any]], page: Any
) -> None:
    base, ids = site
    expect = _sync_api().expect
    page.goto(base + "/#/sessions")
    expect(page.locator("main tbody tr")).to_have_count(1)
    expect(page.locator("main tbody tr").first).to_contain_text("0.80")
    page.locator("main tbody tr").first.click()
    timeline = page.locator("#timeline li")
    expect(timeline).to_have_count(4)
    expect(timeline.nth(0)).to_contain_text("grip_force=12.5N")
    expect(timeline.nth(3)).to_contain_text("Grasp trajectory")
    assert "ok" in (timeline.nth(0).get_attribute("class") or "")
    assert "bad" in (timeline.nth(1).get_attribute("class") or "")
    shot(page, "07-session-timeline")

    page.click("#nav a[data-view=spatial]")
    points = page.locator("#scatter circle.point")
    expect(points).to_have_count(3)
    expect(page.locator("#scatter circle.point.ok")).to_have_count(2)
    expect(page.locator("#scatter circle.point.bad")).to_have_count(1)
    page.select_option("#axis-y", "2")
    expect(points).to_have_count(3)
    page.select_option("#axis-y", "1")
    shot(page, "08-spatial")
    page.locator(f"#scatter circle.point[data-id='{ids['failed']}']").click()
    expect(page.locator("#memory-content")).to_have_text("Episode 3: failed, reward=-50, 50 steps")

    page.click("#nav a[data-view=failures]")
    expect(page.locator("main")).to_contain_text("Episode 3: failed")
    shot(page, "09-failures")
    page.click("#nav a[data-view=doctor]")
    expect(page.locator("#doctor-report")).to_contain_text("search_mode")
    expect(page.locator("main h2")).to_contain_text("ok")
    shot(page, "10-doctor")
    assert page.errors == []  # type: ignore[attr-defined]


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
