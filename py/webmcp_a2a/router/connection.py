"""One client connection seen from the router: a bounded queue of frames to write."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Awaitable, Callable


class Connection:
    """Frames wait here until the writer task sends them, so routing never awaits a slow peer.

    The queue is bounded: :meth:`offer` returns False when it is full and the caller
    decides what that means (a refused delivery, or a client dropped for not reading).
    """

    def __init__(
        self,
        send_text: Callable[[str], Awaitable[None]],
        close: Callable[[int, str], Awaitable[None]],
        queue_limit: int,
    ) -> None:
        self._send_text = send_text
        self._close = close
        self._limit = queue_limit
        self._frames: deque[str] = deque()
        self._ready = asyncio.Event()
        self._close_with: tuple[int, str] | None = None
        self.agent_id: str | None = None

    @property
    def closing(self) -> bool:
        return self._close_with is not None

    def offer(self, text: str) -> bool:
        """Queue a frame; False when the queue is full or the connection is closing."""
        if self._close_with is not None or len(self._frames) >= self._limit:
            return False
        self._frames.append(text)
        self._ready.set()
        return True

    def close(self, code: int, reason: str) -> None:
        """Close once the frames already queued have been written."""
        if self._close_with is None:
            self._close_with = (code, reason)
            self._ready.set()

    async def run_writer(self) -> None:
        while True:
            await self._ready.wait()
            while self._frames:
                await self._send_text(self._frames.popleft())
            if self._close_with is not None:
                await self._close(*self._close_with)
                return
            self._ready.clear()
