"""The router's logic: read a frame, decide, queue frames for the right connections.

Nothing here awaits: every handler runs to completion and leaves frames in the
connections' queues, so one slow client never holds up the others. Waiting for
acknowledgements is a timer per outstanding delivery, not a task.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field

from pydantic import ValidationError

from ..protocol import (
    BROADCAST,
    CLIENT_FRAME,
    RESERVED_AGENT_IDS,
    ROUTER_AGENT_ID,
    TOPIC_PREFIX,
    Ack,
    BroadcastRequest,
    Deliver,
    Envelope,
    ErrorFrame,
    ErrorInfo,
    FanoutResult,
    Hello,
    Result,
    SendRequest,
    SendResult,
    SubscribeRequest,
    SubscribeResult,
    UnsubscribeRequest,
    UnsubscribeResult,
    Welcome,
    validation_error_info,
)
from .connection import Connection
from .registry import AgentIdTaken, AgentRecord, Registry
from .settings import RouterSettings
from .subscriptions import SubscriptionTable

log = logging.getLogger("webmcp_a2a.router")

# WebSocket close codes (4000-4999 are the application's own).
CLOSE_AGENT_ID_TAKEN = 4009
CLOSE_NOT_READING = 4008


class RequestError(Exception):
    """A request that cannot be served; answered with an error frame carrying ``ref``."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.info = ErrorInfo(code=code, message=message, field=field)


@dataclass
class PendingDelivery:
    """A delivery waiting for its recipients' acknowledgements."""

    sender: Connection
    ref: int
    message_id: str
    recipients: list[str]
    fanout: bool
    waiting: set[str]
    delivered: set[str] = field(default_factory=set)
    refusals: dict[str, str] = field(default_factory=dict)
    timer: asyncio.TimerHandle | None = None


