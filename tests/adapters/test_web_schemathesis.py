"""Property-based requests generated from ``/api/openapi.json``: no request may produce a 5xx."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

pytest.importorskip("flask_openapi3")

from hypothesis import HealthCheck, settings  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

from robotmem import RobotMemory  # noqa: E402
from robotmem.adapters.web import create_app  # noqa: E402
from robotmem.config import Settings  # noqa: E402

# Spawns processes or servers; left out of `make test-fast`. schemathesis is imported in the test, so
# that collecting this module for a fast run does not load it.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("schemathesis")
    mem = RobotMemory(home / "memory.db", embed_backend="hash", settings=Settings(home=home))
    session = mem.start_session(context={"robot": {"id": "arm-01"}})
    mem.learn(
        "grip_force=12.5N yields highest grasp success rate",
        context={"spatial": {"object_position": [1.0, 0.5, 0.4]}, "task": {"success": True}},
    )
    mem.learn("Episode 3: failed, reward=-50, 50 steps", context={"task": {"success": False}})
    mem.save_perception("camera frame: cup at the table edge", data={"pixels": [1, 2, 3]})
    mem.end_session(session["session_id"], outcome_score=0.2)
    server = make_server("127.0.0.1", 0, create_app(mem), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=5)
    mem.close()


def test_no_generated_request_causes_a_server_error(base_url: str) -> None:
    # Operations are driven one by one with hypothesis (the lazy pytest loader of schemathesis relies
    # on pytest internals that change between releases); every operation gets a small, fixed budget.
    from hypothesis import given

    schemathesis = pytest.importorskip("schemathesis")
    from schemathesis import GenerationMode
    from schemathesis.checks import not_a_server_error

    schema = schemathesis.openapi.from_url(f"{base_url}/api/openapi.json")
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        # Valid and invalid requests alike: invalid ones must end in a 4xx, never a 5xx.
        cases = operation.as_strategy(GenerationMode.POSITIVE) | operation.as_strategy(
            GenerationMode.NEGATIVE
        )

        @given(case=cases)
        @settings(
            max_examples=30,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def run(case) -> None:  # type: ignore[no-untyped-def]
            case.call_and_validate(base_url=base_url, checks=[not_a_server_error])

        try:
            run()
        except Exception as exc:  # noqa: BLE001 - collect every operation's failure, then report them all
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}")
    assert operations >= 19
    assert not failures, "\n\n".join(failures)


def test_openapi_document_is_generated_from_the_models(base_url: str) -> None:
    import httpx

    document = httpx.get(f"{base_url}/api/openapi.json").json()
    schemas = document["components"]["schemas"]
    for model in ("LearnInput", "RecallInput", "SavePerceptionInput", "UpdateBody", "ErrorResponse"):
        assert model in schemas
    listing = {p["name"]: p for p in document["paths"]["/api/memories"]["get"]["parameters"]}
    assert listing["limit"]["schema"]["maximum"] == 500 and listing["offset"]["schema"]["minimum"] == 0
    # n's limit is the max_n setting: the schema gives the least, the description names the setting
    n = schemas["RecallInput"]["properties"]["n"]
    assert n["anyOf"][0]["minimum"] == 1 and "maximum" not in n["anyOf"][0] and "max_n" in n["description"]
    learn = document["paths"]["/api/learn"]["post"]
    assert learn["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/LearnInput")
