"""The browser transport: an :class:`~webmcp_a2a.client.agent.Agent` over the page's WebSocket.

Frames are handled inside the socket's ``message`` callback rather than through an
``asyncio.Queue``: each asyncio wake-up costs about 100 us in Pyodide, a callback
does not (see shared/notes/pyodide.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from js import WebSocket
from pyodide.ffi import create_proxy

from ..client.agent import TransportListener

if TYPE_CHECKING:
    from js import CloseEvent, Event, MessageEvent
    from pyodide.ffi import JsCallable


class BrowserWebSocketTransport:
    name = "websocket"

    def __init__(self, url: str, agent: TransportListener, on_closed: Callable[[str], None]) -> None:
        self._agent = agent
        self._on_closed = on_closed
        self._socket = WebSocket.new(url)
        # Explicit proxies, explicitly destroyed when the socket is done with them.
        self._listeners: dict[str, JsCallable[..., None]] = {
            "open": create_proxy(self._opened),
            "message": create_proxy(self._message),
            "close": create_proxy(self._closed),
        }
        for event, listener in self._listeners.items():
            self._socket.addEventListener(event, listener)

    def send(self, text: str) -> None:
        self._socket.send(text)

    def close(self) -> None:
        self._socket.close()

    def _opened(self, event: Event) -> None:
        self._agent.connection_made(self)

    def _message(self, event: MessageEvent) -> None:
        self._agent.data_received(event.data)

    def _closed(self, event: CloseEvent) -> None:
        for name, listener in self._listeners.items():
            self._socket.removeEventListener(name, listener)
            listener.destroy()
        self._listeners.clear()
        reason = f"closed ({event.code}{': ' + event.reason if event.reason else ''})"
        if self._agent.transport is self:
            self._agent.connection_lost(reason)
        self._on_closed(reason)
