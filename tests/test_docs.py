"""The documentation covers what the code has: every module, setting, command, option and MCP tool, and
every JSON example in docs/filters.md is valid."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from robotmem.adapters.cli import build_parser
from robotmem.adapters.mcp import OPERATIONS
from robotmem.config import Settings, setting_values
from robotmem.query.filters import parse_filter
from robotmem.query.spatial import parse_spatial_sort

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "robotmem"
DOCS = ROOT / "docs"


def read(relative: str) -> str:
    return (ROOT / relative).read_text(encoding="utf-8")


def table_first_cells(markdown: str, heading: str) -> list[str]:
    """The first-column code spans of the table under ``heading`` (up to the next heading)."""
    section = markdown.split(heading, 1)[1]
    section = re.split(r"\n#{1,3} ", section, maxsplit=1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


def test_every_module_is_in_the_architecture_map() -> None:
    modules = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")}
    listed = table_first_cells(read("docs/architecture.md"), "## Module map")
    assert len(listed) == len(set(listed)), "a module is listed twice"
    assert sorted(modules - set(listed)) == [], "modules missing from docs/architecture.md's module map"
    assert sorted(set(listed) - modules) == [], "the module map lists modules that do not exist"


def test_the_service_package_lists_every_feature_module() -> None:
    import robotmem.service

    listed = set(re.findall(r"^(\w+\.py) ", robotmem.service.__doc__ or "", flags=re.MULTILINE))
    modules = {path.name for path in (PACKAGE / "service").glob("*.py")} - {"__init__.py"}
    assert listed == modules, "src/robotmem/service/__init__.py's docstring lists the feature modules"


def documented_default(value: object) -> str:
    """A default as docs/configuration.md writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Path):
        return str(value).replace(str(Path.home()), "~", 1)
    return str(value)


def test_every_setting_is_documented_with_its_default() -> None:
    rows = re.findall(
        r"^\| `([a-z0-9_]+)` \| `([^`]*)` \|", read("docs/configuration.md"), flags=re.MULTILINE
    )
    documented = dict(rows)
    defaults = setting_values(Settings())
    for key, default in defaults.items():
        assert key in documented, f"setting {key} is missing from docs/configuration.md"
        assert documented[key] == documented_default(default), key
    assert sorted(set(documented) - set(defaults)) == []


def commands(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every (sub)command of the parser by its full name, e.g. ``embed backfill``."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[prefix + name] = sub
                found.update(commands(sub, prefix + name + " "))
    return found


COMMON_OPTIONS = {"--db", "--collection", "--embed-backend", "--help"}


@pytest.mark.parametrize("name", sorted(commands(build_parser())))
def test_every_command_and_option_is_in_the_cli_page(name: str) -> None:
    page = read("docs/cli.md")
    assert f"robotmem {name}" in page, f"`robotmem {name}` is missing from docs/cli.md"
    section = page.split(f"robotmem {name}", 1)[1]
    # The options are documented on the command's own row or paragraph.
    entry = re.split(r"\n(?=\| `robotmem |#|`robotmem )", section, maxsplit=1)[0]
    parser = commands(build_parser())[name]
    for action in parser._actions:
        for option in action.option_strings:
            if option.startswith("--") and option not in COMMON_OPTIONS:
                assert option in entry, f"option {option} of `robotmem {name}` is missing from docs/cli.md"
    for option in sorted(COMMON_OPTIONS - {"--help"}):
        assert f"`{option}" in page


def test_every_mcp_tool_is_documented() -> None:
    page = read("docs/mcp.md")
    tools = page.split("## The tools", 1)[1]
    for operation in OPERATIONS:
        assert f"`{operation.name}`" in tools, f"MCP tool {operation.name} is missing from docs/mcp.md"


def json_blocks(markdown: str) -> list[str]:
    return re.findall(r"```json\n(.*?)```", markdown, flags=re.DOTALL)


def test_json_examples_in_the_filters_page_are_valid() -> None:
    page = read("docs/filters.md")
    blocks = json_blocks(page)
    assert len(blocks) >= 2
    for block in blocks:
        value = json.loads(block)
        if "field" in value and "target" in value:
            parse_spatial_sort(value)
        else:
            assert parse_filter(value) is not None
    prose = re.sub(r"```.*?```", "", page, flags=re.DOTALL)
    inline = [span for span in re.findall(r"`([^`]+)`", prose) if span.startswith("{")]
    assert inline, "the page has inline JSON examples"
    for span in inline:
        json.loads(span)  # every inline object example is valid JSON


FILE_SUFFIXES = {"py", "js", "css", "html", "md", "json", "png", "toml", "txt"}  # `charts.js` is a file
CONTEXT_SECTIONS = {"spatial", "task", "params", "robot", "env", "object"}  # `spatial.position` is a path


def code_spans(markdown: str) -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", markdown))


def module_for(span: str) -> Path | None:
    """The file a code span names as a path (``store/shared/rows.py``, ``tests/test_docs.py``), if any."""
    if not span.endswith(".py") or " " in span:
        return None
    for base in (PACKAGE, ROOT):
        if (base / span).is_file():
            return base / span
    if "/" not in span:  # a bare file name, as a table row under its package names it
        found = (path for base in (PACKAGE, ROOT / "tests", ROOT / "benchmarks") for path in base.rglob(span))
        return next(found, Path(span))
    return Path(span)


def engine_spans(spans: set[str]) -> set[str]:
    """``store/<engine>/x.py`` names the file of that part on each engine."""
    return {s.replace("<engine>", engine) for s in spans for engine in ("sqlite", "postgres")}


@pytest.mark.parametrize("page", ["CONTRIBUTING.md", "docs/architecture.md"])
def test_every_file_the_recipes_and_map_name_exists(page: str) -> None:
    named = {span: module_for(span) for span in engine_spans(code_spans(read(page)))}
    missing = sorted(span for span, path in named.items() if path is not None and not path.is_file())
    assert missing == [], f"{page} names files that do not exist"


@pytest.mark.parametrize("page", ["CONTRIBUTING.md", "docs/architecture.md"])
def test_every_module_attribute_the_recipes_name_exists(page: str) -> None:
    """A span such as ``rows.row_to_memory`` or ``store/shared/rows.py``'s names: the module part must be
    a module of the package (named by its last part when that is unique) and hold the attribute."""
    import importlib

    by_stem: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        dotted = "robotmem." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        by_stem.setdefault(path.stem, []).append(dotted.removesuffix(".__init__"))
    wrong = []
    for span in code_spans(read(page)):
        match = re.fullmatch(r"([a-z_]+)\.([A-Za-z_]+)", span)
        if (
            match is None
            or match.group(2) in FILE_SUFFIXES
            or match.group(1) in CONTEXT_SECTIONS
            or len(by_stem.get(match.group(1), [])) != 1
        ):
            continue
        module = importlib.import_module(by_stem[match.group(1)][0])
        if not hasattr(module, match.group(2)):
            wrong.append(span)
    assert sorted(wrong) == [], f"{page} names attributes its modules do not have"
