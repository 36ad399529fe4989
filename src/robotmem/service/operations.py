"""Which feature function runs each operation's input model: what ``RobotMemory.run`` dispatches on."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from robotmem.formats.inputs import (
    AroundInput,
    EndSessionInput,
    ForgetInput,
    LastSeenInput,
    LearnInput,
    MemoryIdInput,
    OperationInput,
    RecallInput,
    SavePerceptionInput,
    StartSessionInput,
    UpdateInput,
)
from robotmem.service import browse, charts, memories, objects, perceptions, recall, sessions
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
from robotmem.service.engine import Engine

OPERATIONS: dict[type[OperationInput], Callable[[Engine, Any], Mapping[str, Any]]] = {
    LearnInput: memories.learn,
    RecallInput: recall.recall,
    LastSeenInput: objects.last_seen,
    AroundInput: objects.around,
    SavePerceptionInput: perceptions.save_perception,
    ForgetInput: memories.forget,
    UpdateInput: memories.update,
    StartSessionInput: sessions.start_session,
    EndSessionInput: sessions.end_session,
    MemoryIdInput: memories.get_memory,
    CollectionInput: browse.stats,
    ListMemoriesInput: browse.list_memories,
    ListSessionsInput: browse.list_sessions,
    CategoriesInput: browse.categories,
    RecentFailuresInput: browse.recent_failures,
    SpatialPointsInput: browse.spatial_points,
    EpisodeFacetsInput: browse.episode_facets,
    MapInput: charts.map_view,
    ParamFieldsInput: charts.param_fields,
    ParamOutcomeInput: charts.param_outcome,
}


def run(engine: Engine, args: OperationInput) -> Mapping[str, Any]:
    """Run the operation ``args`` is the input of, checked against the engine's settings unless it is."""
    operation = OPERATIONS.get(type(args))
    if operation is None:
        raise TypeError(f"{type(args).__name__} is not the input of an operation")
    return operation(engine, args.within(engine.settings))
