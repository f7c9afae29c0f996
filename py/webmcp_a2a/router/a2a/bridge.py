"""The mesh side of the A2A bridge: an in-process agent that hands A2A tasks to agents and collects
their answers, and the ``a2a-sdk`` executor built on it.

The bridge is an ordinary agent of the mesh (:class:`~webmcp_a2a.client.agent.Agent`, id ``a2a``)
on an :class:`InProcessLink` instead of a socket, so a task for agent X travels like any message:
acknowledged, stored while X is away, signed when the router signs. X answers with
``task_response`` envelopes carrying an :class:`~webmcp_a2a.protocol.A2AReply` (``InboundTask`` in
Python, the ``a2a_reply`` tool in a page); the bridge routes each to the executor waiting for that
task id, which publishes it to the SDK as a status update, an artifact or the outcome.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from a2a.helpers.proto_helpers import (
    get_data_parts,
    get_text_parts,
    new_data_part,
    new_message,
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Part, Task
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
from pydantic import ValidationError

from ...client.agent import Agent
from ...protocol import (
    A2A_BRIDGE_ID,
    A2A_CANCEL_KEY,
    A2A_REPLY_KEY,
    A2A_TASK_KEY,
    FEDERATED_ENVELOPE_KEY,
    A2AReply,
    A2ATask,
    Envelope,
    FederatedEnvelope,
    Hello,
    ReceivedMessage,
    SendMessageArgs,
)
from ..background import Background
from ..connection import CONTROL_PRIORITY, DropCallback
from .tasks import HUB_KEY, TaskStores, state_value

if TYPE_CHECKING:
    from ..limits import RateLimit
    from ..routing import Router

log = logging.getLogger("webmcp_a2a.router.a2a")


class InProcessLink:
    """A connection inside the router process: the router's :class:`~..connection.Peer` and the
    bridge agent's transport at once. Frames cross on the next turn of the event loop, as on a socket."""

    name = "in-process"
    internal = True  # may use a reserved agent id; no join token or credential
    remote = "in-process"
    rate: RateLimit | None = None

    def __init__(self, router: Router, agent: Agent) -> None:
        self._router = router
        self._agent = agent
        self._loop = asyncio.get_running_loop()
        self.agent_id: str | None = None
        self._closed = False

    @property
    def closing(self) -> bool:
        return self._closed

    # router -> agent
    def offer(
        self,
        text: str,
        priority: int = CONTROL_PRIORITY,
        expires_at: float | None = None,
        on_drop: DropCallback | None = None,
        message_id: str | None = None,
    ) -> bool:
        if self._closed:
            return False
        self._loop.call_soon(self._agent.data_received, text)
        return True

    def close(self, code: int = 1000, reason: str = "closed") -> None:
        if not self._closed:
            self._closed = True
            self._loop.call_soon(self._agent.connection_lost, f"closed ({code}: {reason})")
            self._loop.call_soon(self._router.connection_closed, self)

    # agent -> router
    def send(self, text: str) -> None:
        if not self._closed:
            self._loop.call_soon(self._router.receive, self, text)


