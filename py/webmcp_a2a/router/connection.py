"""One client connection seen from the router: a bounded, prioritised queue of frames to write.

Routing never awaits a peer: it offers frames here and a writer task sends them; a frame offered
while nothing waits goes to the socket at once when the socket can take it without waiting
(``write_now``), which spares a task switch per message. The writer task exists only while frames
wait: an idle agent (most of a large mesh) costs no task, no event and no coroutine. The queue
serves the highest priority first and, within a priority, the oldest first. Replies and errors to
the client itself outrank every delivery.

Deliveries and replies are bounded separately, so a burst of answers to a busy client never counts
against the messages queued for it. Overflow policy for deliveries (when ``queue_limit`` are
waiting): a newcomer that outranks something queued takes the place of the newest frame of the
lowest queued priority, whose sender is told it was ``evicted``; otherwise the newcomer is refused
(``queue_full``). A frame whose ``expires_at`` has passed when its turn comes is dropped, and its
sender told it ``expired``; it is never written. Past ``reply_limit`` waiting replies the client is
not reading, and the router drops it.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .limits import RateLimit

CONTROL_PRIORITY = 11  # above critical (10): results and errors are never stuck behind deliveries
_HIGHEST_FIRST = tuple(range(CONTROL_PRIORITY, 0, -1))

DropCallback = Callable[[str], None]


class Peer(Protocol):
    """What the router needs of a client connection: a real socket's :class:`Connection`, or a
    hosted agent's virtual one (:class:`~.relay.RelayedConnection`)."""

    agent_id: str | None
    remote: str  # the remote address, for per-address limits and logs
    internal: bool  # a part of the router itself (the A2A bridge): may use a reserved id, needs no credential
    rate: RateLimit | None  # None: the frames come inside another connection's, which pays for them

    @property
    def closing(self) -> bool: ...

    def offer(
        self,
        text: str,
        priority: int = CONTROL_PRIORITY,
        expires_at: float | None = None,
        on_drop: DropCallback | None = None,
        message_id: str | None = None,
    ) -> bool:
        """Queue a frame for the peer. A delivery names its ``message_id``: a peer at another router
        of a cluster (:class:`~.cluster.links.NodeLink`) routes its acknowledgement back with it."""
        ...

    def close(self, code: int, reason: str) -> None: ...


@dataclass(eq=False)
class Outgoing:
    text: str
    priority: int = CONTROL_PRIORITY
    expires_at: float | None = None
    on_drop: DropCallback | None = None  # told "expired" or "evicted"

    def drop(self, reason: str) -> None:
        if self.on_drop is not None:
            self.on_drop(reason)


class Connection:
    def __init__(
        self,
        send_text: Callable[[str], Awaitable[None]],
        close: Callable[[int, str], Awaitable[None]],
        queue_limit: int,
        reply_limit: int = 10_000,
        *,
        remote: str = "local",
        rate: RateLimit | None = None,
        write_now: Callable[[str], bool] | None = None,
        peer_gone: tuple[type[Exception], ...] = (OSError,),
    ) -> None:
        self._send_text = send_text
        self._write_now = write_now  # writes a frame if the socket takes it without waiting; else False
        self._close = close
        self._limit = queue_limit
        self._reply_limit = reply_limit
        self._queues: dict[int, deque[Outgoing]] = {}  # by priority, made on first use: most stay empty
        self._length = 0  # deliveries not yet handed to the socket, the one being written included
        self._sending = False  # the writer is in the middle of a frame
        self._writer: asyncio.Task[None] | None = None  # while frames wait
        self._peer_gone = peer_gone  # what send_text and close raise once the peer is gone
        self._close_with: tuple[int, str] | None = None
        self.agent_id: str | None = None
        self.remote = remote
        self.rate = rate
        self.internal = False

    @property
    def closing(self) -> bool:
        return self._close_with is not None

    def __len__(self) -> int:
        """Deliveries waiting to be written."""
        return self._length

    def offer(
        self,
        text: str,
        priority: int = CONTROL_PRIORITY,
        expires_at: float | None = None,
        on_drop: DropCallback | None = None,
        message_id: str | None = None,
    ) -> bool:
        """Queue a frame; False when it is refused (queue full of equal or higher priority, or closing)."""
        if self._close_with is not None:
            return False
        if (
            self._write_now is not None
            and not any(self._queues.values())
            and not self._sending
            and (expires_at is None or time.time() < expires_at)
            and self._write_now(text)
        ):
            return True
        if priority == CONTROL_PRIORITY:
            if len(self._queues.get(CONTROL_PRIORITY, ())) >= self._reply_limit:
                return False
        else:
            if self._length >= self._limit and not self._evict_below(priority):
                return False
            self._length += 1
        queue = self._queues.get(priority)
        if queue is None:
            queue = self._queues[priority] = deque()
        queue.append(Outgoing(text, priority, expires_at, on_drop))
        self._start_writer()
        return True

    def close(self, code: int, reason: str) -> None:
        """Close once the frames already queued have been written."""
        if self._close_with is None:
            self._close_with = (code, reason)
            self._start_writer()

    async def flushed(self) -> None:
        """Until what is queued (and the close, once asked for) has been written."""
        while (writer := self._writer) is not None:
            await writer

    def stop(self) -> None:
        """The peer is gone: stop writing."""
        if self._writer is not None:
            self._writer.cancel()

    def _start_writer(self) -> None:
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_task(self._write_queued())

    async def _write_queued(self) -> None:
        try:
            while (item := self._next()) is not None:
                if item.expires_at is not None and time.time() >= item.expires_at:
                    item.drop("expired")
                else:
                    self._sending = True
                    try:
                        await self._send_text(item.text)
                    finally:
                        self._sending = False
                if item.priority != CONTROL_PRIORITY:
                    self._length -= 1
            if self._close_with is not None:
                await self._close(*self._close_with)
        except self._peer_gone:
            pass  # the reader side sees the end and cleans up
        finally:
            self._writer = None

    def _next(self) -> Outgoing | None:
        for priority in _HIGHEST_FIRST:
            queue = self._queues.get(priority)
            if queue:
                return queue.popleft()
        return None

    def _evict_below(self, priority: int) -> bool:
        for lower in range(1, priority):
            queue = self._queues.get(lower)
            if queue:
                self._length -= 1
                queue.pop().drop("evicted")
                return True
        return False