class Router:
    def __init__(self, settings: RouterSettings | None = None) -> None:
        self.settings = settings or RouterSettings()
        self.registry = Registry()
        self.subscriptions = SubscriptionTable()
        self._pending: dict[str, PendingDelivery] = {}

    # --- connection lifecycle -------------------------------------------

    def receive(self, conn: Connection, text: str) -> None:
        """Handle one text frame from ``conn``."""
        if len(text) > self.settings.max_frame_bytes or len(text.encode()) > self.settings.max_frame_bytes:
            self._error(conn, None, ErrorInfo(
                code="frame_too_large",
                message=f"frame exceeds {self.settings.max_frame_bytes} bytes",
            ))
            return
        try:
            frame = CLIENT_FRAME.validate_json(text)
        except ValidationError as exc:
            self._error(conn, _request_id(text), _frame_error(exc))
            return
        ref = getattr(frame, "id", None)
        try:
            if isinstance(frame, Hello):
                self._hello(conn, frame)
            elif conn.agent_id is None:
                raise RequestError("not_registered", "send a hello frame first")
            elif isinstance(frame, Ack):
                self._ack(conn, frame)
            elif isinstance(frame, SendRequest):
                self._send(conn, frame)
            elif isinstance(frame, BroadcastRequest):
                self._broadcast(conn, frame)
            elif isinstance(frame, SubscribeRequest):
                subscription = self.subscriptions.add(conn.agent_id, frame.topic, frame.filter)
                self._reply(conn, frame.id, SubscribeResult(subscription_id=subscription.subscription_id))
            elif isinstance(frame, UnsubscribeRequest):
                if not self.subscriptions.remove(conn.agent_id, frame.subscription_id):
                    raise RequestError("unknown_subscription", f"no subscription {frame.subscription_id!r}",
                                       "subscription_id")
                self._reply(conn, frame.id, UnsubscribeResult(subscription_id=frame.subscription_id))
        except RequestError as exc:
            self._error(conn, ref, exc.info)

    def reject_binary(self, conn: Connection) -> None:
        self._error(conn, None, ErrorInfo(code="binary_not_supported", message="frames are JSON text"))

    def connection_closed(self, conn: Connection) -> None:
        agent_id = conn.agent_id
        if agent_id is None:
            return
        record = self.registry.get(agent_id)
        if record is not None and record.connection is conn:
            self.registry.remove(agent_id)
            self.subscriptions.remove_agent(agent_id)
            log.info("agent %s disconnected", agent_id)
        for pending in list(self._pending.values()):
            if agent_id in pending.waiting:
                self._settle(pending, agent_id, accepted=False, reason="recipient disconnected")

    # --- handlers ---------------------------------------------------------

    def _hello(self, conn: Connection, hello: Hello) -> None:
        if conn.agent_id is not None:
            raise RequestError("already_registered", f"this connection is already agent {conn.agent_id!r}")
        if hello.agent_id in RESERVED_AGENT_IDS:
            raise RequestError("invalid_frame", f"agent id {hello.agent_id!r} is reserved", "agent_id")
        record = AgentRecord(hello.agent_id, hello.agent_type, hello.capabilities, hello.region, conn)
        try:
            self.registry.add(record)
        except AgentIdTaken:
            self._error(conn, None, ErrorInfo(
                code="agent_id_taken",
                message=f"agent id {hello.agent_id!r} is already online; choose another id",
                field="agent_id",
            ))
            conn.close(CLOSE_AGENT_ID_TAKEN, "agent id taken")
            return
        conn.agent_id = hello.agent_id
        self._queue(conn, Welcome(agent_id=hello.agent_id, max_frame_bytes=self.settings.max_frame_bytes))
        log.info("agent %s (%s) registered", hello.agent_id, hello.agent_type)
        self._publish_event(
            Envelope(
                from_agent=ROUTER_AGENT_ID,
                to_agent=f"{TOPIC_PREFIX}peer_discovered",
                message_type="event",
                payload=record.describe(),
                metadata={"region": hello.region, "capabilities": hello.capabilities},
            ),
            subject=record,
        )

    def _stamp(self, conn: Connection, envelope: Envelope) -> None:
        """The sender is whoever owns the connection, whatever the frame claims."""
        if envelope.from_agent is not None and envelope.from_agent != conn.agent_id:
            raise RequestError(
                "spoofed_sender",
                f"from_agent {envelope.from_agent!r} is not this connection's agent {conn.agent_id!r}",
                "envelope.from_agent",
            )
        if envelope.message_id in self._pending:
            raise RequestError("duplicate_message_id", f"message {envelope.message_id} is already in flight",
                               "envelope.message_id")
        envelope.from_agent = conn.agent_id

    def _send(self, conn: Connection, request: SendRequest) -> None:
        envelope = request.envelope
        self._stamp(conn, envelope)
        if envelope.topic is not None:
            self._fanout(conn, request.id, envelope, self._topic_recipients(conn, envelope))
            return
        if envelope.to_agent == BROADCAST:
            raise RequestError("invalid_frame", "use a broadcast frame to broadcast", "envelope.to_agent")
        target = self.registry.get(envelope.to_agent)
        status = "offline" if target is None else "online"
        if envelope.expired():
            self._reply(conn, request.id, SendResult(
                delivered=False, target_status=status, message_id=envelope.message_id, reason="expired"))
            return
        if target is None:
            self._reply(conn, request.id, SendResult(
                delivered=False, target_status="offline", message_id=envelope.message_id,
                reason=f"no agent {envelope.to_agent!r} is connected"))
            return
        pending = PendingDelivery(conn, request.id, envelope.message_id, [target.agent_id], fanout=False,
                                  waiting={target.agent_id})
        self._start(pending, {target.agent_id: Deliver(envelope=envelope).model_dump_json()})

    def _broadcast(self, conn: Connection, request: BroadcastRequest) -> None:
        envelope = request.envelope
        self._stamp(conn, envelope)
        if envelope.to_agent != BROADCAST:
            raise RequestError("invalid_frame", "a broadcast envelope is addressed to 'broadcast'",
                               "envelope.to_agent")
        recipients = [
            record for record in self.registry.of_type(request.agent_type)
            if not (request.exclude_self and record.agent_id == conn.agent_id)
        ]
        frame = Deliver(envelope=envelope).model_dump_json()
        self._fanout(conn, request.id, envelope, {record.agent_id: frame for record in recipients})

    def _topic_recipients(self, conn: Connection, envelope: Envelope) -> dict[str, str]:
        """Deliver frames for each subscriber of the envelope's topic, the sender left out."""
        sender = self.registry.get(conn.agent_id)
        region = envelope.metadata.region or (sender.region if sender else None)
        frames: dict[str, str] = {}
        for subscription in self.subscriptions.matching(envelope.topic, sender.agent_type if sender else None,
                                                        region):
            if subscription.agent_id != conn.agent_id and subscription.agent_id not in frames:
                frames[subscription.agent_id] = Deliver(
                    envelope=envelope, subscription_id=subscription.subscription_id).model_dump_json()
        return frames

    def _fanout(self, conn: Connection, ref: int, envelope: Envelope, frames: dict[str, str]) -> None:
        recipients = sorted(frames)
        if envelope.expired() or not recipients:
            self._reply(conn, ref, FanoutResult(recipients=[] if envelope.expired() else recipients,
                                                delivered_count=0, message_id=envelope.message_id))
            return
        pending = PendingDelivery(conn, ref, envelope.message_id, recipients, fanout=True, waiting=set(recipients))
        self._start(pending, frames)

    def _publish_event(self, envelope: Envelope, subject: AgentRecord) -> None:
        """Deliver a router-originated event; nobody waits for its acknowledgements."""
        for subscription in self.subscriptions.matching(envelope.topic, subject.agent_type, subject.region):
            target = self.registry.get(subscription.agent_id)
            if target is not None and target.agent_id != subject.agent_id:
                target.connection.offer(
                    Deliver(envelope=envelope, subscription_id=subscription.subscription_id).model_dump_json())

    def _ack(self, conn: Connection, ack: Ack) -> None:
        pending = self._pending.get(ack.message_id)
        # Acks for router events, late acks and duplicates land here and need nothing.
        if pending is not None and conn.agent_id in pending.waiting:
            self._settle(pending, conn.agent_id, ack.accepted, ack.reason or "refused by recipient")

    # --- deliveries ---------------------------------------------------------

    def _start(self, pending: PendingDelivery, frames: dict[str, str]) -> None:
        self._pending[pending.message_id] = pending
        for agent_id, frame in frames.items():
            target = self.registry.get(agent_id)
            if target is None or not target.connection.offer(frame):
                pending.waiting.discard(agent_id)
                pending.refusals[agent_id] = "offline" if target is None else "queue_full"
        if pending.waiting:
            loop = asyncio.get_running_loop()
            pending.timer = loop.call_later(self.settings.ack_timeout, self._expire, pending)
        else:
            self._finish(pending)

    def _settle(self, pending: PendingDelivery, agent_id: str, accepted: bool, reason: str) -> None:
        pending.waiting.discard(agent_id)
        if accepted:
            pending.delivered.add(agent_id)
        else:
            pending.refusals[agent_id] = reason
        if not pending.waiting:
            self._finish(pending)

    def _expire(self, pending: PendingDelivery) -> None:
        for agent_id in pending.waiting:
            pending.refusals[agent_id] = f"no acknowledgement within {self.settings.ack_timeout:g}s"
        pending.waiting.clear()
        pending.timer = None
        self._finish(pending)

    def _finish(self, pending: PendingDelivery) -> None:
        self._pending.pop(pending.message_id, None)
        if pending.timer is not None:
            pending.timer.cancel()
        if pending.fanout:
            result = FanoutResult(recipients=pending.recipients, delivered_count=len(pending.delivered),
                                  message_id=pending.message_id)
        else:
            (target,) = pending.recipients
            reason = pending.refusals.get(target)
            online = self.registry.get(target) is not None
            result = SendResult(
                delivered=target in pending.delivered,
                target_status="offline" if not online else ("online" if reason is None else "busy"),
                message_id=pending.message_id,
                reason=reason,
            )
        self._reply(pending.sender, pending.ref, result)

    # --- output -----------------------------------------------------------

    def _queue(self, conn: Connection, frame) -> None:
        if not conn.offer(frame.model_dump_json()) and not conn.closing:
            # A client that lets a thousand replies pile up is not reading: drop it
            # rather than let it hold the router's memory.
            log.warning("closing %s: outgoing queue full", conn.agent_id)
            conn.close(CLOSE_NOT_READING, "outgoing queue full")

    def _reply(self, conn: Connection, ref: int, data) -> None:
        self._queue(conn, Result(ref=ref, data=data.model_dump(mode="json")))

    def _error(self, conn: Connection, ref: int | None, info: ErrorInfo) -> None:
        self._queue(conn, ErrorFrame(ref=ref, error=info))


def _frame_error(exc: ValidationError) -> ErrorInfo:
    first = exc.errors(include_url=False)[0]
    if first["type"] in ("json_invalid", "json_type", "dict_type", "model_type"):
        return ErrorInfo(code="malformed_frame", message=f"not a JSON object: {first['msg']}")
    if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return ErrorInfo(code="invalid_frame", message=first["msg"], field="type")
    info = validation_error_info(exc)
    # Drop the union tag that pydantic puts first in every location.
    if info.field and "." in info.field:
        tag, path = info.field.split(".", 1)
        info = ErrorInfo(code=info.code, message=info.message.removeprefix(f"{tag}."), field=path)
    elif info.field:
        info = ErrorInfo(code=info.code, message=info.message, field=None)
    return info


def _request_id(text: str) -> int | None:
    """Best effort: the ``id`` of a frame that failed validation, so the client can match the error."""
    try:
        value = json.loads(text).get("id")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