class Bridge:
    """The ``a2a`` agent: sends tasks into the mesh and routes the answers to whoever waits for them."""

    def __init__(self, router: Router, tasks: TaskStores) -> None:
        self.router = router
        self.tasks = tasks
        self.agent = Agent(Hello(agent_id=A2A_BRIDGE_ID, agent_type="a2a-bridge"), inbox_limit=100_000)
        self._waiting: dict[str, asyncio.Queue[A2AReply]] = {}
        # Tasks given to agents, as given, until their request ends: the SDK stores a new task a few
        # turns of the loop after the request starts, and its agent may look it up sooner.
        self._given: dict[str, tuple[str, Task]] = {}
        self._late = Background()  # late answers being written to the task store
        self._link: InProcessLink | None = None
        self.agent.on_message(self._received)
        # Whether direct messages from hub H, presenting key K, are refused (why) or taken (None);
        # without a registry of hubs, every one is refused.
        self.refuses: Callable[[str, dict[str, str | None]], str | None] = lambda hub, shown: "no hub is registered"

    async def start(self) -> None:
        self._link = InProcessLink(self.router, self.agent)
        self.agent.connection_made(self._link)
        await self.agent.welcomed()
        if self.router.cluster is not None:  # answers that reach another router's bridge come here
            self.router.cluster.task_answers = self._from_another_router

    def stop(self) -> None:
        self.agent.close()

    def expect(self, task: Task, agent_id: str) -> asyncio.Queue[A2AReply]:
        """The answers to ``task``, given to ``agent_id``, as they arrive (until :meth:`forget`)."""
        if self.router.cluster is not None:
            self.router.cluster.await_answers(task.id)
        self._given[task.id] = (agent_id, task)
        return self._waiting.setdefault(task.id, asyncio.Queue())

    def forget(self, task_id: str) -> None:
        self._given.pop(task_id, None)
        if self._waiting.pop(task_id, None) is not None and self.router.cluster is not None:
            self.router.cluster.stop_awaiting(task_id)

    def given_to(self, agent_id: str) -> list[Task]:
        """The tasks given to ``agent_id`` whose requests still wait for answers, as given."""
        return [task for agent, task in self._given.values() if agent == agent_id]

    def given(self, task_id: str, agent_id: str) -> Task | None:
        """The task, as given to ``agent_id``, while its request waits for answers (the store may not
        have it yet)."""
        agent_and_task = self._given.get(task_id)
        return agent_and_task[1] if agent_and_task is not None and agent_and_task[0] == agent_id else None

    def _received(self, message: ReceivedMessage) -> None:
        payload = message.payload.get(A2A_REPLY_KEY)
        if message.message_type != "task_response" or payload is None or message.from_agent is None:
            log.info("the A2A bridge dropped a message that is no task answer: %s", message.message_id)
            return
        try:
            reply = A2AReply.model_validate(payload)
        except ValueError as exc:
            log.warning("an agent's A2A reply does not validate: %s", exc)
            return
        if not self._hand_over(message.from_agent, reply):
            self._late.spawn(self._apply_late(message.from_agent, reply))

    async def take(self, agent_id: str, reply: A2AReply) -> None:
        """``agent_id``'s answer: to the request that waits for it (here, or at the cluster's router that
        took the request), else (the router restarted since the request) written to the stored task."""
        if not self._hand_over(agent_id, reply):
            await self._apply_late(agent_id, reply)

    def _hand_over(self, agent_id: str, reply: A2AReply) -> bool:
        queue = self._waiting.get(reply.task_id)
        if queue is not None:
            queue.put_nowait(reply)
            return True
        cluster = self.router.cluster
        return cluster is not None and cluster.pass_answer(agent_id, reply.task_id, reply.model_dump_json())

    def _from_another_router(self, agent_id: str, text: str) -> None:
        reply = A2AReply.model_validate_json(text)
        queue = self._waiting.get(reply.task_id)
        if queue is not None:
            queue.put_nowait(reply)
        else:  # it stopped waiting in the meantime
            self._late.spawn(self._apply_late(agent_id, reply))

    async def _apply_late(self, agent_id: str, reply: A2AReply) -> None:
        if not await self.tasks.apply(agent_id, reply, _parts(reply)):
            log.info("an answer from %s for task %s, unknown or over, was dropped", agent_id, reply.task_id)


_ENDS = {"input-required", "completed", "failed", "rejected"}  # execute() returns on these


