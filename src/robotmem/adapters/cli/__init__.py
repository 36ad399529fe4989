"""The ``robotmem`` command. Each module adds one group of commands to the parser:

    operations   demo and the seven operations (learn, recall, save-perception, forget, update, sessions)
    servers      mcp, web
    maintenance  doctor [--repair], check, repair, backup
    transfer     export, import, embed backfill|reindex|status
    evaluate     eval
    data         import-bag, import-lerobot, export-mcap

A ``RobotMemError`` becomes ``Error: <message>`` on stderr and exit status 2, and so does a missing optional
extra (``Error: … pip install 'robotmem[web]'``, no traceback). With no command, on a terminal the help is
printed; with stdin not a terminal (an MCP client's pipe) MCP is served over stdio, as ``robotmem mcp``.
Any other exception (a bug) becomes one ``Error: internal error …`` line with status 2, its traceback only
in the debug log.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from robotmem import RobotMemError
from robotmem.adapters.cli import data, evaluate, maintenance, operations, servers, transfer
from robotmem.adapters.cli.common import common_options, configure_logging, missing_extra
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
    """Run the command line; with no command, print the help on a terminal, else serve MCP over stdio."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        if sys.stdin is not None and sys.stdin.isatty():
            parser.print_help()
            return 0
        args = parser.parse_args(["mcp", *(argv or [])])
    try:
        configure_logging(load_settings(os.environ).log_level)
        return int(args.run(args))
    except RobotMemError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        return 2
    except ImportError as exc:
        hint = missing_extra(exc)
        if hint is None:
            raise
        print(f"Error: {hint}", file=sys.stderr)
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
