"""The agent's transport policy (browser/fallback.py) under CPython, on real sockets.

The page's pieces are replaced by their CPython equivalents, with the same shapes:
``CPythonWebSocket`` stands for the browser WebSocket transport and ``PyHub`` for the page's
hub (web/js/hub.js): one host WebSocket carrying ``relay`` frames. The agent's router URL is a
:class:`RouterGate` (refused while closed), so the WebSocket fails and comes back for real.
The same client core and Agent run as in the page: only the transports differ.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from urllib.parse import urlparse

import pytest
import websockets
from websockets.asyncio.client import ClientConnection

from tests.browser.conftest import RouterGate
from tests.unit.conftest import unique
from webmcp_a2a.browser.fallback import RouterLink
from webmcp_a2a.browser.postmessage import HostUplink
from webmcp_a2a.client.agent import Agent
from webmcp_a2a.protocol import Hello, InboxArgs, SendMessageArgs
from webmcp_a2a.router.relay import RelayedConnection


class CPythonWebSocket:
    """BrowserWebSocketTransport's shape (url, agent, on_closed) over the websockets library."""

    name = "websocket"

    def __init__(self, url: str, agent, on_closed) -> None:
        self._agent = agent
        self._on_closed = on_closed
        self._outgoing: asyncio.Queue[str] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._run(url))

    def send(self, text: str) -> None:
        self._outgoing.put_nowait(text)

    def close(self) -> None:
        self._task.cancel()

    async def _run(self, url: str) -> None:
        reason = "closed (1006)"
        try:
            async with websockets.connect(url, open_timeout=2) as websocket:
                self._agent.connection_made(self)
                writer = asyncio.ensure_future(self._write(websocket))
                try:
                    async for text in websocket:
                        self._agent.data_received(text)
                    reason = "closed (1000)"
                finally:
                    writer.cancel()
        except websockets.ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd else 1006
            reason = f"closed ({code}{': ' + exc.rcvd.reason if exc.rcvd and exc.rcvd.reason else ''})"
        except (TimeoutError, OSError, websockets.WebSocketException) as exc:
            reason = f"closed (1006: {exc})"
        except asyncio.CancelledError:
            reason = "closed (1000)"
        if self._agent.transport is self:
            self._agent.connection_lost(reason)
        self._on_closed(reason)

    async def _write(self, websocket) -> None:
        while True:
            await websocket.send(await self._outgoing.get())


class PyHub:
    """The page hub's relay in CPython: attach / frame / detach over one host WebSocket."""

    def __init__(self, router_url: str) -> None:
        self.router_url = router_url
        self.posted: list[dict] = []
        self._listener: Callable[[str], None] | None = None
        self._agent_id: str | None = None
        self._socket: ClientConnection | None = None
        self._attached = False
        self._task: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Future[None]] = set()

    def _send(self, frame: dict) -> None:
        assert self._socket is not None
        sending = asyncio.ensure_future(self._socket.send(json.dumps(frame)))
        self._sends.add(sending)
        sending.add_done_callback(self._sends.discard)

    # what HostUplink calls
    def post(self, text: str) -> None:
        message = json.loads(text)
        self.posted.append(message)
        kind = message["kind"]
        if kind == "hello":
            self._agent_id = message["agent_id"]
        elif kind == "attach":
            self._attached = True
            if self._socket is not None:
                self._tell("open")
            elif self._task is None:
                self._task = asyncio.ensure_future(self._run())
        elif kind == "frame" and self._attached and self._socket is not None:
            self._send({"type": "relay", "agent_id": self._agent_id, "frame": message["frame"]})
        elif kind == "detach":
            if self._attached and self._socket is not None:
                self._send({"type": "unrelay", "agent_id": self._agent_id})
            else:
                self._attached = False
                self._tell("closed", code=1000, reason="detached")

    def listen(self, callback) -> None:
        self._listener = callback

    def _tell(self, kind: str, **fields) -> None:
        # postMessage delivers later, never within the sender's call
        assert self._listener is not None
        asyncio.get_running_loop().call_soon(self._listener, json.dumps({"kind": kind, **fields}))

    async def _run(self) -> None:
        async with websockets.connect(self.router_url) as websocket:
            self._socket = websocket
            if self._attached:
                self._tell("open")
            async for text in websocket:
                frame = json.loads(text)
                if frame.get("type") == "relayed" and self._attached:
                    self._tell("frame", frame=frame["frame"])
                elif frame.get("type") == "relay_closed" and self._attached:
                    self._attached = False
                    self._tell("closed", code=frame["code"], reason=frame["reason"])


