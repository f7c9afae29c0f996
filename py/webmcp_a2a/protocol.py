"""The wire protocol: one set of types for the router, the page and every client.

This module is imported unchanged by the router under CPython and by the page
under Pyodide, so it depends on nothing but pydantic and the standard library.
Everything that crosses a socket or the JavaScript/Python border is one of the
models below, serialised with ``model_dump_json`` and read back with
``model_validate_json`` (or :data:`CLIENT_FRAME` / :data:`ROUTER_FRAME`).

Vocabulary:

* An **envelope** is one message between agents. ``to_agent`` is an agent id,
  ``"broadcast"``, or ``"topic:NAME"``.
* A **frame** is one WebSocket text message. Clients send requests (each with
  an ``id``), acknowledgements and a ``hello``; the router answers with
  ``welcome``, ``result`` (``ref`` = the request's ``id``), ``error`` and
  ``deliver``.
* An **event** is an envelope published to a topic. The four event types of
  the contract are topics with well-known names; ``peer_discovered`` is
  published by the router itself.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationInfo, field_validator, model_validator

PROTOCOL_VERSION = 1

BROADCAST = "broadcast"
TOPIC_PREFIX = "topic:"
ROUTER_AGENT_ID = "router"
A2A_BRIDGE_ID = "a2a"  # the router's own agent that carries standard A2A requests into the mesh
RESERVED_AGENT_IDS = frozenset({BROADCAST, ROUTER_AGENT_ID, A2A_BRIDGE_ID})

AgentId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9_.@-]+$",
        description="An agent id: 1-128 of A-Z a-z 0-9 _ . @ -",
    ),
]
SendTarget = Annotated[
    str,
    Field(
        min_length=1,
        max_length=2048,
        pattern=r"^(?:[A-Za-z0-9_.@-]{1,128}|https?://\S+)$",
        description="An agent id of the mesh or of the router's registry, or a remote A2A agent's card or base URL",
    ),
]
AgentType = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="monitor, executor, evolver, analyzer, or any other type name",
    ),
]
TopicName = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:@-]+$")]
Capability = Annotated[str, Field(min_length=1, max_length=64)]
MessageId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]

MessageKind = Literal["task_request", "task_response", "notification", "data_share"]
"""What a sender may say with ``a2a_send_message`` and ``a2a_broadcast``."""
EnvelopeKind = Literal["task_request", "task_response", "notification", "data_share", "event"]
"""Every kind of envelope: the message kinds plus ``event`` (published to a topic)."""
EventType = Literal["region_change", "task_available", "peer_discovered", "peer_offline", "knowledge_update"]
"""Built-in topics: ``peer_discovered`` and ``peer_offline`` are published by the router, the others by agents."""
TargetStatus = Literal["online", "offline", "busy"]
TaskStateName = Literal[
    "submitted", "working", "input-required", "auth-required", "completed", "failed", "canceled", "rejected", "unknown"
]
"""An A2A task's state, as the mesh names it (``TASK_STATE_INPUT_REQUIRED`` is ``input-required``)."""
AgentStatus = Literal["online", "busy", "offline"]
Placement = Literal["main", "worker", "iframe"]
"""The page's main thread, a dedicated Web Worker, or a same-origin iframe."""
Where = Placement | Literal["backend"]
"""Where an agent lives: a page (Placement), or a process of its own."""

PRIORITY_LOW, PRIORITY_NORMAL, PRIORITY_HIGH, PRIORITY_CRITICAL = 1, 5, 8, 10
Priority = Annotated[int, Field(ge=1, le=10, description="1 low, 5 normal, 8 high, 10 critical")]


def new_message_id() -> str:
    return str(uuid.uuid4())


# Validators are built on first use, not at import: a page starts faster (the page imports every
# model; it uses a few before it is ready) and the router pays for what it uses once.
_DEFERRED = ConfigDict(defer_build=True)


class _Model(BaseModel):
    # Unknown fields are errors: a typo in a tool argument or a frame must be
    # reported, not silently ignored.
    model_config = ConfigDict(extra="forbid", **_DEFERRED)


class Region(_Model):
    """An axis-aligned rectangle in the shared 2-D space agents watch."""

    x: float
    y: float
    width: float = Field(ge=0)
    height: float = Field(ge=0)

    def overlaps(self, other: Region) -> bool:
        """True when the two rectangles share area or touch along an edge."""
        return (
            self.x <= other.x + other.width
            and other.x <= self.x + self.width
            and self.y <= other.y + other.height
            and other.y <= self.y + self.height
        )


