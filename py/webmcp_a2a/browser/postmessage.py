"""The postMessage transport: an agent reaches the router through the window that hosts it.

An agent in a worker or an iframe has an *uplink* to its host page's hub
(``web/js/hub.js``), given by the JavaScript that started it: an object with
``post(json)`` and ``listen(callback)``, JSON strings both ways, over a
``MessagePort`` (worker) or ``window.postMessage`` with origin checks (iframe), or
an in-page channel (the page's own main-thread agent). See ``web/js/channel.js``.

:class:`HostUplink` is the Python end of it. :class:`PostMessageTransport` is a
transport with the same interface as
:class:`~webmcp_a2a.browser.websocket.BrowserWebSocketTransport`: the hub relays its
frames over the page's own connection to the router, so the agent's client core
does not know the difference.

No ``js`` import here: the uplink is handed in, so this runs (and is tested) under
CPython with a fake uplink too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..client.agent import TransportListener

try:  # Pyodide: a callback kept by JavaScript must be an explicit proxy
    from pyodide.ffi import create_proxy
except ImportError:  # CPython (tests): plain callables

    def create_proxy(obj: Callable[..., Any]) -> Any:  # type: ignore[misc]  # Pyodide's has another type
        return obj


class JsUplink(Protocol):
    """The JavaScript end (``Channel.uplink()`` in ``web/js/channel.js``): JSON strings both ways."""

    def post(self, text: str) -> None: ...

    def listen(self, callback: Callable[[str], None]) -> None: ...


class HostUplink:
    """This agent runtime's line to the hub of the page hosting it: hub messages by kind."""

    def __init__(self, js_uplink: JsUplink) -> None:
        self._js = js_uplink
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {}
        self._listener = create_proxy(self._received)  # lives as long as the page
        js_uplink.listen(self._listener)

    def post(self, kind: str, **fields: Any) -> None:
        self._js.post(json.dumps({"kind": kind, **fields}))

    def on(self, kind: str, handler: Callable[[dict[str, Any]], None]) -> None:
        """The one handler for messages of ``kind`` (a later call replaces it)."""
        self._handlers[kind] = handler

    def _received(self, text: str) -> None:
        message = json.loads(text)
        handler = self._handlers.get(message.get("kind"))
        if handler is not None:
            handler(message)


class PostMessageTransport:
    """Frames to and from the router, relayed by the host page (``attach``, ``frame``, ``detach``).

    Same shape as the WebSocket transport: calls ``agent.connection_made(self)`` once the
    host's relay connection is open, ``agent.data_received(text)`` per frame, and on the
    end ``agent.connection_lost(reason)`` (if it had opened) then ``on_closed(reason)``.
    """

    name = "postmessage"

    def __init__(self, uplink: HostUplink, agent: TransportListener, on_closed: Callable[[str], None]) -> None:
        self._uplink = uplink
        self._agent = agent
        self._on_closed = on_closed
        self._open = False
        self._done = False
        uplink.on("open", self._opened)
        uplink.on("frame", self._frame)
        uplink.on("closed", self._closed)
        uplink.post("attach")

    def send(self, text: str) -> None:
        if self._open:
            self._uplink.post("frame", frame=text)

    def close(self) -> None:
        """Detach; the host answers ``closed`` once the router has let the agent go."""
        if not self._done:
            self._uplink.post("detach")

    def _opened(self, message: dict[str, Any]) -> None:
        if not self._open and not self._done:
            self._open = True
            self._agent.connection_made(self)

    def _frame(self, message: dict[str, Any]) -> None:
        if self._open:
            self._agent.data_received(message["frame"])

    def _closed(self, message: dict[str, Any]) -> None:
        if self._done:
            return
        self._done = True
        reason = f"closed ({message['code']}{': ' + message['reason'] if message.get('reason') else ''})"
        if self._open:
            self._open = False
            if self._agent.transport is self:
                self._agent.connection_lost(reason)
        self._on_closed(reason)
