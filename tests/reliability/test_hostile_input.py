"""Hostile input through the seven operations: only RobotMemError escapes, rejected input stores nothing,
and everything accepted can be read back and found by its own text."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import table_counts
from tests.strategies import (
    anything,
    examples,
    hostile_text,
    huge_text,
    json_objects,
    json_values,
    wrong_types,
)

from robotmem import RobotMemError, RobotMemory
from robotmem.config import Settings
from robotmem.errors import ValidationError
from robotmem.text.tokens import fts_query

HYPOTHESIS = settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.function_scoped_fixture,  # one store for all examples of a test, as intended
    ],
)
_names = itertools.count()

texts = st.one_of(hostile_text, hostile_text, huge_text, wrong_types)
contexts = st.one_of(st.none(), json_objects, json_objects.map(json.dumps), anything)
payloads = st.one_of(st.none(), json_values, json_values.map(json.dumps), hostile_text, anything)
ids = st.one_of(st.integers(min_value=-3, max_value=60), anything)


@pytest.fixture
def mem(tmp_path: Path, locate: Callable[[str], Any]) -> Iterator[RobotMemory]:
    """BM25 only, so recall of a memory's own text exercises exactly the text index."""
    with RobotMemory(locate("hostile.db"), embed_backend="none", settings=Settings(home=tmp_path)) as memory:
        for i in range(20):
            memory.learn(f"seed memory {i}: grip_force={i}N on the shelf")
        yield memory


def _fresh_collection() -> str:
    return f"c{next(_names)}"


def _call(mem: RobotMemory, operation: str, **kwargs: Any) -> Any:
    """Run one operation; a rejection must be a RobotMemError and leave every table unchanged."""
    before = table_counts(mem)
    try:
        return getattr(mem, operation)(**kwargs)
    except RobotMemError:
        assert table_counts(mem) == before, f"{operation} was rejected but changed the tables"
        return None


def _assert_findable(mem: RobotMemory, memory_id: int, text: str, collection: str) -> None:
    """The memory reads back by id and a BM25 recall of its own text in its collection returns it."""
    detail = mem.get_memory(memory_id)
    assert detail["content"] == text
    query = text if fts_query(text) is not None else ""  # no searchable word: list the collection
    found = mem.recall(query=query, n=100, min_confidence=0.0, collection=collection)
    assert memory_id in [m["id"] for m in found["memories"]], (text, found["mode"])


@HYPOTHESIS
@given(insight=texts, context=contexts, session_id=st.one_of(st.none(), anything))
def test_learn_accepts_or_rejects_cleanly(
    mem: RobotMemory, insight: Any, context: Any, session_id: Any
) -> None:
    collection = _fresh_collection()
    before = table_counts(mem)["memories"]
    result = _call(
        mem, "learn", insight=insight, context=context, collection=collection, session_id=session_id
    )
    if result is None:
        return
    if result["status"] == "duplicate":
        assert table_counts(mem)["memories"] == before
        return
    assert table_counts(mem)["memories"] == before + 1
    if isinstance(insight, str):
        _assert_findable(mem, result["memory_id"], insight.strip(), collection)


@HYPOTHESIS
@given(
    query=st.one_of(hostile_text, huge_text, anything),
    n=st.one_of(st.none(), st.integers(), anything),
    min_confidence=st.one_of(st.none(), st.floats(), anything),
    context_filter=st.one_of(st.none(), json_objects, anything),
    spatial_sort=st.one_of(st.none(), json_objects, anything),
    order=st.one_of(st.just("time"), anything),
    include_data=st.one_of(st.booleans(), anything),
)
def test_recall_never_crashes_or_writes(mem: RobotMemory, **kwargs: Any) -> None:
    result = _call(mem, "recall", **kwargs)
    if result is not None:
        assert result["total"] == len(result["memories"]) <= 100


@HYPOTHESIS
@given(
    description=texts,
    perception_type=st.one_of(st.sampled_from(["visual", "tactile", "procedural"]), anything),
    data=payloads,
    metadata=payloads,
)
def test_save_perception_accepts_or_rejects_cleanly(
    mem: RobotMemory, description: Any, perception_type: Any, data: Any, metadata: Any
) -> None:
    collection = _fresh_collection()
    before = table_counts(mem)
    result = _call(
        mem,
        "save_perception",
        description=description,
        perception_type=perception_type,
        data=data,
        metadata=metadata,
        collection=collection,
    )
    if result is None:
        return
    after = table_counts(mem)
    assert after["memories"] == before["memories"] + 1
    assert after["perception_payloads"] == before["perception_payloads"] + 1
    if isinstance(description, str):
        _assert_findable(mem, result["memory_id"], description.strip(), collection)


@HYPOTHESIS
@given(memory_id=ids, reason=st.one_of(hostile_text, huge_text, anything))
def test_forget_accepts_or_rejects_cleanly(mem: RobotMemory, memory_id: Any, reason: Any) -> None:
    result = _call(mem, "forget", memory_id=memory_id, reason=reason)
    if result is not None:
        assert mem.get_memory(result["memory_id"])["status"] == "invalidated"


