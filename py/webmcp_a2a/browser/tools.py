"""The WebMCP tools: name, description, argument model and what each does with the agent.

Pure Python (no ``js``), so the same definitions are registered by the page and
exercised by CPython tests. A call takes the arguments as a JSON string and gives
back an MCP-style result as a JSON string - the cheapest way across the
JavaScript/Python border, and nothing to leak.

Results never raise: a failure is ``{"isError": true, ...}`` whose text names the
problem (a bad argument by its path), because a browser turns a thrown error into
an anonymous "the invocation failed".
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from ..client.agent import Agent, RouterError
from ..protocol import (
    A2AReply,
    BarrierArgs,
    BroadcastArgs,
    DiscoverArgs,
    DiscoverResult,
    ErrorInfo,
    FanoutResult,
    InboxArgs,
    InboxResult,
    LockArgs,
    LockResult,
    PublishArgs,
    RequestArgs,
    SendMessageArgs,
    SendResult,
    SubscribeArgs,
    SubscribeResult,
    TaskOutcome,
    TasksArgs,
    TasksResult,
    UnsubscribeArgs,
    UnsubscribeResult,
    validation_error_info,
)

Args = TypeVar("Args", bound=BaseModel)
Outcome = TypeVar("Outcome", bound=BaseModel)


@dataclass(frozen=True)
class Tool(Generic[Args, Outcome]):
    """One WebMCP tool: its arguments' model (the input schema), what it does, and how its result reads."""

    name: str
    title: str
    description: str
    arguments: type[Args]
    run: Callable[[Agent, Args], Awaitable[Outcome]]
    summarize: Callable[[Outcome], str]
    read_only: bool = False

    def input_schema(self) -> dict[str, Any]:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        return schema

    def annotations(self) -> dict[str, Any]:
        return {"readOnlyHint": self.read_only}

    async def call(self, agent: Agent, arguments_json: str) -> str:
        """Validate, run, and answer with an MCP result (as JSON), whatever happens."""
        try:
            arguments = self.arguments.model_validate_json(arguments_json or "{}")
        except ValidationError as exc:
            return _error_result(validation_error_info(exc, "invalid_arguments"))
        try:
            outcome = await self.run(agent, arguments)
        except RouterError as exc:
            return _error_result(exc.info)
        except TimeoutError:
            return _error_result(ErrorInfo(code="not_connected", message="the router did not answer in time"))
        structured = outcome.model_dump(mode="json")
        return json.dumps(
            {
                "content": [{"type": "text", "text": f"{self.summarize(outcome)}\n{json.dumps(structured)}"}],
                "structuredContent": structured,
            }
        )


def _error_result(info: ErrorInfo) -> str:
    where = f" (field: {info.field})" if info.field else ""
    return json.dumps(
        {
            "isError": True,
            "content": [{"type": "text", "text": f"{info.code}: {info.message}{where}"}],
            "structuredContent": {"error": info.model_dump(mode="json")},
        }
    )


def _summarize_send(result: SendResult) -> str:
    if result.delivered:
        return f"Delivered (recipient is {result.target_status}); message_id {result.message_id}."
    if result.stored:
        return (
            f"Not delivered yet: recipient is {result.target_status}; the router keeps the message and "
            f"delivers it when the agent is back; message_id {result.message_id}."
        )
    return f"Not delivered: recipient is {result.target_status} ({result.reason}); message_id {result.message_id}."


def _summarize_fanout(result: FanoutResult) -> str:
    return (
        f"Delivered to {result.delivered_count} of {result.recipients} recipient(s): "
        f"{', '.join(result.recipient_ids) or 'none'}."
    )


def _summarize_inbox(result: InboxResult) -> str:
    return f"{len(result.messages)} message(s) taken from the inbox; {result.remaining} left."


def _summarize_discover(result: DiscoverResult) -> str:
    found = ", ".join(f"{a.agent_id} ({a.agent_type}, {a.status})" for a in result.agents)
    return f"{len(result.agents)} agent(s): {found or 'none'}."


def _summarize_lock(result: LockResult) -> str:
    if result.status == "acquired":
        return f"Lock {result.name!r} acquired; the lease ends at {result.lease_expires_at:.3f}."
    if result.status == "released":
        return f"Lock {result.name!r} released."
    return f"Lock {result.name!r} not acquired in time: held by {result.holder}, {result.waiters} waiting."


def _summarize_task(result: TaskOutcome) -> str:
    text = f"Task {result.correlation_id} is {result.status}"
    return text + (f" (answered by {result.responder})." if result.responder else f": {result.detail}.")


def _summarize_reply(result: SendResult) -> str:
    if result.delivered:
        return "The answer went to the A2A client (through the router's A2A bridge)."
    return f"The answer was not delivered: {result.reason}."


def _summarize_tasks(result: TasksResult) -> str:
    if not result.tasks:
        return "No A2A tasks."
    lines = [
        f"{task.task_id} ({task.direction}{' to ' + task.peer if task.peer else ''}): {task.state}"
        + (f": {task.status_text}" if task.status_text else "")
        for task in result.tasks
    ]
    return f"{len(lines)} A2A task(s):\n" + "\n".join(lines)


async def _subscribe(agent: Agent, args: SubscribeArgs) -> SubscribeResult:
    return await agent.subscribe(args.target, args.filter)


async def _publish(agent: Agent, args: PublishArgs) -> FanoutResult:
    return await agent.publish(args.target, args.payload, args.region)


async def _unsubscribe(agent: Agent, args: UnsubscribeArgs) -> UnsubscribeResult:
    return await agent.unsubscribe(args.subscription_id)


