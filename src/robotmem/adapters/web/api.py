"""The REST API: blueprint ``api_bp`` under ``/api``.

Every view receives its input as the operation's model (``robotmem.formats.inputs``, the browse views'
in ``robotmem.service.browse``), which flask-openapi3 validates (and ``/api/openapi.json`` is generated
from), hands it to ``RobotMemory.run`` (which checks it against the settings, once), and returns the
result unchanged. Errors travel up to the single handler in ``robotmem.adapters.web``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import current_app
from flask_openapi3.blueprint import APIBlueprint
from flask_openapi3.models.tag import Tag
from flask_openapi3.types import ResponseDict
from pydantic import BaseModel, ConfigDict, Field, create_model

from robotmem import RobotMemory
from robotmem.adapters.web.remote import local_paths, without_paths
from robotmem.formats.inputs import (
    AroundInput,
    EndSessionInput,
    ForgetInput,
    LastSeenInput,
    LearnInput,
    MemoryIdInput,
    RecallInput,
    SavePerceptionInput,
    StartSessionInput,
    UpdateInput,
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
from robotmem.service.maintenance import database_name


class ErrorDetail(BaseModel):
    """What went wrong: a stable code and a message that says what to change."""

    code: str = Field(description="invalid_input, not_found, conflict, storage, embedder, unauthorized, ...")
    message: str


class ErrorResponse(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


class SessionPath(BaseModel):
    """A session id in the path."""

    session_id: str = Field(min_length=1, max_length=200, description="Session id.")


def _body_without(model: type[BaseModel], name: str, *dropped: str) -> type[BaseModel]:
    """Return a request-body model with the fields of ``model`` except ``dropped`` (taken from the path)."""
    fields: dict[str, Any] = {
        field_name: (info.annotation, info)
        for field_name, info in model.model_fields.items()
        if field_name not in dropped
    }
    built: type[BaseModel] = create_model(
        name, __config__=ConfigDict(extra="forbid", strict=False), __doc__=model.__doc__, **fields
    )
    return built


UpdateBody = _body_without(UpdateInput, "UpdateBody", "memory_id")
ForgetBody = _body_without(ForgetInput, "ForgetBody", "memory_id")

_ERRORS: ResponseDict = {
    400: ErrorResponse,
    401: ErrorResponse,
    403: ErrorResponse,
    404: ErrorResponse,
    409: ErrorResponse,
    415: ErrorResponse,
    503: ErrorResponse,
}

api_bp = APIBlueprint("api", __name__, url_prefix="/api", abp_responses=_ERRORS)

_browse = Tag(name="browse", description="Read-only views for dashboards and the web UI")
_memory = Tag(name="memory", description="One memory: read, edit, forget")
_operations = Tag(name="operations", description="The seven operations, as in the Python API")


def memory() -> RobotMemory:
    """Return the ``RobotMemory`` the running app serves."""
    found: RobotMemory = current_app.extensions["robotmem"]
    return found


def _dump(model: BaseModel) -> dict[str, Any]:
    return {name: getattr(model, name) for name in type(model).model_fields}


def _with_memory_id(
    model: type[UpdateInput] | type[ForgetInput], path: MemoryIdInput, body: BaseModel
) -> Any:
    """The operation's input from the path's memory id and the body's other fields, each validated already."""
    return model.model_construct(memory_id=path.memory_id, **_dump(body))


# ---- inspection and browsing ---------------------------------------------------------------------


@api_bp.get("/doctor", tags=[_browse])
def doctor() -> Mapping[str, Any]:
    """Health report: database (its name), index consistency, embedder and search mode.

    No filesystem path or server address goes over HTTP (a client may be on another machine, or behind
    a proxy that makes it look local): ``database`` is the file name, or the PostgreSQL database's
    name, and paths in the embedder's status are ``<path>``. ``robotmem doctor`` on the machine shows
    them in full.
    """
    served = memory()
    report: dict[str, Any] = dict(served.doctor())
    report["database"] = database_name(str(report["database"]))
    scrubbed: dict[str, Any] = without_paths(report, local_paths(served))
    return scrubbed


@api_bp.get("/stats", tags=[_browse])
def stats(query: CollectionInput) -> Mapping[str, Any]:
    """Dashboard totals, categories, collections and per-session outcomes over time."""
    return memory().run(query)


@api_bp.get("/memories", tags=[_browse])
def list_memories(query: ListMemoriesInput) -> Mapping[str, Any]:
    """One page of memories with filters (collection, type, status, category, confidence, time, perception)."""
    return memory().run(query)


@api_bp.get("/search", tags=[_browse])
def search(query: RecallInput) -> Mapping[str, Any]:
    """Hybrid recall (BM25 + vector), the same as ``recall`` everywhere; JSON parameters as strings."""
    return memory().run(query)


@api_bp.get("/sessions", tags=[_browse])
def list_sessions(query: ListSessionsInput) -> Mapping[str, Any]:
    """One page of sessions with outcome scores and success rates."""
    return memory().run(query)


@api_bp.get("/sessions/<session_id>", tags=[_browse])
def get_session(path: SessionPath) -> Mapping[str, Any]:
    """One session with its outcome."""
    return memory().get_session(path.session_id)