class Metadata(_Model):
    region: Region | None = None
    capabilities: list[Capability] = Field(default_factory=list, max_length=64)
    correlation_id: str | None = Field(None, min_length=1, max_length=128)


class Envelope(_Model):
    """One message between agents, the same on every hop."""

    message_id: MessageId = Field(default_factory=new_message_id)
    timestamp: float = Field(default_factory=time.time, description="Seconds since the epoch")
    from_agent: AgentId | None = Field(
        None, description="Stamped by the router from the sender's connection; a client may omit it"
    )
    to_agent: Annotated[str, Field(min_length=1, max_length=2048)]  # an agent id, topic:NAME, or a remote URL
    message_type: EnvelopeKind
    priority: Priority = PRIORITY_NORMAL
    payload: dict[str, Any] = Field(default_factory=dict)
    metadata: Metadata = Field(default_factory=Metadata)
    expires_at: float | None = Field(None, description="Seconds since the epoch; undelivered after it")
    signature: str | None = Field(None, max_length=128)

    @property
    def topic(self) -> str | None:
        """The topic name when the envelope is addressed to ``topic:NAME``."""
        if self.to_agent.startswith(TOPIC_PREFIX):
            return self.to_agent[len(TOPIC_PREFIX) :]
        return None

    def expired(self, now: float | None = None) -> bool:
        return self.expires_at is not None and (time.time() if now is None else now) >= self.expires_at


# --- signatures -------------------------------------------------------------------
# When the router signs (``serve.py --signing``), every agent gets an HMAC-SHA256 key in its
# welcome. A sender signs each envelope it sends with its key; the router checks that signature,
# then signs the envelope again with the *recipient's* key before delivering it, so a recipient
# checks with its own key that the envelope is exactly what its sender's runtime sent and that it
# came through the router. The signature covers the canonical form below.


def canonical_envelope(envelope: Envelope) -> bytes:
    """The bytes an envelope's signature covers.

    Every field but ``signature`` (``message_id``, ``timestamp``, ``from_agent``, ``to_agent``,
    ``message_type``, ``priority``, ``payload``, ``metadata`` with ``region``, ``capabilities``
    and ``correlation_id``, ``expires_at``), as pydantic's JSON mode dumps them, written as JSON
    with the keys of every object (``payload`` included, at any depth) sorted, no whitespace,
    non-ASCII characters as themselves, encoded in UTF-8. Numbers are written as Python's ``json``
    module writes them (the router and the page both run Python).
    """
    # Envelope's own fields only: a ReceivedMessage (an Envelope and then some) checks the same.
    fields = envelope.model_dump(mode="json", include=_SIGNED_FIELDS)
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


_SIGNED_FIELDS = set(Envelope.model_fields) - {"signature"}


def sign_envelope(envelope: Envelope, key: bytes) -> str:
    """HMAC-SHA256 of :func:`canonical_envelope` under ``key``, in hex."""
    return hmac.new(key, canonical_envelope(envelope), hashlib.sha256).hexdigest()


def signature_valid(envelope: Envelope, key: bytes) -> bool:
    """True when ``envelope.signature`` is :func:`sign_envelope` of it under ``key``."""
    return envelope.signature is not None and hmac.compare_digest(envelope.signature, sign_envelope(envelope, key))


class SubscriptionFilter(_Model):
    """Narrows a subscription: every given field must match the event."""

    region: Region | None = Field(None, description="Only events whose region overlaps this one")
    agent_type: AgentType | None = Field(None, description="Only events about or from agents of this type")


# --- errors ---------------------------------------------------------------

ErrorCode = Literal[
    "malformed_frame",  # not JSON, or not a JSON object
    "invalid_frame",  # JSON, but not a valid frame; `field` names the path
    "frame_too_large",
    "binary_not_supported",
    "not_registered",  # a request before a successful hello
    "already_registered",
    "agent_id_taken",
    "spoofed_sender",
    "duplicate_message_id",
    "unknown_subscription",
    "expired",
    "not_lock_holder",
    "barrier_mismatch",
    "barrier_timeout",
    "invalid_arguments",  # a tool call whose arguments do not validate
    "not_connected",
    "internal",
    # security (SECURITY.md): who may join, and the limits every connection lives within
    "join_token_required",  # the router has a join token and the hello carries none
    "bad_join_token",
    "credential_required",  # the agent id belongs to whoever registered it first
    "bad_credential",
    "frame_too_deep",  # JSON nested deeper than MAX_JSON_DEPTH
    "rate_limited",  # past the connection's frames or bytes per second
    "too_many_connections",  # from one remote address
    "too_many_agents",  # new agent ids from one address, or known agents in total
    "too_many_subscriptions",  # of one agent, or topics in total
    "signature_required",
    "watch_token_required",  # watching the mesh (/watch) when the router has tokens
    "bad_watch_token",
    "bad_signature",
    # remote A2A agents (a target given by URL or registered in /registry)
    "remote_unreachable",  # its card or its endpoint could not be reached
    "remote_invalid",  # what it serves as a card is not a usable Agent Card
    "remote_refused",  # it refused us (HTTP 401/403, or an A2A error answer)
    "task_not_found",  # a2a_tasks: no such task of this agent's
    "task_not_cancelable",  # a2a_tasks: over already, or inbound (answer it with a2a_reply instead)
    "task_closed",  # a2a_tasks reply: the task is over, or is not one given to this agent
    # a cluster of routers (router/cluster/)
    "store_unavailable",  # the cluster's Redis is unreachable: nothing can be kept now; try again later
]