@HYPOTHESIS
@given(memory_id=ids, new_content=texts, context=contexts)
def test_update_accepts_or_rejects_cleanly(
    mem: RobotMemory, memory_id: Any, new_content: Any, context: Any
) -> None:
    result = _call(mem, "update", memory_id=memory_id, new_content=new_content, context=context)
    if result is not None and isinstance(new_content, str):
        detail = mem.get_memory(result["memory_id"])
        _assert_findable(mem, result["memory_id"], new_content.strip(), detail["collection"])


@HYPOTHESIS
@given(
    context=contexts,
    collection=st.one_of(st.none(), hostile_text, anything),
    outcome_score=st.one_of(st.none(), st.floats(), anything),
    session_id=st.one_of(st.none(), anything),
)
def test_sessions_accept_or_reject_cleanly(
    mem: RobotMemory, context: Any, collection: Any, outcome_score: Any, session_id: Any
) -> None:
    started = _call(mem, "start_session", context=context, collection=collection)
    target = session_id if session_id is not None or started is None else started["session_id"]
    ended = _call(mem, "end_session", session_id=target, outcome_score=outcome_score)
    if ended is not None:
        assert mem.get_session(ended["session_id"])["status"] == "ended"


# ---- regressions found by the properties above ---------------------------------------------------


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_deeply_nested_json_text_is_a_validation_error(mem: RobotMemory, kind: str) -> None:
    text = ("[" * 20_000 + "]" * 20_000) if kind == "list" else ('{"a":' * 3_000 + "1" + "}" * 3_000)
    calls = [
        lambda: mem.learn("deep context", context=text),
        lambda: mem.update(1, "deep context", context=text),
        lambda: mem.start_session(context=text),
        lambda: mem.recall("x", context_filter=text[:16_000]),
        lambda: mem.recall("x", spatial_sort=text[:16_000]),
        lambda: mem.save_perception("deep payload", data=text),
        lambda: mem.save_perception("deep payload", metadata=text),
    ]
    before = table_counts(mem)
    for call in calls:
        with pytest.raises(ValidationError, match="deeper|nest|JSON"):
            call()
    assert table_counts(mem) == before


def test_deeply_nested_python_values_are_a_validation_error(mem: RobotMemory) -> None:
    deep: Any = 1
    for _ in range(5_000):
        deep = {"k": deep}
    for call in (
        lambda: mem.learn(insight=[deep]),  # type: ignore[list-item]
        lambda: mem.recall("x", context_filter=deep),
        lambda: mem.recall("x", spatial_sort=deep),
    ):
        with pytest.raises(ValidationError):
            call()


@pytest.mark.parametrize("where", ["context_key", "context_value", "data", "metadata", "filter"])
def test_lone_surrogates_inside_json_are_a_validation_error(mem: RobotMemory, where: str) -> None:
    before = table_counts(mem)
    with pytest.raises(ValidationError, match="surrogate|Unicode|unicode"):
        if where == "context_key":
            mem.learn("surrogate key", context={"\ud800": 1})
        elif where == "context_value":
            mem.learn("surrogate value", context={"a": "x\udfff"})
        elif where == "data":
            mem.save_perception("surrogate payload", data="\ud800")
        elif where == "metadata":
            mem.save_perception("surrogate payload", metadata={"a": ["\ud800"]})
        else:
            mem.recall("x", context_filter={"task.name": "\ud800"})
    assert table_counts(mem) == before


def test_spatial_sort_text_is_size_limited(mem: RobotMemory) -> None:
    huge = json.dumps({"field": "spatial.position", "target": [1.0, 2.0], "pad": "x" * 100_000})
    with pytest.raises(ValidationError, match="spatial_sort"):
        mem.recall("x", spatial_sort=huge)


def test_every_limit_names_its_field(tmp_path: Path, locate: Callable[[str], Any]) -> None:
    limits = Settings(
        home=tmp_path,
        max_insight_chars=20,
        max_description_chars=30,
        max_context_bytes=64,
        max_data_bytes=100,
        max_metadata_bytes=50,
        max_filter_bytes=40,
        max_n=10,
        top_k=5,
    )
    with RobotMemory(locate("limits.db"), embed_backend="none", settings=limits) as small:
        cases = {
            "insight": lambda: small.learn("x" * 21),
            "new_content": lambda: small.update(1, "y" * 21),
            "description": lambda: small.save_perception("z" * 31),
            "context": lambda: small.learn("ok", context={"a": "b" * 64}),
            "data": lambda: small.save_perception("camera frame", data="d" * 101),
            "metadata": lambda: small.save_perception("camera frame", metadata={"m": "e" * 50}),
            "context_filter": lambda: small.recall("x", context_filter={"a": "f" * 40}),
            "n": lambda: small.recall("x", n=11),
            "query": lambda: small.recall("q" * 4001),
        }
        small.learn("ok")
        before = table_counts(small)
        for field, call in cases.items():
            with pytest.raises(ValidationError, match=field):
                call()
        assert table_counts(small) == before
