"""Hosted agents over a host's connection (router/relay.py), on real sockets.

The host here is a bare WebSocket playing the page's relay socket: it wraps each
hosted agent's frames in ``relay`` frames and reads ``relayed`` / ``relay_closed``.
"""

from __future__ import annotations

import asyncio
import json

from tests.conftest import running_router
from tests.unit.conftest import unique
from webmcp_a2a.protocol import Ack, BroadcastArgs, Envelope, Hello, InboxArgs, SendMessageArgs, SendRequest
from webmcp_a2a.router.relay import RelayedConnection


class Host:
    """A relaying window's connection, seen from the test."""

    def __init__(self, websocket) -> None:
        self.websocket = websocket

    async def relay(self, agent_id: str, frame: str | dict) -> None:
        text = frame if isinstance(frame, str) else json.dumps(frame)
        await self.websocket.send(json.dumps({"type": "relay", "agent_id": agent_id, "frame": text}))

    async def hello(self, agent_id: str, agent_type: str = "executor", credential: str | None = None) -> dict:
        hello = Hello(agent_id=agent_id, agent_type=agent_type, credential=credential)
        await self.relay(agent_id, hello.model_dump_json())
        return await self.next_for(agent_id)

    async def unrelay(self, agent_id: str) -> None:
        await self.websocket.send(json.dumps({"type": "unrelay", "agent_id": agent_id}))

    async def next(self, timeout: float = 3.0) -> dict:
        return json.loads(await asyncio.wait_for(self.websocket.recv(), timeout))

    async def next_for(self, agent_id: str, timeout: float = 3.0) -> dict:
        """The next frame for ``agent_id``, unwrapped (``relay_closed`` is returned as is)."""
        while True:
            outer = await self.next(timeout)
            if outer.get("agent_id") != agent_id:
                continue
            if outer["type"] == "relayed":
                return json.loads(outer["frame"])
            return outer


async def host(raw) -> Host:
    return Host(await raw())


def note(target: str, **payload) -> SendMessageArgs:
    return SendMessageArgs(target_agent_id=target, message_type="notification", payload=payload)


