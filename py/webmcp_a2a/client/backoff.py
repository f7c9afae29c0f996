"""When to try again: exponential backoff with jitter, shared by every transport's reconnect loop."""

from __future__ import annotations

import random


class Backoff:
    """Delays of ``first``, ``first * factor``, ... capped at ``maximum``, each scaled by a random 0.5-1.0.

    The jitter keeps a restarted router from being hit by every client in the same instant.
    """

    def __init__(self, first: float = 0.5, maximum: float = 10.0, factor: float = 2.0) -> None:
        self.first, self.maximum, self.factor = first, maximum, factor
        self.attempt = 0

    def next_delay(self) -> float:
        delay = min(self.maximum, self.first * self.factor**self.attempt)
        self.attempt += 1
        return delay * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        self.attempt = 0
