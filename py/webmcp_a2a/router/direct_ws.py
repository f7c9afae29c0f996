"""The router's WebSocket messages without an ASGI round trip each.

uvicorn hands every received message to the app through a queue, pausing the socket's reading until
the app has taken it and resuming it after, and takes every sent message through the ASGI send chain
(Starlette's wrappers, then the protocol). For a router whose own work per message is a few tens of
microseconds, that costs more than the work. :class:`DirectWebSocketProtocol` is uvicorn's sans-I/O
WebSocket protocol plus one ASGI extension, ``scope["extensions"]["webmcp_a2a.direct"]``: the app
accepts the connection as usual (the Origin gate and every middleware have run), then attaches a
receiver (:meth:`DirectChannel.attach`). From then on each text message reaches it as soon as it is
parsed, and :meth:`DirectChannel.write_now` and :meth:`DirectChannel.send_text` write frames
straight to the socket (the latter waiting while the transport's buffer is full). Accepting,
closing, disconnecting and pings keep their ASGI path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.protocol import State

DIRECT = "webmcp_a2a.direct"
CLOSE_INTERNAL_ERROR = 1011

log = logging.getLogger("webmcp_a2a.router")


def direct_channel(scope: Any) -> DirectChannel | None:
    """The connection's direct path, when its protocol offers one."""
    channel = scope.get("extensions", {}).get(DIRECT, {}).get("channel")
    return channel if isinstance(channel, DirectChannel) else None


class DirectChannel:
    """What the app finds under ``scope["extensions"][DIRECT]["channel"]``: one connection's direct path."""

    def __init__(self, protocol: DirectWebSocketProtocol) -> None:
        self._protocol = protocol

    def attach(self, on_text: Callable[[str], None], on_binary: Callable[[], None]) -> None:
        """Take every message from now on as it is parsed. Call it right after accepting, before awaiting
        anything: then no message has been queued the ASGI way yet."""
        self._protocol.attach(on_text, on_binary)

    def write_now(self, text: str) -> bool:
        """Write one text frame if the socket takes it without waiting; False while the transport's buffer
        is over its high-water mark, or once the connection is gone."""
        protocol = self._protocol
        if not protocol.writable.is_set() or protocol.conn.state is not State.OPEN or protocol.transport.is_closing():
            return False  # full, or closing (either side's close frame), or gone
        protocol.conn.send_text(text.encode())
        protocol.transport.write(b"".join(protocol.conn.data_to_send()))
        return True

    async def send_text(self, text: str) -> None:
        """Write one text frame, waiting while the buffer is full; :class:`ClientDisconnected` once gone."""
        await self._protocol.writable.wait()
        if not self.write_now(text):
            raise ClientDisconnected()


class DirectWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's ``websockets-sansio`` protocol, offering the :data:`DIRECT` extension."""

    _receiver: tuple[Callable[[str], None], Callable[[], None]] | None = None  # on_text, on_binary

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        # The scope exists once the handshake is accepted; the app runs on a later turn of the loop.
        if getattr(self, "scope", None) is not None:
            self.scope["extensions"][DIRECT] = {"channel": DirectChannel(self)}

    def attach(self, on_text: Callable[[str], None], on_binary: Callable[[], None]) -> None:
        if not self.queue.empty():  # a message there would be overtaken by the next one
            raise RuntimeError("attach right after accepting, before the app awaits anything")
        self._receiver = (on_text, on_binary)

    def send_receive_event_to_app(self) -> None:
        if self._receiver is None:
            super().send_receive_event_to_app()
            return
        data = self.frames[0] if len(self.frames) == 1 else b"".join(self.frames)
        self.frames = []
        if self.close_sent:  # past the app's close: discarded, as uvicorn does
            return
        if self.curr_msg_data_type != "text":
            self._deliver(None)
            return
        try:
            text = data.decode()
        except UnicodeDecodeError:
            self.conn.send_close(1007)
            self.handle_parser_exception()
            return
        self._deliver(text)

    def _deliver(self, text: str | None) -> None:
        try:
            assert self._receiver is not None  # only an attached connection delivers directly
            on_text, on_binary = self._receiver
            if text is None:
                on_binary()
            else:
                on_text(text)
        except Exception:  # as an app that raised: logged, and the connection closed
            log.exception("the router failed on a message from %s", self.client)
            self.conn.send_close(CLOSE_INTERNAL_ERROR)
            self.handle_parser_exception()  # uvicorn's close after a bad frame: tells the app, closes
