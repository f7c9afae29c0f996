"""The CPython transport: an :class:`~webmcp_a2a.client.agent.Agent` over the ``websockets`` library.

Used by tests, benchmarks, backend agents and scripts::

    agent = await connect("ws://127.0.0.1:8765/a2a", Hello(agent_id="bot", agent_type="executor"))
    await agent.send_message(SendMessageArgs(target_agent_id="alice", message_type="notification",
                                             payload={"hi": 1}))

With ``reconnect=True`` (the default) a lost connection is reopened with
exponential backoff and jitter, and the agent's outbox is resent once the router
has welcomed it back. Given several URLs (the routers of a cluster), it tries the
next one each time, so an agent whose router died joins the mesh at another.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

from ..protocol import Hello
from .agent import Agent, TaskHandler
from .backoff import Backoff

log = logging.getLogger("webmcp_a2a.client")

CLOSE_UNAUTHORIZED = 4001
CLOSE_AGENT_ID_TAKEN = 4009  # at the same router; 1013 (try again later) when at another of a cluster
_reconnectors: set[asyncio.Task[None]] = set()  # strong references, so a running loop is not collected


class WebSocketsTransport:
    """One WebSocket connection feeding one agent; ``closed`` resolves with the close code."""

    name = "websocket"

    def __init__(self, websocket: ClientConnection, agent: Agent) -> None:
        self._websocket = websocket
        self._agent = agent
        self._outgoing: asyncio.Queue[str] = asyncio.Queue()
        self._writer = asyncio.create_task(self._write())
        self.closed = asyncio.create_task(self._read())

    def send(self, text: str) -> None:
        self._outgoing.put_nowait(text)

    def close(self) -> None:
        self._closing = asyncio.ensure_future(self._finish())  # kept: a bare future may be collected

    async def _finish(self) -> None:
        """Write what is still queued (the last acks, say), then close."""
        with contextlib.suppress(websockets.ConnectionClosed):
            while not self._outgoing.empty():
                await self._websocket.send(self._outgoing.get_nowait())
        await self._websocket.close()

    async def _read(self) -> int | None:
        reason = "connection closed"
        try:
            async for text in self._websocket:
                # The router sends text frames only (a binary one would be a bug of the router's).
                self._agent.data_received(text if isinstance(text, str) else text.decode())
        except websockets.ConnectionClosed as exc:
            reason = f"connection closed: {exc}"
        finally:
            self._writer.cancel()
            if self._agent.transport is self:
                self._agent.connection_lost(reason)
        return self._websocket.close_code

    async def _write(self) -> None:
        try:
            while True:
                await self._websocket.send(await self._outgoing.get())
        except websockets.ConnectionClosed:
            pass


async def connect(
    url: str | Sequence[str],
    hello: Hello,
    *,
    reconnect: bool = True,
    credential_file: str | Path | None = None,
    on_task: TaskHandler | None = None,
    ssl_context: ssl.SSLContext | None = None,
    **agent_options: Any,
) -> Agent:
    """Open a connection, say hello, and wait for the router's welcome.

    The first welcome for an agent id carries its credential; later hellos for the id must
    present it (``hello.credential``). With ``credential_file`` the credential is read from that
    file when the hello has none, and written there (mode 0600) when the router issues one, so a
    backend agent keeps its id across restarts.

    ``on_task`` is registered before the hello, so A2A tasks that waited for this agent while it
    was away (handed over right after the welcome) reach it too. ``ssl_context``: for a ``wss://``
    router whose certificate the system's CAs do not vouch for (``serve.py --tls-cert``).
    """
    if credential_file is not None:
        credential_file = Path(credential_file)
        if hello.credential is None and credential_file.exists():
            hello = hello.model_copy(update={"credential": credential_file.read_text().strip()})
    agent_options.setdefault("batch_acks", True)  # a burst of deliveries gets one `acks` frame
    agent = Agent(hello, **agent_options)
    if on_task is not None:
        agent.on_task(on_task)
    if credential_file is not None:
        _keep_credential(agent, credential_file)
    urls = itertools.cycle([url] if isinstance(url, str) else url)
    first = await _open(next(urls), agent, ssl_context)
    if reconnect:
        task = asyncio.create_task(_stay_connected(urls, agent, first, ssl_context))
        _reconnectors.add(task)
        task.add_done_callback(_reconnectors.discard)
    await agent.welcomed()
    return agent


def _keep_credential(agent: Agent, path: Path) -> None:
    saved = agent.credential

    def save(state: str) -> None:
        nonlocal saved
        if state == "connected" and agent.credential is not None and agent.credential != saved:
            path.touch(mode=0o600)
            path.write_text(agent.credential + "\n")
            saved = agent.credential

    agent.on_state(save)


async def _open(url: str, agent: Agent, ssl_context: ssl.SSLContext | None) -> WebSocketsTransport:
    websocket = await websockets.connect(url, max_size=None, ssl=ssl_context)
    transport = WebSocketsTransport(websocket, agent)
    agent.connection_made(transport)
    return transport


async def _stay_connected(
    urls: Iterator[str], agent: Agent, transport: WebSocketsTransport, ssl_context: ssl.SSLContext | None
) -> None:
    backoff = Backoff()
    while True:
        code = await transport.closed
        if agent.closed or code in (CLOSE_AGENT_ID_TAKEN, CLOSE_UNAUTHORIZED):
            return  # the same hello would be refused again
        while not agent.closed:
            await asyncio.sleep(backoff.next_delay())
            url = next(urls)
            try:
                transport = await _open(url, agent, ssl_context)
                break
            except (OSError, websockets.WebSocketException) as exc:
                log.info("%s: reconnect failed (%s)", agent.agent_id, exc)
        else:
            return
        try:
            await agent.welcomed()
            backoff.reset()
        except Exception:  # refused: the loop sees the close and decides
            pass
