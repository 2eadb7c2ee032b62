"""A per-annotator token bucket: a burst of actions, then a steady rate."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from demo.settings import RateLimit


class RateLimited(RuntimeError):
    """Too many actions too fast; the message says how long to wait."""


class TokenBuckets:
    """One bucket per key; thread-safe. `take(key)` spends a token or raises RateLimited."""

    def __init__(
        self, limit: RateLimit, what: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if limit.burst < 1:
            raise ValueError(f"burst={limit.burst}: allow at least one action")
        self.limit, self.what, self.clock = limit, what, clock
        self.rate = limit.per_minute / 60.0  # tokens per second
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last time)
        self._lock = threading.Lock()

    def take(self, key: str) -> None:
        with self._lock:
            now = self.clock()
            tokens, last = self._buckets.get(key, (float(self.limit.burst), now))
            tokens = min(float(self.limit.burst), tokens + (now - last) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                wait = (1.0 - tokens) / self.rate
                raise RateLimited(
                    f"Too many {self.what} in a short time; try again in {wait:.0f} s."
                )
            self._buckets[key] = (tokens - 1.0, now)
