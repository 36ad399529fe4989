"""Each door validates a call once: Pydantic's checks run once and the settings' checks run once.

The counts come from wrapping the input models' own validation (the originals still run); the calls go
through a real RobotMemory, a real Flask app on a loopback port, and the real MCP server object.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from werkzeug.serving import make_server

from robotmem import RobotMemory
from robotmem.adapters.web import create_app
from robotmem.config import Settings
from robotmem.formats.inputs import LearnInput, OperationInput, RecallInput

LEARN = {"insight": "the mug slips when the gripper closes at 5 N", "context": {"task": {"success": False}}}
RECALL = {"query": "mug gripper", "n": 3, "context_filter": {"task.success": False}, "min_relevance": 0}


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count, per model, Pydantic validations (``model_validate``) and settings checks (``_check``)."""
    seen: Counter[str] = Counter()
    for model in (LearnInput, RecallInput):
        validate = model.model_validate.__func__  # type: ignore[attr-defined]
        check = model._check

        def counted_validate(
            cls: type[OperationInput], *args: Any, _validate: Any = validate, **kwargs: Any
        ) -> Any:
            seen[f"{cls.__name__} validated"] += 1
            return _validate(cls, *args, **kwargs)

        def counted_check(self: OperationInput, settings: Settings, _check: Any = check) -> None:
            seen[f"{type(self).__name__} checked"] += 1
            _check(self, settings)

        monkeypatch.setattr(model, "model_validate", classmethod(counted_validate))
        monkeypatch.setattr(model, "_check", counted_check)
    return seen


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[RobotMemory]:
    settings = Settings(home=tmp_path)
    with RobotMemory(tmp_path / "memory.db", embed_backend="hash", settings=settings) as mem:
        yield mem


ONCE = {
    "LearnInput validated": 1,
    "LearnInput checked": 1,
    "RecallInput validated": 1,
    "RecallInput checked": 1,
}


def test_the_python_api_validates_once(memory: RobotMemory, counts: Counter[str]) -> None:
    assert memory.learn(**LEARN)["status"] == "created"
    assert memory.recall(**RECALL)["total"] == 1
    assert counts == ONCE


def test_rest_validates_once(memory: RobotMemory, counts: Counter[str]) -> None:
    server = make_server("127.0.0.1", 0, create_app(memory), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.server_port}", timeout=30) as client:
            assert client.post("/api/learn", json=LEARN).json()["status"] == "created"
            assert client.post("/api/recall", json=RECALL).json()["total"] == 1
            counts.clear()  # the app's first requests may build its OpenAPI document
            assert client.post("/api/learn", json={**LEARN, "insight": "a cup slips at 4 N"}).json()["status"]
            assert client.post("/api/recall", json=RECALL).json()["total"] == 2
            refused = client.post("/api/learn", json={"insight": "x" * 301})
    finally:
        server.shutdown()
        thread.join(timeout=5)
    assert counts == {**ONCE, "LearnInput validated": 2, "LearnInput checked": 2}
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "insight: is 301 characters; the limit is 300"


def test_mcp_validates_once(memory: RobotMemory, counts: Counter[str]) -> None:
    from robotmem.adapters.mcp import build_server  # here: a fast run that skips MCP does not load the SDK

    server = build_server(memory)

    async def calls() -> list[Any]:
        return [await server.call_tool("learn", LEARN), await server.call_tool("recall", RECALL)]

    learned, recalled = anyio.run(calls)
    assert learned.structured_content["status"] == "created"
    assert recalled.structured_content["total"] == 1
    assert counts == ONCE