class ErrorInfo(_Model):
    code: ErrorCode
    message: str
    field: str | None = Field(None, description="Dotted path of the offending field, when there is one")


# --- arguments shared by tools and request frames ---------------------------------
# A request frame is its tool's arguments plus a type and an id: one model, one schema.


class DiscoverArgs(_Model):
    """Arguments of ``a2a_discover``; every given field must match."""

    agent_type: AgentType | None = Field(None, description="Only agents of this type")
    capability: Capability | None = Field(None, description="Only agents that declared this capability")
    region_overlaps: Region | None = Field(None, description="Only agents whose region overlaps this one")
    include_offline: bool = Field(False, description="Also list agents seen before that are offline now")


ReplyState = Literal["working", "input-required", "completed", "failed", "rejected"]


class TaskAnswer(_Model):
    """What an agent answers an A2A task given to it: a status update, an artifact, or the outcome."""

    state: ReplyState = Field("completed", description="working and input-required keep the task open")
    text: str | None = Field(None, description="A text part")
    data: dict[str, Any] | None = Field(None, description="A data part: any JSON object")
    artifact_name: str | None = Field(
        None, min_length=1, max_length=128, description="When given, the parts become an artifact of this name"
    )


class TasksArgs(_Model):
    """Arguments of ``a2a_tasks``: this agent's A2A tasks, those given to it (inbound) and those it gave
    remote agents (outbound)."""

    action: Literal["list", "get", "cancel", "reply"] = Field(
        "list",
        description="list tasks; get one with its history and artifacts; cancel an outbound one; reply to an "
        "inbound one with answer (as a2a_reply does)",
    )
    task_id: str | None = Field(
        None, min_length=1, max_length=128, validate_default=True, description="The task, for get, cancel and reply"
    )
    answer: TaskAnswer | None = Field(None, description="reply: the answer (default: completed, with no parts)")
    direction: Literal["inbound", "outbound", "all"] = Field("all", description="Which tasks to list")
    state: TaskStateName | None = Field(None, description="Only tasks in this state")
    context_id: str | None = Field(None, min_length=1, max_length=128, description="Only tasks of this conversation")
    limit: int = Field(50, ge=1, le=100, description="List at most this many, most recently updated first")

    @field_validator("task_id")
    @classmethod
    def _needs_task(cls, task_id: str | None, info: ValidationInfo) -> str | None:
        action = info.data.get("action", "list")
        if action != "list" and task_id is None:
            raise ValueError(f"required to {action} a task")
        return task_id


class LockArgs(_Model):
    """Arguments of ``a2a_lock``."""

    name: TopicName = Field(description="The lock's name; agents that use the same name exclude each other")
    action: Literal["acquire", "release"] = "acquire"
    wait_seconds: float = Field(10, ge=0, le=300, description="How long to wait for the lock when it is held")
    lease_seconds: float = Field(30, gt=0, le=3600, description="The lock is released by itself after this")


class BarrierArgs(_Model):
    """Arguments of ``a2a_barrier``."""

    name: TopicName = Field(description="The barrier's name")
    expected_agents: list[AgentId] | None = Field(
        None, min_length=1, max_length=1000, description="Wait for exactly these agents (this one included)"
    )
    count: int | None = Field(None, ge=1, le=1000, description="Or: wait for this many agents")
    timeout_seconds: float = Field(30, gt=0, le=600, description="Give up after this long, naming who never came")

    @model_validator(mode="after")
    def _one_rule(self) -> BarrierArgs:
        _exactly_one(self, "expected_agents", "count")
        return self


