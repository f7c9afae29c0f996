"""From the mesh out to remote A2A agents: ``a2a_send_message`` to a URL or a registered remote id.

The router reads the remote agent's card (the registry's copy for a registered agent; for a URL a
fetch, cached as its ``Cache-Control`` says and revalidated with its ``ETag``), and sends with the
official ``a2a-sdk`` client, which picks the interface and version the card offers (A2A 1.0 or 0.3,
JSON-RPC or HTTP+JSON). A streaming agent is streamed; another is asked to return at once and then
polled. The sender's request is answered as soon as the remote side names its task; every update
after that reaches the sender as a ``task_response`` from the router's ``a2a`` agent carrying an
:class:`~webmcp_a2a.protocol.A2ARemoteUpdate` (kept for the sender while it is away, like any message).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

import httpx
from a2a.client import A2AClientError, Client, ClientConfig, create_client
from a2a.client.client import ClientCallContext
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.server.tasks.task_manager import append_artifact_to_task
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from pydantic import BaseModel

from ...protocol import (
    A2A_REMOTE_KEY,
    FEDERATED_ENVELOPE_KEY,
    A2ARemoteUpdate,
    Envelope,
    ErrorInfo,
    FederatedEnvelope,
    SendMessageArgs,
    SendResult,
    TaskStateName,
)
from ..background import Background
from ..coordination import Waiter
from ..registry import Answer
from ..remotes.cards import CardError, card_url, fetch_card
from ..remotes.catalog import Catalog
from ..remotes.credentials import Clients, Credentials
from .bridge import Bridge
from .tasks import outbound_context_for, state_name

log = logging.getLogger("webmcp_a2a.router.a2a.outbound")


REMEMBERED_SENDS = 10_000  # (sender, message id) of recent sends, so a resend starts no second remote task
POLL_FIRST, POLL_MAX = 0.5, 5.0  # seconds between GetTask calls to an agent that does not stream
_OPEN = {"submitted", "working"}
CLIENT_ERRORS = (A2AClientError, httpx.HTTPError, ValueError)  # what the SDK client raises for a bad exchange
_CODES = {"unreachable": "remote_unreachable", "invalid": "remote_invalid", "refused": "remote_refused"}


class Outbound:
    """Sends the mesh's messages to remote A2A agents and brings their tasks' updates back."""

    def __init__(self, bridge: Bridge, catalog: Catalog, fetch_timeout: float, hub_name: str) -> None:
        self._bridge = bridge
        self._hub_name = hub_name
        self._tasks = bridge.tasks
        self._catalog = catalog
        self._clients = Clients(httpx.Timeout(fetch_timeout, read=None))  # read: a stream waits for its events
        self._credentials = Credentials(self._clients)
        self._cards: dict[str, tuple[AgentCard, str | None, float]] = {}  # card URL -> card, ETag, fresh until
        self._running = Background()
        self._sends: OrderedDict[tuple[str, str], asyncio.Future[BaseModel | ErrorInfo]] = OrderedDict()

    def handles(self, target: str) -> bool:
        return (
            target.startswith(("http://", "https://"))
            or target in self._catalog
            or self._catalog.hub_agent_url(target) is not None
        )

    def send(self, waiter: Waiter, envelope: Envelope, answer: Answer) -> None:
        key = (waiter.agent_id, envelope.message_id)
        first = self._sends.get(key)
        if first is not None:  # a resend (the sender's outbox, after a reconnect): its answer, no second task
            first.add_done_callback(lambda done: answer(waiter, done.result()))
            return
        outcome: asyncio.Future[BaseModel | ErrorInfo] = asyncio.get_running_loop().create_future()
        self._sends[key] = outcome
        while len(self._sends) > REMEMBERED_SENDS:
            self._sends.popitem(last=False)

        def answered(to: Waiter, result: BaseModel | ErrorInfo) -> None:
            if not outcome.done():
                outcome.set_result(result)
            answer(to, result)

        self._running.spawn(self._run(waiter, envelope, answered))

    async def stop(self) -> None:
        await self._running.cancel()
        await self._clients.aclose()

    async def _run(self, waiter: Waiter, envelope: Envelope, answer: Answer) -> None:
        target = envelope.to_agent
        federated_message = envelope.message_type != "task_request" and self._catalog.hub_agent_url(target) is not None
        try:
            client, call, streaming = await self._connect(target, stream=not federated_message)
        except CardError as error:
            answer(waiter, ErrorInfo(code=_CODES[error.kind], message=str(error), field="target_agent_id"))
            return
        except CLIENT_ERRORS as error:
            answer(waiter, _client_error(target, error))
            return
        if federated_message:
            await self._relay(waiter, envelope, client, call, answer)
            return
        answered: A2ARemoteUpdate | None = None
        last: A2ARemoteUpdate | None = None
        try:
            request = SendMessageRequest(message=_message(envelope))
            request.configuration.return_immediately = not streaming
            async with asyncio.timeout(_time_left(envelope)):
                async for event, update in self._updates(client, request, target, streaming, call):
                    await self._record(waiter.agent_id, target, event)
                    if answered is None:
                        answered = update
                        answer(
                            waiter,
                            SendResult(
                                delivered=True,
                                target_status="online",
                                message_id=envelope.message_id,
                                remote_task_id=update.task_id or None,
                                context_id=update.context_id or None,
                            ),
                        )
                    last = update
                    await self._forward(waiter.agent_id, update)
        except TimeoutError:
            if last is None:
                why = f"{target}: no answer before the message's ttl_seconds ran out"
                answer(waiter, ErrorInfo(code="expired", message=why, field="ttl_seconds"))
            elif not last.final:
                await self._forward(waiter.agent_id, await self._time_out(waiter.agent_id, last))
        except CLIENT_ERRORS as error:
            if answered is None:
                answer(waiter, _client_error(target, error))
            else:  # the sender is told: its task's last word is this failure
                message = _client_error(target, error).message
                log.info("the task at %s ended in an error: %s", target, message)
                await self._forward(waiter.agent_id, _last_word(answered, "failed", message))

    async def _time_out(self, sender: str, last: A2ARemoteUpdate) -> A2ARemoteUpdate:
        """The task outlived the message's ttl_seconds: cancelled at the remote agent (when it lets us)."""
        try:
            await self.cancel(sender, last.task_id)
        except (CardError, *CLIENT_ERRORS) as error:
            log.info("could not cancel the timed-out task %s at %s: %s", last.task_id, last.agent, error)
            return _last_word(last, "failed", "timed out (ttl_seconds); the remote agent would not cancel it")
        return _last_word(last, "canceled", "timed out (ttl_seconds): cancelled at the remote agent")

    async def _connect(self, target: str, stream: bool) -> tuple[Client, ClientCallContext, bool]:
        """The SDK client for ``target`` (streaming when asked and its card offers it), and the call
        context that carries our credentials for it."""
        record = self._catalog.record_for(target)
        http = self._clients.for_record(record)
        card = await self._card(target, http)
        headers = await self._credentials.headers_for(record)
        streaming = stream and card.capabilities.streaming
        client = await create_client(card, ClientConfig(httpx_client=http, streaming=streaming))
        return client, ClientCallContext(service_parameters=headers or None), streaming

    async def _updates(
        self, client: Client, request: SendMessageRequest, target: str, streaming: bool, call: ClientCallContext
    ) -> AsyncIterator[tuple[StreamResponse, A2ARemoteUpdate]]:
        last: A2ARemoteUpdate | None = None
        async for event in client.send_message(request, context=call):
            last = _update(target, event)
            yield event, last
        if streaming or last is None or not last.task_id or last.state not in _OPEN:
            return
        delay = POLL_FIRST  # an agent that does not stream: ask again until the task moves past working
        while last.state in _OPEN:
            await asyncio.sleep(delay)
            delay = min(delay * 2, POLL_MAX)
            event = StreamResponse(task=await client.get_task(GetTaskRequest(id=last.task_id), context=call))
            current = _update(target, event)
            if current.state != last.state:
                yield event, current
            last = current

    async def _relay(
        self, waiter: Waiter, envelope: Envelope, client: Client, call: ClientCallContext, answer: Answer
    ) -> None:
        """A direct message to ``ID@HUB``: the envelope crosses to the hub inside an A2A message, the
        hub delivers it from ``SENDER@US``; its delivery result is the send's result."""
        carried = FederatedEnvelope(
            from_agent=f"{waiter.agent_id}@{self._hub_name}",
            message_type=envelope.message_type,
            payload=envelope.payload,
            correlation_id=envelope.metadata.correlation_id,
            priority=envelope.priority,
        )
        message = Message(role=Role.ROLE_USER, message_id=envelope.message_id, parts=[new_data_part(envelope.payload)])
        message.metadata.update({FEDERATED_ENVELOPE_KEY: carried.model_dump(mode="json")})
        try:
            (event,) = [event async for event in client.send_message(SendMessageRequest(message=message), context=call)]
        except CLIENT_ERRORS as error:
            answer(waiter, _client_error(envelope.to_agent, error))
            return
        status = event.task.status
        if status.state != TaskState.TASK_STATE_COMPLETED:
            why = "\n".join(get_text_parts(list(status.message.parts))) or state_name(status.state)
            answer(
                waiter, ErrorInfo(code="remote_refused", message=f"{envelope.to_agent}: {why}", field="target_agent_id")
            )
            return
        (result,) = get_data_parts(list(status.message.parts))
        answer(waiter, SendResult.model_validate({**result, "message_id": envelope.message_id}))

    async def _record(self, sender: str, target: str, event: StreamResponse) -> None:
        """Keep the sender's copy of the remote task up to date in the task store (``a2a_tasks``)."""
        store, context = self._tasks.store, outbound_context_for(sender)
        if event.HasField("task"):
            store.note_remote(event.task.id, target, context)
            await store.save(event.task, context)
            return
        if event.HasField("status_update"):
            task = await store.get(event.status_update.task_id, context)
            if task is not None:
                if task.status.HasField("message"):
                    task.history.append(task.status.message)
                task.status.CopyFrom(event.status_update.status)
                await store.save(task, context)
        elif event.HasField("artifact_update"):
            task = await store.get(event.artifact_update.task_id, context)
            if task is not None:
                append_artifact_to_task(task, event.artifact_update)
                await store.save(task, context)

    async def cancel(self, sender: str, task_id: str) -> Task:
        """Cancel a task ``sender`` gave a remote agent, there; the remote's answer is recorded."""
        context = outbound_context_for(sender)
        target = self._tasks.store.remote_of(task_id, context)
        if target is None:
            raise CardError("invalid", f"no outbound task {task_id!r}")
        client, call, _ = await self._connect(target, stream=False)
        task = await client.cancel_task(CancelTaskRequest(id=task_id), context=call)
        await self._tasks.store.save(task, context)
        return task

    async def _forward(self, sender: str, update: A2ARemoteUpdate) -> None:
        await self._bridge.agent.send_message(
            SendMessageArgs(
                target_agent_id=sender,
                message_type="task_response",
                payload={A2A_REMOTE_KEY: update.model_dump(mode="json")},
                correlation_id=update.task_id or None,
            )
        )

    async def _card(self, target: str, http: httpx.AsyncClient) -> AgentCard:
        registered = self._catalog.get(target)
        if registered is not None:
            return registered.parsed
        url = card_url(self._catalog.hub_agent_url(target) or target)  # ID@HUB: the agent's card on its hub
        cached = self._cards.get(url)
        if cached is not None and cached[2] > time.monotonic():
            return cached[0]
        fetched = await fetch_card(http, url, cached[1] if cached else None)
        card = fetched.card if fetched.card is not None else cached[0] if cached else None
        if card is None:  # a 304 for a card we no longer hold: cannot happen without a cache entry
            raise CardError("invalid", f"{url}: not modified, but no card is cached")
        self._cards[url] = (card, fetched.etag, time.monotonic() + fetched.max_age)
        return card


