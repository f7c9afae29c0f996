"""How an agent reaches the router: its own WebSocket first, the hosting page's relay when it cannot.

:class:`RouterLink` is the agent's one transport (the :class:`~webmcp_a2a.client.agent.Agent`
sees only ``send``/``close`` and ``connection_made``/``connection_lost`` calls) and, behind it,
a policy over two real transports:

* **WebSocket first.** The agent's own connection to the router URL.
* **postMessage fallback.** When the WebSocket closes or fails to open (refused, blocked,
  sandboxed, or not open after ``open_timeout`` seconds) and the agent has a host
  (an *uplink* to its page's hub), the agent attaches to the host's relay
  (:class:`~webmcp_a2a.browser.postmessage.PostMessageTransport`) and says hello again
  there; the router sees the same agent, relayed.
* **Back to the WebSocket.** While on the fallback the WebSocket is probed with
  exponential backoff and jitter (``first_delay`` .. ``max_delay``). Once a probe opens,
  the agent detaches from the relay, waits until the host confirms that the router has
  let the relayed agent go, and only then says hello on the WebSocket - so the two
  registrations never overlap (no ``agent_id_taken`` race).
* **Refused.** ``agent_id_taken`` (close code 4009) right after a switch can be the router
  not having noticed the old connection's end yet, so it is retried; three times in a row
  means another runtime really is this agent, and the link stops.

A switch is a ``connection_lost`` then a ``connection_made`` on the same Agent: the
client core resends its hello (and its outbox) as after any reconnect.

**Local routes.** With an uplink, the hub tells the agent which agents live in the same
page (``peers``). A direct message to one of them is handed to the hub (``local-send``),
which delivers it without the router and answers with the same ``result`` frame; the
recipient's acknowledgement of a locally delivered message goes back the same way
(``local-ack``). Everything else goes to the router over the current transport.

The WebSocket transport is given as a factory, so this module needs no ``js`` and is
exercised under CPython with fakes.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from ..client.agent import Agent, Transport, TransportListener
from ..client.backoff import Backoff
from .postmessage import HostUplink, PostMessageTransport

log = logging.getLogger("webmcp_a2a.browser.fallback")

CLOSE_UNAUTHORIZED = 4001
CLOSE_AGENT_ID_TAKEN = 4009
MAX_REFUSALS = 3

# Frames come from the client core's model_dump_json: "type" is always the first key.
_ACK_PREFIX = '{"type":"ack"'
_SEND_PREFIX = '{"type":"send"'

OpenWebSocket = Callable[[str, TransportListener, Callable[[str], None]], Transport]
"""``open_websocket(url, agent, on_closed)``: the signature of BrowserWebSocketTransport."""


class _Endpoint:
    """What one transport sees as its agent: the link decides what the real agent hears."""

    def __init__(self, link: RouterLink, kind: str) -> None:
        self.link = link
        self.kind = kind
        self.handle: Transport | None = None  # the transport object, from its creation
        self.transport: Transport | None = None  # the same, once it is open

    def connection_made(self, transport: Transport) -> None:
        self.transport = transport
        self.link._opened(self, transport)

    def data_received(self, text: str) -> None:
        if self.transport is not None and self.link.current is self.transport:
            self.link.agent.data_received(text)

    def connection_lost(self, reason: str) -> None:
        pass  # the link hears of it through the transport's on_closed


class RouterLink:
    """The agent's transport: WebSocket, or the host's relay while the WebSocket cannot be used."""

    def __init__(
        self,
        agent: Agent,
        router_url: str,
        *,
        open_websocket: OpenWebSocket,
        uplink: HostUplink | None = None,
        first_delay: float = 0.5,
        max_delay: float = 10.0,
        open_timeout: float = 5.0,
        on_change: Callable[..., None] | None = None,
    ) -> None:
        self.agent = agent
        self.router_url = router_url
        # "URL,URL,...": the routers of a cluster, tried in turn, the next one after each close.
        self._router_urls = [url.strip() for url in router_url.split(",") if url.strip()] or [router_url]
        self._router_turn = 0
        self.uplink = uplink
        self.open_timeout = open_timeout
        self.current: Transport | None = None  # the transport the agent is attached to
        self.switches = 0
        self.refused: str | None = None
        self.closed = False
        self.peers: set[str] = set()
        self.local_sent = 0
        self.local_received = 0
        self._open_websocket = open_websocket
        self._on_change = on_change
        self._websocket: _Endpoint | None = None
        self._relay: _Endpoint | None = None
        self._leaving_relay = False
        self._websocket_backoff = Backoff(first_delay, max_delay)
        self._relay_backoff = Backoff(first_delay, max_delay)
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._refusals = 0
        self._last_kind: str | None = None
        self._local_incoming: set[str] = set()
        agent.on_state(self._agent_state)
        if uplink is not None:
            uplink.on("peers", lambda message: setattr(self, "peers", set(message["ids"]) - {agent.agent_id}))
            uplink.on("local-deliver", self._local_deliver)
            uplink.on("local-result", lambda message: self.agent.data_received(message["frame"]))
            uplink.on("local-miss", self._local_miss)

    # --- what the agent sees ----------------------------------------------------------------

    @property
    def name(self) -> str | None:
        """``websocket``, ``postmessage``, or None while not connected."""
        return self.current.name if self.current is not None else None

    @property
    def router_in_turn(self) -> str:
        """The router the WebSocket is on (or tries next)."""
        return self._router_urls[self._router_turn % len(self._router_urls)]

    @property
    def fallback(self) -> bool:
        return self.current is not None and self._relay is not None and self.current is self._relay.transport

    def send(self, text: str) -> None:
        if self.uplink is not None and self._routed_locally(self.uplink, text):
            return
        if self.current is not None:
            self.current.send(text)

    def close(self) -> None:
        self.closed = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for endpoint in (self._websocket, self._relay):
            if endpoint is not None and endpoint.handle is not None:
                endpoint.handle.close()

    # --- policy -----------------------------------------------------------------------------------

    def start(self) -> None:
        self._connect_websocket()

    def status(self) -> dict[str, Any]:
        return {
            "transport": self.name,
            "fallback": self.fallback,
            "switches": self.switches,
            "local_peers": sorted(self.peers),
            "local_sent": self.local_sent,
            "local_received": self.local_received,
        }

    def _connect_websocket(self) -> None:
        self._timers.pop("websocket", None)
        if self.closed or self._websocket is not None:
            return
        endpoint = _Endpoint(self, "websocket")
        self._websocket = endpoint
        try:
            endpoint.handle = self._open_websocket(
                self.router_in_turn, endpoint, lambda reason: self._websocket_closed(endpoint, reason)
            )
        except Exception as exc:  # e.g. a URL the browser will not even try
            self._websocket_closed(endpoint, f"could not open: {exc}")
            return
        if self.uplink is not None and self._relay is None and self.current is None:
            self._later("open_timeout", self.open_timeout, self._websocket_slow)

    def _websocket_slow(self) -> None:
        self._timers.pop("open_timeout", None)
        if self.current is None and self._relay is None and not self.closed:
            self._connect_relay()

    def _connect_relay(self) -> None:
        self._timers.pop("relay", None)
        if self.closed or self._relay is not None or self.uplink is None:
            return
        endpoint = _Endpoint(self, "postmessage")
        self._relay = endpoint
        endpoint.handle = PostMessageTransport(
            self.uplink, endpoint, lambda reason: self._relay_closed(endpoint, reason)
        )

    def _opened(self, endpoint: _Endpoint, transport: Transport) -> None:
        if endpoint is self._websocket:
            self._cancel("open_timeout")
            if self.current is None and not self._leaving_relay:
                self._attach(transport)
                if self._relay is not None and self._relay.handle is not None:
                    self._relay.handle.close()  # an attempt still under way is not needed any more
            elif self.fallback:
                self._leave_relay()
        elif endpoint is self._relay:
            self._relay_backoff.reset()
            if self.current is None and not (self._websocket and self._websocket.transport):
                self._attach(transport)
            else:
                transport.close()  # the WebSocket won the race: the relay is not needed

    def _attach(self, transport: Transport) -> None:
        self.current = transport
        if self._last_kind is not None and transport.name != self._last_kind:
            self.switches += 1
        self._last_kind = transport.name
        self.agent.connection_made(self)
        self._changed()

    def _detach(self, reason: str) -> None:
        if self.current is not None:
            self.current = None
            self.agent.connection_lost(reason)

    def _leave_relay(self) -> None:
        """The WebSocket works again: let go of the relay first, attach once the host confirms."""
        self._leaving_relay = True
        self._detach("leaving the postMessage fallback: the WebSocket works again")
        if self._relay is not None and self._relay.handle is not None:
            self._relay.handle.close()

    def _websocket_closed(self, endpoint: _Endpoint, reason: str) -> None:
        if endpoint is not self._websocket:
            return
        self._websocket = None
        self._router_turn += 1
        self._cancel("open_timeout")
        if endpoint.transport is not None and self.current is endpoint.transport:
            self._detach(reason)
        if self.closed or self._refused(reason):
            return
        if self.uplink is not None and self._relay is None and self.current is None and "relay" not in self._timers:
            self._connect_relay()
        delay = self._websocket_backoff.next_delay()
        self._later("websocket", delay, self._connect_websocket)
        self._changed(reason=reason, retry_in=round(delay, 2))

    def _relay_closed(self, endpoint: _Endpoint, reason: str) -> None:
        if endpoint is not self._relay:
            return
        self._relay = None
        if endpoint.transport is not None and self.current is endpoint.transport:
            self._detach(reason)
        if self._leaving_relay:
            self._leaving_relay = False
            if self._websocket is not None and self._websocket.transport is not None and self.current is None:
                self._attach(self._websocket.transport)
                return
        if self.closed or self._refused(reason):
            return
        if self.current is None and not (self._websocket and self._websocket.transport):
            delay = self._relay_backoff.next_delay()
            self._later("relay", delay, self._connect_relay)
            self._changed(reason=reason, retry_in=round(delay, 2))

    def _refused(self, reason: str) -> bool:
        if reason.startswith(f"closed ({CLOSE_AGENT_ID_TAKEN}"):
            self._refusals += 1
            if self._refusals < MAX_REFUSALS:
                return False  # maybe the router has not yet seen this agent's previous connection end
        elif not reason.startswith(f"closed ({CLOSE_UNAUTHORIZED}"):
            return False  # join token or credential refused: the same hello cannot succeed
        self.refused = reason
        self.close()
        self._changed(reason=reason)
        return True

    def _agent_state(self, state: str) -> None:
        if state == "connected":
            self._refusals = 0
            self._websocket_backoff.reset()

    # --- local routes -----------------------------------------------------------------------------

    def _routed_locally(self, uplink: HostUplink, text: str) -> bool:
        if text.startswith(_ACK_PREFIX):
            ack = json.loads(text)
            if ack["message_id"] in self._local_incoming:
                self._local_incoming.discard(ack["message_id"])
                uplink.post(
                    "local-ack", message_id=ack["message_id"], accepted=ack["accepted"], reason=ack.get("reason")
                )
                return True
        elif (
            self.peers
            and not self.agent.signs  # signed messages go through the router, which signs for the recipient
            and text.startswith(_SEND_PREFIX)
            and json.loads(text)["envelope"]["to_agent"] in self.peers
        ):
            self.local_sent += 1
            uplink.post("local-send", frame=text)
            return True
        return False

    def _local_deliver(self, message: dict[str, Any]) -> None:
        frame = message["frame"]
        self._local_incoming.add(json.loads(frame)["envelope"]["message_id"])
        self.local_received += 1
        self.agent.data_received(frame)
        self._changed()

    def _local_miss(self, message: dict[str, Any]) -> None:
        # The hub no longer hosts the recipient: the router may know where it went.
        self.local_sent -= 1
        if self.current is not None:
            self.current.send(message["frame"])

    # --- helpers ----------------------------------------------------------------------------------

    def _later(self, name: str, delay: float, callback: Callable[[], None]) -> None:
        self._cancel(name)
        self._timers[name] = asyncio.get_running_loop().call_later(delay, callback)

    def _cancel(self, name: str) -> None:
        timer = self._timers.pop(name, None)
        if timer is not None:
            timer.cancel()

    def _changed(self, **details: Any) -> None:
        if self._on_change is not None:
            try:
                self._on_change(**details)
            except Exception:
                log.exception("link change listener failed")
