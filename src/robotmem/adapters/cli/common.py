"""What every command shares: the common options, opening the memory, JSON output, progress bars, logging."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from robotmem import RobotMemory
from robotmem.config import load_settings
from robotmem.formats import strict_json

EMBED_BACKENDS = ["auto", "bundled", "onnx", "ollama", "openai", "hash", "none"]

# The optional extra that installs each top-level module a command may need.
EXTRA_OF_MODULE = {
    "mcp": "mcp",
    "flask": "web",
    "flask_openapi3": "web",
    "waitress": "web",
    "werkzeug": "web",
    "rosbags": "ros",
    "mcap": "ros",
    "pyarrow": "lerobot",
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "pgvector": "postgres",
    "gymnasium": "gym",
    "gymnasium_robotics": "gym",
    "mujoco": "gym",
    "fastembed": "onnx",
}


def common_options() -> argparse.ArgumentParser:
    """Return the parent parser of ``--db``, ``--collection`` and ``--embed-backend``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db", help="database file (default: $ROBOTMEM_HOME/memory.db) or a postgresql:// server address"
    )
    common.add_argument("--collection", help="collection to use (default: 'default')")
    common.add_argument("--embed-backend", dest="embed_backend", choices=EMBED_BACKENDS)
    return common


def progress_options() -> argparse.ArgumentParser:
    """Return the parent parser of ``--no-progress``."""
    progress = argparse.ArgumentParser(add_help=False)
    progress.add_argument(
        "--no-progress", dest="no_progress", action="store_true", help="draw no progress bar on stderr"
    )
    return progress


def missing_extra(exc: ImportError) -> str | None:
    """Return the one-line message for an import that failed because an optional extra is not installed
    (``None`` when the missing module belongs to no extra). The chain of causes is followed: the
    integrations re-raise the failed import with a hint of their own."""
    error: BaseException | None = exc
    while error is not None:
        name = getattr(error, "name", None)
        extra = EXTRA_OF_MODULE.get((name or "").split(".")[0])
        if isinstance(error, ImportError) and extra is not None:
            return (
                f"this command needs the extra '{extra}' ({name} is missing): pip install 'robotmem[{extra}]'"
            )
        error = error.__cause__ or error.__context__
    return None


def print_json(value: Any) -> None:
    """Print a result as indented JSON on stdout (the output of every command)."""
    print(strict_json.dumps(value, indent=2, default=str))


def open_memory(args: argparse.Namespace) -> RobotMemory:
    """Return the RobotMemory the common options (--db, --collection, --embed-backend) select."""
    settings = load_settings(os.environ)
    return RobotMemory(
        getattr(args, "db", None),
        getattr(args, "collection", None),
        getattr(args, "embed_backend", None),
        settings=settings,
    )


class ProgressBars:
    """A ``progress(stage, advance, total)`` callback that draws one tqdm bar per stage on stderr.

    ``units`` names what a stage counts (default ``memory``). A stage in ``tty_only`` is drawn only when
    stderr is a terminal: a bar that moves often (reading a bag's messages) would fill a log file.
    """

    def __init__(
        self,
        enabled: bool = True,
        *,
        units: dict[str, str] | None = None,
        tty_only: tuple[str, ...] = (),
    ) -> None:
        self.enabled = enabled
        self.units = units or {}
        self.tty_only = tty_only
        self._bars: dict[str, Any] = {}

    def __call__(self, stage: str, advance: int, total: int) -> None:
        if not self.enabled or (stage in self.tty_only and not sys.stderr.isatty()):
            return
        bar = self._bars.get(stage)
        if bar is None:
            from tqdm import tqdm  # imported on first use: most commands draw no bar

            unit = self.units.get(stage, "memory")
            bar = tqdm(total=total, desc=stage, unit=unit, file=sys.stderr, dynamic_ncols=True)
            self._bars[stage] = bar
        if advance:
            bar.update(advance)

    def close(self) -> None:
        """Finish every bar."""
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()


def configure_logging(level: str) -> None:
    """Send robotmem's logs to stderr (stdout belongs to command output and the MCP protocol)."""
    logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("robotmem").setLevel(level.upper())
