"""waitress, configured so that slow or idle clients cannot lock everyone else out.

waitress reads every request completely on its event loop before a worker thread sees it, so idle
connections cost no thread; what they can exhaust is the connection limit (waitress's default is
100). ``robotmem web`` raises that limit (``web_connection_limit``) and closes a connection that
stays idle, or whose request has not fully arrived, for ``web_channel_timeout_s`` seconds — a client
trickling one byte a second keeps a connection "active" for waitress, but not past that deadline.
"""

from __future__ import annotations

import errno
import time
from typing import Any

from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer, create_server

from robotmem import ValidationError


class DeadlineChannel(HTTPChannel):  # type: ignore[misc]
    """An HTTP channel that is closed when one request takes longer than the channel timeout to arrive."""

    request_started: float | None = None

    def received(self, data: bytes) -> bool:
        if self.request is None and data:
            self.request_started = time.monotonic()
        done: bool = super().received(data)
        if self.request is None:  # the request arrived whole (or none is under way)
            self.request_started = None
        return done

    def writable(self) -> Any:
        # The event loop asks every channel at least once a second (asyncore_loop_timeout).
        started = self.request_started
        if (
            started is not None
            and not self.requests
            and time.monotonic() - started > self.adj.channel_timeout
        ):
            self.will_close = True
        return super().writable()


def check_port(port: Any) -> int:
    """Return ``port`` when it is a TCP port number (0..65535; 0 lets the system pick a free one).

    Raises ``ValidationError`` otherwise: the socket layer would take 70000 as 70000 % 65536.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValidationError(f"--port: expected a port number 0..65535, got {port!r}")
    return port


def build_server(app: Any, *, host: str, port: int, connection_limit: int, channel_timeout_s: int) -> Any:
    """Return a waitress server for ``app`` on ``host:port`` with robotmem's limits; ``run()`` serves.

    Raises ``ValidationError`` naming the address when the port is out of range, already in use, not
    permitted, or the host cannot be bound.
    """
    check_port(port)
    try:
        server = create_server(
            app,
            host=host,
            port=port,
            threads=8,
            ident="robotmem",
            connection_limit=connection_limit,
            channel_timeout=channel_timeout_s,
            cleanup_interval=max(1, min(30, channel_timeout_s)),
            asyncore_loop_timeout=1,
        )
    except OSError as exc:
        reason = "already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise ValidationError(f"--port {port}: cannot listen on {host}:{port} ({reason})") from None
    except ValueError as exc:  # waitress: a host it cannot resolve
        raise ValidationError(f"--host {host}: cannot listen there ({exc})") from None
    for listener in _listeners(server):
        listener.channel_class = DeadlineChannel
    return server


def _listeners(server: Any) -> list[BaseWSGIServer]:
    found = [server] if isinstance(server, BaseWSGIServer) else list(server.map.values())
    return [listener for listener in found if isinstance(listener, BaseWSGIServer)]


def listening_on(server: Any) -> list[tuple[str, int]]:
    """Return the ``(host, port)`` pairs ``server`` actually listens on (the port 0 asked for resolved)."""
    return [(str(listener.effective_host), int(listener.effective_port)) for listener in _listeners(server)]
