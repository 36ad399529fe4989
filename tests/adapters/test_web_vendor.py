"""The page's charting library ships inside the package, pinned and checked, and loads from nowhere else."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "src" / "robotmem" / "adapters" / "web" / "static"


def test_vendored_files_match_their_pins() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "vendor-js"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    manifest = json.loads((STATIC / "vendor" / "VENDOR.json").read_text())
    assert manifest["uplot"]["version"] == "1.6.32"
    assert "MIT License" in (STATIC / "vendor" / "uplot" / "LICENSE").read_text()


def test_a_changed_vendored_file_fails_the_check(tmp_path: Path) -> None:
    script = (ROOT / "scripts" / "vendor-js").read_text()
    copy = tmp_path / "scripts" / "vendor-js"
    copy.parent.mkdir()
    copy.write_text(script)
    vendor = tmp_path / "src" / "robotmem" / "adapters" / "web" / "static" / "vendor"
    (vendor / "uplot").mkdir(parents=True)
    for name in ("VENDOR.json", "uplot/LICENSE", "uplot/uPlot.min.css", "uplot/uPlot.iife.min.js"):
        (vendor / name).write_bytes((STATIC / "vendor" / name).read_bytes())
    (vendor / "uplot" / "uPlot.iife.min.js").write_text("window.uPlot = function () {};")
    done = subprocess.run([sys.executable, str(copy), "--check"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "uPlot.iife.min.js: differs" in done.stderr


def test_package_data_ships_every_static_file() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"][
        "robotmem"
    ]
    package = ROOT / "src" / "robotmem"
    shipped = {path for pattern in globs for path in package.glob(pattern) if path.is_file()}
    assert {path for path in STATIC.rglob("*") if path.is_file()} <= shipped


def test_the_page_loads_scripts_and_styles_only_from_the_server() -> None:
    page = (STATIC / "index.html").read_text()
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert "/static/vendor/uplot/uPlot.iife.min.js" in sources
    assert all(s.startswith(("/static/", "#", "data:")) for s in sources), sources
    for script in STATIC.glob("*.js"):
        assert not re.search(r"https?://", script.read_text()), script.name
