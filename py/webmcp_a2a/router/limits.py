"""What one connection may cost the router: token buckets for its frames and bytes per second,
and a log that reports a noisy address's refused frames once per interval instead of once each."""

from __future__ import annotations

import logging
import time
from collections import Counter

from ..protocol import ErrorCode
from .settings import RouterSettings


class RateLimit:
    """A connection's budget: frames and bytes per second, with bursts of ``rate_burst_seconds``.

    Two token buckets in one small object (one per connection, checked on every frame: kept lean).
    """

    __slots__ = ("_byte_rate", "_bytes", "_frame_rate", "_frames", "_max_bytes", "_max_frames", "_stamp")

    def __init__(self, settings: RouterSettings) -> None:
        burst = settings.rate_burst_seconds
        self._frame_rate = settings.rate_frames
        self._byte_rate = settings.rate_bytes
        self._max_frames = self._frames = settings.rate_frames * burst
        self._max_bytes = self._bytes = max(settings.rate_bytes * burst, settings.max_frame_bytes)
        self._stamp = time.monotonic()

    def admit(self, size: int) -> str | None:
        """None when a frame of ``size`` bytes may pass (and is paid for); otherwise which budget it exceeds."""
        now = time.monotonic()
        elapsed, self._stamp = now - self._stamp, now
        frames = min(self._max_frames, self._frames + elapsed * self._frame_rate)
        data = min(self._max_bytes, self._bytes + elapsed * self._byte_rate)
        if frames < 1:
            self._frames, self._bytes = frames, data
            return "frames per second"
        if data < size:
            self._frames, self._bytes = frames, data
            return "bytes per second"
        self._frames, self._bytes = frames - 1, data - size
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