@pytest.fixture
def gate(router_server):
    gate = RouterGate(urlparse(router_server.ws_url).port)
    yield gate
    gate.close()


@pytest.fixture
async def linked(router_server, gate):
    """Factory: an Agent behind a RouterLink whose WebSocket goes through ``gate``."""
    made = []

    async def make(with_host: bool = True):
        agent = Agent(Hello(agent_id=unique("linked"), agent_type="executor"))
        hub = PyHub(router_server.ws_url) if with_host else None
        uplink = HostUplink(hub) if hub else None
        if uplink:
            uplink.post("hello", agent_id=agent.agent_id, where="worker")
        link = RouterLink(
            agent,
            gate.ws_url,
            open_websocket=CPythonWebSocket,
            uplink=uplink,
            first_delay=0.05,
            max_delay=0.3,
            open_timeout=1,
        )
        link.start()
        made.append((link, hub))
        return agent, link, hub

    yield make
    for link, hub in made:
        link.close()
        if hub is not None and hub._task is not None:
            hub._task.cancel()


async def until(predicate, timeout: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


def connection_of(router_server, agent_id: str):
    record = router_server.router.registry.online(agent_id)
    return record.connection if record else None


async def delivered(sender, target_id: str) -> bool:
    result = await sender.send_message(
        SendMessageArgs(target_agent_id=target_id, message_type="notification", payload={"n": 1})
    )
    return result.delivered


async def test_a_refused_websocket_falls_back_to_the_host_and_comes_back(linked, agents, gate, router_server):
    agent, link, hub = await linked()
    await until(lambda: agent.state == "connected")
    assert (link.name, link.fallback) == ("postmessage", True)
    assert isinstance(connection_of(router_server, agent.agent_id), RelayedConnection)
    bob = await agents()
    assert await delivered(bob, agent.agent_id)
    assert await delivered(agent, bob.agent_id)

    gate.open()
    await until(lambda: link.name == "websocket" and agent.state == "connected")
    assert link.fallback is False
    assert link.switches == 1
    assert not isinstance(connection_of(router_server, agent.agent_id), RelayedConnection)
    # the host was told to let go before the WebSocket said hello: no agent_id_taken on the way
    assert [m["kind"] for m in hub.posted].count("detach") == 1
    assert await delivered(bob, agent.agent_id)

    gate.close()  # cuts the connection: back onto the fallback
    await until(lambda: link.name == "postmessage" and agent.state == "connected")
    assert link.switches == 2
    assert await delivered(bob, agent.agent_id)
    assert len((await agent.inbox(InboxArgs())).messages) == 3


async def test_without_a_host_the_agent_keeps_probing_its_websocket(linked, gate):
    agent, link, _ = await linked(with_host=False)
    await asyncio.sleep(0.5)
    assert agent.state == "disconnected"
    assert link.name is None
    gate.open()
    await until(lambda: agent.state == "connected")
    assert link.name == "websocket"


async def test_an_id_taken_for_good_stops_the_link(linked, agents, gate, router_server):
    agent, link, _ = await linked()
    await until(lambda: agent.state == "connected")
    agent.close()
    link.close()
    # another runtime is this agent now; a fresh link with the same id is refused three times, then stops
    await agents(agent_id=agent.agent_id, credential=agent.credential)
    twin = Agent(Hello(agent_id=agent.agent_id, agent_type="executor", credential=agent.credential))
    twin_link = RouterLink(
        twin, router_server.ws_url, open_websocket=CPythonWebSocket, first_delay=0.02, max_delay=0.05
    )
    twin_link.start()
    await until(lambda: twin_link.refused is not None)
    assert (twin_link.refused or "").startswith("closed (4009")
    assert twin.state == "disconnected"


async def test_a_refused_credential_stops_the_link_at_once(linked, router_server):
    agent, link, _ = await linked()
    await until(lambda: agent.state == "connected")
    agent.close()
    link.close()
    await until(lambda: router_server.router.registry.online(agent.agent_id) is None)
    impostor = Agent(Hello(agent_id=agent.agent_id, agent_type="executor", credential="not-the-owner"))
    impostor_link = RouterLink(
        impostor, router_server.ws_url, open_websocket=CPythonWebSocket, first_delay=0.02, max_delay=0.05
    )
    impostor_link.start()
    await until(lambda: impostor_link.refused is not None)
    assert (impostor_link.refused or "").startswith("closed (4001")
    assert impostor_link.switches == 0


class FakeHub:
    """An uplink whose hub is the test: records what the agent posts, says what the test wants."""

    def __init__(self) -> None:
        self.posted: list[dict] = []
        self.listener: Callable[[str], None] | None = None

    def post(self, text: str) -> None:
        self.posted.append(json.loads(text))

    def listen(self, callback) -> None:
        self.listener = callback

    def say(self, kind: str, **fields) -> None:
        assert self.listener is not None, "the agent has not listened yet"
        self.listener(json.dumps({"kind": kind, **fields}))


async def test_messages_to_agents_of_the_same_page_go_through_the_hub(router_server):
    hub = FakeHub()
    agent = Agent(Hello(agent_id=unique("local"), agent_type="executor"))
    link = RouterLink(agent, router_server.ws_url, open_websocket=CPythonWebSocket, uplink=HostUplink(hub))
    link.start()
    try:
        await until(lambda: agent.state == "connected")
        hub.say("peers", ids=["neighbour", agent.agent_id])
        assert link.peers == {"neighbour"}
        sending = asyncio.ensure_future(
            agent.send_message(
                SendMessageArgs(target_agent_id="neighbour", message_type="notification", payload={"local": True})
            )
        )
        await until(lambda: any(m["kind"] == "local-send" for m in hub.posted))
        request = json.loads(next(m for m in hub.posted if m["kind"] == "local-send")["frame"])
        assert request["envelope"]["to_agent"] == "neighbour"
        hub.say(
            "local-result",
            frame=json.dumps(
                {
                    "type": "result",
                    "ref": request["id"],
                    "data": {
                        "delivered": True,
                        "target_status": "online",
                        "message_id": request["envelope"]["message_id"],
                    },
                }
            ),
        )
        assert (await sending).delivered is True
        # and a message delivered by the hub is acknowledged to the hub, not to the router
        hub.say(
            "local-deliver",
            frame=json.dumps(
                {
                    "type": "deliver",
                    "envelope": {
                        "message_id": "m-local-1",
                        "to_agent": agent.agent_id,
                        "from_agent": "neighbour",
                        "message_type": "notification",
                        "payload": {"hi": 1},
                    },
                }
            ),
        )
        (message,) = (await agent.inbox(InboxArgs(wait_seconds=1))).messages
        assert (message.from_agent, message.payload) == ("neighbour", {"hi": 1})
        await until(lambda: any(m["kind"] == "local-ack" for m in hub.posted))
        ack = next(m for m in hub.posted if m["kind"] == "local-ack")
        assert (ack["message_id"], ack["accepted"]) == ("m-local-1", True)
        assert (link.local_sent, link.local_received) == (1, 1)
    finally:
        link.close()
