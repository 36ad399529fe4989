"""The ``robotmem`` command. Each module adds one group of commands to the parser:

    operations   demo and the seven operations (learn, recall, save-perception, forget, update, sessions)
    servers      mcp, web
    maintenance  doctor [--repair], check, repair, backup
    transfer     export, import, embed backfill|reindex|status
    evaluate     eval
    data         import-bag, import-lerobot, export-mcap

A ``RobotMemError`` becomes ``Error: <message>`` on stderr and exit status 2; any other exception (a
bug) becomes one ``Error: internal error …`` line with status 2, its traceback only in the debug log.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from robotmem import RobotMemError
from robotmem.adapters.cli import data, evaluate, maintenance, operations, servers, transfer
from robotmem.adapters.cli.common import common_options, configure_logging
from robotmem.config import load_settings

COMMAND_GROUPS = (operations, servers, maintenance, transfer, evaluate, data)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``robotmem`` command."""
    parser = argparse.ArgumentParser(prog="robotmem", description="Experience memory for robots.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = common_options()
    for group in COMMAND_GROUPS:
        group.register(sub, common)
    return parser


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
    except Exception as exc:  # a bug: still one line, the traceback only in the debug log
        logging.getLogger("robotmem").debug("unexpected error in %s", args.command, exc_info=True)
        print(
            f"Error: internal error in {args.command} ({type(exc).__name__}: {str(exc)[:200]}); "
            "please report it with the output of ROBOTMEM_LOG_LEVEL=debug",
            file=sys.stderr,
        )
        return 2


__all__ = ["build_parser", "main"]
