"""What one connection may cost the router: token buckets for its frames and bytes per second,
and a log that reports a noisy address's refused frames once per interval instead of once each."""

from __future__ import annotations

import logging
import time
from collections import Counter

from ..protocol import ErrorCode
from .settings import RouterSettings


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self._level = burst
        self._stamp = time.monotonic()

    def take(self, amount: float = 1.0) -> bool:
        now = time.monotonic()
        self._level = min(self.burst, self._level + (now - self._stamp) * self.rate)
        self._stamp = now
        if self._level < amount:
            return False
        self._level -= amount
        return True


class RateLimit:
    """A connection's two buckets: frames and bytes per second, with bursts of ``rate_burst_seconds``."""

    def __init__(self, settings: RouterSettings) -> None:
        burst = settings.rate_burst_seconds
        self._frames = TokenBucket(settings.rate_frames, settings.rate_frames * burst)
        self._bytes = TokenBucket(settings.rate_bytes, max(settings.rate_bytes * burst, settings.max_frame_bytes))

    def admit(self, size: int) -> str | None:
        """None when a frame of ``size`` bytes may pass; otherwise which budget it exceeds."""
        if not self._frames.take():
            return "frames per second"
        if not self._bytes.take(size):
            return "bytes per second"
        return None


class ErrorLog:
    """Refused frames, logged at most once per ``interval`` per remote address, with counts by code."""

    def __init__(self, interval: float, log: logging.Logger) -> None:
        self.interval = interval
        self._log = log
        self._counts: dict[str, Counter[ErrorCode]] = {}
        self._last: dict[str, float] = {}

    def note(self, address: str, code: ErrorCode) -> None:
        counts = self._counts.setdefault(address, Counter())
        counts[code] += 1
        now = time.monotonic()
        if now - self._last.get(address, -self.interval) >= self.interval:
            summary = ", ".join(f"{count} {code}" for code, count in counts.most_common())
            self._log.warning("refused frames from %s: %s", address, summary)
            self._last[address] = now
            counts.clear()
