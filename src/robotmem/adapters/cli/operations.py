"""``robotmem demo`` and the seven operations as commands (``learn``, ``recall``, ``save-perception``, …)."""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from robotmem import RobotMemory
from robotmem.adapters.cli.common import open_memory, print_json
from robotmem.adapters.cli.tables import recall_table
from robotmem.config import load_settings
from robotmem.formats.inputs import (
    ALL_COLLECTIONS,
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
)

QUICK_START_STEPS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("start_session", "start an episode", {"context": '{"robot_id": "arm-01", "task": {"name": "push"}}'}),
    (
        "learn",
        "store what worked",
        {
            "insight": "grip_force=12.5N yields highest grasp success rate",
            "context": '{"params": {"grip_force": {"value": 12.5, "unit": "N"}}, "task": {"success": true}}',
        },
    ),
    (
        "recall",
        "recall successful experience near a position",
        {
            "query": "grip force parameters",
            "context_filter": '{"task.success": true}',
            "spatial_sort": '{"field": "spatial.position", "target": [1.3, 0.7, 0.42]}',
        },
    ),
    (
        "save_perception",
        "store a trajectory",
        {
            "description": "Grasp trajectory: 30 steps, success",
            "perception_type": "procedural",
            "data": '{"sampled_actions": [[0.1, -0.3, 0.05, 0.8]]}',
        },
    ),
)


def _demo(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="robotmem-demo-") as home:
        path = Path(home) / "memory.db"
        print(f"robotmem demo on a throwaway database: {path}\n")
        with RobotMemory(
            path, embed_backend=getattr(args, "embed_backend", None), settings=load_settings(os.environ)
        ) as mem:
            session: dict[str, Any] = {}
            for operation, why, kwargs in QUICK_START_STEPS:
                print(f"# {operation}: {why}")
                print(f">>> {operation}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})")
                result = getattr(mem, operation)(**kwargs)
                if operation == "start_session":
                    session = result
                print_json(result)
                print()
            print("# end_session: summarise, consolidate, and find related experience")
            print(f">>> end_session(session_id={session['session_id']!r})")
            print_json(mem.end_session(session_id=session["session_id"]))
            print("\n# doctor: search mode and index health")
            report = mem.doctor()
            print_json(
                {"search_mode": report["search_mode"], "embedder": report["embedder"], "ok": report["ok"]}
            )
    return 0


def _recall(args: argparse.Namespace) -> int:
    """``recall``: the common --collection opens the memory; --all-collections searches every collection.
    A table on a terminal (or with --table), the JSON result otherwise (or with --json)."""
    accepted = set(RecallInput.model_fields) - {"collection"}
    fields = {key: value for key, value in vars(args).items() if key in accepted and value is not None}
    if args.all_collections:
        fields["collection"] = ALL_COLLECTIONS
    with open_memory(args) as mem:
        result = mem.recall(**fields)
    as_table = args.output == "table" or (args.output is None and sys.stdout.isatty())
    if as_table:
        sys.stdout.write(recall_table(result))
    else:
        print_json(result)
    return 0


def _operation(name: str) -> Callable[[argparse.Namespace], int]:
    # The command's options are the operation's parameters (its input model), but for collection: that one
    # is the common --collection, which opens the memory. Options not given keep the method's defaults.
    accepted = set(_INPUTS[name].model_fields) - {"collection"}

    def run(args: argparse.Namespace) -> int:
        fields = {key: value for key, value in vars(args).items() if key in accepted and value is not None}
        with open_memory(args) as mem:
            print_json(getattr(mem, name)(**fields))
        return 0

    return run


_OBSERVED_AT = "when it happened: ISO 8601 with a zone (2026-01-01T12:00:00Z) or epoch seconds"
_ROBOT_ID = (
    "the robot that had it (default: the session's robot, else ROBOTMEM_ROBOT_ID, else this store's id)"
)
_TIME_BOUND = "ISO 8601 with a zone, epoch seconds, now, or before now (-30m, -2h, -7d)"
# argparse's pattern of a negative number, widened to every word that starts like one: relative times
# (-30m, -1.5h) are values, and so is a mistyped one (-2x), which the input model then refuses by name.
_NEGATIVE_OR_RELATIVE = re.compile(r"^-\.?\d")

