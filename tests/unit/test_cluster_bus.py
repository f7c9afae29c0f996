"""The cluster's bus keeps a bounded queue: a Redis that does not keep up is refused, not buffered forever."""

from __future__ import annotations

from webmcp_a2a.router.cluster.bus import MAX_QUEUED, Bus


async def test_the_bus_queues_at_most_max_queued_messages_while_redis_does_not_take_them(redis_url):
    async def nothing() -> None:
        return None

    bus = Bus(redis_url, ["unused"], lambda channel, data: None, nothing)
    bus.up = True  # as if subscribed; its writer is not started, so nothing leaves the queue

    accepted = [bus.publish("somewhere", b"x") for _ in range(MAX_QUEUED + 1)]

    assert accepted.count(True) == MAX_QUEUED
    assert accepted[-1] is False
    await bus.stop()
