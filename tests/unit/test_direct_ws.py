"""The direct WebSocket path (router/direct_ws.py): messages reach the router as they are parsed, in
order, and what uvicorn's ASGI path did with bad frames and failures still happens; a connection the
app handed over keeps no task, and its end reaches the router whoever ends it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import websockets
from websockets.frames import Frame

from tests.conftest import RunningRouter, eventually, running_router
from tests.unit.conftest import unique
from webmcp_a2a.protocol import BroadcastArgs, Envelope, Hello, InboxArgs, ReceivedMessage, SendMessageArgs, SendRequest
from webmcp_a2a.router import direct_ws
from webmcp_a2a.router.settings import RouterSettings


async def test_a_burst_sent_with_the_hello_is_routed_whole_and_in_order(raw, agents):
    bob = await agents()
    websocket = await raw()
    frames = [Hello(agent_id=unique("burst"), agent_type="executor").model_dump_json()]
    frames += [
        SendRequest(
            id=n, envelope=Envelope(to_agent=bob.agent_id, message_type="notification", payload={"n": n})
        ).model_dump_json()
        for n in range(1, 201)
    ]
    for frame in frames:  # no wait for the welcome: frames queue while the connection is being accepted
        await websocket.send(frame)
    answers = [json.loads(await websocket.recv()) for _ in range(201)]
    assert answers[0]["type"] == "welcome"
    assert [(answer["type"], answer["ref"]) for answer in answers[1:]] == [("result", n) for n in range(1, 201)]
    got: list[ReceivedMessage] = []
    while len(got) < 200:
        got += (await bob.inbox(InboxArgs(wait_seconds=5, max_messages=100))).messages
    assert [message.payload["n"] for message in got] == list(range(1, 201))


async def test_a_text_frame_that_is_not_utf8_closes_that_connection_with_1007(raw, agents):
    websocket = await raw()
    websocket.protocol.send_text(b"\xff\xfe not text")  # below the client's API, which would refuse it
    websocket.send_data()
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await websocket.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1007
    alice, bob = await agents(), await agents()  # everyone else is served as before
    assert (await alice.send_message(_note(bob.agent_id))).delivered is True


async def test_a_failure_in_the_router_closes_only_that_connection_with_1011(agents):
    with running_router() as server:
        router = server.router
        real_receive = router.receive

        def receive(conn, text: str) -> None:  # a fault injected for one sender's frames
            if "boom" in text:
                raise RuntimeError("injected")
            real_receive(conn, text)

        router.receive = receive
        alice, bob = await agents(url=server.ws_url), await agents(url=server.ws_url)
        async with websockets.connect(server.ws_url) as doomed:
            await doomed.send('{"boom": 1}')
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await doomed.recv()
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 1011
        assert (await alice.send_message(_note(bob.agent_id))).delivered is True


async def test_a_connected_agent_keeps_no_task_in_the_router(router_server, agents):
    async def tasks() -> int:
        return len(asyncio.all_tasks())

    def count() -> int:
        return asyncio.run_coroutine_threadsafe(tasks(), router_server.loop).result(5)

    before = count()
    await asyncio.gather(*(agents() for _ in range(20)))
    # Neither the app's coroutine nor a writer waits for each (that was 40 tasks); the shared router
    # may be finishing another test's business meanwhile.
    assert count() < before + 5


async def joined(websocket: websockets.ClientConnection, prefix: str) -> str:
    """Send a hello on a bare socket and take the welcome; the agent's id."""
    agent_id = unique(prefix)
    await websocket.send(Hello(agent_id=agent_id, agent_type="executor").model_dump_json())
    assert json.loads(await websocket.recv())["type"] == "welcome"
    return agent_id


async def test_the_router_hears_of_a_socket_closed_by_its_agent(router_server, raw):
    websocket = await raw()
    agent_id = await joined(websocket, "leaving")
    await websocket.close()
    await eventually(lambda: router_server.router.registry.online(agent_id) is None)


async def test_a_socket_lost_without_a_closing_handshake_is_heard_of_too(router_server, raw):
    websocket = await raw()
    agent_id = await joined(websocket, "vanishing")
    websocket.transport.abort()
    await eventually(lambda: router_server.router.registry.online(agent_id) is None)


async def test_the_servers_shutdown_closes_handed_over_connections_with_1012():
    server = RunningRouter(RouterSettings()).start()
    try:
        websocket = await websockets.connect(server.ws_url)
        await joined(websocket, "shut")
    finally:
        await asyncio.to_thread(server.stop)
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await websocket.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1012


