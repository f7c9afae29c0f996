"""The router client's protocol state, with no I/O (in the manner of ``websockets``' sans-I/O core).

Feed it the text frames the router sent with :meth:`ClientCore.receive`, collect
what happened with :meth:`ClientCore.events_received` and what to write back with
:meth:`ClientCore.data_to_send`. It never touches a socket, a thread or an event
loop, so the very same object runs under CPython (over the ``websockets``
library) and under Pyodide (over the browser's WebSocket).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..protocol import (
    MAX_ACKS_PER_FRAME,
    ROUTER_FRAME,
    Ack,
    Acks,
    BroadcastRequest,
    Deliver,
    ErrorFrame,
    ErrorInfo,
    Hello,
    ReceivedMessage,
    RequestFrame,
    Result,
    SendRequest,
    Welcome,
    sign_envelope,
    signature_valid,
)


@dataclass(frozen=True)
class Welcomed:
    """The router accepted the hello."""

    agent_id: str
    max_frame_bytes: int
    credential: str | None = field(default=None, repr=False)  # only when this hello registered the id


@dataclass(frozen=True)
class Replied:
    """The request ``ref`` succeeded."""

    ref: int
    data: dict[str, Any]


@dataclass(frozen=True)
class Failed:
    """The request ``ref`` failed, or (``ref`` None) the router rejected a frame."""

    ref: int | None
    error: ErrorInfo


@dataclass(frozen=True)
class Received:
    """A new message for this agent; answer with :meth:`ClientCore.ack` or :meth:`ClientCore.refuse`."""

    message: ReceivedMessage


Event = Welcomed | Replied | Failed | Received


class ClientCore:
    """One agent's side of the protocol: request ids, acknowledgements, de-duplication, the outbox.

    The outbox holds *durable* requests (messages) until the router answers them:
    after a reconnect they are sent again, with the same ``message_id``, once the
    router has welcomed the agent back. The router and the recipient recognise the
    resend, so a message takes effect once.
    """

    #: How many acknowledged message ids are remembered to recognise a redelivery.
    SEEN_LIMIT = 10_000

    def __init__(self, hello: Hello, *, batch_acks: bool = False) -> None:
        self.hello = hello
        # Acks of the messages taken since the last data_to_send(): one `acks` frame when batched
        # (a client that flushes once per burst of deliveries), else an `ack` frame each.
        self.batch_acks = batch_acks
        self._acks: list[str] = []
        self._next_id = 1
        self._outgoing: list[str] = []
        self._events: list[Event] = []
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._outbox: dict[int, str] = {}
        self.welcomed = False
        self.signing_key: bytes | None = None  # given by the welcome when the router signs

    @property
    def outbox_size(self) -> int:
        return len(self._outbox)

    # --- output ---------------------------------------------------------------

    def connect(self) -> None:
        """Start (or restart, after a reconnect) with the hello frame; the outbox follows the welcome."""
        self.welcomed = False
        self._outgoing = [self.hello.model_dump_json()]
        self._acks = []

    def connection_lost(self) -> None:
        self.welcomed = False
        self._outgoing = []
        self._acks = []  # the router delivers again what they were for

    def request(self, frame: RequestFrame, durable: bool = False) -> int:
        """Queue a request frame (any model with an ``id`` field); returns the id it was given.

        A durable request stays in the outbox until answered and is resent after a
        reconnect; it may be made while disconnected.
        """
        request_id = self._next_id
        self._next_id += 1
        frame.id = request_id
        if self.signing_key is not None and isinstance(frame, (SendRequest, BroadcastRequest)):
            # Signed as the router will see it: with this agent as the sender.
            frame.envelope.from_agent = self.hello.agent_id
            frame.envelope.signature = sign_envelope(frame.envelope, self.signing_key)
        text = frame.model_dump_json()
        if durable:
            self._outbox[request_id] = text
        if self.welcomed:
            self._outgoing.append(text)
        return request_id

    def in_outbox(self, request_id: int) -> bool:
        return request_id in self._outbox

    def forget(self, request_id: int) -> None:
        """Give up on a request (its caller stopped waiting)."""
        self._outbox.pop(request_id, None)

    def ack(self, message_id: str) -> None:
        self._remember(message_id)
        self._acks.append(message_id)

    def refuse(self, message_id: str, reason: str) -> None:
        self._outgoing.append(Ack(message_id=message_id, accepted=False, reason=reason).model_dump_json())

    def data_to_send(self) -> list[str]:
        frames, self._outgoing = self._outgoing, []
        if not self._acks:
            return frames
        acks, self._acks = self._acks, []
        if self.batch_acks and len(acks) > 1:
            for first in range(0, len(acks), MAX_ACKS_PER_FRAME):
                frames.append(Acks(message_ids=acks[first : first + MAX_ACKS_PER_FRAME]).model_dump_json())
        else:
            frames += [Ack(message_id=message_id).model_dump_json() for message_id in acks]
        return frames

    # --- input ------------------------------------------------------------------

    def receive(self, text: str) -> None:
        try:
            frame = ROUTER_FRAME.validate_json(text)
        except ValidationError as exc:
            self._events.append(Failed(None, ErrorInfo(code="malformed_frame", message=f"from router: {exc}")))
            return
        if isinstance(frame, Deliver):
            message_id = frame.envelope.message_id
            if self.signing_key is not None and not signature_valid(frame.envelope, self.signing_key):
                # Not what the router signed for this agent: altered on the way, or not from the router.
                self.refuse(message_id, "bad_signature")
                problem = f"refused delivery {message_id}: its signature does not check"
                self._events.append(Failed(None, ErrorInfo(code="bad_signature", message=problem)))
                return
            if message_id in self._seen:
                # A redelivery of something already taken: acknowledge again, apply nothing.
                self._acks.append(message_id)
                return
            message = ReceivedMessage(**dict(frame.envelope), subscription_id=frame.subscription_id)
            self._events.append(Received(message))
        elif isinstance(frame, Result):
            self._outbox.pop(frame.ref, None)
            self._events.append(Replied(frame.ref, frame.data))
        elif isinstance(frame, ErrorFrame):
            if frame.ref is not None:
                self._outbox.pop(frame.ref, None)
            self._events.append(Failed(frame.ref, frame.error))
        elif isinstance(frame, Welcome):
            self.signing_key = bytes.fromhex(frame.signing_key) if frame.signing_key else None
            if frame.credential is not None:
                # The id is ours now: every later hello (a reconnect) presents the credential.
                self.hello = self.hello.model_copy(update={"credential": frame.credential})
            self.welcomed = True
            self._outgoing.extend(self._outbox.values())
            self._events.append(Welcomed(frame.agent_id, frame.max_frame_bytes, frame.credential))

    def events_received(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    def _remember(self, message_id: str) -> None:
        self._seen[message_id] = None
        if len(self._seen) > self.SEEN_LIMIT:
            self._seen.popitem(last=False)
