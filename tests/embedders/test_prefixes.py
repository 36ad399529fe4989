from __future__ import annotations

import pytest

from robotmem.embedders.prefixes import add_prefix, task_prefixes


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("nomic-embed-text", ("search_query: ", "search_document: ")),
        ("nomic-embed-text:v1.5", ("search_query: ", "search_document: ")),
        ("intfloat/multilingual-e5-large", ("query: ", "passage: ")),
        ("e5-small-v2", ("query: ", "passage: ")),
        ("mxbai-embed-large:latest", ("Represent this sentence for searching relevant passages: ", "")),
        ("BAAI/bge-small-en-v1.5", ("", "")),
        ("text-embedding-3-small", ("", "")),
        ("all-minilm", ("", "")),
    ],
)
def test_task_prefixes_by_model_name(model, expected):
    assert task_prefixes(model) == expected


def test_add_prefix():
    assert add_prefix(["a", "b"], "e5-base", is_query=True) == ["query: a", "query: b"]
    assert add_prefix(["a"], "e5-base", is_query=False) == ["passage: a"]
    assert add_prefix(("a",), "mxbai-embed-large", is_query=False) == ["a"]
    assert add_prefix([], "nomic-embed-text", is_query=True) == []
