"""``robotmem mcp`` (MCP over stdio) and ``robotmem web`` (the web UI and REST API)."""

from __future__ import annotations

import argparse
from typing import Any


def _mcp(args: argparse.Namespace) -> int:
    from robotmem.adapters.mcp import serve  # the MCP SDK loads only for this command

    serve(db=args.db, collection=args.collection, embed_backend=args.embed_backend)
    return 0


def _web(args: argparse.Namespace) -> int:
    from robotmem.adapters.web import serve  # Flask loads only for this command

    serve(
        host=args.host,
        port=args.port,
        db=args.db,
        collection=args.collection,
        embed_backend=args.embed_backend,
    )
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mcp`` and ``web``."""
    sub.add_parser("mcp", parents=[common], help="serve MCP over stdio").set_defaults(run=_mcp)
    web = sub.add_parser("web", parents=[common], help="serve the web UI and REST API")
    web.add_argument("--host", default="127.0.0.1")
    web.add_argument("--port", type=int, default=7878)
    web.set_defaults(run=_web)
