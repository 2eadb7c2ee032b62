"""Token buckets per annotator and per client address: a burst of actions, then a steady rate.

An action spends one token from every bucket it belongs to (its annotator's and its address's),
or from none when any is empty, so rotating annotator ids from one address stays within the
address's limit. A bucket that has refilled completely equals a fresh one and is dropped.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from demo.settings import RateLimit


class RateLimited(RuntimeError):
    """Too many actions too fast; the message says how long to wait."""


class TokenBuckets:
    """Buckets per (scope, key) with one limit per scope; thread-safe.

    buckets = TokenBuckets({"annotator": RateLimit(30), "address": RateLimit(30)}, "votes")
    buckets.take(annotator="anon:3f", address="10.0.0.7")  # or raises RateLimited
    """

    def __init__(
        self,
        limits: dict[str, RateLimit],
        what: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for scope, limit in limits.items():
            if limit.burst < 1 or limit.per_minute <= 0:
                raise ValueError(f"{scope} limit {limit}: allow at least one action")
        self.limits, self.what, self.clock = dict(limits), what, clock
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}  # -> (tokens, last time)
        self._lock = threading.Lock()
        self._swept = clock()

    def _level(self, scope: str, key: str, now: float) -> float:
        limit = self.limits[scope]
        tokens, last = self._buckets.get((scope, key), (float(limit.burst), now))
        return min(float(limit.burst), tokens + (now - last) * limit.per_minute / 60.0)

    def take(self, **keys: str | None) -> None:
        """Spend a token in each named scope's bucket (None keys are skipped), or raise."""
        unknown = set(keys) - set(self.limits)
        if unknown:
            valid = ", ".join(self.limits)
            raise ValueError(f"unknown limit scope(s) {sorted(unknown)}; valid: {valid}")
        with self._lock:
            now = self.clock()
            self._sweep(now)
            levels = {(s, k): self._level(s, k, now) for s, k in keys.items() if k is not None}
            for (scope, _key), tokens in levels.items():
                if tokens < 1.0:
                    wait = (1.0 - tokens) * 60.0 / self.limits[scope].per_minute
                    raise RateLimited(  # whole seconds, rounded up: never "in 0 s"
                        f"Too many {self.what} in a short time (per {scope}); "
                        f"try again in {math.ceil(wait)} s."
                    )
            for bucket, tokens in levels.items():
                self._buckets[bucket] = (tokens - 1.0, now)

    def _sweep(self, now: float) -> None:
        """Drop buckets that are full again (at most once a minute: O(buckets) each time)."""
        if now - self._swept < 60.0:
            return
        self._swept = now
        full = [b for b in self._buckets if self._level(*b, now) >= self.limits[b[0]].burst]
        for bucket in full:
            del self._buckets[bucket]

    def __len__(self) -> int:
        return len(self._buckets)
