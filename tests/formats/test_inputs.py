"""The operations' input models: one declaration per operation, checked once against the settings."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from robotmem import RobotMemory, ValidationError
from robotmem.config import Settings
from robotmem.formats.inputs import (
    EndSessionInput,
    ForgetInput,
    LearnInput,
    MemoryIdInput,
    OperationInput,
    RecallInput,
    SavePerceptionInput,
    StartSessionInput,
    UpdateInput,
    validate_input,
    validate_items,
)
from robotmem.service.browse import (
    CategoriesInput,
    CollectionInput,
    EpisodeFacetsInput,
    ListMemoriesInput,
    ListSessionsInput,
    RecentFailuresInput,
    SpatialPointsInput,
)
from robotmem.service.charts import MapInput, ParamFieldsInput, ParamOutcomeInput
from robotmem.service.operations import OPERATIONS

METHODS: dict[str, type[OperationInput]] = {
    "learn": LearnInput,
    "recall": RecallInput,
    "save_perception": SavePerceptionInput,
    "forget": ForgetInput,
    "update": UpdateInput,
    "start_session": StartSessionInput,
    "end_session": EndSessionInput,
    "get_memory": MemoryIdInput,
    "stats": CollectionInput,
    "list_memories": ListMemoriesInput,
    "list_sessions": ListSessionsInput,
    "categories": CategoriesInput,
    "recent_failures": RecentFailuresInput,
    "spatial_points": SpatialPointsInput,
    "episode_facets": EpisodeFacetsInput,
    "map_view": MapInput,
    "param_fields": ParamFieldsInput,
    "param_outcome": ParamOutcomeInput,
}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_takes_the_parameters_of_its_input_model(method: str) -> None:
    model = METHODS[method]
    parameters = list(inspect.signature(getattr(RobotMemory, method)).parameters.values())[1:]
    assert [p.name for p in parameters] == list(model.model_fields)
    for parameter in parameters:
        field = model.model_fields[parameter.name]
        expected = inspect.Parameter.empty if field.is_required() else field.default
        assert parameter.default == expected, f"{method}({parameter.name}=...) differs from {model.__name__}"
    assert OPERATIONS[model].__name__ == method


def test_settings_that_raise_a_limit_raise_it_for_every_door() -> None:
    wide = Settings(max_n=10_000, max_insight_chars=200_000, max_description_chars=300_000)
    assert validate_input(RecallInput, {"n": 5000}, wide).n == 5000
    assert len(validate_input(LearnInput, {"insight": "x" * 150_000}, wide).insight) == 150_000
    long = {"description": "y" * 250_000}
    assert len(validate_input(SavePerceptionInput, long, wide).description) == 250_000
    with pytest.raises(ValidationError, match=r"^n: is 5000; the limit is 100$"):
        validate_input(RecallInput, {"n": 5000}, Settings())
    with pytest.raises(ValidationError, match=r"^insight: is 150000 characters; the limit is 300$"):
        validate_input(LearnInput, {"insight": "x" * 150_000}, Settings())


def test_schemas_state_no_limit_a_setting_changes() -> None:
    recall = RecallInput.model_json_schema()["properties"]
    assert "maximum" not in recall["n"]["anyOf"][0] and recall["n"]["anyOf"][0]["minimum"] == 1
    assert "max_n" in recall["n"]["description"]
    for model, name, setting in (
        (LearnInput, "insight", "max_insight_chars"),
        (UpdateInput, "new_content", "max_insight_chars"),
        (SavePerceptionInput, "description", "max_description_chars"),
        (LearnInput, "context", "max_context_bytes"),
        (SavePerceptionInput, "data", "max_data_bytes"),
        (SavePerceptionInput, "metadata", "max_metadata_bytes"),
    ):
        prop = model.model_json_schema()["properties"][name]
        assert "maxLength" not in prop
        assert setting in prop["description"], (model.__name__, name)


def test_problems_are_reported_in_the_order_they_always_were() -> None:
    settings = Settings()
    cases = [
        (LearnInput, {"insight": "x" * 301, "context": "[1]", "collection": " "}, "insight: is 301"),
        (
            LearnInput,
            {"insight": "ok", "context": "[1]", "collection": " "},
            "context: must be a JSON object",
        ),
        (LearnInput, {"insight": "ok", "collection": " ", "session_id": ""}, "collection: must not be empty"),
        # recall checks the collection before the session, the filter, the spatial sort and the robots
        (RecallInput, {"n": 101, "collection": " "}, "n: is 101; the limit is 100"),
        (RecallInput, {"session_id": "", "collection": " ", "context_filter": "["}, "collection: must not"),
        (RecallInput, {"session_id": "", "context_filter": "["}, "session_id: must not be empty"),
        (RecallInput, {"context_filter": "[", "spatial_sort": "[", "robots": ""}, "context_filter: is not"),
        (RecallInput, {"spatial_sort": "[", "robots": ""}, "spatial_sort: is not valid JSON"),
        (SavePerceptionInput, {"description": "cam", "data": float("nan")}, "description: must be at least"),
        (SavePerceptionInput, {"description": "camera", "data": float("nan"), "collection": ""}, "data: "),
        (
            UpdateInput,
            {"memory_id": 1, "new_content": " ", "context": "[1]"},
            "new_content: must not be empty",
        ),
        # Pydantic's problems come first, all of them, before any check the settings make
        (
            RecallInput,
            {"n": "many", "min_confidence": 2, "context_filter": "["},
            "n: Input should be a valid",
        ),
    ]
    for model, arguments, start in cases:
        with pytest.raises(ValidationError) as caught:
            validate_input(model, arguments, settings)
        assert caught.value.message.startswith(start), (arguments, caught.value.message)


def test_an_unknown_parameter_names_the_accepted_ones() -> None:
    with pytest.raises(ValidationError) as caught:
        validate_input(LearnInput, {"insigth": "cup is slippery"}, Settings())
    assert caught.value.message == (
        "insight: Field required; insigth: unknown parameter; "
        "accepted parameters are insight, context, collection, session_id, observed_at, robot_id"
    )
    with pytest.raises(
        ValidationError, match=r"^memory_id: Input should be greater than or equal to 1 \(got 0\)$"
    ):
        validate_input(MemoryIdInput, {"memory_id": 0}, Settings())


def test_a_batch_names_the_item_and_its_field() -> None:
    settings = Settings()
    good = {"description": "camera frame"}
    with pytest.raises(ValidationError, match=r"^items\[1\]\.description: must be at least 5 characters"):
        validate_items(SavePerceptionInput, [good, {"description": "cam"}], settings)
    with pytest.raises(ValidationError, match=r"^items\[2\]: expected an object, got int$"):
        validate_items(SavePerceptionInput, [good, good, 3], settings)  # type: ignore[list-item]
    with pytest.raises(
        ValidationError, match=r"^items\[0\]\.colour: unknown field; expected one of description,"
    ):
        validate_items(SavePerceptionInput, [{**good, "colour": "red"}], settings)
    checked = validate_items(SavePerceptionInput, [good, {**good, "data": '{"w": 64}'}], settings)
    assert [item.data_json for item in checked] == [None, '{"w":64}']


def test_an_input_checked_with_these_settings_is_not_checked_again() -> None:
    settings = Settings()
    checked = validate_input(LearnInput, {"insight": "  grip at 12 N  ", "context": '{"a": 1}'}, settings)
    assert checked.insight == "grip at 12 N" and checked.context_object == {"a": 1}
    assert checked.within(settings) is checked
    built = LearnInput(insight="  grip at 12 N  ")  # validated by Pydantic alone, as a REST body is
    again = built.within(settings)
    assert again is not built and again.insight == "grip at 12 N" and built.insight == "  grip at 12 N  "
    other = Settings(max_insight_chars=5)
    with pytest.raises(ValidationError, match=r"^insight: is 12 characters; the limit is 5$"):
        checked.within(other)


def test_run_checks_an_input_built_elsewhere_before_anything_is_written(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    with RobotMemory(tmp_path / "memory.db", embed_backend="none", settings=settings) as memory:
        with pytest.raises(ValidationError, match=r"^insight: is 301 characters; the limit is 300$"):
            memory.run(LearnInput(insight="x" * 301))
        assert memory.list_memories()["total"] == 0
        created = memory.run(LearnInput(insight="the mug slips at 5 N"))
        assert created["status"] == "created"
        assert memory.run(MemoryIdInput(memory_id=created["memory_id"]))["content"] == "the mug slips at 5 N"
        assert memory.run(CategoriesInput()) == memory.categories()
        with pytest.raises(TypeError, match="OperationInput is not the input of an operation"):
            memory.run(OperationInput())
