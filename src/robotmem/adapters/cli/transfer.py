"""``robotmem embed backfill|reindex|status``, ``robotmem export``, ``robotmem import`` and ``robotmem sync``.

Progress bars go to stderr (stdout carries the JSON result); ``--no-progress`` turns them off.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from robotmem.adapters.cli.common import ProgressBars, open_memory, print_json, progress_options


def _with_bars(args: argparse.Namespace, run: Any) -> dict[str, Any]:
    bars = ProgressBars(enabled=not args.no_progress)
    try:
        with open_memory(args) as mem:
            result: dict[str, Any] = run(mem, bars)
    finally:
        bars.close()
    return result


def _backfill(args: argparse.Namespace) -> int:
    result = _with_bars(args, lambda mem, bars: mem.backfill(batch_size=args.batch_size, progress=bars))
    print_json(result)
    if result["status"] != "complete":
        print(f"Error: backfill {result['status']}: {result['reason']}", file=sys.stderr)
        return 1
    return 0


def _reindex(args: argparse.Namespace) -> int:
    print_json(_with_bars(args, lambda mem, bars: mem.reindex(batch_size=args.batch_size, progress=bars)))
    return 0


def _status(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        print_json(mem.embedding_status())
    return 0


def _export(args: argparse.Namespace) -> int:
    print_json(
        _with_bars(
            args,
            lambda mem, bars: mem.export_memories(
                args.path, collection=args.collection, vectors=args.vectors, progress=bars, force=args.force
            ),
        )
    )
    return 0


def _import(args: argparse.Namespace) -> int:
    print_json(
        _with_bars(
            args,
            lambda mem, bars: mem.import_memories(
                args.path, conflict=args.conflict, collection=args.collection, progress=bars
            ),
        )
    )
    return 0


def _sync(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        print_json(mem.sync(args.fleet, direction=args.direction, full=args.full))
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``embed``, ``export``, ``import`` and ``sync`` commands to the ``robotmem`` parser."""
    progress = progress_options()

    embed = sub.add_parser("embed", help="vectors: backfill, re-embed with another model, status")
    embed_sub = embed.add_subparsers(dest="embed_command", metavar="EMBED_COMMAND", required=True)
    p = embed_sub.add_parser(
        "backfill", parents=[common, progress], help="embed memories stored while no embedder was available"
    )
    p.add_argument("--batch-size", dest="batch_size", type=int, default=64)
    p.set_defaults(run=_backfill)
    p = embed_sub.add_parser(
        "reindex",
        parents=[common, progress],
        help="re-embed every memory with the configured model (resumable)",
    )
    p.add_argument("--batch-size", dest="batch_size", type=int, default=64)
    p.set_defaults(run=_reindex)
    embed_sub.add_parser(
        "status", parents=[common], help="the database's model, the embedder and pending work"
    ).set_defaults(run=_status)

    p = sub.add_parser(
        "export",
        parents=[common, progress],
        help="write memories, tags, sessions and lineage to a JSON Lines file",
    )
    p.add_argument("path", help="file to write (must not exist unless --force; never the database in use)")
    p.add_argument("--vectors", action="store_true", help="include the stored vectors (base64 float32)")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace PATH when it is an existing ordinary file (never the database or its -wal/-shm)",
    )
    p.set_defaults(run=_export)

    p = sub.add_parser(
        "import",
        parents=[common, progress],
        help="read a file written by `robotmem export` (idempotent)",
    )
    p.add_argument("path", help="file written by `robotmem export`")
    p.add_argument(
        "--conflict",
        choices=["skip", "overwrite", "new-ids"],
        default="skip",
        help="memories already present: keep them (skip), replace them (overwrite), or import as new (new-ids)",
    )
    p.set_defaults(run=_import)

    p = sub.add_parser(
        "sync",
        parents=[common],
        help="push this robot's changes to a fleet store and pull the fleet's (incremental, idempotent)",
    )
    p.add_argument("--fleet", required=True, help="the fleet store: a SQLite file path (or a server DSN)")
    p.add_argument(
        "--direction",
        choices=["both", "push", "pull"],
        default="both",
        help="push and pull (both), only send this robot's changes (push), or only receive (pull)",
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="compare every memory, not only what changed since the last sync (after restoring a store)",
    )
    p.set_defaults(run=_sync)
