"""The router's WebSocket messages without an ASGI round trip each, and connections without an app task.

uvicorn hands every received message to the app through a queue, pausing the socket's reading until
the app has taken it and resuming it after, and takes every sent message through the ASGI send chain
(Starlette's wrappers, then the protocol). For a router whose own work per message is a few tens of
microseconds, that costs more than the work. And the app's coroutine, with the frames of every
middleware it passed, lives as long as the connection: about 8 KB for each idle agent of a mesh.

:class:`DirectWebSocketProtocol` is uvicorn's sans-I/O WebSocket protocol plus one ASGI extension,
``scope["extensions"]["webmcp_a2a.direct"]``: the app accepts the connection as usual (the Origin
gate and every middleware have run), then hands it over (:meth:`DirectChannel.attach`) and returns.
From then on each text message reaches the receiver as soon as it is parsed, the connection's end
(either side's close, a lost socket, the server's shutdown) reaches ``on_closed`` once, and
:meth:`DirectChannel.write_now`, :meth:`DirectChannel.send_text` and :meth:`DirectChannel.close`
write straight to the socket (``send_text`` waiting while the transport's buffer is full; a
connection's frames after its first in a turn of the loop go together at the turn's end). Pings,
the closing handshake and the close timeout stay uvicorn's.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State

if TYPE_CHECKING:
    from uvicorn._types import ASGIReceiveEvent

DIRECT = "webmcp_a2a.direct"
# A connection's first frame in a turn of the event loop goes to the socket at once; the frames that
# follow it in the same turn wait for the turn's end and go together, in one write (or sooner, past
# this many bytes: the transport's high-water mark must still see a flood).
FLUSH_AT = 16_384
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

    def attach(
        self, on_text: Callable[[str], None], on_binary: Callable[[], None], on_closed: Callable[[], None]
    ) -> None:
        """Take every message from now on as it is parsed, and the connection's end. Call it right after
        accepting, before awaiting anything (then no message has been queued the ASGI way yet); the app
        may return then, and the connection stays open without it."""
        self._protocol.attach(on_text, on_binary, on_closed)

    def write_now(self, text: str) -> bool:
        """Take one text frame for the socket without waiting (it goes at once, or with the connection's
        other frames of this turn of the loop at its end); False while the transport's buffer is over its
        high-water mark, or once the connection is gone."""
        protocol = self._protocol
        if not protocol.writable.is_set() or protocol.conn.state is not State.OPEN or protocol.transport.is_closing():
            return False  # full, or closing (either side's close frame), or gone
        protocol.write_soon(text)
        return True

    async def send_text(self, text: str) -> None:
        """Write one text frame, waiting while the buffer is full; :class:`ClientDisconnected` once gone."""
        await self._protocol.writable.wait()
        if not self.write_now(text):
            raise ClientDisconnected()

    async def close(self, code: int, reason: str) -> None:
        """Start the closing handshake (uvicorn's, as for the app's ``websocket.close``)."""
        await self._protocol.send({"type": "websocket.close", "code": code, "reason": reason})


class _Turn:
    """The connections that wrote in this turn of an event loop; at its end, what they hold goes out.
    And the last text framed in the turn, as every connection without extensions sends it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._wrote: list[DirectWebSocketProtocol] = []
        self._framed_text: str | None = None
        self._frame = b""

    def frame(self, text: str) -> bytes:
        """``text`` as a server's text frame, no extension: framed once for all the recipients of a
        broadcast, which the router hands the same string."""
        if text is not self._framed_text:
            self._framed_text = text
            self._frame = Frame(Opcode.TEXT, text.encode()).serialize(mask=False, extensions=[])
        return self._frame

    def wrote(self, protocol: DirectWebSocketProtocol) -> None:
        if not self._wrote:
            self._loop.call_soon(self._end)  # runs before the callbacks of the next turn's reads
        self._wrote.append(protocol)

    def _end(self) -> None:
        self._framed_text, self._frame = None, b""
        wrote, self._wrote = self._wrote, []
        for protocol in wrote:
            protocol.end_turn()