async def test_a_connections_frames_after_its_first_in_a_turn_go_out_together_at_its_end(router_server, raw):
    websocket = await raw()
    await joined(websocket, "busy")
    port = websocket.local_address[1]
    (protocol,) = [p for p in router_server.server.server_state.connections if p.client[1] == port]
    writes: list[bytes] = []

    class Spy:  # the real transport, its writes noted (uvloop's transport takes no new attributes)
        def __init__(self, transport: asyncio.WriteTransport) -> None:
            self.transport = transport

        def write(self, data: bytes) -> None:
            writes.append(data)
            self.transport.write(data)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.transport, name)

    def one_turn() -> None:  # ten frames in one callback
        protocol.transport = Spy(protocol.transport)
        for n in range(10):
            protocol.write_soon(json.dumps({"n": n}))

    router_server.loop.call_soon_threadsafe(one_turn)
    assert [json.loads(await websocket.recv())["n"] for _ in range(10)] == list(range(10))
    assert len(writes) == 2  # the first at once, the other nine at the end of the turn


async def test_the_app_serves_agents_the_asgi_way_under_uvicorns_own_protocol(agents):
    server = RunningRouter(RouterSettings(), ws="websockets-sansio").start()
    try:
        alice, bob = await agents(url=server.ws_url), await agents(url=server.ws_url)
        assert (await alice.send_message(_note(bob.agent_id))).delivered is True
        bob.close()
        await eventually(lambda: server.router.registry.online(bob.agent_id) is None)
    finally:
        await asyncio.to_thread(server.stop)


def _note(target: str) -> SendMessageArgs:
    return SendMessageArgs(target_agent_id=target, message_type="notification", payload={})


@pytest.mark.parametrize("size", [10, 2_000])  # a 7-bit and a 16-bit payload length in the frame's header
async def test_a_broadcast_is_framed_once_for_all_its_recipients_and_each_reads_it_whole(agents, monkeypatch, size):
    framed: list[bytes] = []

    class Counted(Frame):
        def serialize(self, **options: Any) -> bytes:
            framed.append(bytes(self.data))
            return super().serialize(**options)

    monkeypatch.setattr(direct_ws, "Frame", Counted)
    kind = unique("framed")
    sender, recipients = await agents(), [await agents(kind) for _ in range(5)]
    text = "x" * size
    result = await sender.broadcast(BroadcastArgs(agent_type=kind, message_type="notification", payload={"t": text}))
    assert result.delivered_count == 5
    for recipient in recipients:
        (message,) = (await recipient.inbox(InboxArgs(wait_seconds=5))).messages
        assert message.payload == {"t": text}
    assert sum(1 for data in framed if b'"type":"deliver"' in data) == 1


async def test_with_compression_on_each_recipient_gets_a_broadcast_through_its_own_compressor(agents):
    server = RunningRouter(RouterSettings(), ws_deflate=True).start()
    try:
        sender = await agents(url=server.ws_url)
        async with websockets.connect(server.ws_url) as first, websockets.connect(server.ws_url) as second:
            kind = unique("deflated")
            for websocket in (first, second):
                assert [extension.name for extension in websocket.protocol.extensions] == ["permessage-deflate"]
                await websocket.send(Hello(agent_id=unique("deflated"), agent_type=kind).model_dump_json())
                await websocket.recv()  # welcome
            received = {first: 0, second: 0}
            for websocket in (first, second):  # bytes off the wire, before the client decompresses them
                take = websocket.protocol.receive_data

                def counted(data: bytes, websocket=websocket, take=take) -> None:
                    received[websocket] += len(data)
                    take(data)

                websocket.protocol.receive_data = counted  # type: ignore[assignment]
            text = "compressible " * 200
            sent = asyncio.ensure_future(
                sender.broadcast(BroadcastArgs(agent_type=kind, message_type="notification", payload={"t": text}))
            )
            for websocket in (first, second):
                deliver = json.loads(await websocket.recv())
                assert deliver["envelope"]["payload"] == {"t": text}
                message_id = deliver["envelope"]["message_id"]
                await websocket.send(json.dumps({"type": "ack", "message_id": message_id, "accepted": True}))
            assert (await sent).delivered_count == 2
        assert all(0 < count < len(text) // 4 for count in received.values())
    finally:
        await asyncio.to_thread(server.stop)