def _time_left(envelope: Envelope) -> float | None:
    return None if envelope.expires_at is None else max(envelope.expires_at - time.time(), 0.0)


def _last_word(update: A2ARemoteUpdate, state: TaskStateName, text: str) -> A2ARemoteUpdate:
    """The final update that ends a task the remote agent did not end itself."""
    return update.model_copy(update={"state": state, "text": text, "data": [], "artifact_name": None, "final": True})


def _client_error(target: str, error: Exception) -> ErrorInfo:
    """A failure of the SDK client as the sender's tool error: unreachable, or refused."""
    code = "remote_unreachable" if isinstance(error, httpx.TransportError) else "remote_refused"
    return ErrorInfo(code=code, message=f"{target}: {type(error).__name__}: {error}", field="target_agent_id")


def _message(envelope: Envelope) -> Message:
    """The A2A message for an envelope: payload 'text' and 'data' as parts (else the whole payload as
    data), 'context_id' and 'task_id' to continue a conversation."""
    payload = envelope.payload
    parts: list[Part] = []
    if isinstance(payload.get("text"), str):
        parts.append(new_text_part(payload["text"]))
    if isinstance(payload.get("data"), dict):
        parts.append(new_data_part(payload["data"]))
    if not parts:
        parts.append(new_data_part(payload))
    return Message(
        role=Role.ROLE_USER,
        message_id=envelope.message_id,
        parts=parts,
        context_id=str(payload.get("context_id") or ""),
        task_id=str(payload.get("task_id") or ""),
    )


