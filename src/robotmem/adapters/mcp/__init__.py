"""The MCP server: the nine operations as tools over stdio, all calling one ``RobotMemory``.

Only this package imports the ``mcp`` SDK (2.x); ``stdio`` is its transport. The tools are thin: on a worker
thread, so SQLite and embedding never stall the protocol, the arguments are validated once into the
operation's input model (``robotmem.formats.inputs``, checked against the memory's settings) and
``RobotMemory.run`` runs it; its SPEC §2 dict comes back unchanged as the structured result (and as JSON
text for clients that read only text). A ``RobotMemError`` becomes an MCP tool error
carrying the service's message; the server keeps serving.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from robotmem import RobotMemError, RobotMemory, __version__
from robotmem.adapters.mcp.stdio import claim_stdio, run_stdio
from robotmem.formats import strict_json
from robotmem.formats.inputs import (
    AroundInput,
    EndSessionInput,
    ForgetInput,
    LastSeenInput,
    LearnInput,
    OperationInput,
    RecallInput,
    SavePerceptionInput,
    StartSessionInput,
    UpdateInput,
    validate_input,
)
from robotmem.formats.results import (
    AroundResult,
    EndSessionResult,
    ForgetResult,
    LastSeenResult,
    LearnResult,
    PerceptionResult,
    RecallResult,
    StartSessionResult,
    UpdateResult,
)

log = logging.getLogger("robotmem.mcp")
JsonDict = dict[str, Any]


# ---- what the client's model reads ---------------------------------------------------------------------

INSTRUCTIONS = """\
robotmem is the robot's experience memory: parameters, trajectories, outcomes and lessons from earlier
episodes, kept in one local SQLite file. A typical episode: start_session at the start; recall before a
decision (what worked for this task, object, robot or position?); learn each lesson or parameter finding
as it appears, with its context; save_perception for trajectories and sensor readings; end_session with
an outcome_score at the end. Use update to correct a memory and forget to retract a wrong one."""

_CONTEXT_SECTIONS = """\
`context` is a JSON object (or a string holding one); four sections are conventional:
- params: parameters used, e.g. {"grip_force": {"value": 12.5, "unit": "N"}}
- spatial: positions and poses, e.g. {"object_position": [1.3, 0.7, 0.42]}
- robot: which robot, e.g. {"id": "fetch-001", "type": "Fetch", "dof": 7}
- task: what was attempted and how it went, e.g. {"name": "push_to_target", "success": true, "steps": 38}
Other keys are kept and filterable too; {"env": {"sim_or_real": "real"}} ranks a memory higher."""

DESCRIPTIONS: dict[str, str] = {
    "learn": f"""\
Store one experience so later episodes can recall it: a lesson, a parameter that worked, an episode outcome,
a safety limit. Use it right after something worked, failed or surprised you; one concise insight per call
(up to 300 characters by default) with the numbers that matter, e.g. "grip_force=12.5N yields highest
grasp success on mugs".
{_CONTEXT_SECTIONS}
Category, confidence, tags and `name=value unit` parameters are inferred and returned in auto_inferred.
observed_at says when it happened (ISO 8601 with a zone such as "2026-03-02T14:05:00Z", or epoch seconds),
when that is not now: e.g. a lesson from an earlier run. Without session_id the memory joins the session this server started last, if it is still open.
Returns {{"status": "created", "memory_id", "auto_inferred"}}, or {{"status": "duplicate", "method",
"existing_id", "similarity"}} when the same experience is already stored (not an error; nothing is added).""",
    "recall": """\
