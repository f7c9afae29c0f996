"""The direct WebSocket path (router/direct_ws.py): messages reach the router as they are parsed, in
order, and what uvicorn's ASGI path did with bad frames and failures still happens."""

from __future__ import annotations

import json

import pytest
import websockets

from tests.conftest import running_router
from tests.unit.conftest import unique
from webmcp_a2a.protocol import Envelope, Hello, InboxArgs, ReceivedMessage, SendMessageArgs, SendRequest


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


def _note(target: str) -> SendMessageArgs:
    return SendMessageArgs(target_agent_id=target, message_type="notification", payload={})
