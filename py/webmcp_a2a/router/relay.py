"""Hosted agents: agents that reach the router through the connection of the window hosting them.

A worker's or an iframe's agent whose own WebSocket cannot be used (the router's URL
is blocked, the connection is refused, a sandbox forbids it) hands its frames to the
page that hosts it, and the page sends them on its own connection wrapped in a
``relay`` frame. Here each hosted agent becomes a :class:`RelayedConnection`: a
*virtual connection* with the interface the router uses on a real
:class:`~.connection.Connection` (``offer``, ``close``, ``closing``, ``agent_id``),
bound to (host connection, agent id). The router handles the inner frame exactly as
if it had come on a socket of the agent's own (``router.receive(virtual, inner)``):

* identity comes from the hosted agent's own hello, and the router stamps
  ``from_agent`` from it - a spoofed sender is rejected as on any connection;
* a host speaks only for the agents it registered through itself: a relay frame
  names the hosted agent, the first inner frame must be that agent's hello, and an
  id that is online elsewhere is refused (``agent_id_taken``) as usual;
* every limit applies to the inner frame (size, validation); the outer ``relay``
  frame is itself a frame and must fit ``max_frame_bytes`` too - so a relayed frame
  pays for its JSON escaping;
* what the router sends the hosted agent goes to the host as ``relayed`` frames,
  in the host connection's one queue (priorities and limits included);
* ``unrelay`` (the agent left, or its own WebSocket works again) and the host's
  own disconnection close the virtual connection: the agent goes offline exactly as
  if its socket had closed. The host hears ``relay_closed`` with a WebSocket-style
  close code (4009 when the id was taken, 1000 after an ``unrelay``).

A host need not be an agent itself (no hello): the page's relay socket carries only
its hosted agents' frames. Relays do not nest.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Protocol

from ..protocol import ErrorCode, ErrorFrame, ErrorInfo, Relay, RelayClosed, Relayed, Unrelay, json_too_deep
from .connection import CONTROL_PRIORITY, DropCallback, Peer
from .limits import RateLimit

log = logging.getLogger("webmcp_a2a.router.relay")

#: The client frames this module handles (the router's dispatch checks for them).
RELAY_FRAMES = (Relay, Unrelay)
#: At most this many agents hosted by one connection.
MAX_HOSTED = 64

CLOSE_DETACHED = 1000
CLOSE_HOST_GONE = 1001


class FrameReceiver(Protocol):
    """Where a hosted agent's frames go: the router, which reads them as if from a socket of its own."""

    def receive(self, conn: Peer, text: str) -> None: ...

    def connection_closed(self, conn: Peer) -> None: ...


class RelayedConnection:
    """A hosted agent as the router sees it: a connection whose frames travel inside its host's."""

    def __init__(self, table: RelayTable, host: Peer, hosted_id: str) -> None:
        self._table = table
        self.host = host
        self.hosted_id = hosted_id
        self.agent_id: str | None = None  # set by the router when the hosted agent's hello is accepted
        self.remote = host.remote
        self.internal = False
        self.rate: RateLimit | None = None  # the host's relay frames pay for the hosted agent's
        self._closed = False

    @property
    def closing(self) -> bool:
        return self._closed or self.host.closing

    def offer(
        self,
        text: str,
        priority: int = CONTROL_PRIORITY,
        expires_at: float | None = None,
        on_drop: DropCallback | None = None,
        message_id: str | None = None,
    ) -> bool:
        """Queue ``text`` for the hosted agent: a ``relayed`` frame in the host's queue (same priority rules)."""
        if self._closed:
            return False
        relayed = Relayed(agent_id=self.hosted_id, frame=text).model_dump_json()
        return self.host.offer(relayed, priority, expires_at, on_drop)

    def close(self, code: int, reason: str) -> None:
        """Let the hosted agent go: tell the host, then the router forgets it as if its socket had closed."""
        if self._closed:
            return
        self._closed = True
        self._table.forget(self)
        self.host.offer(RelayClosed(agent_id=self.hosted_id, code=code, reason=reason).model_dump_json())
        self._table.receiver.connection_closed(self)

    def __repr__(self) -> str:
        return f"<RelayedConnection {self.hosted_id} via {self.host.agent_id or 'host'}>"


class RelayTable:
    """Every hosted agent, by host connection and agent id."""

    def __init__(self, receiver: FrameReceiver) -> None:
        self.receiver = receiver
        self._hosted: dict[Peer, dict[str, RelayedConnection]] = {}

    def receive(self, host: Peer, frame: Relay | Unrelay) -> None:
        """Handle a ``relay`` or ``unrelay`` frame from ``host``."""
        if isinstance(host, RelayedConnection):
            self._error(host, "invalid_frame", "relay frames do not nest", "type")
            return
        hosted = self._hosted.get(host, {})
        virtual = hosted.get(frame.agent_id)
        if isinstance(frame, Unrelay):
            if virtual is not None:
                virtual.close(CLOSE_DETACHED, "unrelayed")
            else:  # idempotent: the host may be tidying up after a relay_closed it has not read yet
                host.offer(
                    RelayClosed(agent_id=frame.agent_id, code=CLOSE_DETACHED, reason="unrelayed").model_dump_json()
                )
            return
        if virtual is None:
            if len(hosted) >= MAX_HOSTED:
                self._error(host, "invalid_frame", f"a connection hosts at most {MAX_HOSTED} agents", "agent_id")
                return
            virtual = RelayedConnection(self, host, frame.agent_id)
            self._hosted.setdefault(host, {})[frame.agent_id] = virtual
        if virtual.agent_id is None and _is_hello(frame.frame) and not _hello_for(frame.frame, frame.agent_id):
            # A host cannot borrow an identity: the hello must be the one of the agent the relay names.
            self._error(
                virtual, "invalid_frame", f"a relay for {frame.agent_id!r} carries another agent's hello", "agent_id"
            )
        else:
            self.receiver.receive(virtual, frame.frame)
        if virtual.agent_id is None and not virtual.closing:
            self.forget(virtual)  # not registered (refused, or not a hello): nothing to keep

    def forget(self, virtual: RelayedConnection) -> None:
        hosted = self._hosted.get(virtual.host)
        if hosted is not None and hosted.get(virtual.hosted_id) is virtual:
            del hosted[virtual.hosted_id]
            if not hosted:
                del self._hosted[virtual.host]

    def host_closed(self, host: Peer) -> None:
        """The host's connection is gone: so are the agents it hosted."""
        for virtual in list(self._hosted.pop(host, {}).values()):
            virtual.close(CLOSE_HOST_GONE, "host connection closed")

    def hosted_ids(self) -> set[str]:
        """Every agent id currently hosted, by any connection."""
        return {agent_id for hosted in self._hosted.values() for agent_id in hosted}

    def _error(self, conn: Peer, code: ErrorCode, message: str, field: str | None = None) -> None:
        conn.offer(ErrorFrame(error=ErrorInfo(code=code, message=message, field=field)).model_dump_json())


def _peek(text: str) -> dict[str, Any] | None:
    if json_too_deep(text):
        return None  # the router refuses it (frame_too_deep) when it reads the frame
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _is_hello(text: str) -> bool:
    frame = _peek(text)
    return frame is not None and frame.get("type") == "hello"


def _hello_for(text: str, agent_id: str) -> bool:
    frame = _peek(text)
    return frame is not None and frame.get("type") == "hello" and frame.get("agent_id") == agent_id
