"""Back-off after consecutive embedder failures: 60 s, 120 s, 240 s, then 300 s at most.

A service that is down is not asked again on every write or recall; while it cools down the caller
falls back to BM25 only. One success resets the count.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

BACKOFF_STEPS_S: tuple[float, ...] = (60.0, 120.0, 240.0, 300.0)


class Cooldown:
    """Tracks consecutive failures and the time until the next attempt is allowed.

    ``clock`` returns seconds from any fixed origin (``time.monotonic`` by default); tests pass a
    fake one. The n-th consecutive failure blocks attempts for ``steps[n - 1]`` seconds, the last
    step repeating for every later failure. Safe to share between threads.
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        steps: Sequence[float] = BACKOFF_STEPS_S,
    ) -> None:
        if not steps or any(step < 0 for step in steps):
            raise ValueError(f"steps must be a non-empty sequence of seconds >= 0, got {steps!r}")
        self._clock = clock
        self._steps = tuple(float(step) for step in steps)
        self._lock = threading.Lock()
        self._failures = 0
        self._until = 0.0
        self._last_error = ""

    @property
    def ready(self) -> bool:
        """True when an attempt is allowed (no failure yet, or the back-off has passed)."""
        return self.remaining_s == 0.0

    @property
    def remaining_s(self) -> float:
        """Seconds left until the next attempt is allowed; 0.0 when ready."""
        with self._lock:
            if self._failures == 0:
                return 0.0
            return max(0.0, self._until - self._clock())

    @property
    def failures(self) -> int:
        """The number of failures since the last success."""
        return self._failures

    @property
    def last_error(self) -> str:
        """The reason given with the most recent failure; "" after a success or before any failure."""
        return self._last_error

    def delay_for(self, failures: int) -> float:
        """Return the back-off in seconds after ``failures`` consecutive failures (0.0 for none)."""
        if failures <= 0:
            return 0.0
        return self._steps[min(failures, len(self._steps)) - 1]

    def record_failure(self, reason: str) -> float:
        """Count one more failure and start its back-off.

        Returns the back-off in seconds that starts now.
        """
        with self._lock:
            self._failures += 1
            self._last_error = reason
            delay = self.delay_for(self._failures)
            self._until = self._clock() + delay
            return delay

    def record_success(self) -> None:
        """Reset the failure count, so the next failure starts again at the first step."""
        with self._lock:
            self._failures = 0
            self._until = 0.0
            self._last_error = ""

    def describe(self) -> str:
        """Return one line for a status report, e.g. ``cooling down for 57 s after 2 failures: ...``."""
        remaining = self.remaining_s
        if self._failures == 0:
            return "ready"
        plural = "s" if self._failures != 1 else ""
        if remaining > 0:
            return (
                f"cooling down for {remaining:.0f} s after {self._failures} failure{plural}: "
                f"{self._last_error}"
            )
        return f"retrying after {self._failures} failure{plural}: {self._last_error}"
