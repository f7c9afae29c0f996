"""Watching the mesh (``/watch``): who is there and what goes where, never a payload; guarded by
the join or watch tokens. A real router process, watched over a real WebSocket."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import websockets

from tests.conftest import free_port, sdk_agent, serving
from webmcp_a2a.client.agent import Agent
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import BroadcastArgs, Hello, SendMessageArgs


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with serving() as url:
        yield url.replace("http://", "ws://")


class Watcher:
    def __init__(self, socket: websockets.ClientConnection) -> None:
        self.socket = socket

    async def next(self, kind: str, where: Any = lambda frame: True, timeout: float = 10) -> dict:
        """The next frame of ``kind`` that satisfies ``where`` (others are passed over)."""
        async with asyncio.timeout(timeout):
            while True:
                frame = json.loads(await self.socket.recv())
                if frame["type"] == kind and where(frame):
                    return frame


async def watching(url: str, token: str | None = None) -> Watcher:
    socket = await websockets.connect(f"{url}/watch")
    await socket.send(json.dumps({"type": "watch", **({"token": token} if token else {})}))
    return Watcher(socket)


@pytest.fixture
async def watcher(base: str) -> AsyncIterator[Watcher]:
    watching_now = await watching(base)
    yield watching_now
    await watching_now.socket.close()


async def agent(base: str, name: str, agent_type: str = "executor") -> Agent:
    hello = Hello(agent_id=f"{name}-{free_port()}", agent_type=agent_type)
    return await connect(f"{base}/a2a", hello, reconnect=False)


async def test_a_watcher_first_sees_the_mesh_as_it_stands(base):
    present = await agent(base, "present")
    await present.subscribe("weather")
    watcher = await watching(base)
    try:
        mesh = await watcher.next("mesh")
        (info,) = [a for a in mesh["agents"] if a["agent_id"] == present.agent_id]
        assert (info["status"], info["where"]) == ("online", "backend")
        assert present.agent_id in mesh["topics"]["weather"]
    finally:
        present.close()
        await watcher.socket.close()


async def test_the_mesh_a_watcher_sees_includes_the_registered_remote_agents(base):
    http_base = base.replace("ws://", "http://")
    with sdk_agent() as remote:
        async with httpx.AsyncClient(timeout=15) as http:
            registered = await http.post(f"{http_base}/registry", json={"card_url": remote, "id": "far-echo"})
        assert registered.status_code in (200, 201), registered.text
        watcher = await watching(base)
        try:
            mesh = await watcher.next("mesh")
        finally:
            await watcher.socket.close()
    (far,) = [info for info in mesh["agents"] if info["agent_id"] == "far-echo"]
    assert far["remote"] is True
    assert far["url"].startswith(remote)


async def test_a_watcher_sees_agents_come_and_go(base, watcher):
    await watcher.next("mesh")
    newcomer = await agent(base, "newcomer")
    came = await watcher.next("agent", lambda f: f["agent"]["agent_id"] == newcomer.agent_id)
    assert came["agent"]["status"] == "online"
    newcomer.close()
    went = await watcher.next("agent", lambda f: f["agent"]["agent_id"] == newcomer.agent_id)
    assert went["agent"]["status"] == "offline"


async def test_a_watcher_sees_a_messages_route_and_never_its_payload(base, watcher):
    await watcher.next("mesh")
    sender, recipient = await agent(base, "sender"), await agent(base, "recipient")
    try:
        args = SendMessageArgs(
            target_agent_id=recipient.agent_id,
            message_type="task_request",
            payload={"secret": "for the recipient only"},
            correlation_id="job-42",
        )
        sent = await sender.send_message(args)
        seen = await watcher.next("message", lambda f: f["message_id"] == sent.message_id)
        assert seen["from_agent"] == sender.agent_id
        assert seen["recipients"] == [recipient.agent_id]
        assert (seen["message_type"], seen["correlation_id"]) == ("task_request", "job-42")
        assert "payload" not in seen
        assert "for the recipient only" not in json.dumps(seen)
    finally:
        sender.close()
        recipient.close()


async def test_a_watcher_sees_broadcasts_and_topic_events_with_their_recipients(base, watcher):
    await watcher.next("mesh")
    sender, monitor = await agent(base, "caster"), await agent(base, "monitor", "monitor")
    try:
        await monitor.subscribe("alarms")
        topic = await watcher.next("topic", lambda f: f["topic"] == "alarms")
        assert monitor.agent_id in topic["subscribers"]
        cast = await sender.broadcast(BroadcastArgs(agent_type="monitor", message_type="notification", payload={}))
        seen = await watcher.next("message", lambda f: f["message_id"] == cast.message_id)
        assert (seen["to_agent"], monitor.agent_id in seen["recipients"]) == ("broadcast", True)
        published = await sender.publish("alarms", {"level": 3})
        event = await watcher.next("message", lambda f: f["message_id"] == published.message_id)
        assert event["to_agent"] == "topic:alarms"
        assert monitor.agent_id in event["recipients"]
    finally:
        sender.close()
        monitor.close()


async def test_a_first_frame_that_is_not_a_watch_request_is_answered_and_closed(base):
    socket = await websockets.connect(f"{base}/watch")
    await socket.send(json.dumps({"type": "hello"}))
    error = json.loads(await socket.recv())
    assert error["type"] == "error"
    assert error["error"]["code"] == "invalid_frame"
    with pytest.raises(websockets.ConnectionClosed):
        await asyncio.wait_for(socket.recv(), 5)
    assert socket.close_code == 1008


async def test_a_watcher_that_says_more_than_its_watch_frame_is_closed(base):
    watcher = await watching(base)
    await watcher.next("mesh")
    await watcher.socket.send(json.dumps({"type": "watch"}))
    with pytest.raises(websockets.ConnectionClosed):
        await watcher.next("no such frame: read until the router closes")
    assert watcher.socket.close_code == 1008


@pytest.mark.parametrize(
    ("flags", "token", "code"),
    [
        (("--watch-token", "eyes-only-token"), None, "watch_token_required"),
        (("--watch-token", "eyes-only-token"), "a-wrong-token", "bad_watch_token"),
        (("--token", "team-join-token"), None, "watch_token_required"),
    ],
    ids=["watch-token-missing", "watch-token-wrong", "join-token-missing"],
)
async def test_a_router_with_tokens_lets_only_their_holders_watch(flags, token, code):
    with serving(*flags) as url:
        refused = await watching(url.replace("http://", "ws://"), token)
        error = json.loads(await refused.socket.recv())
        assert error["error"]["code"] == code
        admitted = await watching(url.replace("http://", "ws://"), flags[1])
        assert json.loads(await admitted.socket.recv())["type"] == "mesh"
        await admitted.socket.close()