Find the stored experiences most relevant to the current situation; call it before deciding what to do.
`query` is free text in any language, matched by keywords and by meaning; it may be empty when filters or
spatial_sort select the memories. Narrow the search with:
- context_filter: a JSON object of dot path -> condition, all must hold. Paths reach any context key
  ("task.success", "params.grip_force", "robot.id", "env.sim_or_real") and the record fields category,
  confidence, type, perception_type, session_id, created_at, observed_at, robot_id, tags. A plain value means equality;
  operators: $eq $ne $lt $lte $gt $gte $in $nin $exists $between $contains, combined with $and / $or (lists
  of filters) and $not. Example: {"task.success": true, "params.grip_force": {"$between": [10, 15]},
  "$or": [{"robot.type": "Fetch"}, {"tags": {"$contains": "grasping"}}]}
- spatial_sort: {"field": "spatial.object_position", "target": [1.3, 0.7, 0.42], "max_distance": 0.5}
  orders by Euclidean distance to target, nearest first; max_distance drops memories farther away.
  Positions compare only within one coordinate frame (context spatial.frame; none named = "map"): add
  "frame": "odom" to sort another frame's positions.
- region: only memories whose spatial.position lies in a sphere {"center": [x, y, z], "radius": 2.0,
  "frame": "map"} (2 numbers: a circle on the floor) or a box {"min": [x, y, z], "max": [x, y, z],
  "frame": "map"}; boundary included. Use it for "what happened in the kitchen" or "near the dock".
- since / until: only memories observed in that window (when they happened, not when stored): ISO 8601
  with a zone, epoch seconds, "now", or a time before now such as "-30m", "-2h", "-7d". "What did I see in
  the last hour?" is since="-1h". They restrict before any limit, with or without a query.
- order="recent": newest observed first (the latest sightings); order="time": oldest stored first.
- session_id with order="time" replays that episode in the order it happened.
- robots: "self" for this robot's own experience, or robot ids (list or comma-separated); by default every
  robot's memories in the store, this robot's own ranked a little higher.