_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Turn] = weakref.WeakKeyDictionary()


def _turn_of(loop: asyncio.AbstractEventLoop) -> _Turn:
    turn = _turns.get(loop)
    if turn is None:
        turn = _turns[loop] = _Turn(loop)
    return turn


class _AppGone:
    """The ASGI receive queue of a connection the app handed over: what uvicorn still puts there (the
    disconnect) has no reader, and the connection's end goes to ``on_closed`` instead."""

    def put_nowait(self, event: ASGIReceiveEvent) -> None:
        pass

    def empty(self) -> bool:
        return True


_APP_GONE = _AppGone()


class DirectWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's ``websockets-sansio`` protocol, offering the :data:`DIRECT` extension."""

    _receiver: tuple[Callable[[str], None], Callable[[], None]] | None = None  # on_text, on_binary
    _on_closed: Callable[[], None] | None = None  # told once, when the connection ends
    _turn: _Turn  # the loop's, shared by its connections (set once the handshake is accepted)
    _wrote = False  # wrote a frame in this turn of the loop
    _held = 0  # bytes of frames waiting for the end of the turn

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        # The scope exists once the handshake is accepted; the app runs on a later turn of the loop.
        if getattr(self, "scope", None) is not None:
            self.scope["extensions"][DIRECT] = {"channel": DirectChannel(self)}
            self._turn = _turn_of(self.loop)

    def attach(
        self, on_text: Callable[[str], None], on_binary: Callable[[], None], on_closed: Callable[[], None]
    ) -> None:
        if not self.queue.empty():  # a message there would be overtaken by the next one
            raise RuntimeError("attach right after accepting, before the app awaits anything")
        self._receiver = (on_text, on_binary)
        self._on_closed = on_closed
        # Nobody reads the app's queue any more (ends reach on_closed): about 2 KB an agent less.
        self.queue = cast("asyncio.Queue[ASGIReceiveEvent]", _APP_GONE)
        # The handshake is answered: its request's and response's headers (about 4 KB) are of no further
        # use, yet an agent would keep them for as long as it stays connected (the request is also a
        # local of the websockets parser's generator, so it is emptied rather than let go).
        self.request.headers.clear()
        del self.request, self.response

    def write_soon(self, text: str) -> None:
        """One text frame: at once if it is the connection's first in this turn of the loop, else with the
        turn's others at its end. A lone message waits for nothing, and each recipient of a busy mesh's
        broadcasts gets every sender's frame of a turn in two writes (system calls), not one per sender."""
        conn = self.conn
        if conn.extensions:  # permessage-deflate: each connection's compressor frames its own
            conn.send_text(text.encode())
        else:  # websockets' own send_frame, with the frame made once (callers check the state: OPEN)
            conn.writes.append(self._turn.frame(text))
        if not self._wrote:
            self._wrote = True
            self._turn.wrote(self)
            self.flush()
            return
        self._held += len(text)
        if self._held >= FLUSH_AT:
            self.flush()

    def end_turn(self) -> None:
        self._wrote = False
        if self._held:
            self.flush()

    def flush(self) -> None:
        self._held = 0
        data = self.conn.data_to_send()  # uvicorn's own writes (a close, a pong) drain it too, in order
        if data and not self.transport.is_closing():
            self.transport.write(b"".join(data))

    async def run_asgi(self) -> None:
        # uvicorn's, except that a connection the app handed over is not closed when the app returns.
        try:
            result = await self.app(self.scope, self.receive, self.send)
        except ClientDisconnected:
            pass
        except BaseException:
            self.logger.exception("Exception in ASGI application\n")
            self.send_500_response()
        else:
            if not self.handshake_complete:
                self.logger.error("ASGI callable returned without completing handshake.")
                self.send_500_response()
            elif result is not None:
                self.logger.error("ASGI callable should return None, but returned '%s'.", result)
        if self.close_timer is None and (self._on_closed is None or self.disconnected):
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        on_closed, self._on_closed = self._on_closed, None
        if on_closed is not None:
            on_closed()

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
