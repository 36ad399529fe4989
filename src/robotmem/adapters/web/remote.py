"""What the web server does differently because its clients may be on other machines.

- ``host_allowed``: the ``Host`` header must name this server (loopback names, the bind address,
  ``web_allowed_hosts``) or be an IP literal, so a DNS name rebound to this machine reads nothing.
- ``json_depth``: the nesting of a JSON body, measured on the raw bytes before any parser recurses.
- ``remote_error``: the one place an exception becomes ``(code, message, status)`` for a client; it
  never shows a filesystem path, and answers 503 only for a fault a retry can cure.
- ``without_paths``: the same scrubbing for a report a client reads (``GET /api/doctor``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

from robotmem import DatabaseError, RobotMemError, RobotMemory
from robotmem.formats import strict_json

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
ANY_ADDRESS = ("0.0.0.0", "::", "")
# Deeper than any valid body: context nests at most 32 levels, a filter 16 (plus the body object).
MAX_BODY_DEPTH = 64

# An absolute POSIX path of two or more segments, or a Windows drive path, standing as its own word.
_PATH = re.compile(
    r"""(?<![\w/.~-])(?:/(?!api/|static/)[^\s'"():;,/]+(?:/[^\s'"():;,]*)+|[A-Za-z]:\\[^\s'"():;,]+)"""
)


def allowed_hosts(bind_host: str, extra: Iterable[str]) -> frozenset[str]:
    """Return the Host names a server bound to ``bind_host`` answers (lower-case, without port)."""
    names = {*LOOPBACK_NAMES, *(name.lower() for name in extra)}
    if bind_host.strip("[]") not in ANY_ADDRESS:
        names.add(bind_host.strip("[]").lower())
    return frozenset(names)


def host_name(header: str) -> str:
    """Return the host of a ``Host`` header without its port or IPv6 brackets, lower-cased."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def host_allowed(header: str | None, allowed: frozenset[str]) -> bool:
    """Return True when ``header`` (a request's Host) names this server or is an IP address.

    DNS rebinding needs a name: a page on ``http://10.1.2.3:7878`` is that origin itself, so IP
    literals are safe; any other name must be listed.
    """
    if not header:
        return True  # HTTP/1.0 without Host: no browser sends that
    name = host_name(header)
    if name in allowed:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def json_depth(body: bytes) -> int:
    """Return how deeply the JSON text ``body`` nests arrays and objects (0 for a scalar)."""
    return strict_json.depth(body)


def scrub_paths(message: str, known: Iterable[str] = ()) -> str:
    """Return ``message`` with filesystem paths replaced by ``<path>`` (``known`` ones first)."""
    for path in sorted((p for p in known if p and p not in ("/", ".")), key=len, reverse=True):
        message = message.replace(path, "<path>")
    return _PATH.sub("<path>", message)


def local_paths(memory: RobotMemory) -> list[str]:
    """Return the paths of ``memory`` a remote client must not see: the database, its directory, the home."""
    return [str(memory.path), str(memory.path.parent), str(memory.settings.home)]


def without_paths(value: Any, known: Iterable[str] = ()) -> Any:
    """Return ``value`` with ``scrub_paths`` applied to every string in it, at any depth."""
    if isinstance(value, str):
        return scrub_paths(value, known)
    if isinstance(value, dict):
        return {key: without_paths(item, known) for key, item in value.items()}
    if isinstance(value, list):
        return [without_paths(item, known) for item in value]
    return value


def remote_error(exc: BaseException, known_paths: Iterable[str] = ()) -> tuple[str, str, int]:
    """Return ``(code, message, status)`` telling a remote client what went wrong, without paths.

    A ``RobotMemError`` keeps its code and message; a storage fault is 503 only when transient
    (busy/locked), 500 otherwise; anything else is an opaque 500 (the server log has the traceback).
    """
    if isinstance(exc, RobotMemError):
        status = exc.http_status
        if isinstance(exc, DatabaseError):
            status = 503 if exc.transient else 500
        return exc.code, scrub_paths(exc.message, known_paths), status
    return "internal", f"unexpected server error ({type(exc).__name__}); see the server log", 500