def _exactly_one(model: BaseModel, first: str, second: str) -> None:
    if (getattr(model, first) is None) == (getattr(model, second) is None):
        raise ValueError(f"give exactly one of {first} and {second}")


# --- client -> router frames ------------------------------------------------


Secret = Annotated[str, Field(min_length=1, max_length=256)]


class Hello(_Model):
    """First frame on a connection: who this agent is. Answered by ``welcome``.

    An agent id belongs to whoever registered it first: the first ``welcome`` for an id carries
    a ``credential``, and every later hello for that id must present it.
    """

    type: Literal["hello"] = "hello"
    protocol: int = PROTOCOL_VERSION
    agent_id: AgentId
    agent_type: AgentType
    capabilities: list[Capability] = Field(default_factory=list, max_length=64)
    region: Region | None = None
    credential: Secret | None = Field(
        None, repr=False, description="The secret the first welcome for this agent id carried"
    )
    join_token: Secret | None = Field(None, repr=False, description="The router's join token, when it requires one")
    require_signatures: bool = Field(False, description="Refuse messages to this agent that its sender did not sign")
    where: Where = Field("backend", description="Where the agent lives (shown to those who watch the mesh)")


class SendRequest(_Model):
    """Deliver an envelope to one agent or to a topic's subscribers."""

    type: Literal["send"] = "send"
    id: int
    envelope: Envelope


class BroadcastRequest(_Model):
    type: Literal["broadcast"] = "broadcast"
    id: int
    envelope: Envelope
    agent_type: AgentType = "all"
    exclude_self: bool = True


class SubscribeRequest(_Model):
    type: Literal["subscribe"] = "subscribe"
    id: int
    topic: TopicName
    filter: SubscriptionFilter | None = None


class UnsubscribeRequest(_Model):
    type: Literal["unsubscribe"] = "unsubscribe"
    id: int
    subscription_id: str


class HeartbeatRequest(_Model):
    """Proof of life, and the agent's own word on whether it is busy."""

    type: Literal["heartbeat"] = "heartbeat"
    id: int
    status: Literal["online", "busy"] = "online"


class DiscoverRequest(DiscoverArgs):
    type: Literal["discover"] = "discover"
    id: int


class TasksRequest(TasksArgs):
    type: Literal["tasks"] = "tasks"
    id: int


class LockRequest(LockArgs):
    type: Literal["lock"] = "lock"
    id: int


class BarrierRequest(BarrierArgs):
    type: Literal["barrier"] = "barrier"
    id: int


class Ack(_Model):
    """The recipient's runtime has the message (``accepted``) or refuses it."""

    type: Literal["ack"] = "ack"
    message_id: MessageId
    accepted: bool = True
    reason: str | None = None


MAX_ACKS_PER_FRAME = 1000


class Acks(_Model):
    """The recipient's runtime has all these messages: one frame for what arrived together.

    A client under load takes deliveries faster than it writes; it may answer everything it took
    since it last wrote with one frame instead of an :class:`Ack` each (refusals stay single
    acks, with their reason). The router settles each as if acked alone.
    """

    type: Literal["acks"] = "acks"
    message_ids: list[MessageId] = Field(min_length=1, max_length=MAX_ACKS_PER_FRAME)


# --- relay: agents that reach the router through the window hosting them ------
# A worker's or an iframe's agent whose own WebSocket cannot be used hands its frames
# to the page that hosts it; the page relays them over its own connection. The router
# (router/relay.py) reads each inner frame exactly as if it had come on a connection of
# the hosted agent's own, so identity still comes from that agent's hello.


class Relay(_Model):
    """A hosted agent's frame (its JSON text, unchanged), sent by the connection of its host."""

    type: Literal["relay"] = "relay"
    agent_id: AgentId = Field(description="The hosted agent; its inner hello must name the same id")
    frame: str


class Unrelay(_Model):
    """The hosted agent left, or has a connection of its own again: let it go (answered by relay_closed)."""

    type: Literal["unrelay"] = "unrelay"
    agent_id: AgentId


class Relayed(_Model):
    """A router frame for a hosted agent, sent to the connection that hosts it."""

    type: Literal["relayed"] = "relayed"
    agent_id: AgentId
    frame: str


class RelayClosed(_Model):
    """The router let a hosted agent go, as if its own connection had closed with ``code``."""

    type: Literal["relay_closed"] = "relay_closed"
    agent_id: AgentId
    code: int
    reason: str


