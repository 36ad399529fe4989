"""Recall's result as a table for people: one line per memory, the search it ran, its warnings and note.

``robotmem recall`` prints this on a terminal; ``--json`` (or output to a pipe or file) prints the full
JSON result instead, for scripts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

CONTENT_WIDTH = 60
CONTEXT_WIDTH = 48
CONTEXT_KEYS = 4  # context values shown per memory, in the order the context holds them


def recall_table(result: Mapping[str, Any]) -> str:
    """Return recall's ``result`` as a header line, a table, its warnings and its note (why nothing came
    back), each line ending in a newline."""
    memories = result["memories"]
    names = result.get("collections") or []
    where = f"collection {names[0]}" if len(names) == 1 else f"collections {', '.join(names) or '-'}"
    lines = [f"{result['total']} found ({result['mode']}, {result['query_ms']} ms) in {where}"]
    if memories:
        with_relevance = any("relevance" in m for m in memories)
        header = ["id", "score", *(["relevance"] if with_relevance else []), "category", "content", "context"]
        rows = [header]
        for memory in memories:
            row = [str(memory["id"]), f"{memory['score']:.3f}"]
            if with_relevance:
                relevance = memory.get("relevance")
                row.append("-" if relevance is None else f"{relevance:.3f}")
            row += [
                str(memory["category"]),
                _short(" ".join(str(memory["content"]).split()), CONTENT_WIDTH),
                _short(", ".join(context_items(memory["context"])), CONTEXT_WIDTH),
            ]
            rows.append(row)
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        numeric = {0, 1, 2} if with_relevance else {0, 1}
        for row in rows:
            cells = [
                c.rjust(w) if i in numeric else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append("  ".join(cells).rstrip())
    lines += [f"warning: {text}" for text in result.get("warnings") or []]
    lines += [f"note: {result['note']}"] if result.get("note") else []
    return "".join(line + "\n" for line in lines)


def context_items(context: Mapping[str, Any], limit: int = CONTEXT_KEYS) -> list[str]:
    """Return up to ``limit`` ``path=value`` items of ``context``'s leaves, in its order (long lists elided;
    the ``source`` marker robotmem adds is left out)."""
    leaves = [(path, value) for path, value in _leaves(context, "") if path != "source"]
    return [f"{path}={_value(value)}" for path, value in leaves][:limit]


def _leaves(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping) and value:
        for key, inner in value.items():
            yield from _leaves(inner, f"{prefix}.{key}" if prefix else str(key))
    elif prefix:
        yield prefix, value


def _value(value: Any) -> str:
    if isinstance(value, list) and len(value) > 3:
        return f"[{len(value)} items]"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
