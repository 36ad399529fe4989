"""HTTP requests that end by a deadline: connecting, sending and the whole answer, not each socket read.

httpx's timeouts bound each network operation, so a server that trickles its answer a byte at a time
keeps a request alive for as long as it likes. ``DeadlineClient`` runs each request as a task on one
background event loop per process (``httpx.AsyncClient``, so connections are still pooled) and cancels it
at the deadline; cancelling closes the connection, so nothing of the request is left behind. The calling
thread just waits for the task's result, which arrives by the deadline at the latest.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from typing import Any

import httpx

# A task that is being cancelled gets this long to close its connection before the caller stops waiting.
_CANCEL_GRACE_S = 1.0


class DeadlineExceeded(httpx.TimeoutException):
    """The whole request did not finish within its time limit."""


class _LoopThread:
    """One asyncio event loop, run by a daemon thread, started on first use and again after a fork."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="robotmem-http", daemon=True).start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop


_LOOP = _LoopThread()


class DeadlineClient:
    """Sends HTTP requests that each finish, fail or are cancelled within a given number of seconds.

    ``timeout`` still bounds connecting and each read (a dead server is noticed before the deadline);
    ``headers`` go with every request; ``trust_env`` as for httpx (proxy variables).
    """

    def __init__(self, *, timeout: httpx.Timeout, headers: dict[str, str], trust_env: bool) -> None:
        self._options: dict[str, Any] = {"timeout": timeout, "headers": headers, "trust_env": trust_env}
        self._client: httpx.AsyncClient | None = None
        self._pid = 0
        self._closed = False

    def request(self, method: str, url: str, *, within_s: float, **kwargs: Any) -> httpx.Response:
        """Send one request and read its whole answer within ``within_s`` seconds.

        Raises ``DeadlineExceeded`` (an ``httpx.TimeoutException``) at the deadline, the other
        ``httpx.HTTPError``s as httpx does, and ``RuntimeError`` after ``close()``.
        """
        if self._closed:
            raise RuntimeError("the HTTP client is closed")
        if within_s <= 0:
            raise DeadlineExceeded("no time left for the request")
        future = asyncio.run_coroutine_threadsafe(self._send(method, url, within_s, kwargs), _LOOP.loop())
        try:
            return future.result(timeout=within_s + _CANCEL_GRACE_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise DeadlineExceeded(f"no answer within {within_s:g} s") from None

    async def _send(self, method: str, url: str, within_s: float, kwargs: dict[str, Any]) -> httpx.Response:
        client = self._async_client()
        try:
            return await asyncio.wait_for(client.request(method, url, **kwargs), within_s)
        except asyncio.TimeoutError:
            raise DeadlineExceeded(f"no complete answer within {within_s:g} s") from None

    def _async_client(self) -> httpx.AsyncClient:
        # Runs on the loop's thread only, so no lock is needed. After a fork the parent's connections
        # belong to the parent: the child opens its own.
        if self._client is None or self._pid != os.getpid():
            self._client = httpx.AsyncClient(**self._options)
            self._pid = os.getpid()
        return self._client

    def close(self) -> None:
        """Close the pooled connections; later requests raise ``RuntimeError``."""
        self._closed = True
        client, self._client = self._client, None
        if client is None or self._pid != os.getpid():
            return
        future = asyncio.run_coroutine_threadsafe(client.aclose(), _LOOP.loop())
        try:
            future.result(timeout=_CANCEL_GRACE_S)
        except (concurrent.futures.TimeoutError, httpx.HTTPError, RuntimeError):
            future.cancel()  # a connection that does not close in time is dropped with its socket