RequestFrame = (
    SendRequest
    | BroadcastRequest
    | SubscribeRequest
    | UnsubscribeRequest
    | HeartbeatRequest
    | DiscoverRequest
    | TasksRequest
    | LockRequest
    | BarrierRequest
)
"""The client frames that carry an ``id`` and are answered with ``result`` or ``error``."""

ClientFrame = Annotated[
    Hello | RequestFrame | Ack | Acks | Relay | Unrelay,
    Field(discriminator="type"),
]
CLIENT_FRAME: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame, config=_DEFERRED)


# --- router -> client frames ------------------------------------------------


class Welcome(_Model):
    type: Literal["welcome"] = "welcome"
    protocol: int = PROTOCOL_VERSION
    agent_id: AgentId
    max_frame_bytes: int
    signing_key: Secret | None = Field(
        None, repr=False, description="When the router signs: this agent's HMAC-SHA256 key, in hex"
    )
    credential: Secret | None = Field(
        None, repr=False, description="Only when this hello registered the agent id: present it to reconnect as this id"
    )


class Deliver(_Model):
    """An envelope for this agent; the runtime answers with an ``ack``."""

    type: Literal["deliver"] = "deliver"
    envelope: Envelope
    subscription_id: str | None = None


class Result(_Model):
    """The answer to the request whose ``id`` is ``ref``."""

    type: Literal["result"] = "result"
    ref: int
    data: dict[str, Any]


class ErrorFrame(_Model):
    """A request failed (``ref`` set) or a frame could not be read (``ref`` null)."""

    type: Literal["error"] = "error"
    ref: int | None = None
    error: ErrorInfo


def deliver_json(envelope: Envelope, subscription_id: str | None = None) -> str:
    """The text of ``Deliver(envelope=envelope, subscription_id=subscription_id)``, built around the
    envelope's own JSON: the router writes one per recipient, and the frame's model would only wrap it."""
    subscription = "null" if subscription_id is None else json.dumps(subscription_id, ensure_ascii=False)
    return f'{{"type":"deliver","envelope":{envelope.model_dump_json()},"subscription_id":{subscription}}}'


def result_json(ref: int, data: BaseModel) -> str:
    """The text of ``Result(ref=ref, data=data.model_dump(mode="json"))``, without the dict in between:
    the router answers every request with one."""
    return f'{{"type":"result","ref":{int(ref)},"data":{data.model_dump_json()}}}'


RouterFrame = Annotated[Welcome | Deliver | Result | ErrorFrame | Relayed | RelayClosed, Field(discriminator="type")]
ROUTER_FRAME: TypeAdapter[RouterFrame] = TypeAdapter(RouterFrame, config=_DEFERRED)


# --- results carried in `result.data`, also the tools' structured output ----


class SendResult(_Model):
    delivered: bool = Field(description="True only when the recipient's runtime acknowledged the message")
    target_status: TargetStatus
    message_id: MessageId
    reason: str | None = Field(None, description="Why it was not delivered, when it was not")
    stored: bool = Field(
        False, description="Not delivered yet, but kept by the router and delivered when the agent is back"
    )
    remote_task_id: str | None = Field(None, description="To a remote A2A agent: the id of the task it started")
    context_id: str | None = Field(None, description="To a remote A2A agent: the conversation's context id")


class FanoutResult(_Model):
    """Outcome of a broadcast or a topic publication: counts, as the tool contract says, and the ids."""

    recipients: int = Field(description="How many agents it was addressed to")
    delivered_count: int = Field(description="How many of them acknowledged it")
    message_id: MessageId
    recipient_ids: list[AgentId] = Field(description="Who they were")

    @classmethod
    def of(cls, recipient_ids: list[str], delivered_count: int, message_id: str) -> FanoutResult:
        return cls(
            recipients=len(recipient_ids),
            delivered_count=delivered_count,
            message_id=message_id,
            recipient_ids=recipient_ids,
        )


class SubscribeResult(_Model):
    subscription_id: str
    status: Literal["active"] = "active"


class UnsubscribeResult(_Model):
    subscription_id: str
    status: Literal["removed"] = "removed"


class AgentInfo(_Model):
    agent_id: AgentId
    agent_type: AgentType
    capabilities: list[Capability]
    region: Region | None
    status: AgentStatus
    last_seen: float = Field(description="Seconds since the epoch of the agent's last frame (remote: last check)")
    remote: bool = Field(False, description="A remote A2A agent from the router's registry, not in the mesh")
    url: str | None = Field(None, description="A remote agent's card URL")
    where: Where | None = Field(None, description="Where an agent of the mesh lives (what its hello said)")


class DiscoverResult(_Model):
    agents: list[AgentInfo]


