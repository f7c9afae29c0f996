"""The routers' bus: Redis pub/sub, one channel per router and one for the cluster's events.

Publishing never waits: :meth:`Bus.publish` queues, and one writer task sends whatever has
queued since its last round trip in a single pipeline, so a burst of cross-router frames costs
one round trip, not one each. Listening is one task on one subscriber connection. When Redis
goes away both keep trying (with backoff); what was queued meanwhile fails (its ``on_fail`` is
called), and once the subscription is back :attr:`Bus.on_connected` runs, so the router can
catch up with what it missed (pub/sub keeps nothing for an absent listener).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError, TimeoutError

from ...client.backoff import Backoff

log = logging.getLogger("webmcp_a2a.router.cluster")

Failed = Callable[[], None]

PUBLISH_TIMEOUT = 1.0  # seconds Redis may take to answer a batch of publishes
MAX_QUEUED = 10_000  # pub/sub messages (each a batch of frames) waiting for Redis at most


class Bus:
    def __init__(
        self,
        url: str,
        channels: list[str],
        on_message: Callable[[str, bytes], None],
        on_connected: Callable[[], Awaitable[None]],
    ) -> None:
        # Two connections: a publish that Redis does not answer within PUBLISH_TIMEOUT fails its frames
        # (their senders hear it), while the subscriber may wait for messages as long as there are none.
        self._publisher = aioredis.Redis.from_url(
            url, socket_connect_timeout=0.5, socket_timeout=PUBLISH_TIMEOUT, health_check_interval=0
        )
        self._subscriber = aioredis.Redis.from_url(url, socket_connect_timeout=0.5, health_check_interval=0)
        self._channels = channels
        self._on_message = on_message
        self._on_connected = on_connected
        self._outgoing: deque[tuple[str, bytes, Failed | None]] = deque()
        self._ready = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.up = False  # subscribed: Redis is there (a failed publish fails its frames; the listener decides this)

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._listen()), asyncio.create_task(self._write())]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._publisher.aclose()
        await self._subscriber.aclose()

    def publish(self, channel: str, data: bytes, on_fail: Failed | None = None) -> bool:
        """Queue ``data`` for ``channel``; False (nothing queued) while Redis is unreachable, or while
        ``MAX_QUEUED`` messages wait for it (it is not keeping up)."""
        if not self.up or len(self._outgoing) >= MAX_QUEUED:
            return False
        self._outgoing.append((channel, data, on_fail))
        self._ready.set()
        return True

    async def _write(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            batch = list(self._outgoing)
            self._outgoing.clear()
            try:
                async with self._publisher.pipeline(transaction=False) as pipe:
                    for channel, data, _ in batch:
                        pipe.publish(channel, data)
                    await pipe.execute()
            except Exception as exc:  # Redis went away (or worse): these frames are lost, their senders told
                log.warning("cluster bus: %d frames not published (%s)", len(batch), exc)
                for _, _, on_fail in batch:
                    if on_fail is not None:
                        on_fail()

    async def _listen(self) -> None:
        backoff = Backoff(first=0.1, maximum=2.0)
        while True:
            pubsub = self._subscriber.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(*self._channels)
                self.up = True
                backoff.reset()
                await self._on_connected()
                while True:
                    message = await pubsub.get_message(timeout=None)
                    if message is not None:
                        self._on_message(message["channel"].decode(), message["data"])
            except (ConnectionError, TimeoutError, OSError) as exc:
                if self.up:
                    log.warning("cluster bus: Redis unreachable (%s); retrying", exc)
                self.up = False
            except Exception:  # a bug must not leave the router deaf for good
                log.exception("cluster bus: listening failed; starting again")
                self.up = False
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
            await asyncio.sleep(backoff.next_delay())
