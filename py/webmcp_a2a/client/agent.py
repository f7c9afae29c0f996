"""An agent's asyncio API over any transport that can send and receive text frames.

A transport calls :meth:`Agent.connection_made`, :meth:`Agent.data_received` and
:meth:`Agent.connection_lost` (the ``asyncio.Protocol`` vocabulary) and offers
``send(text)`` and ``close()``. Two exist: :mod:`webmcp_a2a.client.cpython` over
the ``websockets`` library and :mod:`webmcp_a2a.browser.websocket` over the
browser's WebSocket. Everything else - correlation, acknowledgements, the inbox -
is here, once.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import ValidationError

from ..protocol import (
    A2A_BRIDGE_ID,
    A2A_REPLY_KEY,
    BROADCAST,
    TOPIC_PREFIX,
    A2AReply,
    BarrierArgs,
    BarrierRequest,
    BarrierResult,
    BroadcastArgs,
    BroadcastRequest,
    DiscoverArgs,
    DiscoverRequest,
    DiscoverResult,
    Envelope,
    ErrorInfo,
    FanoutResult,
    HeartbeatRequest,
    Hello,
    InboxArgs,
    InboxResult,
    LockArgs,
    LockRequest,
    LockResult,
    ReceivedMessage,
    Region,
    RequestArgs,
    RequestFrame,
    SendMessageArgs,
    SendRequest,
    SendResult,
    SubscribeRequest,
    SubscribeResult,
    SubscriptionFilter,
    TaskOutcome,
    TasksArgs,
    TasksRequest,
    TasksResult,
    UnsubscribeRequest,
    UnsubscribeResult,
    new_message_id,
)
from .core import ClientCore, Failed, Received, Replied, Welcomed
from .tasks import InboundTask, cancelled_task_id, is_a2a_task

log = logging.getLogger("webmcp_a2a.client")


class Transport(Protocol):
    """What an agent needs of a transport: a name for status reports, ``send`` and ``close``."""

    @property
    def name(self) -> str | None: ...

    def send(self, text: str) -> None: ...

    def close(self) -> None: ...


class TransportListener(Protocol):
    """What a transport tells (an :class:`Agent`, or a link choosing between transports)."""

    transport: Transport | None  # the transport it is attached to, once one is open

    def connection_made(self, transport: Transport) -> None: ...

    def data_received(self, text: str) -> None: ...

    def connection_lost(self, reason: str) -> None: ...


class RouterError(Exception):
    """The router (or the connection) refused a request; ``info`` says why, machine-readably."""

    def __init__(self, info: ErrorInfo) -> None:
        super().__init__(f"{info.code}: {info.message}")
        self.info = info


MessageHandler = Callable[[ReceivedMessage], Any]
TaskHandler = Callable[[InboundTask], Any]
StateListener = Callable[[str], Any]


class Agent:
    """One agent in the mesh: send, broadcast, subscribe, coordinate, and an inbox of what arrived.

    Messages (``send_message``, ``broadcast``, ``publish``) are durable: if the
    connection drops they wait in the outbox (at most ``outbox_limit``) and go again
    after the transport reconnects, until ``request_timeout``. Other requests fail
    with ``not_connected`` when there is no connection.

    With ``batch_acks`` what the agent has to write after a frame arrives goes once the
    event loop has run out of frames to hand it, so a burst of deliveries is acknowledged
    with one ``acks`` frame (the CPython client's default). Pages do not batch: the browser
    hands them one WebSocket message per task, so there is no burst to gather, and the
    postMessage fallback's local routes read one ``ack`` per message.
    """

    def __init__(
        self,
        hello: Hello,
        *,
        inbox_limit: int = 1000,
        outbox_limit: int = 10_000,
        request_timeout: float = 30.0,
        heartbeat_interval: float = 15.0,
        batch_acks: bool = False,
    ) -> None:
        self.core = ClientCore(hello, batch_acks=batch_acks)
        self._flush_scheduled = False
        self.inbox_limit = inbox_limit
        self.outbox_limit = outbox_limit
        self.request_timeout = request_timeout
        self.heartbeat_interval = heartbeat_interval
        self.state = "disconnected"
        self.closed = False
        self.busy = False
        self.transport: Transport | None = None
        self._requests: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._welcomed: asyncio.Future[Welcomed] | None = None
        self._inbox: deque[ReceivedMessage] = deque()
        self._arrivals: set[asyncio.Future[None]] = set()
        self._handlers: list[MessageHandler] = []
        self._task_handlers: list[TaskHandler] = []
        self._open_tasks: dict[str, InboundTask] = {}  # given through on_task, not answered for good yet
        self._state_listeners: list[StateListener] = []
        self._awaited_responses: dict[str, asyncio.Future[ReceivedMessage]] = {}
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._handler_tasks: set[asyncio.Future[Any]] = set()  # coroutine handlers still running

    @property
    def agent_id(self) -> str:
        return self.core.hello.agent_id

    @property
    def agent_type(self) -> str:
        return self.core.hello.agent_type

    @property
    def signs(self) -> bool:
        """True when the router signs: this agent signs what it sends and checks what it receives."""
        return self.core.signing_key is not None

    @property
    def credential(self) -> str | None:
        """The secret that proves this agent owns its id (given by the router's first welcome)."""
        return self.core.hello.credential

    # --- transport side ---------------------------------------------------------

    def connection_made(self, transport: Transport) -> None:
        self.transport = transport
        self._welcomed = asyncio.get_running_loop().create_future()
        # A refusal nobody awaits (a reconnect loop in the background) is not an unhandled error.
        self._welcomed.add_done_callback(lambda future: future.cancelled() or future.exception())
        self._set_state("connecting")
        self.core.connect()
        self._flush()
        if self._heartbeat_task is None:
            self._heartbeat_task = asyncio.ensure_future(self._send_heartbeats())

    def data_received(self, text: str) -> None:
        self.core.receive(text)
        for event in self.core.events_received():
            if isinstance(event, Received):
                self._accept(event.message)
            elif isinstance(event, Replied):
                self._resolve(event.ref, result=event.data)
            elif isinstance(event, Failed):
                self._fail(event)
            elif isinstance(event, Welcomed):
                self._set_state("connected")
                if self._welcomed is not None and not self._welcomed.done():
                    self._welcomed.set_result(event)
        if not self.core.batch_acks:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def connection_lost(self, reason: str = "connection closed") -> None:
        self.transport = None
        self.core.connection_lost()
        error = RouterError(ErrorInfo(code="not_connected", message=reason))
        if self._welcomed is not None and not self._welcomed.done():
            self._welcomed.set_exception(error)
        for request_id, future in list(self._requests.items()):
            # Messages wait in the outbox for the next connection; the rest fail now.
            if not future.done() and (self.closed or not self.core.in_outbox(request_id)):
                future.set_exception(error)
        self._set_state("disconnected")

    async def welcomed(self) -> None:
        """Wait until the router has accepted this agent (raises :class:`RouterError` if refused)."""
        if self._welcomed is None:
            raise RouterError(ErrorInfo(code="not_connected", message="no transport yet"))
        await self._welcomed

    # --- the agent's API --------------------------------------------------------

    async def send_message(self, args: SendMessageArgs) -> SendResult:
        envelope = Envelope(
            to_agent=args.target_agent_id,
            message_type=args.message_type,
            priority=args.priority,
            payload=args.payload,
            metadata={"correlation_id": args.correlation_id},
            expires_at=time.time() + args.ttl_seconds if args.ttl_seconds else None,
        )
        return await self.send_envelope(envelope)

    async def send_envelope(self, envelope: Envelope) -> SendResult:
        """Send an envelope as it is (the router still stamps and checks its sender)."""
        return SendResult.model_validate(await self._request(SendRequest(id=0, envelope=envelope), durable=True))

    async def broadcast(self, args: BroadcastArgs) -> FanoutResult:
        envelope = Envelope(
            to_agent=BROADCAST, message_type=args.message_type, priority=args.priority, payload=args.payload
        )
        request = BroadcastRequest(id=0, envelope=envelope, agent_type=args.agent_type, exclude_self=args.exclude_self)
        return FanoutResult.model_validate(await self._request(request, durable=True))

    async def publish(self, topic: str, payload: dict[str, Any], region: Region | None = None) -> FanoutResult:
        """Publish an event on ``topic`` (an event type such as ``region_change``, or any topic name)."""
        envelope = Envelope(
            to_agent=f"{TOPIC_PREFIX}{topic}", message_type="event", payload=payload, metadata={"region": region}
        )
        return FanoutResult.model_validate(await self._request(SendRequest(id=0, envelope=envelope), durable=True))

    async def subscribe(self, topic: str, filter: SubscriptionFilter | None = None) -> SubscribeResult:
        return SubscribeResult.model_validate(await self._request(SubscribeRequest(id=0, topic=topic, filter=filter)))

    async def unsubscribe(self, subscription_id: str) -> UnsubscribeResult:
        request = UnsubscribeRequest(id=0, subscription_id=subscription_id)
        return UnsubscribeResult.model_validate(await self._request(request))

    async def discover(self, args: DiscoverArgs | None = None) -> DiscoverResult:
        """Agents the router knows, with their status and when they were last seen."""
        request = DiscoverRequest(id=0, **dict(args or DiscoverArgs()))
        return DiscoverResult.model_validate(await self._request(request))

    async def tasks(self, args: TasksArgs | None = None) -> TasksResult:
        """This agent's A2A tasks: list them (inbound and outbound), get one whole, cancel an outbound one,
        reply to an inbound one."""
        request = TasksRequest(id=0, **dict(args or TasksArgs()))
        return TasksResult.model_validate(await self._request(request))

    async def lock(self, args: LockArgs) -> LockResult:
        """Acquire (waiting up to ``wait_seconds``) or release a named lock."""
        request = LockRequest(id=0, **dict(args))
        return LockResult.model_validate(await self._request(request, timeout=args.wait_seconds + self.request_timeout))

    async def barrier(self, args: BarrierArgs) -> BarrierResult:
        """Wait at a named barrier until the expected agents (or ``count`` agents) are all there."""
        request = BarrierRequest(id=0, **dict(args))
        return BarrierResult.model_validate(
            await self._request(request, timeout=args.timeout_seconds + self.request_timeout)
        )

    async def request(self, args: RequestArgs) -> TaskOutcome:
        """Send a task_request and wait for the task_response with the same correlation_id."""
        correlation_id = new_message_id()
        answer = asyncio.get_running_loop().create_future()
        self._awaited_responses[correlation_id] = answer
        try:
            sent = await self.send_message(
                SendMessageArgs(
                    target_agent_id=args.target_agent_id,
                    message_type="task_request",
                    payload=args.payload,
                    correlation_id=correlation_id,
                    priority=args.priority,
                    ttl_seconds=args.timeout_seconds,
                )
            )
            status = "in_progress" if sent.delivered else "pending"
            outcome = TaskOutcome(
                correlation_id=correlation_id, status=status, request_message_id=sent.message_id, detail=sent.reason
            )
            if not sent.delivered and not sent.stored:
                return outcome.model_copy(update={"status": "failed"})
            try:
                response: ReceivedMessage = await asyncio.wait_for(answer, args.timeout_seconds)
            except TimeoutError:
                return outcome.model_copy(
                    update={"status": "timed_out", "detail": f"no task_response within {args.timeout_seconds:g}s"}
                )
            failed = response.payload.get("status") == "failed"
            return outcome.model_copy(
                update={
                    "status": "failed" if failed else "completed",
                    "detail": None,
                    "response": response.payload,
                    "responder": response.from_agent,
                }
            )
        finally:
            self._awaited_responses.pop(correlation_id, None)

    async def respond(self, request: ReceivedMessage, payload: dict[str, Any]) -> SendResult:
        """Answer a task_request with a task_response carrying its correlation_id."""
        return await self.send_message(
            SendMessageArgs(
                target_agent_id=request.from_agent,
                message_type="task_response",
                payload=payload,
                correlation_id=request.metadata.correlation_id,
            )
        )

    async def answer_task(self, reply: A2AReply) -> SendResult:
        """Answer an A2A task given to this agent (a status update, an artifact, or its outcome)."""
        return await self.send_message(
            SendMessageArgs(
                target_agent_id=A2A_BRIDGE_ID,
                message_type="task_response",
                payload={A2A_REPLY_KEY: reply.model_dump(mode="json")},
                correlation_id=reply.task_id,
            )
        )

    def forget_task(self, task_id: str) -> None:
        """The A2A task is answered for good: stop tracking it for cancellation."""
        self._open_tasks.pop(task_id, None)

    def set_busy(self, busy: bool) -> None:
        """Tell the router (and so a2a_discover and senders) whether this agent is busy."""
        self.busy = busy
        self._heartbeat()

    async def inbox(self, args: InboxArgs | None = None) -> InboxResult:
        """Take what arrived (oldest first), waiting up to ``wait_seconds`` for a first match."""
        args = args or InboxArgs()
        matches = self._take(args)
        if not matches and args.wait_seconds > 0:
            deadline = time.monotonic() + args.wait_seconds
            while not matches and (remaining := deadline - time.monotonic()) > 0:
                arrival = asyncio.get_running_loop().create_future()
                self._arrivals.add(arrival)
                try:
                    await asyncio.wait_for(arrival, remaining)
                except TimeoutError:
                    pass
                finally:
                    self._arrivals.discard(arrival)
                matches = self._take(args)
        return InboxResult(messages=matches, remaining=len(self._inbox))

    def on_message(self, handler: MessageHandler) -> Callable[[], None]:
        """Call ``handler(message)`` for every new message (coroutines are scheduled); returns a remover."""
        self._handlers.append(handler)
        return lambda: self._handlers.remove(handler)

    def on_task(self, handler: TaskHandler) -> Callable[[], None]:
        """Call ``handler(task)`` for every A2A task given to this agent (coroutines are scheduled).

        The :class:`~.tasks.InboundTask` carries the question and the ways to answer it; such a
        message does not wait in the inbox. Returns a function that removes the handler.
        """
        self._task_handlers.append(handler)
        return lambda: self._task_handlers.remove(handler)

    def on_state(self, listener: StateListener) -> Callable[[], None]:
        """Call ``listener(state)`` on connecting / connected / disconnected."""
        self._state_listeners.append(listener)
        return lambda: self._state_listeners.remove(listener)

    def close(self) -> None:
        """Leave for good: no reconnect, and whatever waits fails."""
        self.closed = True
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
        if self.transport is not None:
            self._flush()  # acks gathered for the end of the loop's turn go before the close
            self.transport.close()
        else:
            self.connection_lost("closed")

    # --- internals ----------------------------------------------------------------

    async def _request(
        self, frame: RequestFrame, durable: bool = False, timeout: float | None = None
    ) -> dict[str, Any]:
        if self.closed or (not durable and self.state != "connected"):
            raise RouterError(
                ErrorInfo(code="not_connected", message=f"agent is {'closed' if self.closed else self.state}")
            )
        if durable and self.core.outbox_size >= self.outbox_limit:
            raise RouterError(
                ErrorInfo(
                    code="not_connected", message=f"outbox full ({self.outbox_limit} messages waiting for the router)"
                )
            )
        request_id = self.core.request(frame, durable=durable)
        future = asyncio.get_running_loop().create_future()
        self._requests[request_id] = future
        self._flush()
        try:
            return await asyncio.wait_for(future, timeout or self.request_timeout)
        finally:
            self._requests.pop(request_id, None)
            self.core.forget(request_id)

    def _heartbeat(self) -> None:
        """Fire and forget: the router notes the time and the status; the answer is not awaited."""
        if self.state == "connected":
            self.core.request(HeartbeatRequest(id=0, status="busy" if self.busy else "online"))
            self._flush()

    async def _send_heartbeats(self) -> None:
        while not self.closed:
            await asyncio.sleep(self.heartbeat_interval)
            self._heartbeat()

    def _flush(self) -> None:
        self._flush_scheduled = False
        frames = self.core.data_to_send()
        if self.transport is not None:
            for text in frames:
                self.transport.send(text)

    def _accept(self, message: ReceivedMessage) -> None:
        if len(self._inbox) >= self.inbox_limit:
            # Refusing tells the sender the truth (delivered: false); accepting and
            # dropping would not.
            self.core.refuse(message.message_id, "inbox_full")
            return
        self.core.ack(message.message_id)
        answer = self._awaited_responses.get(message.metadata.correlation_id or "")
        if message.message_type == "task_response" and answer is not None and not answer.done():
            answer.set_result(message)  # the requester takes it; it does not go to the inbox
            return
        if self._task_handlers and is_a2a_task(message):
            try:
                task = InboundTask(self, message)
            except ValidationError:
                log.warning("an A2A task that does not validate went to the inbox: %s", message.message_id)
            else:
                self._open_tasks[task.task_id] = task
                for task_handler in list(self._task_handlers):
                    self._call(task_handler, task)
                return  # answered through the task: it does not wait in the inbox
        cancelled = cancelled_task_id(message)
        if cancelled is not None and cancelled in self._open_tasks:
            self._open_tasks.pop(cancelled).cancelled.set()
            return
        self._inbox.append(message)
        for arrival in self._arrivals:
            if not arrival.done():
                arrival.set_result(None)
        for handler in list(self._handlers):
            self._call(handler, message)

    def _call(self, handler: Callable[[Any], Any], argument: Any) -> None:
        """Run a handler; a coroutine it returns is scheduled (and kept until done)."""
        try:
            outcome = handler(argument)
            if inspect.isawaitable(outcome):
                task = asyncio.ensure_future(outcome)
                self._handler_tasks.add(task)
                task.add_done_callback(self._handler_tasks.discard)
        except Exception:
            log.exception("handler failed")

    def _take(self, args: InboxArgs) -> list[ReceivedMessage]:
        taken: list[ReceivedMessage] = []
        kept: deque[ReceivedMessage] = deque()
        for message in self._inbox:
            wanted = args.correlation_id is None or message.metadata.correlation_id == args.correlation_id
            if wanted and len(taken) < args.max_messages:
                taken.append(message)
            else:
                kept.append(message)
        self._inbox = kept
        return taken

    def _resolve(self, ref: int, result: dict[str, Any]) -> None:
        future = self._requests.get(ref)
        if future is not None and not future.done():
            future.set_result(result)

    def _fail(self, event: Failed) -> None:
        if event.ref is not None and (future := self._requests.get(event.ref)) and not future.done():
            future.set_exception(RouterError(event.error))
        elif self._welcomed is not None and not self._welcomed.done():
            self._welcomed.set_exception(RouterError(event.error))
        else:
            log.warning("router error: %s: %s", event.error.code, event.error.message)

    def _set_state(self, state: str) -> None:
        self.state = state
        for listener in list(self._state_listeners):
            try:
                listener(state)
            except Exception:
                log.exception("state listener failed")