# --- watching the mesh (the /watch WebSocket): who is there, and what goes where -----------


class WatchRequest(_Model):
    """The first frame on ``/watch``: ask to see the mesh's agents, topics and messages' routes
    (never a payload). Answered by ``mesh``, then ``agent``, ``topic`` and ``message`` frames."""

    type: Literal["watch"] = "watch"
    token: Secret | None = Field(None, repr=False, description="The router's watch token, when it has one")


class MeshSeen(_Model):
    """The mesh as it stands: its agents (online, and those seen before) and each topic's subscribers."""

    type: Literal["mesh"] = "mesh"
    agents: list[AgentInfo]
    topics: dict[str, list[AgentId]]


class AgentSeen(_Model):
    """An agent came, went, or changed status."""

    type: Literal["agent"] = "agent"
    agent: AgentInfo


class TopicSeen(_Model):
    """A topic's subscribers changed."""

    type: Literal["topic"] = "topic"
    topic: str
    subscribers: list[AgentId]


class MessageSeen(_Model):
    """A message on its way: who sent it, to whom it goes (a topic's, a broadcast's recipients)."""

    type: Literal["message"] = "message"
    message_id: MessageId
    from_agent: AgentId | None
    to_agent: str = Field(description="An agent id, 'broadcast', or 'topic:NAME'")
    recipients: list[AgentId]
    message_type: EnvelopeKind
    correlation_id: str | None
    priority: Priority
    at: float = Field(description="Seconds since the epoch when the router sent it on")


WatchedFrame = Annotated[MeshSeen | AgentSeen | TopicSeen | MessageSeen | ErrorFrame, Field(discriminator="type")]
WATCHED_FRAME: TypeAdapter[WatchedFrame] = TypeAdapter(WatchedFrame, config=_DEFERRED)


class TaskPart(_Model):
    """Text and data of one message or artifact of a task."""

    role: Literal["user", "agent", "artifact"]
    name: str | None = Field(None, description="An artifact's name")
    text: str | None = None
    data: list[dict[str, Any]] = Field(default_factory=list)


class TaskInfo(_Model):
    task_id: str
    context_id: str
    direction: Literal["inbound", "outbound"]
    peer: str | None = Field(None, description="Outbound: the remote agent (registry id or URL)")
    state: TaskStateName
    updated_at: float | None = Field(None, description="Seconds since the epoch of the last status change")
    status_text: str | None = Field(None, description="The text of the current status message")
    artifacts: list[TaskPart] = Field(default_factory=list)
    history: list[TaskPart] = Field(default_factory=list, description="get only: the messages of the task")


class TasksResult(_Model):
    tasks: list[TaskInfo]


class HeartbeatResult(_Model):
    status: AgentStatus
    server_time: float


class LockResult(_Model):
    name: str
    status: Literal["acquired", "released", "timeout"]
    holder: AgentId | None = Field(None, description="Who holds the lock now")
    lease_expires_at: float | None = None
    waiters: int = Field(0, description="Agents waiting for the lock")


class BarrierResult(_Model):
    name: str
    status: Literal["released"] = "released"
    arrived: list[AgentId]


class ReceivedMessage(Envelope):
    """An envelope as it sits in an agent's inbox."""

    subscription_id: str | None = None
    received_at: float = Field(default_factory=time.time)


MAX_JSON_DEPTH = 64
"""Arrays and objects nest at most this deep in a frame: deeper ones are refused before any parser
recurses into them (a recursive parser would run out of stack on ``[[[[...`` long before 64 KB)."""

_JSON_STRUCTURE = re.compile(r'[\[\]{}"\\]')


