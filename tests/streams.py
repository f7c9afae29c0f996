"""A stream of 1,000 messages from four senders to one recipient, and what surviving a crash in it means."""

from __future__ import annotations

import asyncio

from tests.conftest import eventually
from webmcp_a2a.client import Agent
from webmcp_a2a.protocol import SendMessageArgs, SendResult

SENDERS = 4
PER_SENDER = 250


async def stream(sender: Agent, n: int, to: str) -> list[SendResult]:
    """Sender ``n``'s 250 messages to ``to``, one every 2 ms, each keyed ``n-i``; their results."""
    sends = []
    for i in range(PER_SENDER):
        args = SendMessageArgs(target_agent_id=to, message_type="data_share", payload={"key": f"{n}-{i}"})
        sends.append(asyncio.create_task(sender.send_message(args)))
        await asyncio.sleep(0.002)
    return await asyncio.gather(*sends)


async def assert_every_message_applied_once(
    applied: list[str], applied_before_kill: int, streams: asyncio.Future[list[list[SendResult]]]
) -> None:
    """The kill landed mid-stream; every send was delivered or kept; every key was applied exactly once."""
    results = [result for per_sender in await asyncio.wait_for(streams, 90) for result in per_sender]
    assert 200 <= applied_before_kill < SENDERS * PER_SENDER, "the kill did not land mid-stream"
    assert all(result.delivered or result.stored for result in results)
    await eventually(lambda: len(set(applied)) == SENDERS * PER_SENDER, timeout=30)
    assert sorted(applied) == sorted(f"{n}-{i}" for n in range(SENDERS) for i in range(PER_SENDER))