- collection: one collection (default: the server's), or "*" for every collection.
- min_relevance: by default an answer is empty when no memory reaches the calibrated relevance floor (0.5),
  else every hit comes with its relevance; given (0..1), memories less relevant are also left out; 0
  returns the nearest memories however unrelated.
Returns {"memories": [...], "total", "mode", "query_ms", "collections", "warnings", "note"}: collections
names the collections searched; warnings (usually empty) says why a context_filter may match nothing (a
path no memory in scope carries, with the nearest existing path, or a value of a type none stored there
has) or that a region's or spatial_sort's frame holds no position (with the frames that do): fix the
filter or frame and call again rather than concluding there is no such experience. Each memory has
id, content, category, confidence, tags, robot_id, uid (its fleet-wide id), observed_at (when it happened,
ISO 8601 UTC), created_at (when stored), score (best = 1.0, relative to this answer only), relevance (0..1,
comparable across queries; 0.5 is the floor), its context with the sections
params/spatial/robot/task also at top level, and spatial_distance when spatial_sort is used. Perception
data and metadata come only with include_data=true.
An empty memories list with a note and no warnings means the robot has no relevant experience for this
query in this scope: decide without it (or explore, then learn the outcome); do not retry the same query.
The note says which: nothing in the scope at all, nothing within max_distance, or nothing relevant.""",
    "last_seen": """\
Where did I last see it? For each object matching the question, its latest sighting: where (position and
coordinate frame), when (observed_at, ISO 8601 UTC) and in which memory. Objects are what stored memories name
in context.object ({"id": "mug-3", "label": "red mug"}). Ask by object_id for one object, or by query in words
("the red mug", "红色杯子", "where is my charger"): only objects the words name are returned (the question
holds the object's label or id, or every word asked is one of its label's: "mug" names the red mug, "the blue
mug" does not), best match first, so an object never seen returns {"objects": [], "note": ...} (the note says
why: no sighting names that id, none in the window asked, or no object seen is named) — then say you have
not seen it, never guess. as_of gives where the object was at that time ("where was the pallet before it was moved?": as_of
just before the move). since/until (ISO 8601, epoch seconds, or -30m/-2h/-7d) and region narrow the sightings.
Returns {"objects": [{"object_id", "label", "position", "frame", "observed_at", "memory_id", "sightings"}]};
when nothing is found and the region's frame holds no position, "warnings" says so and names the frames
that do: ask again in one of them. collection is one collection ("*" is refused).""",
    "around": """\
What is around me now? The objects whose latest sighting lies within radius (metres) of position ([x, y] or
[x, y, z], e.g. the robot's own position) in frame (default "map"; positions in other frames never count),
nearest first with their distance, and the memories there, newest observed first. An object that was seen here
earlier but has since been seen elsewhere is not listed (it moved). since keeps only objects seen after that
time (ISO 8601, epoch seconds, or -1d). Returns {"objects": [{"object_id", "label", "position", "frame",
"observed_at", "memory_id", "sightings", "distance"}], "memories": [...]} (memories as recall returns them);
when both are empty and the frame holds no position, "warnings" says so and names the frames that do.""",
    "save_perception": """\
Store what the robot sensed or did, with its raw payload: a camera observation, a force profile, a joint
trajectory or action sequence. `description` (at least 5 characters) is what recall searches; `data` and
`metadata` hold the payload as a string or any JSON value (size-capped) and are returned by recall only with
include_data=true. `context` (a JSON object as learn takes it: where, which object, which room, e.g.
{"spatial": {"position": [1.2, 0.4, 0.0]}, "room": "kitchen"}) is what context_filter and spatial_sort
reach; observed_at is when it was sensed (ISO 8601 with a zone or epoch seconds; default now).
perception_type: visual, tactile, auditory, proprioceptive, or procedural (trajectories,
action sequences). Repeated descriptions are stored again: a sensor stream is not a duplicate.
Returns {"memory_id", "perception_type", "collection", "has_embedding"}.""",
    "forget": """\
Retract a memory that turned out to be wrong (bad sensor, wrong conclusion) so that no recall returns it
again; to correct it instead, use update. The record stays in the file with the reason, out of every search
index. Fails when no active memory has this id. Returns {"status": "forgotten", "memory_id", "content",
"reason"}.""",
    "update": """\
Correct the text of a memory (up to 300 characters by default) and, when `context` is given, replace its
stored context (same sections as in learn); observed_at corrects when it happened. The memory is classified and indexed again. Fails when no active
memory has this id. Returns {"status": "updated", "memory_id", "old_content", "new_content", "auto_inferred"}.""",
    "start_session": """\
Begin an episode: one task attempt, run or trial. Call it at the start with a context such as
{"robot_id": "arm-01", "task": {"name": "push"}}. Later learn and save_perception calls without a session_id
join this episode, and each memory written in it takes the episode's robot id (robot_id or robot.id; else
the server's robot) and carries the episode's context under its own, so recall's robots=["arm-01"] and
context_filter {"task.name": "push"} find them. Returns {"session_id", "collection", "active_memories_count"}; keep session_id for end_session.""",
    "end_session": """\
End an episode. Stores outcome_score (0..1, how well it went), merges near-duplicate memories of the episode
(the merged ones are kept as superseded), applies confidence decay, and returns memories of other episodes
related to this one. Returns {"status": "ended", "session_id", "summary": {"memory_count", "by_type",
"by_category"}, "decayed_count", "consolidated": {"merged_groups", "superseded_count", "compression_ratio",
"avg_similarity"}, "related_memories": [...]}.""",
}

# Parameter descriptions: (tool, name) replaces the input model's, ("*", name) fills one the model lacks.
PARAMETER_HINTS: dict[tuple[str, str], str] = {
    ("*", "collection"): "Collection (namespace) to use; default: the server's (--collection).",
    ("*", "session_id"): "Session (episode) id from start_session.",
    ("save_perception", "perception_type"): "visual, tactile, auditory, proprioceptive or procedural.",
    (
        "start_session",
        "context",
    ): 'Episode context (JSON object or string), e.g. {"robot_id": "arm-01", "task": {"name": "push"}}.',
}


# ---- the nine tools -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    """One RobotMemory operation exposed as a tool."""

    name: str
    title: str
    inputs: type[OperationInput]
    # The result TypedDict: the tool's output schema, against which the SDK checks every structured result.
    output: type[Any]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    def annotations(self) -> ToolAnnotations:
        """Return the MCP hints of this tool (the memory file is a closed world)."""
        return ToolAnnotations(
            title=self.title,
            read_only_hint=self.read_only,
            destructive_hint=None if self.read_only else self.destructive,
            idempotent_hint=None if self.read_only else self.idempotent,
            open_world_hint=False,
        )


OPERATIONS: tuple[Operation, ...] = (
    Operation("learn", "Learn from experience", LearnInput, LearnResult),
    Operation("recall", "Recall relevant experience", RecallInput, RecallResult, read_only=True),
    Operation("last_seen", "Where an object was last seen", LastSeenInput, LastSeenResult, read_only=True),
    Operation("around", "Objects and memories around a position", AroundInput, AroundResult, read_only=True),
    Operation("save_perception", "Save a perception", SavePerceptionInput, PerceptionResult),
    # forget only marks the memory invalidated (it stays in the file with its reason), yet recall loses it.
    Operation("forget", "Forget a memory", ForgetInput, ForgetResult, destructive=True, idempotent=True),
    Operation("update", "Correct a memory", UpdateInput, UpdateResult, destructive=True, idempotent=True),
    Operation("start_session", "Start an episode", StartSessionInput, StartSessionResult),
    # Consolidation marks merged memories superseded but keeps them with their lineage: nothing is lost.
    Operation("end_session", "End an episode", EndSessionInput, EndSessionResult),
)


def input_schema(operation: Operation) -> JsonDict:
    """Return the JSON schema of a tool's arguments: the service's input model, with parameter hints."""
    schema = operation.inputs.model_json_schema()
    schema.pop("title", None)
    for name, prop in schema.get("properties", {}).items():
        prop.pop("title", None)
        specific = PARAMETER_HINTS.get((operation.name, name))
        if specific is not None:
            prop["description"] = specific
        elif not prop.get("description") and ("*", name) in PARAMETER_HINTS:
            prop["description"] = PARAMETER_HINTS["*", name]
    return schema


def _signature(operation: Operation) -> inspect.Signature:
    """The tool function's signature: the input model's parameters, and the output model for the SDK.

    ``RobotMemServer.call_tool`` checks arguments with the input model itself; the signature stays loose
    (text fields ``str``, others ``Any``) so that the SDK's own handling, if it ever runs, passes them on.
    """
    parameters = []
    for name, field in operation.inputs.model_fields.items():
        default = inspect.Parameter.empty if field.is_required() else field.default
        annotation = str if field.annotation is str else Any
        parameters.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )
    return inspect.Signature(parameters, return_annotation=Annotated[CallToolResult, operation.output])


def _run(memory: RobotMemory, inputs: type[OperationInput], arguments: JsonDict) -> Mapping[str, Any]:
    """Validate the arguments once and run the operation on a worker thread; a RobotMemError becomes a tool
    error with its message."""
    try:
        args = validate_input(inputs, arguments, memory.settings)
        return memory.run(args)
    except RobotMemError as exc:
        raise ToolError(exc.message) from exc


ToolFunction = Callable[..., Awaitable[CallToolResult]]


def tool_function(memory: RobotMemory, operation: Operation) -> ToolFunction:
    """Return the async tool function of ``operation``: the RobotMemory operation, run off the event loop.

    Each call runs on a worker thread of its own, so a call that needs no embedding (``start_session``,
    ``forget``) never waits behind one whose embedder is slow, nor behind the embedder's loading in the
    background (the engine creates the embedder once, however many calls ask for it). It returns the
    operation's dict as structured content and as JSON text; raises ``ToolError``.
    """

    async def call(**arguments: Any) -> CallToolResult:
        # Text and structured content are the same strict JSON: a non-finite number is null in both.
        work = partial(_run, memory, operation.inputs, arguments)
        result = strict_json.finite(await anyio.to_thread.run_sync(work))
        text = strict_json.dumps(result)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=result)

    call.__name__ = call.__qualname__ = operation.name
    call.__doc__ = DESCRIPTIONS[operation.name]
    call.__signature__ = _signature(operation)  # type: ignore[attr-defined]
    return call


class RobotMemServer(MCPServer):
    """An ``MCPServer`` whose robotmem tools receive the arguments exactly as the client sent them.

    The SDK's generic argument handling parses JSON-looking strings, drops unknown parameters silently
    and words its errors for Python programmers. Here the arguments go to the tool function unchanged,
    which validates them once into the operation's input model (``robotmem.formats.inputs``), so errors
    read as on every other surface: ``n: is 500; the limit is 100``, ``insigth: unknown parameter; ...``.
    """

    def __init__(self, functions: Mapping[str, ToolFunction], **options: Any) -> None:
        super().__init__(**options)
        self._functions = dict(functions)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        function = self._functions.get(name)
        if function is None:
            return await super().call_tool(name, arguments, context)
        try:
            return await function(**arguments)
        except ToolError as exc:
            raise ToolError(f"Error executing tool {name}: {exc}") from exc
        except Exception as exc:
            # A bug: the client learns only that the tool failed; the SDK logs the traceback to stderr.
            raise UnexpectedToolError(f"Error executing tool {name}") from exc


def build_server(memory: RobotMemory) -> MCPServer:
    """Return an MCP server whose nine tools call ``memory``."""
    tools = []
    functions: dict[str, ToolFunction] = {}
    for operation in OPERATIONS:
        functions[operation.name] = tool_function(memory, operation)
        tool = Tool.from_function(
            functions[operation.name],
            name=operation.name,
            title=operation.title,
            description=DESCRIPTIONS[operation.name],
            annotations=operation.annotations(),
            structured_output=True,
        )
        tool.parameters = input_schema(operation)
        tools.append(tool)
    level = memory.settings.log_level.upper()
    return RobotMemServer(
        functions,
        name="robotmem",
        title="robotmem",
        description="Experience memory for robots: store and recall what happened in earlier episodes.",
        instructions=INSTRUCTIONS,
        version=__version__,
        tools=tools,
        log_level=level if level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") else "WARNING",
    )


def _warm_up(memory: RobotMemory) -> None:
    started = time.perf_counter()
    try:
        memory.warm_up()
        embedder = memory.embedder
        log.info(
            "embedder %s loaded in %.2f s: %s",
            embedder.model_id,
            time.perf_counter() - started,
            embedder.status,
        )
    except Exception:  # a model that fails to load leaves recall in BM25 mode; serving goes on
        log.exception("loading the embedder failed; recall runs without vectors")


def serve(db: str | None = None, collection: str | None = None, embed_backend: str | None = None) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin and every call read is answered.

    The transport is ``robotmem.adapters.mcp.stdio``: every line gets a reply, an unparseable one a
    JSON-RPC error.

    Settings not given come from the environment (``ROBOTMEM_*``) as for ``RobotMemory()``. The embedder
    loads in a background thread, so the ``initialize`` handshake never waits for a model. Logs go to
    stderr; stdout carries only the protocol.
    """
    memory = RobotMemory(db, collection, embed_backend)
    server = build_server(memory)
    threading.Thread(target=_warm_up, args=(memory,), name="robotmem-warm-up", daemon=True).start()
    log.info("serving MCP over stdio: database %s, collection %s", memory.location, memory.collection)
    try:
        source, sink = claim_stdio()
        anyio.run(run_stdio, server, source, sink)
    finally:
        memory.close()