async def eventually(predicate, timeout: float = 3.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def test_hosted_agent_registers_through_the_relay(raw, router_server):
    relay_host = await host(raw)
    hosted = unique("hosted")
    welcome = await relay_host.hello(hosted)
    assert welcome["type"] == "welcome"
    assert welcome["agent_id"] == hosted
    assert router_server.router.registry.online(hosted) is not None


async def test_messages_reach_a_hosted_agent_and_its_ack_completes_them(raw, agents):
    relay_host, bob = await host(raw), await agents()
    hosted = unique("hosted")
    await relay_host.hello(hosted)
    sending = asyncio.ensure_future(bob.send_message(note(hosted, n=1)))
    deliver = await relay_host.next_for(hosted)
    assert deliver["type"] == "deliver"
    assert deliver["envelope"]["from_agent"] == bob.agent_id
    await relay_host.relay(hosted, Ack(message_id=deliver["envelope"]["message_id"]).model_dump_json())
    result = await sending
    assert (result.delivered, result.target_status) == (True, "online")


async def test_a_hosted_agent_sends_and_the_router_stamps_it_as_the_sender(raw, agents):
    relay_host, bob = await host(raw), await agents()
    hosted = unique("hosted")
    await relay_host.hello(hosted)
    request = SendRequest(
        id=7, envelope=Envelope(to_agent=bob.agent_id, message_type="notification", payload={"via": "relay"})
    )
    await relay_host.relay(hosted, request.model_dump_json())
    (message,) = (await bob.inbox(InboxArgs(wait_seconds=3))).messages
    assert message.from_agent == hosted
    assert message.payload == {"via": "relay"}
    result = await relay_host.next_for(hosted)
    assert (result["type"], result["ref"], result["data"]["delivered"]) == ("result", 7, True)


async def test_broadcasts_cross_the_relay_both_ways(raw, agents):
    relay_host, bob = await host(raw), await agents("analyzer")
    hosted = unique("hosted")
    await relay_host.hello(hosted, "analyzer")
    broadcasting = asyncio.ensure_future(
        bob.broadcast(BroadcastArgs(agent_type="analyzer", message_type="notification", payload={"to": "analyzers"}))
    )
    deliver = await relay_host.next_for(hosted)
    await relay_host.relay(hosted, Ack(message_id=deliver["envelope"]["message_id"]).model_dump_json())
    fanout = await broadcasting
    assert hosted in fanout.recipient_ids
    assert fanout.delivered_count == len(fanout.recipient_ids)


async def test_a_spoofed_sender_is_rejected_through_the_relay(raw, agents):
    relay_host, bob = await host(raw), await agents()
    hosted = unique("hosted")
    await relay_host.hello(hosted)
    request = SendRequest(
        id=3, envelope=Envelope(to_agent=bob.agent_id, from_agent=bob.agent_id, message_type="notification")
    )
    await relay_host.relay(hosted, request.model_dump_json())
    error = await relay_host.next_for(hosted)
    assert (error["type"], error["ref"], error["error"]["code"]) == ("error", 3, "spoofed_sender")


async def test_a_host_cannot_take_the_identity_of_an_agent_online_elsewhere(raw, agents, router_server):
    relay_host, bob = await host(raw), await agents()
    error = await relay_host.hello(bob.agent_id, credential=bob.credential)
    assert error["error"]["code"] == "agent_id_taken"
    closed = await relay_host.next_for(bob.agent_id)
    assert (closed["type"], closed["code"]) == ("relay_closed", 4009)
    # bob is untouched: still online on his own connection
    assert bob.state == "connected"
    assert not isinstance(router_server.router.registry.online(bob.agent_id).connection, RelayedConnection)


async def test_a_relay_cannot_carry_another_agents_hello(raw, router_server):
    relay_host = await host(raw)
    named, claimed = unique("named"), unique("claimed")
    await relay_host.relay(named, Hello(agent_id=claimed, agent_type="executor").model_dump_json())
    error = await relay_host.next_for(named)
    assert (error["error"]["code"], error["error"]["field"]) == ("invalid_frame", "agent_id")
    assert router_server.router.registry.online(claimed) is None
    assert router_server.router.registry.online(named) is None


async def test_a_host_cannot_speak_for_an_agent_hosted_by_another(raw, agents):
    first, second, bob = await host(raw), await host(raw), await agents()
    hosted = unique("hosted")
    await first.hello(hosted)
    request = SendRequest(id=1, envelope=Envelope(to_agent=bob.agent_id, message_type="notification"))
    await second.relay(hosted, request.model_dump_json())
    error = await second.next_for(hosted)
    assert error["error"]["code"] == "not_registered"
    assert (await bob.inbox(InboxArgs(wait_seconds=0.3))).messages == []


async def test_closing_the_host_takes_its_hosted_agents_offline(raw, router_server):
    relay_host = await host(raw)
    hosted = [unique("hosted") for _ in range(2)]
    for agent_id in hosted:
        await relay_host.hello(agent_id)
    assert all(router_server.router.registry.online(agent_id) for agent_id in hosted)
    await relay_host.websocket.close()
    await eventually(lambda: not any(router_server.router.registry.online(agent_id) for agent_id in hosted))
    assert not set(hosted) & router_server.router.relays.hosted_ids()


async def test_unrelay_lets_the_agent_go_and_it_can_connect_directly(raw, agents, router_server):
    relay_host = await host(raw)
    hosted = unique("hosted")
    welcome = await relay_host.hello(hosted)
    await relay_host.unrelay(hosted)
    closed = await relay_host.next_for(hosted)
    assert (closed["type"], closed["code"]) == ("relay_closed", 1000)
    await eventually(lambda: router_server.router.registry.online(hosted) is None)  # the router's thread
    # the same agent, now on a socket of its own
    direct = await agents(agent_id=hosted, credential=welcome["credential"])
    assert direct.state == "connected"
    # unrelay of an agent the host does not carry is answered too (idempotent)
    await relay_host.unrelay(hosted)
    assert (await relay_host.next_for(hosted))["type"] == "relay_closed"


async def test_the_frame_limits_apply_to_relayed_frames():
    with running_router(max_frame_bytes=1024, ack_timeout=2) as server:
        import websockets

        async with websockets.connect(server.ws_url) as websocket:
            relay_host = Host(websocket)
            hosted = unique("hosted")
            await relay_host.hello(hosted)
            big = SendRequest(
                id=5, envelope=Envelope(to_agent="nobody", message_type="notification", payload={"blob": "x" * 1100})
            )
            await relay_host.relay(hosted, big.model_dump_json())
            assert (await relay_host.next())["error"]["code"] == "frame_too_large"
            # an inner frame that is not a frame at all is the hosted agent's error, not the host's
            await relay_host.relay(hosted, "not json")
            assert (await relay_host.next_for(hosted))["error"]["code"] == "malformed_frame"
            # and both live on
            small = SendRequest(id=6, envelope=Envelope(to_agent="nobody", message_type="notification"))
            await relay_host.relay(hosted, small.model_dump_json())
            result = await relay_host.next_for(hosted)
            assert (result["type"], result["ref"]) == ("result", 6)


async def test_relay_frames_do_not_nest(raw):
    relay_host = await host(raw)
    hosted = unique("hosted")
    await relay_host.hello(hosted)
    inner = json.dumps({"type": "relay", "agent_id": unique("inner"), "frame": "{}"})
    await relay_host.relay(hosted, inner)
    assert (await relay_host.next_for(hosted))["error"]["code"] == "invalid_frame"