def json_too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON ``text`` nests arrays and objects deeper than ``limit``.

    A linear scan that parses nothing (brackets inside strings do not count), so it is safe on
    any input; frames with fewer brackets than ``limit`` are not scanned at all.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    in_string = False
    escaped_at = -1  # the position a backslash in a string escapes
    for match in _JSON_STRUCTURE.finditer(text):
        char, at = match.group(), match.start()
        if in_string:
            if at == escaped_at:
                continue
            if char == "\\":
                escaped_at = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def validation_error_info(exc: Exception, code: ErrorCode = "invalid_frame") -> ErrorInfo:
    """Turn a pydantic ``ValidationError`` into an :class:`ErrorInfo` naming the first bad field."""
    errors = exc.errors(include_url=False) if hasattr(exc, "errors") else []
    if not errors:
        return ErrorInfo(code=code, message=str(exc))
    first = errors[0]
    path = ".".join(str(part) for part in first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ErrorInfo(code=code, message=f"{path or 'value'}: {first['msg']}{more}", field=path or None)


# --- tool arguments and results (the WebMCP contract) ------------------------
# The tools' input schemas are generated from these models; nothing is written twice.


class SendMessageArgs(_Model):
    """Arguments of ``a2a_send_message``."""

    target_agent_id: SendTarget = Field(
        description="Id of the agent that should receive the message; or a remote A2A agent: its id in the "
        "router's registry, or the URL of its card (or its base URL). To a remote agent, payload 'text' and "
        "'data' become the A2A message's parts ('context_id' and 'task_id' continue a conversation); its task's "
        "updates and answer arrive in the inbox as task_response messages with payload 'a2a_remote'"
    )
    message_type: MessageKind = Field(description="What kind of message this is")
    payload: dict[str, Any] = Field(description="The message body: any JSON object")
    correlation_id: str | None = Field(
        None, min_length=1, max_length=128, description="Ties a task_response to its task_request"
    )
    priority: Priority = PRIORITY_NORMAL
    ttl_seconds: float | None = Field(
        None,
        gt=0,
        le=86400,
        description="Drop the message if it is not delivered within this many seconds. To a remote A2A agent: "
        "the time its task has; still open then, it is cancelled there and its last update says so",
    )


class BroadcastArgs(_Model):
    """Arguments of ``a2a_broadcast``."""

    agent_type: AgentType = Field(
        "all", description="Deliver to agents of this type (monitor, executor, evolver, analyzer, ...) or 'all'"
    )
    message_type: MessageKind
    payload: dict[str, Any] = Field(description="The message body: any JSON object")
    exclude_self: bool = Field(True, description="Leave the sending agent out")
    priority: Priority = PRIORITY_NORMAL


class SubscribeArgs(_Model):
    """Arguments of ``a2a_subscribe``: an event type or a topic."""

    event_type: EventType | None = Field(None, description="Which events to receive in the inbox")
    topic: TopicName | None = Field(None, description="Or: a topic name, as published with a2a_publish")
    filter: SubscriptionFilter | None = Field(None, description="Only matching events; omit for all")

    @model_validator(mode="after")
    def _one_source(self) -> SubscribeArgs:
        _exactly_one(self, "event_type", "topic")
        return self

    @property
    def target(self) -> str:
        """The event type or topic name (the validator makes sure exactly one is given)."""
        target = self.event_type or self.topic
        assert target is not None
        return target


class PublishArgs(_Model):
    """Arguments of ``a2a_publish``."""

    event_type: Literal["region_change", "task_available", "knowledge_update"] | None = Field(
        None, description="An event type subscribers can ask for"
    )
    topic: TopicName | None = Field(None, description="Or: any topic name")
    payload: dict[str, Any] = Field(default_factory=dict, description="The event's data: any JSON object")
    region: Region | None = Field(None, description="Where the event happened, for region filters")

    @model_validator(mode="after")
    def _one_target(self) -> PublishArgs:
        _exactly_one(self, "event_type", "topic")
        return self

    @property
    def target(self) -> str:
        """The event type or topic name (the validator makes sure exactly one is given)."""
        target = self.event_type or self.topic
        assert target is not None
        return target


class UnsubscribeArgs(_Model):
    subscription_id: str = Field(min_length=1, max_length=64)


INBOX_MAX_WAIT_SECONDS = 60
INBOX_MAX_TAKE = 1000


class InboxArgs(_Model):
    """Arguments of ``a2a_inbox``."""

    wait_seconds: float = Field(
        0,
        ge=0,
        le=INBOX_MAX_WAIT_SECONDS,
        description="When the inbox is empty, wait up to this long for something to arrive",
    )
    max_messages: int = Field(50, ge=1, le=INBOX_MAX_TAKE, description="Return at most this many, oldest first")
    correlation_id: str | None = Field(None, description="Only messages with this correlation_id")


class InboxResult(_Model):
    messages: list[ReceivedMessage]
    remaining: int = Field(description="Messages still in the inbox after this call")


class RequestArgs(_Model):
    """Arguments of ``a2a_request``: send a task_request and wait for its task_response."""

    target_agent_id: AgentId = Field(description="The agent that should do the task")
    payload: dict[str, Any] = Field(description="The task: any JSON object")
    timeout_seconds: float = Field(30, gt=0, le=300, description="How long to wait for the answer")
    priority: Priority = PRIORITY_NORMAL


TaskStatus = Literal["pending", "in_progress", "completed", "failed", "timed_out"]


class TaskOutcome(_Model):
    """Where a request stands: pending (not delivered yet), in_progress (delivered, no answer yet),
    completed or failed (the answer's payload says ``"status": "failed"``), or timed_out."""

    correlation_id: str
    status: TaskStatus
    request_message_id: MessageId
    response: dict[str, Any] | None = Field(None, description="The task_response's payload")
    responder: AgentId | None = None
    detail: str | None = None


# --- where an agent lives and how it reaches the router -----------------------

TransportName = Literal["websocket", "postmessage"]


class StatusArgs(_Model):
    """Arguments of ``a2a_status``: none."""


class LinkStatus(_Model):
    """Where an agent lives and how it reaches the router right now (the result of ``a2a_status``)."""

    agent_id: AgentId
    agent_type: AgentType
    where: Placement
    state: str = Field(description="connecting, connected, disconnected, reconnecting or refused")
    transport: TransportName | None = Field(
        description="websocket: its own connection; postmessage: relayed by the window hosting it"
    )
    fallback: bool = Field(description="True while the agent is on the postMessage fallback")
    router_url: str
    switches: int = Field(description="How many times the agent changed transport")
    local_peers: list[AgentId] = Field(description="Agents in the same page, reached without the router")
    local_sent: int
    local_received: int


# --- standard A2A tasks, as they cross the mesh -------------------------------------------
# An A2A client's message to agent X (POST /agents/X) reaches X as a task_request envelope whose
# payload is {"a2a_task": A2ATask}; X answers with task_response envelopes (same correlation_id,
# the task id) whose payload is {"a2a_reply": A2AReply}: status updates, artifacts, the outcome.
# When the client cancels, X gets a notification whose payload is {"a2a_cancel": {"task_id": ...}}.

A2A_TASK_KEY = "a2a_task"
A2A_REPLY_KEY = "a2a_reply"
A2A_CANCEL_KEY = "a2a_cancel"  # a notification's payload: {"a2a_cancel": {"task_id": ...}}: the client cancelled


class A2ATask(_Model):
    """An inbound A2A message for an agent of the mesh: which task, which conversation, what it says."""

    task_id: str = Field(min_length=1, max_length=128)
    context_id: str = Field(min_length=1, max_length=128)
    text: str = Field("", description="The message's text parts, joined")
    data: list[dict[str, Any]] = Field(default_factory=list, description="The message's data parts")


class A2AReply(TaskAnswer):
    """An agent's answer to an A2A task: a status update, an artifact, or the outcome."""

    task_id: str = Field(min_length=1, max_length=128, description="The task being answered")


# --- remote A2A agents, reached from the mesh -----------------------------------------------
# a2a_send_message to a remote agent (a URL, or an id of the router's registry) starts an A2A task
# there; the router answers the send with the task's id, then every update of the task reaches the
# sender as a task_response envelope from the router's "a2a" agent (correlation_id: the task id)
# whose payload is {"a2a_remote": A2ARemoteUpdate}.

A2A_REMOTE_KEY = "a2a_remote"


class A2ARemoteUpdate(_Model):
    """One update of a task a remote A2A agent runs for an agent of the mesh."""

    agent: str = Field(description="The remote agent: its registry id, or the URL it was reached at")
    task_id: str = Field(description="The remote task; '' when the agent answered with a message and no task")
    context_id: str = Field("", description="Send it back as payload 'context_id' to continue the conversation")
    state: TaskStateName
    text: str | None = Field(None, description="The update's text parts, joined")
    data: list[dict[str, Any]] = Field(default_factory=list, description="The update's data parts")
    artifact_name: str | None = Field(None, description="Set when the parts are an artifact of this name")
    final: bool = Field(False, description="No more updates will come for this task")


# --- federated hubs ---------------------------------------------------------------------------
# A direct message from an agent of hub B to ID@A travels as an A2A message to A's /agents/ID whose
# metadata carries {"webmcp_a2a_envelope": FederatedEnvelope}, with B's key for A in the header
# HUB_KEY_HEADER. A checks the key against what it expects from B, delivers the envelope from
# SENDER@B, and completes the A2A task with a data part holding the SendResult.

FEDERATED_ENVELOPE_KEY = "webmcp_a2a_envelope"
HUB_KEY_HEADER = "X-A2A-Hub-Key"


class FederatedEnvelope(_Model):
    from_agent: str = Field(min_length=3, max_length=256, pattern=r"^[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+$")
    message_type: MessageKind
    payload: dict[str, Any] = Field(default_factory=dict)
    correlation_id: str | None = Field(None, max_length=128)
    priority: Priority = PRIORITY_NORMAL
