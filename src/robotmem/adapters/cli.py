"""The ``robotmem`` command: the seven operations, demo, doctor, and the servers."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from robotmem import RobotMemError, RobotMemory
from robotmem.config import load_settings

QUICK_START_STEPS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("start_session", "start an episode", {"context": '{"robot_id": "arm-01", "task": "push"}'}),
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


def print_json(value: Any) -> None:
    """Print a result as indented JSON on stdout (the output of every command)."""
    print(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def open_memory(args: argparse.Namespace) -> RobotMemory:
    """Return the RobotMemory the common options (--db, --collection, --embed-backend) select."""
    settings = load_settings(os.environ)
    return RobotMemory(
        getattr(args, "db", None),
        getattr(args, "collection", None),
        getattr(args, "embed_backend", None),
        settings=settings,
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


def _doctor(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        report = mem.doctor()
    print_json(report)
    return 0 if report["ok"] else 1


def _operation(name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        fields = {
            key: value
            for key, value in vars(args).items()
            if key in _OPERATION_FIELDS[name] and value is not None
        }
        with open_memory(args) as mem:
            print_json(getattr(mem, name)(**fields))
        return 0

    return run


_OPERATION_FIELDS: dict[str, tuple[str, ...]] = {
    "learn": ("insight", "context", "session_id"),
    "recall": (
        "query",
        "n",
        "min_confidence",
        "session_id",
        "context_filter",
        "spatial_sort",
        "include_data",
        "order",
    ),
    "save_perception": ("description", "perception_type", "data", "metadata", "session_id"),
    "forget": ("memory_id", "reason"),
    "update": ("memory_id", "new_content", "context"),
    "start_session": ("context",),
    "end_session": ("session_id", "outcome_score"),
}


def _mcp(args: argparse.Namespace) -> int:
    from robotmem.adapters.mcp import serve

    serve(db=args.db, collection=args.collection, embed_backend=args.embed_backend)
    return 0


def _web(args: argparse.Namespace) -> int:
    from robotmem.adapters.web import serve

    serve(
        host=args.host,
        port=args.port,
        db=args.db,
        collection=args.collection,
        embed_backend=args.embed_backend,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``robotmem`` command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", help="database file (default: $ROBOTMEM_HOME/memory.db)")
    common.add_argument("--collection", help="collection to use (default: 'default')")
    common.add_argument(
        "--embed-backend",
        dest="embed_backend",
        choices=["auto", "bundled", "onnx", "ollama", "openai", "hash", "none"],
    )
    parser = argparse.ArgumentParser(prog="robotmem", description="Experience memory for robots.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("demo", parents=[common], help="run the quick start on a throwaway database").set_defaults(
        run=_demo
    )
    sub.add_parser("doctor", parents=[common], help="check the database, indexes and embedder").set_defaults(
        run=_doctor
    )
    sub.add_parser("mcp", parents=[common], help="serve MCP over stdio").set_defaults(run=_mcp)
    web = sub.add_parser("web", parents=[common], help="serve the web UI and REST API")
    web.add_argument("--host", default="127.0.0.1")
    web.add_argument("--port", type=int, default=7878)
    web.set_defaults(run=_web)

    p = sub.add_parser("learn", parents=[common], help="store an experience")
    p.add_argument("insight")
    p.add_argument("--context")
    p.add_argument("--session-id", dest="session_id")
    p.set_defaults(run=_operation("learn"))
    p = sub.add_parser("recall", parents=[common], help="find relevant memories")
    p.add_argument("query", nargs="?", default="")
    p.add_argument("-n", type=int)
    p.add_argument("--min-confidence", dest="min_confidence", type=float)
    p.add_argument("--session-id", dest="session_id")
    p.add_argument("--filter", dest="context_filter")
    p.add_argument("--spatial-sort", dest="spatial_sort")
    p.add_argument("--include-data", dest="include_data", action="store_true", default=None)
    p.add_argument("--order", choices=["relevance", "time"])
    p.set_defaults(run=_operation("recall"))
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
    p.set_defaults(run=_operation("save_perception"))
    p = sub.add_parser("forget", parents=[common], help="invalidate a memory")
    p.add_argument("memory_id", type=int)
    p.add_argument("--reason", required=True)
    p.set_defaults(run=_operation("forget"))
    p = sub.add_parser("update", parents=[common], help="correct a memory")
    p.add_argument("memory_id", type=int)
    p.add_argument("new_content")
    p.add_argument("--context")
    p.set_defaults(run=_operation("update"))
    p = sub.add_parser("start-session", parents=[common], help="begin an episode")
    p.add_argument("--context")
    p.set_defaults(run=_operation("start_session"))
    p = sub.add_parser("end-session", parents=[common], help="end an episode")
    p.add_argument("session_id")
    p.add_argument("--outcome-score", dest="outcome_score", type=float)
    p.set_defaults(run=_operation("end_session"))
    for register in _extension_registrars():
        register(sub, common)
    return parser


def _extension_registrars() -> list[Callable[[Any, argparse.ArgumentParser], None]]:
    """Return the ``register(subparsers, common)`` functions of the command groups in their own modules."""
    import importlib

    registrars = []
    for module_name in ("cli_maintenance", "cli_transfer", "cli_eval"):
        try:
            module = importlib.import_module(f"robotmem.adapters.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"robotmem.adapters.{module_name}":
                raise
            continue
        registrars.append(module.register)
    return registrars


def configure_logging(level: str) -> None:
    """Send robotmem's logs to stderr (stdout belongs to command output and the MCP protocol)."""
    logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("robotmem").setLevel(level.upper())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; with no command, serve MCP over stdio."""
    args = build_parser().parse_args(argv)
    if args.command is None:
        args = build_parser().parse_args(["mcp", *(argv or [])])
    try:
        configure_logging(load_settings(os.environ).log_level)
        return int(args.run(args))
    except RobotMemError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