def _update(agent: str, event: StreamResponse) -> A2ARemoteUpdate:
    """What one event of the remote task says, in the mesh's terms."""
    if event.HasField("message"):  # an answer without a task
        message = event.message
        return A2ARemoteUpdate(
            agent=agent, task_id=message.task_id, context_id=message.context_id, state="completed", final=True,
            **_content(list(message.parts)),
        )  # fmt: skip
    if event.HasField("artifact_update"):
        artifact = event.artifact_update
        return A2ARemoteUpdate(
            agent=agent, task_id=artifact.task_id, context_id=artifact.context_id, state="working",
            artifact_name=artifact.artifact.name or "artifact", **_content(list(artifact.artifact.parts)),
        )  # fmt: skip
    if event.HasField("status_update"):
        task_id, context_id, status = (
            event.status_update.task_id,
            event.status_update.context_id,
            event.status_update.status,
        )
    else:
        task_id, context_id, status = event.task.id, event.task.context_id, event.task.status
    state = state_name(status.state)
    final = state not in (*_OPEN, "input-required", "auth-required")
    return A2ARemoteUpdate(
        agent=agent, task_id=task_id, context_id=context_id, state=state, final=final,
        **_content(list(status.message.parts)),
    )  # fmt: skip


def _content(parts: list[Part]) -> dict[str, Any]:
    texts = get_text_parts(parts)
    return {
        "text": "\n".join(texts) if texts else None,
        "data": [d for d in get_data_parts(parts) if isinstance(d, dict)],
    }
