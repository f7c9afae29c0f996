"""The router's logic: read a frame, decide, queue frames for the right connections.

Nothing here awaits: every handler runs to completion and leaves frames in the
connections' queues, so one slow client never holds up the others. Waiting - for
acknowledgements, locks, barriers - is a timer, not a task; and since every delivery
waits the same ``ack_timeout``, their deadlines form one queue in time order, checked
by a single timer rather than one timer per message.

Delivery, in short: a direct message to an online agent is answered once that
agent's runtime acknowledged it (``delivered: true``) or refused it, or when
``ack_timeout`` passes (then it is kept in the store and redelivered when the agent
comes back). A direct message to a known offline agent is stored and the answer
says so (``stored: true``). Broadcasts and topic events go to who is online.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from ..protocol import (
    BROADCAST,
    CLIENT_FRAME,
    MAX_JSON_DEPTH,
    RESERVED_AGENT_IDS,
    ROUTER_AGENT_ID,
    TOPIC_PREFIX,
    Ack,
    Acks,
    BarrierRequest,
    BroadcastRequest,
    DiscoverRequest,
    DiscoverResult,
    Envelope,
    ErrorFrame,
    ErrorInfo,
    FanoutResult,
    HeartbeatRequest,
    HeartbeatResult,
    Hello,
    LockRequest,
    MeshSeen,
    SendRequest,
    SendResult,
    SubscribeRequest,
    SubscribeResult,
    TasksRequest,
    UnsubscribeRequest,
    UnsubscribeResult,
    WatchRequest,
    Welcome,
    deliver_json,
    json_too_deep,
    result_json,
    validation_error_info,
)
from .cluster import CLOSE_TRY_AGAIN, AgentIdElsewhere, Cluster, NodeLink
from .cluster.coordination import ClusterBarriers, ClusterLocks
from .connection import Peer
from .coordination import Barriers, Locks, Waiter
from .errors import RequestError
from .identity import Gate
from .limits import ErrorLog
from .registry import AgentIdTaken, AgentRecord, OutboundSender, Registry, RemoteDirectory, TaskQueue
from .relay import RELAY_FRAMES, RelayTable
from .settings import RouterSettings
from .signing import Signer
from .store import SqliteStore, Store, StoreUnavailable
from .subscriptions import SubscriptionTable, new_subscription_id
from .watchers import Watchers

log = logging.getLogger("webmcp_a2a.router")

# WebSocket close codes (4000-4999 are the application's own).
CLOSE_POLICY = 1008  # over a per-address limit
CLOSE_UNAUTHORIZED = 4001  # join token or credential missing or wrong: retrying the same hello cannot help
CLOSE_AGENT_ID_TAKEN = 4009
CLOSE_NOT_READING = 4008


@dataclass(eq=False)
class PendingDelivery:
    """A delivery waiting for its recipients' acknowledgements.

    ``sender`` is None for a redelivery from the store: nobody waits for that answer.
    """

    sender: Peer | None
    sender_id: str | None
    ref: int
    envelope: Envelope
    recipients: list[str]
    fanout: bool
    waiting: set[str]
    from_store: bool = False
    deadline: float = 0.0  # time.monotonic() past which the recipients that have not acked are late
    delivered: set[str] = field(default_factory=set)
    refusals: dict[str, str] = field(default_factory=dict)


class Router:
    def __init__(self, settings: RouterSettings | None = None) -> None:
        self.settings = settings or RouterSettings()
        settings = self.settings
        # One router keeps its memory in SQLite; a cluster of routers shares Redis (cluster/).
        self.cluster = Cluster(self, settings, self._answer) if settings.redis_url is not None else None
        self.store: Store = (
            self.cluster.store
            if self.cluster is not None
            else SqliteStore(
                settings.store_path,
                settings.store_limit_per_agent,
                settings.store_ttl,
                settings.store_bytes_per_agent,
                settings.store_bytes_total,
            )
        )
        self.gate = Gate(settings, self.store)
        self.signer = Signer(settings, self.store)
        self.connections_by_address: Counter[str] = Counter()
        self._counted: set[Peer] = set()  # connections counted in connections_by_address
        self._error_log = ErrorLog(settings.error_log_interval, log)
        self.registry = Registry()
        self.remotes: RemoteDirectory | None = None  # the registry of remote A2A agents, when served
        self.outbound: OutboundSender | None = None  # sends to remote A2A agents, when served
        self.task_queue: TaskQueue | None = None  # answers a2a_tasks, when the A2A bridge is served
        self.locks: Locks | ClusterLocks = self.cluster.locks if self.cluster is not None else Locks(self._answer)
        self.barriers: Barriers | ClusterBarriers = (
            self.cluster.barriers if self.cluster is not None else Barriers(self._answer)
        )
        # In the order they started, which is the order of their ack deadlines (one timeout for all): a
        # finished delivery leaves nothing behind, and the next deadline is the first entry's.
        self._pending: dict[str, PendingDelivery] = {}
        self._deadline_timer: asyncio.TimerHandle | None = None
        self.relays = RelayTable(self)  # agents hosted by another connection (relay.py)
        self.watchers = Watchers(settings)
        self._handlers: dict[type[BaseModel], Callable[[Peer, str, Any], None]] = {
            SendRequest: self._send,
            BroadcastRequest: self._broadcast,
            SubscribeRequest: self._subscribe,
            UnsubscribeRequest: self._unsubscribe,
            HeartbeatRequest: self._heartbeat,
            DiscoverRequest: self._discover,
            TasksRequest: self._tasks,
            LockRequest: self._lock,
            BarrierRequest: self._barrier,
            Ack: self._ack,
            Acks: self._acks,
        }
        for hello, last_seen in self.store.known_agents():
            self.registry.remember(hello, last_seen)
        self.subscriptions = SubscriptionTable.of(self.store.subscriptions())

    # --- connection lifecycle -------------------------------------------

    def connection_opened(self, conn: Peer) -> bool:
        """Count a new socket against its address's limit; False (and the connection closing) when over it."""
        if self.connections_by_address[conn.remote] >= self.settings.max_connections_per_address:
            self._error(
                conn,
                None,
                ErrorInfo(
                    code="too_many_connections",
                    message=f"{conn.remote} has {self.settings.max_connections_per_address} connections open already",
                ),
            )
            conn.close(CLOSE_POLICY, "too many connections")
            return False
        self.connections_by_address[conn.remote] += 1
        self._counted.add(conn)
        return True

    def receive(self, conn: Peer, text: str) -> None:
        """Handle one text frame from ``conn``."""
        if conn.rate is not None and (exceeded := conn.rate.admit(len(text))) is not None:
            self._error(conn, None, ErrorInfo(code="rate_limited", message=f"over this connection's {exceeded}"))
            return
        limit = self.settings.max_frame_bytes
        # A str of n characters is n to 4n bytes in UTF-8: encode only when it could matter.
        if len(text) > limit or (len(text) * 4 > limit and len(text.encode()) > limit):
            self._error(conn, None, ErrorInfo(code="frame_too_large", message=f"frame exceeds {limit} bytes"))
            return
        if json_too_deep(text):
            message = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
            self._error(conn, None, ErrorInfo(code="frame_too_deep", message=message))
            return
        try:
            frame = CLIENT_FRAME.validate_json(text)
        except ValidationError as exc:
            self._error(conn, _request_id(text), _frame_error(exc))
            return
        try:
            if isinstance(frame, Hello):
                self._hello(conn, frame)
                return
            if isinstance(frame, RELAY_FRAMES):  # a hosted agent's frame, or its detachment
                self.relays.receive(conn, frame)
                return
            agent_id = conn.agent_id
            record = self.registry.online(agent_id) if agent_id is not None else None
            if agent_id is None or record is None:
                raise RequestError("not_registered", "send a hello frame first")
            record.last_seen = time.time()
            self._handlers[type(frame)](conn, agent_id, frame)
        except RequestError as exc:
            self._error(conn, getattr(frame, "id", None), exc.info)
        except StoreUnavailable as exc:
            self._error(conn, getattr(frame, "id", None), ErrorInfo(code="store_unavailable", message=str(exc)))

    def watch(self, conn: Peer, text: str) -> bool:
        """A ``/watch`` connection's first frame: True when it now watches (the mesh as it stands is
        queued to it), False when refused (an error frame says why)."""
        try:
            request = WatchRequest.model_validate_json(text)
        except ValidationError as exc:
            self._error(conn, None, _frame_error(exc))
            return False
        refusal = self.watchers.refusal(request)
        if refusal is not None:
            self._error(conn, None, refusal)
            return False
        agents = [record.info() for record in self.registry.find(include_offline=True)]
        if self.remotes is not None:  # the remote A2A agents the router's registry knows
            agents += self.remotes.discover(None, None, True)
        self.watchers.add(conn, MeshSeen(agents=agents, topics=self.subscriptions.all_subscribers()))
        return True

    def reject_binary(self, conn: Peer) -> None:
        self._error(conn, None, ErrorInfo(code="binary_not_supported", message="frames are JSON text"))

    def connection_closed(self, conn: Peer) -> None:
        if conn in self._counted:
            self._counted.discard(conn)
            self.connections_by_address[conn.remote] -= 1
            if not self.connections_by_address[conn.remote]:
                del self.connections_by_address[conn.remote]
        self.relays.host_closed(conn)  # the agents it hosted go with it
        self.watchers.remove(conn)
        agent_id = conn.agent_id
        if agent_id is None:
            return
        record = self.registry.disconnect(agent_id, conn)
        if record is None:
            return
        log.info("agent %s disconnected", agent_id)
        try:
            self.store.remember_agent(record.hello, record.last_seen)
            if self.cluster is not None and not conn.internal:
                self.cluster.release(record)
        except StoreUnavailable as exc:  # the cluster buries this router's agents if it never hears
            log.warning("agent %s left unrecorded: %s", agent_id, exc)
        self.agent_gone(record)
        self._publish_event("peer_offline", record)

    def agent_gone(self, record: AgentRecord) -> None:
        """``record``'s agent went offline (here, or at another router of the cluster)."""
        agent_id = record.agent_id
        self.locks.agent_left(agent_id)
        self.barriers.agent_left(agent_id)
        for pending in list(self._pending.values()):
            if agent_id in pending.waiting:
                self._settle(pending, agent_id, accepted=False, reason="recipient disconnected")
        self.watchers.agent(record.info())

    # --- registration and presence -----------------------------------------

    def _hello(self, conn: Peer, hello: Hello) -> None:
        if conn.agent_id is not None:
            raise RequestError("already_registered", f"this connection is already agent {conn.agent_id!r}")
        if hello.agent_id in RESERVED_AGENT_IDS and not conn.internal:
            raise RequestError("invalid_frame", f"agent id {hello.agent_id!r} is reserved", "agent_id")
        try:
            new_id = not conn.internal and self.gate.admit(hello, conn.remote)
        except RequestError as refused:
            # Nothing is registered, stored or delivered for a refused hello.
            self._error(conn, None, refused.info)
            conn.close(CLOSE_UNAUTHORIZED, refused.info.code)
            return
        except StoreUnavailable as exc:
            self._try_again_later(conn, ErrorInfo(code="store_unavailable", message=str(exc)))
            return
        try:
            if self.cluster is not None and not conn.internal:
                local = self.registry.online(hello.agent_id)
                if local is not None and not isinstance(local.connection, NodeLink):
                    raise AgentIdTaken(hello.agent_id)
                self.cluster.claim(hello)
            record = self.registry.connect(hello, conn)
        except AgentIdElsewhere as elsewhere:
            message = f"agent id {hello.agent_id!r} is online at router {elsewhere.node}; try again later"
            self._try_again_later(conn, ErrorInfo(code="agent_id_taken", message=message, field="agent_id"))
            return
        except StoreUnavailable as exc:
            self._try_again_later(conn, ErrorInfo(code="store_unavailable", message=str(exc), field="agent_id"))
            return
        except AgentIdTaken:
            self._error(
                conn,
                None,
                ErrorInfo(
                    code="agent_id_taken",
                    message=f"agent id {hello.agent_id!r} is already online; choose another id",
                    field="agent_id",
                ),
            )
            conn.close(CLOSE_AGENT_ID_TAKEN, "agent id taken")
            return
        conn.agent_id = hello.agent_id
        try:
            credential = self.gate.issue(hello.agent_id, conn.remote) if new_id else None
            self.store.remember_agent(hello, record.last_seen)
        except StoreUnavailable as exc:  # claimed, but its credential could not be kept: let it go
            self._try_again_later(conn, ErrorInfo(code="store_unavailable", message=str(exc)))
            return
        key = self.signer.key_for(hello.agent_id)
        welcome = Welcome(
            agent_id=hello.agent_id,
            max_frame_bytes=self.settings.max_frame_bytes,
            credential=credential,
            signing_key=key.hex() if key is not None else None,
        )
        self._queue(conn, welcome.model_dump_json())
        log.info("agent %s (%s) registered", hello.agent_id, hello.agent_type)
        self.deliver_stored(record)
        self._publish_event("peer_discovered", record)
        self.watchers.agent(record.info())

    def _try_again_later(self, conn: Peer, refusal: ErrorInfo) -> None:
        """Refuse a hello for now (close code 1013): the same hello may succeed in a moment."""
        self._error(conn, None, refusal)
        conn.close(CLOSE_TRY_AGAIN, refusal.code)

    def deliver_stored(self, record: AgentRecord) -> None:
        """Deliver what the store keeps for ``record``'s agent (now online here), but what is on its way."""
        try:
            kept = self.store.waiting_for(record.agent_id)
        except StoreUnavailable as exc:  # it stays kept: the cluster delivers it when Redis is back
            log.warning("mail for %s not read: %s", record.agent_id, exc)
            return
        for envelope in kept:
            if envelope.message_id not in self._pending:
                self._deliver(None, envelope.from_agent, 0, envelope, record, from_store=True)

    def _heartbeat(self, conn: Peer, agent_id: str, request: HeartbeatRequest) -> None:
        record = self._registered(agent_id)
        busy = request.status == "busy"
        if record.busy != busy:
            record.busy = busy
            self.watchers.agent(record.info())
            if self.cluster is not None:
                self.cluster.busy(record)
        self._reply(conn, request.id, HeartbeatResult(status=record.status, server_time=time.time()))

    def _discover(self, conn: Peer, agent_id: str, request: DiscoverRequest) -> None:
        found = self.registry.find(
            request.agent_type, request.capability, request.region_overlaps, request.include_offline
        )
        agents = [record.info() for record in found]
        if self.remotes is not None and request.region_overlaps is None:  # remote agents have no region
            agents += self.remotes.discover(request.agent_type, request.capability, request.include_offline)
        self._reply(conn, request.id, DiscoverResult(agents=agents))

    def _tasks(self, conn: Peer, agent_id: str, request: TasksRequest) -> None:
        self._registered(agent_id)
        if self.task_queue is None:
            raise RequestError("internal", "this router serves no A2A tasks")
        self.task_queue.handle(Waiter(agent_id, conn, request.id), request, self._answer)

    # --- messages -------------------------------------------------------------

    def _stamp(self, conn: Peer, agent_id: str, ref: int, envelope: Envelope) -> bool:
        """Set the true sender; False when the envelope is a resend already in flight (now answered to ``ref``)."""
        speaks_for_hub = conn.internal and envelope.from_agent is not None and "@" in envelope.from_agent
        if envelope.from_agent is not None and envelope.from_agent != agent_id and not speaks_for_hub:
            raise RequestError(
                "spoofed_sender",
                f"from_agent {envelope.from_agent!r} is not this connection's agent {agent_id!r}",
                "envelope.from_agent",
            )
        in_flight = self._pending.get(envelope.message_id)
        if in_flight is not None:
            if in_flight.sender_id != agent_id:
                raise RequestError(
                    "duplicate_message_id", f"message {envelope.message_id} is already in flight", "envelope.message_id"
                )
            # The sender reconnected and resent from its outbox: answer the new request.
            in_flight.sender, in_flight.ref = conn, ref
            return False
        if not speaks_for_hub:  # the bridge delivers a federated hub's message from its true sender
            envelope.from_agent = agent_id
        if self.signer.enabled:  # nothing to look up on the hot path when the router does not sign
            target = self.registry.get(envelope.to_agent)
            self.signer.check(envelope, agent_id, recipient_requires=target is not None and target.requires_signatures)
        return True

    def _send(self, conn: Peer, agent_id: str, request: SendRequest) -> None:
        envelope = request.envelope
        if not self._stamp(conn, agent_id, request.id, envelope):
            return
        if envelope.topic is not None:
            self._fanout(conn, agent_id, request.id, envelope, self._topic_recipients(conn, agent_id, envelope))
            return
        if envelope.to_agent == BROADCAST:
            raise RequestError("invalid_frame", "use a broadcast frame to broadcast", "envelope.to_agent")
        target = self.registry.get(envelope.to_agent)
        if target is None and self.cluster is not None:  # it may have joined at another router a moment ago
            target = self.cluster.look_up(envelope.to_agent)
        if target is None and self.outbound is not None and self.outbound.handles(envelope.to_agent):
            self.outbound.send(Waiter(agent_id, conn, request.id), envelope, self._answer)
        elif target is None:
            self._reply(
                conn,
                request.id,
                SendResult(
                    delivered=False,
                    target_status="offline",
                    message_id=envelope.message_id,
                    reason=f"no agent {envelope.to_agent!r} is known to the router",
                ),
            )
        elif envelope.expired():
            self._reply(
                conn,
                request.id,
                SendResult(
                    delivered=False, target_status=target.status, message_id=envelope.message_id, reason="expired"
                ),
            )
        elif not target.online:
            self._reply(conn, request.id, self._keep(target.agent_id, envelope, "offline"))
        else:
            self._deliver(conn, agent_id, request.id, envelope, target)

    def _keep(self, recipient: str, envelope: Envelope, status: str) -> SendResult:
        """Store ``envelope`` for later delivery and say so."""
        try:
            kept = self.store.put(recipient, envelope)
        except StoreUnavailable as exc:
            reason = f"store_unavailable: {exc}"
            return SendResult(delivered=False, target_status=status, message_id=envelope.message_id, reason=reason)
        if kept:
            return SendResult(
                delivered=False,
                target_status=status,
                message_id=envelope.message_id,
                stored=True,
                reason="kept by the router until the agent takes it",
            )
        return SendResult(delivered=False, target_status=status, message_id=envelope.message_id, reason="store_full")

    def _deliver(
        self,
        sender: Peer | None,
        sender_id: str | None,
        ref: int,
        envelope: Envelope,
        target: AgentRecord,
        from_store: bool = False,
    ) -> None:
        pending = PendingDelivery(
            sender,
            sender_id,
            ref,
            envelope,
            [target.agent_id],
            fanout=False,
            waiting={target.agent_id},
            from_store=from_store,
        )
        sealed = self.signer.seal(envelope, target.agent_id)
        self._start(pending, {target.agent_id: deliver_json(sealed)})

    def _broadcast(self, conn: Peer, agent_id: str, request: BroadcastRequest) -> None:
        envelope = request.envelope
        if not self._stamp(conn, agent_id, request.id, envelope):
            return
        if envelope.to_agent != BROADCAST:
            raise RequestError("invalid_frame", "a broadcast envelope is addressed to 'broadcast'", "envelope.to_agent")
        recipients = [
            record.agent_id
            for record in self.registry.of_type(request.agent_type)
            if not (request.exclude_self and record.agent_id == agent_id) and self._may_receive(envelope, record)
        ]
        if self.signer.enabled:  # signed for each recipient
            frames = {to: deliver_json(self.signer.seal(envelope, to)) for to in recipients}
        else:  # one frame for all
            frame = deliver_json(envelope)
            frames = dict.fromkeys(recipients, frame)
        self._fanout(conn, agent_id, request.id, envelope, frames)

    def _may_receive(self, envelope: Envelope, record: AgentRecord) -> bool:
        """False when ``envelope`` is unsigned and ``record``'s agent takes signed envelopes only."""
        return envelope.signature is not None or self.signer.accepts_unsigned(record.requires_signatures)

    def _topic_recipients(self, conn: Peer, agent_id: str, envelope: Envelope) -> dict[str, str]:
        """Deliver frames for each online subscriber of the envelope's topic, the sender left out."""
        sender = self._registered(agent_id)
        region = envelope.metadata.region or sender.region
        frames: dict[str, str] = {}
        for subscription in self.subscriptions.matching(envelope.topic or "", sender.agent_type, region):
            subscriber = self.registry.online(subscription.agent_id)
            if (
                subscriber is not None
                and subscriber.agent_id != agent_id
                and subscriber.agent_id not in frames
                and self._may_receive(envelope, subscriber)
            ):
                frames[subscriber.agent_id] = deliver_json(
                    self.signer.seal(envelope, subscriber.agent_id), subscription.subscription_id
                )
        return frames

    def _fanout(self, conn: Peer, agent_id: str, ref: int, envelope: Envelope, frames: dict[str, str]) -> None:
        recipients = sorted(frames)
        if envelope.expired() or not recipients:
            self._reply(
                conn,
                ref,
                FanoutResult.of([] if envelope.expired() else recipients, 0, envelope.message_id),
            )
            return
        pending = PendingDelivery(conn, agent_id, ref, envelope, recipients, fanout=True, waiting=set(recipients))
        self._start(pending, frames)

    def _publish_event(self, event_type: str, subject: AgentRecord) -> None:
        """Deliver a router-originated event about ``subject``; nobody waits for its acknowledgements."""
        if not subject.listed:
            return
        envelope = Envelope(
            from_agent=ROUTER_AGENT_ID,
            to_agent=f"{TOPIC_PREFIX}{event_type}",
            message_type="event",
            payload=subject.info().model_dump(mode="json"),
            metadata={"region": subject.region, "capabilities": subject.capabilities},
        )
        for subscription in self.subscriptions.matching(event_type, subject.agent_type, subject.region):
            target = self.registry.online(subscription.agent_id)
            if target is not None and target.connection is not None and target.agent_id != subject.agent_id:
                target.connection.offer(
                    deliver_json(self.signer.seal(envelope, target.agent_id), subscription.subscription_id),
                    envelope.priority,
                )

    def _subscribe(self, conn: Peer, agent_id: str, request: SubscribeRequest) -> None:
        if self.subscriptions.count(agent_id) >= self.settings.max_subscriptions_per_agent:
            limit = self.settings.max_subscriptions_per_agent
            raise RequestError("too_many_subscriptions", f"an agent has at most {limit} subscriptions", "topic")
        if not self.subscriptions.has_topic(request.topic) and self.subscriptions.topics() >= self.settings.max_topics:
            raise RequestError("too_many_subscriptions", f"the router has {self.settings.max_topics} topics", "topic")
        subscription_id = new_subscription_id()
        self.store.add_subscription(subscription_id, agent_id, request.topic, request.filter)  # kept first
        subscription = self.subscriptions.add(agent_id, request.topic, request.filter, subscription_id)
        self._reply(conn, request.id, SubscribeResult(subscription_id=subscription.subscription_id))
        self.watchers.topic(request.topic, self.subscriptions.subscribers(request.topic))

    def _unsubscribe(self, conn: Peer, agent_id: str, request: UnsubscribeRequest) -> None:
        if not self.subscriptions.owns(agent_id, request.subscription_id):
            raise RequestError(
                "unknown_subscription", f"no subscription {request.subscription_id!r}", "subscription_id"
            )
        self.store.remove_subscription(request.subscription_id)  # forgotten there first
        topic = self.subscriptions.remove_by_id(request.subscription_id)
        assert topic is not None
        self._reply(conn, request.id, UnsubscribeResult(subscription_id=request.subscription_id))
        self.watchers.topic(topic, self.subscriptions.subscribers(topic))

    def _ack(self, conn: Peer, agent_id: str, ack: Ack) -> None:
        self._took(agent_id, ack.message_id, ack.accepted, ack.reason or "refused by recipient")

    def _acks(self, conn: Peer, agent_id: str, acks: Acks) -> None:
        for message_id in acks.message_ids:
            self._took(agent_id, message_id, True, "")

    def _took(self, agent_id: str, message_id: str, accepted: bool, reason: str) -> None:
        """``agent_id``'s ack of ``message_id``, for a delivery of this router's or of another's."""
        if (
            message_id in self._pending
            or self.cluster is None
            or not self.cluster.forward_ack(agent_id, message_id, accepted, reason)
        ):
            self.acknowledged(agent_id, message_id, accepted, reason)

    def acknowledged(self, agent_id: str, message_id: str, accepted: bool, reason: str) -> None:
        """``agent_id`` took (or refused) ``message_id``: from its socket here, or from its router."""
        pending = self._pending.get(message_id)
        if pending is not None and agent_id in pending.waiting:
            self._settle(pending, agent_id, accepted, reason)
        elif accepted:
            # A late ack for a message the store kept after an ack timeout: it has arrived after all.
            self.store.remove(agent_id, message_id)

    # --- deliveries ---------------------------------------------------------

    def _start(self, pending: PendingDelivery, frames: dict[str, str]) -> None:
        envelope = pending.envelope
        message_id = envelope.message_id
        self._pending.pop(message_id, None)  # a later start goes last, where its deadline belongs
        self._pending[message_id] = pending
        pending.deadline = time.monotonic() + self.settings.ack_timeout
        self.watchers.message(envelope, frames)
        for agent_id, frame in frames.items():
            target = self.registry.online(agent_id)
            link = target.connection if target is not None else None
            dropped = lambda reason, agent_id=agent_id: self._settle(pending, agent_id, False, reason)  # noqa: E731
            if link is None or not link.offer(frame, envelope.priority, envelope.expires_at, dropped, message_id):
                pending.waiting.discard(agent_id)
                pending.refusals[agent_id] = (
                    "offline" if link is None else "unreachable (connection closing)" if link.closing else "queue_full"
                )
        if not pending.waiting:
            self._finish(pending)
        elif self._deadline_timer is None:
            self._deadline_timer = asyncio.get_running_loop().call_later(
                self.settings.ack_timeout, self._check_deadlines
            )

    def _settle(self, pending: PendingDelivery, agent_id: str, accepted: bool, reason: str) -> None:
        if agent_id not in pending.waiting:
            return
        pending.waiting.discard(agent_id)
        if accepted:
            pending.delivered.add(agent_id)
        else:
            pending.refusals[agent_id] = reason
        if not pending.waiting:
            self._finish(pending)

    def _check_deadlines(self) -> None:
        now = time.monotonic()
        late = list(itertools.takewhile(lambda pending: pending.deadline <= now, self._pending.values()))
        for pending in late:
            self._ack_timeout(pending)
        self._deadline_timer = None
        if self._pending:
            first = next(iter(self._pending.values()))
            self._deadline_timer = asyncio.get_running_loop().call_later(first.deadline - now, self._check_deadlines)

    def _ack_timeout(self, pending: PendingDelivery) -> None:
        for agent_id in pending.waiting:
            pending.refusals[agent_id] = f"no acknowledgement within {self.settings.ack_timeout:g}s"
        pending.waiting.clear()
        self._finish(pending)

    def _finish(self, pending: PendingDelivery) -> None:
        if self._pending.get(pending.envelope.message_id) is pending:
            del self._pending[pending.envelope.message_id]
        message_id = pending.envelope.message_id
        result: FanoutResult | SendResult
        if pending.fanout:
            result = FanoutResult.of(pending.recipients, len(pending.delivered), message_id)
        else:
            (target,) = pending.recipients
            result = self._direct_result(pending, target)
        if pending.sender is not None:
            self._reply(pending.sender, pending.ref, result)

    def _direct_result(self, pending: PendingDelivery, target: str) -> SendResult:
        record = self.registry.get(target)
        status = record.status if record is not None else "offline"
        message_id = pending.envelope.message_id
        if target in pending.delivered:
            self.store.remove(target, message_id)  # kept earlier (after an ack timeout, or while offline)
            return SendResult(delivered=True, target_status=status, message_id=message_id)
        reason = pending.refusals[target]
        if reason.startswith("no acknowledgement") or reason == "recipient disconnected":
            # Maybe it arrived, maybe not: keep it; a redelivery is de-duplicated by the recipient.
            kept = self._keep(target, pending.envelope, "busy" if status == "online" else status)
            return kept.model_copy(update={"reason": f"{reason}; {kept.reason}"})
        if pending.from_store:
            self.store.remove(target, message_id)  # refused or expired: the recipient has spoken
        return SendResult(
            delivered=False,
            target_status="busy" if status == "online" else status,
            message_id=message_id,
            reason=reason,
        )

    # --- output -----------------------------------------------------------

    def _lock(self, conn: Peer, agent_id: str, request: LockRequest) -> None:
        self.locks.request(Waiter(agent_id, conn, request.id), request)

    def _barrier(self, conn: Peer, agent_id: str, request: BarrierRequest) -> None:
        self.barriers.arrive(Waiter(agent_id, conn, request.id), request)

    def _answer(self, waiter: Waiter, outcome: BaseModel | ErrorInfo) -> None:
        if isinstance(outcome, ErrorInfo):
            self._error(waiter.connection, waiter.ref, outcome)
        else:
            self._reply(waiter.connection, waiter.ref, outcome)

    def _registered(self, agent_id: str) -> AgentRecord:
        record = self.registry.online(agent_id)
        if record is None:
            raise RequestError("not_registered", "send a hello frame first")
        return record

    def _queue(self, conn: Peer, frame: str) -> None:
        if not conn.offer(frame) and not conn.closing:
            # A client that lets its queue fill with replies is not reading: drop it
            # rather than let it hold the router's memory.
            log.warning("closing %s: outgoing queue full", conn.agent_id)
            conn.close(CLOSE_NOT_READING, "outgoing queue full")

    def _reply(self, conn: Peer, ref: int, data: BaseModel) -> None:
        self._queue(conn, result_json(ref, data))

    def _error(self, conn: Peer, ref: int | None, info: ErrorInfo) -> None:
        self._error_log.note(conn.remote, info.code)
        self._queue(conn, ErrorFrame(ref=ref, error=info).model_dump_json())


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
