"""The CPython transport: an :class:`~webmcp_a2a.client.agent.Agent` over the ``websockets`` library.

Used by tests, benchmarks, backend agents and scripts::

    agent = await connect("ws://127.0.0.1:8765/a2a", Hello(agent_id="bot", agent_type="executor"))
    await agent.send_message(SendMessageArgs(target_agent_id="alice", message_type="notification",
                                             payload={"hi": 1}))
"""

from __future__ import annotations

import asyncio

import websockets
from websockets.asyncio.client import ClientConnection

from ..protocol import Hello
from .agent import Agent


class WebSocketsTransport:
    name = "websocket"

    def __init__(self, websocket: ClientConnection, agent: Agent) -> None:
        self._websocket = websocket
        self._agent = agent
        self._outgoing: asyncio.Queue[str] = asyncio.Queue()
        self._tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._write())]

    def send(self, text: str) -> None:
        self._outgoing.put_nowait(text)

    def close(self) -> None:
        self._tasks[1].cancel()
        asyncio.ensure_future(self._websocket.close())

    async def _read(self) -> None:
        reason = "connection closed"
        try:
            async for text in self._websocket:
                self._agent.data_received(text)
        except websockets.ConnectionClosed as exc:
            reason = f"connection closed: {exc}"
        finally:
            self._tasks[1].cancel()
            self._agent.connection_lost(reason)

    async def _write(self) -> None:
        try:
            while True:
                await self._websocket.send(await self._outgoing.get())
        except websockets.ConnectionClosed:
            pass


async def connect(url: str, hello: Hello, *, welcome: bool = True, **agent_options) -> Agent:
    """Open a connection, say hello, and (by default) wait for the router's welcome."""
    agent = Agent(hello, **agent_options)
    websocket = await websockets.connect(url, max_size=None)
    agent.connection_made(WebSocketsTransport(websocket, agent))
    if welcome:
        await agent.welcomed()
    return agent