TOOLS: tuple[Tool[Any, Any], ...] = (
    Tool(
        name="a2a_send_message",
        title="Send a message to an agent",
        description=(
            "Send a message to one agent in the A2A mesh by its id. Returns delivered=true only when the "
            "recipient's runtime acknowledged it; target_status says whether it is online, offline or busy. "
            "Use message_type task_request to ask for work and task_response (same correlation_id) to answer."
        ),
        arguments=SendMessageArgs,
        run=Agent.send_message,
        summarize=_summarize_send,
    ),
    Tool(
        name="a2a_broadcast",
        title="Broadcast to agents of a type",
        description=(
            "Send one message to every online agent of a type (monitor, executor, evolver, analyzer, ...) or "
            "to all agents. Leaves the sender out unless exclude_self is false. Returns recipients (how many it "
            "was addressed to), delivered_count (how many acknowledged) and recipient_ids."
        ),
        arguments=BroadcastArgs,
        run=Agent.broadcast,
        summarize=_summarize_fanout,
    ),
    Tool(
        name="a2a_subscribe",
        title="Subscribe to events",
        description=(
            "Receive events in this agent's inbox (read them with a2a_inbox). Give event_type (region_change, "
            "task_available, peer_discovered: an agent joined, peer_offline: an agent left, knowledge_update) or "
            "a topic name. The optional filter keeps only events whose region overlaps filter.region and/or "
            "that come from or concern agents of filter.agent_type. Subscriptions survive reconnects."
        ),
        arguments=SubscribeArgs,
        run=_subscribe,
        summarize=lambda result: f"Subscription {result.subscription_id} is {result.status}.",
    ),
    Tool(
        name="a2a_inbox",
        title="Read received messages",
        description=(
            "Take the messages and subscribed events this agent has received, oldest first. With "
            "wait_seconds, waits for something to arrive when the inbox is empty. Filter by correlation_id "
            "to collect the answer to a task_request."
        ),
        arguments=InboxArgs,
        run=Agent.inbox,
        summarize=_summarize_inbox,
    ),
    Tool(
        name="a2a_publish",
        title="Publish an event",
        description=(
            "Publish an event to its subscribers: event_type region_change, task_available or knowledge_update, "
            "or any topic name. Give a region when the event has one, for subscribers' region filters."
        ),
        arguments=PublishArgs,
        run=_publish,
        summarize=_summarize_fanout,
    ),
    Tool(
        name="a2a_unsubscribe",
        title="Cancel a subscription",
        description="Stop receiving the events of a subscription made with a2a_subscribe.",
        arguments=UnsubscribeArgs,
        run=_unsubscribe,
        summarize=lambda result: f"Subscription {result.subscription_id} {result.status}.",
    ),
    Tool(
        name="a2a_discover",
        title="Find agents",
        description=(
            "List the agents in the mesh with their status (online, busy, offline) and when they were last "
            "seen, optionally only those of an agent_type, with a capability, or whose region overlaps a region."
        ),
        arguments=DiscoverArgs,
        run=Agent.discover,
        summarize=_summarize_discover,
        read_only=True,
    ),
    Tool(
        name="a2a_lock",
        title="Acquire or release a lock",
        description=(
            "Mutual exclusion among agents: acquire a named lock (waiting up to wait_seconds, first come first "
            "served) or release it. A held lock is released when its lease ends or its holder disconnects."
        ),
        arguments=LockArgs,
        run=Agent.lock,
        summarize=_summarize_lock,
    ),
    Tool(
        name="a2a_barrier",
        title="Wait at a barrier",
        description=(
            "Wait until the expected agents (or a count of agents) have all reached the named barrier, then "
            "continue together. On timeout the error names who never came."
        ),
        arguments=BarrierArgs,
        run=Agent.barrier,
        summarize=lambda result: f"Barrier {result.name!r} released: {', '.join(result.arrived)} arrived.",
    ),
    Tool(
        name="a2a_reply",
        title="Answer an A2A task",
        description=(
            "Answer a task that a standard A2A client gave this agent. Such tasks arrive in a2a_inbox as "
            "task_request messages whose payload has a2a_task {task_id, context_id, text, data}. state: working "
            "(a progress update), input-required (ask the client a question; its answer comes as a new task in "
            "the same context), completed (default), failed, rejected. Give text and/or data; with artifact_name "
            "they become a named result (artifact) of the task."
        ),
        arguments=A2AReply,
        run=Agent.answer_task,
        summarize=_summarize_reply,
    ),
    Tool(
        name="a2a_tasks",
        title="List, read, cancel or answer A2A tasks",
        description=(
            "This agent's standard A2A tasks: inbound (given to it by A2A clients) and outbound (given by it to "
            "remote agents with a2a_send_message to a URL or registry id). action list (filter by direction, "
            "state, context_id; newest first), get (one task with its history and artifacts), cancel (an outbound "
            "task, at the remote agent), reply (answer an open inbound task: answer {state, text, data, "
            "artifact_name}, as a2a_reply takes them)."
        ),
        arguments=TasksArgs,
        run=Agent.tasks,
        summarize=_summarize_tasks,
    ),
    Tool(
        name="a2a_request",
        title="Ask an agent to do a task and wait for the answer",
        description=(
            "Send a task_request to an agent and wait (up to timeout_seconds) for its task_response. The "
            "status is completed, failed, timed_out, or pending/in_progress when no answer came."
        ),
        arguments=RequestArgs,
        run=Agent.request,
        summarize=_summarize_task,
    ),
)
