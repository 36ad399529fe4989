"""``RobotMemory`` is the table of contents of the API: each public method is documented and delegates in one line."""

from __future__ import annotations

import ast
import inspect

from robotmem.service import facade


def _methods() -> list[ast.FunctionDef]:
    tree = ast.parse(inspect.getsource(facade))
    (cls,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "RobotMemory"]
    return [node for node in cls.body if isinstance(node, ast.FunctionDef)]


def _is_setter(method: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Attribute) and d.attr == "setter" for d in method.decorator_list)


def test_every_public_method_is_one_documented_delegation() -> None:
    checked = []
    for method in _methods():
        if method.name == "__init__" or (method.name.startswith("_") and not method.name.endswith("__")):
            continue  # the constructor wires the engine; private helpers are not API
        body = method.body
        docstring = ast.get_docstring(method)
        if docstring is not None:
            body = body[1:]
        elif not method.name.startswith("__") and not _is_setter(method):  # a setter shares its getter's
            raise AssertionError(f"RobotMemory.{method.name} has no docstring")
        assert len(body) == 1, f"RobotMemory.{method.name} has {len(body)} statements; delegate in one"
        checked.append(method.name)
    assert {"learn", "recall", "save_perception", "close", "stats", "sync"} <= set(checked)
