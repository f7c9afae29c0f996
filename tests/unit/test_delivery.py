"""Delivery guarantees over real sockets: order, priority, expiry, overflow, store-and-forward, resends."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket

import pytest
import websockets

from tests.conftest import eventually, running_router
from tests.unit.conftest import unique
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import Envelope, Hello, InboxArgs, SendMessageArgs, SendRequest

BIG = base64.b64encode(os.urandom(37_000)).decode()  # 50 kB that per-message compression cannot shrink
BACKLOG = 200  # 10 MB: more than the loopback socket buffers hold, so frames back up in the router


def note(target: str, priority: int = 5, ttl: float | None = None, **payload) -> SendMessageArgs:
    return SendMessageArgs(
        target_agent_id=target, message_type="notification", payload=payload, priority=priority, ttl_seconds=ttl
    )


async def take_all(agent, wait: float = 2.0, expect: int | None = None):
    """Take the inbox; with ``expect``, keep taking (up to ``wait`` seconds) until that many arrived."""
    taken = (await agent.inbox(InboxArgs(wait_seconds=wait, max_messages=1000))).messages
    deadline = asyncio.get_running_loop().time() + wait
    while expect is not None and len(taken) < expect and asyncio.get_running_loop().time() < deadline:
        taken += (await agent.inbox(InboxArgs(wait_seconds=0.1, max_messages=1000))).messages
    return taken


class SlowReader:
    """A recipient speaking the protocol over a raw socket, reading only when told to."""

    def __init__(self, websocket, agent_id: str) -> None:
        self.websocket, self.agent_id = websocket, agent_id
        self.received: list[dict] = []

    @classmethod
    async def join(cls, url: str) -> SlowReader:
        agent_id = unique("slow")
        # A small receive buffer set before connecting (so the window stays small): the backlog
        # builds in the router's queue, not in the kernel.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
        sock.connect(("127.0.0.1", int(url.split(":")[2].split("/")[0])))
        websocket = await websockets.connect(url, sock=sock, max_queue=1)
        await websocket.send(Hello(agent_id=agent_id, agent_type="slow-reader").model_dump_json())
        assert json.loads(await websocket.recv())["type"] == "welcome"
        websocket.transport.pause_reading()  # not a byte more until read() is called
        return cls(websocket, agent_id)

    async def read(self, count: int | None = None, quiet: float = 1.0) -> list[dict]:
        """Read and acknowledge deliveries: ``count`` of them, or (None) until none comes for ``quiet`` s."""
        self.websocket.transport.resume_reading()
        while count is None or len(self.received) < count:
            try:
                frame = json.loads(await asyncio.wait_for(self.websocket.recv(), None if count else quiet))
            except TimeoutError:
                break
            if frame["type"] == "deliver":
                self.received.append(frame["envelope"]["payload"])
                await self.websocket.send(json.dumps({"type": "ack", "message_id": frame["envelope"]["message_id"]}))
        return self.received


@pytest.fixture
async def slow_reader(router_server):
    """Factory for SlowReaders (on the shared router unless given a URL); all closed after the test."""
    readers = []

    async def join(url: str | None = None) -> SlowReader:
        reader = await SlowReader.join(url or router_server.ws_url)
        readers.append(reader)
        return reader

    yield join
    for reader in readers:
        await reader.websocket.close()


async def test_messages_from_one_sender_arrive_in_order(agents):
    alice, bob = await agents(), await agents()
    results = await asyncio.gather(*(alice.send_message(note(bob.agent_id, n=n)) for n in range(300)))
    assert all(result.delivered for result in results)
    assert [m.payload["n"] for m in await take_all(bob, expect=300)] == list(range(300))


async def backlog(router, sender, target: str, priority: int = 1) -> list[asyncio.Task]:
    """Send BACKLOG big messages to a recipient that is not reading; return once the router has them all."""
    tasks = [
        asyncio.create_task(sender.send_message(note(target, priority, tag="backlog", blob=BIG)))
        for _ in range(BACKLOG)
    ]

    def all_at_the_router() -> bool:
        in_flight = sum(1 for pending in router._pending.values() if pending.recipients == [target])
        return in_flight + sum(task.done() for task in tasks) == BACKLOG

    await eventually(all_at_the_router, timeout=30)
    return tasks


async def test_critical_messages_overtake_a_backlog_of_low_ones(agents, slow_reader, router_server):
    alice, carol = await agents(), await agents()
    bob = await slow_reader()
    low = await backlog(router_server.router, alice, bob.agent_id, priority=1)
    critical = [asyncio.create_task(carol.send_message(note(bob.agent_id, 10, tag="critical"))) for _ in range(5)]
    await asyncio.sleep(0.1)
    order = [payload["tag"] for payload in await bob.read(BACKLOG + 5)]
    await asyncio.gather(*low, *critical)
    critical_at = [i for i, tag in enumerate(order) if tag == "critical"]
    assert len(critical_at) == 5
    assert critical_at == list(range(critical_at[0], critical_at[0] + 5))  # together, in order
    assert critical_at[-1] < BACKLOG - 20  # ahead of a good part of the backlog


async def test_message_that_expires_in_a_backlog_is_never_delivered(agents, slow_reader, router_server):
    alice, carol = await agents(), await agents()
    bob = await slow_reader()
    queued = await backlog(router_server.router, alice, bob.agent_id, priority=5)
    doomed = asyncio.create_task(carol.send_message(note(bob.agent_id, 5, ttl=0.2, tag="doomed")))
    await asyncio.sleep(0.5)
    payloads = await bob.read(BACKLOG)
    await asyncio.gather(*queued)
    result = await doomed
    assert (result.delivered, result.reason) == (False, "expired")
    assert all(payload.get("tag") != "doomed" for payload in payloads)


async def test_full_queue_refuses_equal_priority_and_evicts_for_higher(slow_reader):
    with running_router(queue_limit=3, ack_timeout=60) as server:
        alice = await connect(server.ws_url, Hello(agent_id="alice", agent_type="executor"))
        carol = await connect(server.ws_url, Hello(agent_id="carol", agent_type="executor"))
        bob = await slow_reader(server.ws_url)
        sends = await backlog(server.router, alice, bob.agent_id, priority=1)
        refused = [task.result() for task in sends if task.done()]
        assert refused
        assert all(r.reason == "queue_full" and r.target_status == "busy" for r in refused)
        bob_queue = server.router.registry.online(bob.agent_id).connection
        while len(bob_queue) < 3:  # the kernel took a little more since: top the queue up again
            sends.append(asyncio.create_task(alice.send_message(note(bob.agent_id, 1, tag="backlog", blob=BIG))))
            await asyncio.sleep(0.05)
        urgent = asyncio.create_task(carol.send_message(note(bob.agent_id, 10, tag="urgent")))
        await bob.read()
        results = await asyncio.gather(*sends)
        assert (await urgent).delivered is True
        reasons = [r.reason for r in results]
        assert reasons.count("evicted") == 1
        assert all(r.delivered for r in results if r.reason not in ("queue_full", "evicted"))
        assert any(p.get("tag") == "urgent" for p in bob.received)
        alice.close()
        carol.close()


async def test_message_for_an_offline_agent_is_stored_and_delivered_in_order_on_return(agents, leave, router_server):
    alice = await agents()
    bob_id = unique("bob")
    await leave(await agents(agent_id=bob_id))
    results = [await alice.send_message(note(bob_id, n=n)) for n in range(3)]
    assert all((r.delivered, r.stored, r.target_status) == (False, True, "offline") for r in results)
    bob = await agents(agent_id=bob_id)
    assert [m.payload["n"] for m in await take_all(bob, expect=3)] == [0, 1, 2]
    await eventually(lambda: router_server.router.store.count(bob_id) == 0)


async def test_stored_message_past_its_expiry_is_not_delivered(agents, leave):
    alice = await agents()
    bob_id = unique("bob")
    await leave(await agents(agent_id=bob_id))
    assert (await alice.send_message(note(bob_id, ttl=0.2, n=1))).stored is True
    await asyncio.sleep(0.3)
    bob = await agents(agent_id=bob_id)
    assert await take_all(bob, wait=0.3) == []


async def test_message_to_an_agent_never_seen_is_not_stored(agents):
    alice = await agents()
    result = await alice.send_message(note("never-seen-anywhere"))
    assert (result.delivered, result.stored, result.target_status) == (False, False, "offline")


async def test_resent_message_takes_effect_once(raw, agents):
    bob = await agents()
    applied = []
    bob.on_message(lambda message: applied.append(message.message_id))
    sender = await raw()
    await sender.send(Hello(agent_id=unique("resender"), agent_type="executor").model_dump_json())
    await sender.recv()
    envelope = Envelope(to_agent=bob.agent_id, message_type="data_share", payload={"once": True})
    for request_id in (1, 2):  # the same message twice, as an outbox resend would
        await sender.send(SendRequest(id=request_id, envelope=envelope).model_dump_json())
        reply = json.loads(await sender.recv())
        assert reply["data"]["delivered"] is True
    assert applied == [envelope.message_id]
    assert len(await take_all(bob, wait=0.2)) == 1


async def test_outbox_resends_after_the_router_comes_back(tmp_path):
    store = str(tmp_path / "store.sqlite3")
    with running_router(store_path=store) as first:
        port = first.port
        alice = await connect(first.ws_url, Hello(agent_id="alice", agent_type="executor"))
        bob = await connect(first.ws_url, Hello(agent_id="bob", agent_type="executor"))
    await eventually(lambda: alice.state == "disconnected" and bob.state == "disconnected")
    pending = asyncio.create_task(alice.send_message(note("bob", n=42)))
    await asyncio.sleep(0.2)
    assert not pending.done()  # waiting in the outbox
    with running_router(store_path=store, port=port):
        result = await asyncio.wait_for(pending, 20)
        assert result.delivered or result.stored
        assert [m.payload["n"] for m in await take_all(bob, wait=10)] == [42]
        alice.close()
        bob.close()
