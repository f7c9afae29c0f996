"""Acknowledgements from the client's side: one frame for a burst of deliveries, or one each."""

from __future__ import annotations

import asyncio
import json

from webmcp_a2a.client.agent import Agent
from webmcp_a2a.client.core import ClientCore
from webmcp_a2a.protocol import MAX_ACKS_PER_FRAME, Deliver, Envelope, Hello, Welcome

HELLO = Hello(agent_id="bob", agent_type="executor")
WELCOME = Welcome(agent_id="bob", max_frame_bytes=1_000_000).model_dump_json()


def deliveries(count: int) -> list[str]:
    return [
        Deliver(envelope=Envelope(message_id=f"m{n}", to_agent="bob", message_type="notification")).model_dump_json()
        for n in range(count)
    ]


class Recorder:
    """The wire, as far as the agent can tell: what it wrote, in order."""

    name = "recorder"

    def __init__(self) -> None:
        self.frames: list[dict] = []

    def send(self, text: str) -> None:
        self.frames.append(json.loads(text))

    def close(self) -> None:
        pass


def taken_by(core: ClientCore, frames: list[str]) -> list[dict]:
    for frame in frames:
        core.receive(frame)
        core.ack(core.events_received()[0].message.message_id)  # type: ignore[union-attr]
    return [json.loads(text) for text in core.data_to_send()]


def test_acks_taken_together_go_in_one_frame_when_batched() -> None:
    assert taken_by(ClientCore(HELLO, batch_acks=True), deliveries(3)) == [
        {"type": "acks", "message_ids": ["m0", "m1", "m2"]}
    ]


def test_a_batch_larger_than_a_frame_takes_several() -> None:
    frames = taken_by(ClientCore(HELLO, batch_acks=True), deliveries(MAX_ACKS_PER_FRAME + 1))
    assert [len(frame["message_ids"]) for frame in frames] == [MAX_ACKS_PER_FRAME, 1]


def test_without_batching_every_message_gets_an_ack_frame_of_its_own() -> None:
    assert [frame["type"] for frame in taken_by(ClientCore(HELLO), deliveries(3))] == ["ack"] * 3


async def test_an_agent_acks_what_arrived_in_one_turn_of_the_loop_with_one_frame() -> None:
    agent, wire = Agent(HELLO, batch_acks=True), Recorder()
    agent.connection_made(wire)
    agent.data_received(WELCOME)
    await asyncio.sleep(0)
    for frame in deliveries(3):  # as a socket's reader hands over frames it already holds
        agent.data_received(frame)
    assert [frame["type"] for frame in wire.frames] == ["hello"]  # nothing yet: the burst may go on
    await asyncio.sleep(0)
    assert wire.frames[1:] == [{"type": "acks", "message_ids": ["m0", "m1", "m2"]}]
    agent.close()


def test_acks_lost_with_the_connection_are_not_sent_on_the_next_one() -> None:
    core = ClientCore(HELLO, batch_acks=True)
    core.receive(deliveries(1)[0])
    core.ack("m0")
    core.connection_lost()
    core.connect()
    # The router delivers m0 again; the agent acks it then, and knows it has it already.
    assert [json.loads(text)["type"] for text in core.data_to_send()] == ["hello"]
