"""A2A tasks given to an agent of the mesh, and how the agent answers them.

A standard A2A client's message to agent X (``POST /agents/X`` on the router) reaches X as a
``task_request`` carrying an :class:`~webmcp_a2a.protocol.A2ATask`. With :meth:`Agent.on_task
<webmcp_a2a.client.agent.Agent.on_task>` the agent gets it as an :class:`InboundTask` and answers
through it; each answer is a ``task_response`` that the router's A2A bridge turns into a status
update, an artifact or the task's outcome for the A2A client::

    async def handle(task: InboundTask) -> None:
        await task.update("looking")
        await task.complete(f"echo: {task.text}")

    agent.on_task(handle)
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..protocol import A2A_CANCEL_KEY, A2A_TASK_KEY, A2AReply, A2ATask, ReceivedMessage, ReplyState, SendResult

if TYPE_CHECKING:
    from .agent import Agent


class InboundTask:
    """One A2A task for this agent: what was asked, and the ways to answer it."""

    def __init__(self, agent: Agent, message: ReceivedMessage) -> None:
        self._agent = agent
        self.message = message
        self.task = A2ATask.model_validate(message.payload[A2A_TASK_KEY])
        self.cancelled = asyncio.Event()  # set when the A2A client cancels the task

    @property
    def task_id(self) -> str:
        return self.task.task_id

    @property
    def context_id(self) -> str:
        """The conversation: a follow-up message in it (after ``require_input``) is a new InboundTask."""
        return self.task.context_id

    @property
    def text(self) -> str:
        return self.task.text

    @property
    def data(self) -> list[dict[str, Any]]:
        return self.task.data

    async def reply(
        self,
        state: ReplyState,
        text: str | None = None,
        data: dict[str, Any] | None = None,
        artifact_name: str | None = None,
    ) -> SendResult:
        """Send one answer; every other method is this with a state."""
        reply = A2AReply(task_id=self.task_id, state=state, text=text, data=data, artifact_name=artifact_name)
        if state != "working":
            self._agent.forget_task(self.task_id)  # answered: a cancel of it no longer concerns this agent
        return await self._agent.answer_task(reply)

    async def update(self, text: str | None = None, data: dict[str, Any] | None = None) -> SendResult:
        """A status update: still working."""
        return await self.reply("working", text, data)

    async def add_artifact(self, name: str, text: str | None = None, data: dict[str, Any] | None = None) -> SendResult:
        """A result of the task, named; the task stays open."""
        return await self.reply("working", text, data, artifact_name=name)

    async def complete(self, text: str | None = None, data: dict[str, Any] | None = None) -> SendResult:
        return await self.reply("completed", text, data)

    async def fail(self, text: str | None = None) -> SendResult:
        return await self.reply("failed", text)

    async def reject(self, text: str | None = None) -> SendResult:
        return await self.reply("rejected", text)

    async def require_input(self, text: str) -> SendResult:
        """Ask the client a question; its next message in this context comes as a new task."""
        return await self.reply("input-required", text)


def is_a2a_task(message: ReceivedMessage) -> bool:
    return message.message_type == "task_request" and A2A_TASK_KEY in message.payload


def cancelled_task_id(message: ReceivedMessage) -> str | None:
    """The task an A2A client cancelled, when ``message`` says so."""
    cancel = message.payload.get(A2A_CANCEL_KEY)
    task_id = cancel.get("task_id") if isinstance(cancel, dict) else None
    if message.message_type == "notification" and isinstance(task_id, str):
        return task_id
    return None