_INPUTS: dict[str, type[OperationInput]] = {
    "learn": LearnInput,
    "recall": RecallInput,
    "last_seen": LastSeenInput,
    "around": AroundInput,
    "save_perception": SavePerceptionInput,
    "forget": ForgetInput,
    "update": UpdateInput,
    "start_session": StartSessionInput,
    "end_session": EndSessionInput,
}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``demo`` and one command per operation."""

    sub.add_parser("demo", parents=[common], help="run the quick start on a throwaway database").set_defaults(
        run=_demo
    )

    p = sub.add_parser("learn", parents=[common], help="store an experience")
    p.add_argument("insight")
    p.add_argument("--context")
    p.add_argument("--session-id", dest="session_id")
    p.add_argument("--observed-at", dest="observed_at", help=_OBSERVED_AT)
    p.add_argument("--robot-id", dest="robot_id", help=_ROBOT_ID)
    p.set_defaults(run=_operation("learn"))
    p = sub.add_parser("recall", parents=[common], help="find relevant memories")
    p.add_argument("query", nargs="?", default="")
    p.add_argument("-n", type=int)
    p.add_argument("--min-confidence", dest="min_confidence", type=float)
    p.add_argument("--session-id", dest="session_id")
    p.add_argument("--filter", dest="context_filter")
    p.add_argument("--spatial-sort", dest="spatial_sort")
    p.add_argument(
        "--region",
        help='JSON sphere {"center": [x, y, z], "radius": r, "frame": "map"} or box {"min": [...], "max": [...]}',
    )
    p.add_argument("--include-data", dest="include_data", action="store_true", default=None)
    p.add_argument(
        "--order",
        choices=["relevance", "time", "recent"],
        help="relevance; time: oldest stored first; recent: newest observed first",
    )
    p.add_argument(
        "--robots", help='comma-separated robot ids ("self" = this robot); default: the whole fleet'
    )
    p.add_argument(
        "--min-relevance",
        dest="min_relevance",
        type=float,
        help="leave out memories less relevant than this, 0..1 (default: empty only when none reaches 0.5, "
        "the calibrated floor; 0: off)",
    )
    p.add_argument("--since", help=f"only memories observed at or after: {_TIME_BOUND}")
    p.add_argument("--until", help=f"only memories observed at or before: {_TIME_BOUND}")
    # ``--since -2h``: a value that looks like a time before now is a value, not an option.
    p._negative_number_matcher = _NEGATIVE_OR_RELATIVE
    p.add_argument(
        "--all-collections",
        dest="all_collections",
        action="store_true",
        help="search every collection (default: --collection, else 'default')",
    )
    output = p.add_mutually_exclusive_group()
    output.add_argument(
        "--json",
        dest="output",
        action="store_const",
        const="json",
        help="print the full JSON result (the default when stdout is not a terminal)",
    )
    output.add_argument(
        "--table",
        dest="output",
        action="store_const",
        const="table",
        help="print a table (the default on a terminal)",
    )
    p.set_defaults(run=_recall, output=None)
    p = sub.add_parser("last-seen", parents=[common], help="where an object was last seen")
    p.add_argument("query", nargs="?", default="", help='the object in words ("the red mug"), or empty')
    p.add_argument("--object-id", dest="object_id")
    p.add_argument("-n", type=int)
    p.add_argument("--since", help=f"only sightings observed at or after: {_TIME_BOUND}")
    p.add_argument("--until", help=f"only sightings observed at or before: {_TIME_BOUND}")
    p.add_argument("--as-of", dest="as_of", help=f"where it was at this time: {_TIME_BOUND}")
    p.add_argument("--region", help="JSON sphere or box, as for recall --region")
    p._negative_number_matcher = _NEGATIVE_OR_RELATIVE  # ``--as-of -2h`` is a value
    p.set_defaults(run=_operation("last_seen"))
    p = sub.add_parser("around", parents=[common], help="objects and memories around a position")
    p.add_argument("position", type=float, nargs="+", help="x y [z]")
    p.add_argument("--radius", type=float, required=True)
    p.add_argument("--frame")
    p.add_argument("--since", help=f"only objects last seen at or after: {_TIME_BOUND}")
    p.add_argument("-n", type=int)
    p._negative_number_matcher = (
        _NEGATIVE_OR_RELATIVE  # ``--since -1h`` is a value, and so is ``-2.5`` in x y
    )
    p.set_defaults(run=_operation("around"))
    p = sub.add_parser("save-perception", parents=[common], help="store a perception")
    p.add_argument("description")
    p.add_argument(
        "--type",
        dest="perception_type",
        choices=["visual", "tactile", "auditory", "proprioceptive", "procedural"],
    )
    p.add_argument("--data")
    p.add_argument("--metadata")
    p.add_argument("--session-id", dest="session_id")
    p.add_argument("--context", help="context JSON, filterable and sortable as learn's")
    p.add_argument("--observed-at", dest="observed_at", help=_OBSERVED_AT)
    p.add_argument("--robot-id", dest="robot_id", help=_ROBOT_ID)
    p.set_defaults(run=_operation("save_perception"))
    p = sub.add_parser("forget", parents=[common], help="invalidate a memory")
    p.add_argument("memory_id", type=int)
    p.add_argument("--reason", required=True)
    p.set_defaults(run=_operation("forget"))
    p = sub.add_parser("update", parents=[common], help="correct a memory")
    p.add_argument("memory_id", type=int)
    p.add_argument("new_content")
    p.add_argument("--context")
    p.add_argument("--observed-at", dest="observed_at", help=_OBSERVED_AT)
    p.set_defaults(run=_operation("update"))
    p = sub.add_parser("start-session", parents=[common], help="begin an episode")
    p.add_argument("--context")
    p.set_defaults(run=_operation("start_session"))
    p = sub.add_parser("end-session", parents=[common], help="end an episode")
    p.add_argument("session_id")
    p.add_argument("--outcome-score", dest="outcome_score", type=float)
    p.set_defaults(run=_operation("end_session"))