class MeshExecutor(AgentExecutor):
    """An A2A request for agent ``agent_id``: a task message to it, its answers back as task events."""

    def __init__(self, bridge: Bridge, agent_id: str, reply_timeout: float) -> None:
        self.bridge = bridge
        self.agent_id = agent_id
        self.reply_timeout = reply_timeout

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None  # the SDK calls execute() for a message
        task = context.current_task or new_task_from_user_message(message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        federated = message.metadata.fields.get(FEDERATED_ENVELOPE_KEY)
        if federated is not None:
            await self._deliver_federated(federated, context, updater)
            return
        answers = self.bridge.expect(task, self.agent_id)
        try:
            payload = A2ATask(
                task_id=task.id,
                context_id=task.context_id,
                text="\n".join(get_text_parts(message.parts)),
                data=[part for part in get_data_parts(message.parts) if isinstance(part, dict)],
            )
            sent = await self.bridge.agent.send_message(
                SendMessageArgs(
                    target_agent_id=self.agent_id,
                    message_type="task_request",
                    payload={A2A_TASK_KEY: payload.model_dump(mode="json")},
                    correlation_id=task.id,
                )
            )
            if not sent.delivered and not sent.stored:
                await updater.failed(self._text(task, f"agent {self.agent_id} cannot take it: {sent.reason}"))
                return
            if sent.stored:
                await updater.submit(self._text(task, f"agent {self.agent_id} is away; the task waits for it"))
            while True:
                try:
                    reply = await asyncio.wait_for(answers.get(), self.reply_timeout)
                except TimeoutError:
                    await updater.failed(self._text(task, f"no answer from {self.agent_id} in {self.reply_timeout:g}s"))
                    return
                await self._publish(updater, task.context_id, reply)
                if reply.state in _ENDS:
                    return
        finally:
            self.bridge.forget(task.id)

    async def _deliver_federated(self, federated: Any, context: RequestContext, updater: TaskUpdater) -> None:
        """A direct message from an agent of a federated hub: checked against that hub's trust, then
        delivered from ``SENDER@HUB``; the task completes with the delivery's :class:`SendResult`."""
        try:
            carried = FederatedEnvelope.model_validate(MessageToDict(federated.struct_value))
        except ValidationError as error:
            await updater.reject(updater.new_agent_message([new_text_part(f"not a federated envelope: {error}")]))
            return
        presented = context.call_context.state.get(HUB_KEY, {}) if context.call_context else {}
        refusal = self.bridge.refuses(carried.from_agent.rpartition("@")[2], presented)
        if refusal is not None:
            await updater.reject(updater.new_agent_message([new_text_part(refusal)]))
            return
        sent = await self.bridge.agent.send_envelope(
            Envelope(
                from_agent=carried.from_agent,
                to_agent=self.agent_id,
                message_type=carried.message_type,
                payload=carried.payload,
                priority=carried.priority,
                metadata={"correlation_id": carried.correlation_id},
            )
        )
        await updater.complete(updater.new_agent_message([new_data_part(sent.model_dump(mode="json"))]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """The client cancelled: the task ends ``canceled``, and the agent hears of it."""
        task = context.current_task
        if task is None:
            return
        await TaskUpdater(event_queue, task.id, task.context_id).cancel()
        await self.bridge.agent.send_message(
            SendMessageArgs(
                target_agent_id=self.agent_id,
                message_type="notification",
                payload={A2A_CANCEL_KEY: {"task_id": task.id}},
                correlation_id=task.id,
            )
        )

    async def _publish(self, updater: TaskUpdater, context_id: str, reply: A2AReply) -> None:
        parts = _parts(reply)
        if reply.artifact_name is not None:
            await updater.add_artifact(parts, name=reply.artifact_name)
            if reply.state == "working":
                return
            parts = []
        message = new_message(parts, context_id=context_id, task_id=reply.task_id) if parts else None
        if reply.state == "completed":
            await updater.complete(message)
        elif reply.state == "failed":
            await updater.failed(message)
        elif reply.state == "rejected":
            await updater.reject(message)
        elif reply.state == "input-required":
            await updater.requires_input(message)
        else:
            await updater.update_status(state_value(reply.state), message)

    @staticmethod
    def _text(task: Any, text: str) -> Any:
        return new_text_message(text, context_id=task.context_id, task_id=task.id)


def _parts(reply: A2AReply) -> list[Part]:
    parts = []
    if reply.text is not None:
        parts.append(new_text_part(reply.text))
    if reply.data is not None:
        parts.append(new_data_part(reply.data))
    return parts
