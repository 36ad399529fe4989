"""waitress, configured so that slow or idle clients cannot lock everyone else out.

waitress reads every request completely on its event loop before a worker thread sees it, so idle
connections cost no thread; what they can exhaust is the connection limit (waitress's default is
100). ``robotmem web`` raises that limit (``web_connection_limit``) and closes a connection that
stays idle, or whose request has not fully arrived, for ``web_channel_timeout_s`` seconds — a client
trickling one byte a second keeps a connection "active" for waitress, but not past that deadline.
"""

from __future__ import annotations

import time
from typing import Any

from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer, create_server


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


def build_server(app: Any, *, host: str, port: int, connection_limit: int, channel_timeout_s: int) -> Any:
    """Return a waitress server for ``app`` on ``host:port`` with robotmem's limits; ``run()`` serves."""
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
    listeners = [server] if isinstance(server, BaseWSGIServer) else list(server.map.values())
    for listener in listeners:
        if isinstance(listener, BaseWSGIServer):
            listener.channel_class = DeadlineChannel
    return server
