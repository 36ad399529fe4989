"""Every shape of ``robotmem.formats.results`` is built in ``robotmem.formats.serialize`` and nowhere else."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from typing_extensions import is_typeddict

import robotmem
from robotmem.formats import results

PACKAGE = Path(robotmem.__file__).parent
BUILDERS = {PACKAGE / "formats" / "serialize.py", PACKAGE / "formats" / "results.py"}
RESULT_TYPES = {
    name: value
    for name, value in vars(results).items()
    if isinstance(value, type) and is_typeddict(value) and value.__module__ == results.__name__
}


def _names(node: ast.AST) -> set[str]:
    """Every name and string in an annotation (``list[RecallHit]``, ``"Stats"``)."""
    found = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return found | {
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def _built_here(value: ast.AST) -> bool:
    """A dict (or a list of dicts) written out in place, as opposed to a value a builder returned."""
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return True
    if isinstance(value, ast.ListComp):
        return isinstance(value.elt, (ast.Dict, ast.DictComp))
    if isinstance(value, ast.List):
        return any(isinstance(item, (ast.Dict, ast.DictComp)) for item in value.elts)
    return False


def _own_statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The nodes of ``function``'s body, not those of the functions and classes defined in it."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def constructions(source: str) -> list[str]:
    """Where ``source`` builds a result shape itself: ``line: how``.

    Four ways are found: calling a result type; assigning a dict written in place to a variable
    annotated with one; returning a dict (or list of dicts) written in place from a function annotated
    to return one; and a dict written in place whose keys are exactly those of a result type of three or
    more keys, whatever it is annotated as (two-key shapes such as ``{"sessions", "memories"}`` are too
    common to tell apart by their keys).
    """
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in RESULT_TYPES:
            found.append(f"{node.lineno}: calls {node.func.id}")
        elif isinstance(node, ast.AnnAssign) and node.value is not None and _built_here(node.value):
            if _names(node.annotation) & set(RESULT_TYPES):
                found.append(f"{node.lineno}: assigns a {ast.unparse(node.annotation)} written in place")
        elif isinstance(node, ast.Dict) and None not in node.keys:
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            for name, shape in RESULT_TYPES.items():
                required, optional = set(shape.__required_keys__), set(shape.__optional_keys__)
                if len(required | optional) >= 3 and required <= keys <= required | optional:
                    found.append(f"{node.lineno}: writes the keys of {name}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            if not _names(node.returns) & set(RESULT_TYPES):
                continue
            for statement in _own_statements(node):
                if isinstance(statement, ast.Return) and statement.value and _built_here(statement.value):
                    found.append(f"{statement.lineno}: {node.name} returns a result written in place")
    return found


@pytest.mark.parametrize(
    "source",
    [
        "def f() -> RecallResult:\n    return {'memories': [], 'total': 0}\n",
        "def f() -> list[CategoryCount]:\n    return [{'category': c, 'count': n} for c, n in rows]\n",
        "def f():\n    def work(tx) -> FailuresResult:\n        return {'sessions': [], 'memories': []}\n",
        "x: EmbedderStatus = {'model_id': None}\n",
        "x = SessionSummary(memory_count=1, by_type={}, by_category={})\n",
        "report = {'rows': 1, 'missing_active': 0, 'in_sync': True}\n",
    ],
)
def test_the_scan_finds_a_result_built_outside_serialize(source: str) -> None:
    assert constructions(source), source


def test_the_scan_leaves_other_dicts_alone() -> None:
    source = (
        "def counts() -> dict[str, int]:\n    return {'memories': 0, 'sessions': 0}\n"
        "def f() -> RecallResult:\n    return recall_result(hits, include_data=False, mode='hybrid', query_ms=1.0)\n"
    )
    assert constructions(source) == []


def test_no_module_but_serialize_builds_a_result_shape() -> None:
    assert len(RESULT_TYPES) > 40
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if path not in BUILDERS and (found := constructions(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, "build these in robotmem/formats/serialize.py"