@api_bp.get("/sessions/<session_id>/memories", tags=[_browse])
def session_memories(path: SessionPath) -> Mapping[str, Any]:
    """The episode timeline: the session and its memories in time order."""
    return memory().session_memories(path.session_id)


@api_bp.get("/collections", tags=[_browse])
def collections() -> Mapping[str, Any]:
    """Every collection with memory and session counts."""
    return memory().collections()


@api_bp.get("/categories", tags=[_browse])
def categories(query: CategoriesInput) -> Mapping[str, Any]:
    """Active memories per category, largest first."""
    return memory().run(query)


@api_bp.get("/recent-failures", tags=[_browse])
def recent_failures(query: RecentFailuresInput) -> Mapping[str, Any]:
    """Failed episodes and the lessons drawn from failures."""
    return memory().run(query)


@api_bp.get("/spatial", tags=[_browse])
def spatial(query: SpatialPointsInput) -> Mapping[str, Any]:
    """Positions stored under one spatial.* key, with each memory's task success."""
    return memory().run(query)


@api_bp.get("/episode-facets", tags=[_browse])
def episode_facets(query: EpisodeFacetsInput) -> Mapping[str, Any]:
    """The robots and tasks the sessions name, with their session counts (for the episode filters)."""
    return memory().run(query)


@api_bp.get("/map", tags=[_browse])
def map_view(query: MapInput) -> Mapping[str, Any]:
    """Positions at one spatial.* field (default: the one most memories carry) in a time window."""
    return memory().run(query)


@api_bp.get("/params", tags=[_browse])
def param_fields(query: ParamFieldsInput) -> Mapping[str, Any]:
    """The numeric params.* of active memories with their units and counts."""
    return memory().run(query)


@api_bp.get("/params/outcome", tags=[_browse])
def param_outcome(query: ParamOutcomeInput) -> Mapping[str, Any]:
    """Success rate (task.success) by bins of a parameter, or a grid of two, with Wilson 95 % intervals."""
    return memory().run(query)


@api_bp.get("/server", tags=[_browse])
def server() -> Mapping[str, Any]:
    """What the page needs to know of the server: whether writes need a token."""
    return {"token_required": bool(current_app.extensions["robotmem.token_required"])}


# ---- one memory -----------------------------------------------------------------------------------


@api_bp.get("/memory/<int:memory_id>", tags=[_memory])
def get_memory(path: MemoryIdInput) -> Mapping[str, Any]:
    """The full record in any status, with perception payload and merged/superseded lineage."""
    return memory().run(path)


@api_bp.put("/memory/<int:memory_id>", tags=[_memory])
def put_memory(path: MemoryIdInput, body: UpdateBody) -> Mapping[str, Any]:  # type: ignore[valid-type]
    """Correct the text (and optionally the context); the memory is re-indexed for BM25 and vectors."""
    return memory().run(_with_memory_id(UpdateInput, path, body))


@api_bp.delete("/memory/<int:memory_id>", tags=[_memory])
def delete_memory(path: MemoryIdInput, body: ForgetBody) -> Mapping[str, Any]:  # type: ignore[valid-type]
    """Forget the memory (status invalidated, with the reason); recall stops returning it."""
    return memory().run(_with_memory_id(ForgetInput, path, body))


# ---- the seven operations -------------------------------------------------------------------------


@api_bp.post("/learn", tags=[_operations])
def learn(body: LearnInput) -> Mapping[str, Any]:
    """Store an experience; a duplicate is a result (status duplicate), not an error."""
    return memory().run(body)


@api_bp.post("/recall", tags=[_operations])
def recall(body: RecallInput) -> Mapping[str, Any]:
    """Find the most relevant memories (JSON body; context_filter and spatial_sort as objects)."""
    return memory().run(body)


@api_bp.post("/last_seen", tags=[_operations])
def last_seen(body: LastSeenInput) -> Mapping[str, Any]:
    """Where each matching object was last seen (by object_id, or a description in words; as_of: then)."""
    return memory().run(body)


@api_bp.post("/around", tags=[_operations])
def around(body: AroundInput) -> Mapping[str, Any]:
    """The objects whose latest sighting lies within a radius of a position, and the latest memories there."""
    return memory().run(body)


@api_bp.post("/save_perception", tags=[_operations])
def save_perception(body: SavePerceptionInput) -> Mapping[str, Any]:
    """Store a sensor reading or trajectory."""
    return memory().run(body)


@api_bp.post("/forget", tags=[_operations])
def forget(body: ForgetInput) -> Mapping[str, Any]:
    """Mark a memory as wrong so recall stops returning it."""
    return memory().run(body)


@api_bp.post("/update", tags=[_operations])
def update(body: UpdateInput) -> Mapping[str, Any]:
    """Correct the text (and optionally the context) of a memory."""
    return memory().run(body)


@api_bp.post("/start_session", tags=[_operations])
def start_session(body: StartSessionInput) -> Mapping[str, Any]:
    """Begin an episode."""
    return memory().run(body)


@api_bp.post("/end_session", tags=[_operations])
def end_session(body: EndSessionInput) -> Mapping[str, Any]:
    """End an episode: summarise, consolidate, decay, and return related memories."""
    return memory().run(body)
