"""``a2a_tasks``: an agent's A2A tasks as a queue it can read and manage.

Inbound tasks are those A2A clients gave the agent (``POST /agents/X``), outbound ones those it gave
remote agents (``a2a_send_message`` to a URL or registry id); both live in the router's task store,
each agent seeing only its own. ``list`` filters by direction, state and context, most recently
updated first; ``get`` adds the history and artifacts; ``cancel`` cancels an outbound task at the
remote agent; ``reply`` answers an open inbound task, as ``a2a_reply`` does, and shows the task as the
store has it then (an answer to a client that is still connected reaches the store a moment later).
A task given a moment ago, which the SDK has not stored yet, is listed and found as it was given.
"""

from __future__ import annotations

from a2a.helpers.proto_helpers import get_data_parts, get_text_parts
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import ListTasksRequest, Message, Part, Role, Task

from ...protocol import A2AReply, ErrorInfo, TaskAnswer, TaskInfo, TaskPart, TasksRequest, TasksResult
from ..background import Background
from ..coordination import Waiter
from ..registry import Answer
from ..remotes.cards import CardError
from .bridge import Bridge
from .outbound import CLIENT_ERRORS, Outbound
from .tasks import FINAL, TaskStores, context_for, outbound_context_for, state_name, state_value


class TaskBook:
    def __init__(self, tasks: TaskStores, bridge: Bridge, outbound: Outbound) -> None:
        self._store = tasks.store
        self._bridge = bridge
        self._outbound = outbound
        self._running = Background()

    def handle(self, waiter: Waiter, request: TasksRequest, answer: Answer) -> None:
        self._running.spawn(self._run(waiter, request, answer))

    async def _run(self, waiter: Waiter, request: TasksRequest, answer: Answer) -> None:
        agent = waiter.agent_id
        views = {"inbound": context_for(agent), "outbound": outbound_context_for(agent)}
        if request.action == "list":
            directions = list(views) if request.direction == "all" else [request.direction]
            listed = [
                info for direction in directions for info in await self._list(direction, views[direction], request)
            ]
            if "inbound" in directions:  # given a moment ago, not stored yet
                seen = {info.task_id for info in listed}
                listed += [
                    self._info("inbound", task, views["inbound"])
                    for task in self._bridge.given_to(agent)
                    if task.id not in seen and _matches(task, request)
                ]
            listed.sort(key=lambda info: info.updated_at or 0, reverse=True)
            answer(waiter, TasksResult(tasks=listed[: request.limit]))
            return
        assert request.task_id is not None  # the model requires it but to list
        found = [(d, t) for d, view in views.items() if (t := await self._store.get(request.task_id, view))]
        if not found and (just_given := self._bridge.given(request.task_id, agent)) is not None:
            found = [("inbound", just_given)]  # given a moment ago: the SDK has not stored it yet
        if not found:
            answer(waiter, _error("task_not_found", f"no task {request.task_id!r} of {agent!r}"))
            return
        direction, task = found[0]
        if request.action == "get":
            answer(waiter, TasksResult(tasks=[self._info(direction, task, views[direction], history=True)]))
        elif request.action == "reply":
            if direction != "inbound" or task.status.state in FINAL:
                why = "it is over" if direction == "inbound" else "it was given by this agent, not to it"
                answer(waiter, _error("task_closed", f"cannot reply to {request.task_id!r}: {why}"))
                return
            given = request.answer or TaskAnswer()
            await self._bridge.take(agent, A2AReply(task_id=task.id, **dict(given)))
            stored = await self._store.get(task.id, views["inbound"]) or task
            answer(waiter, TasksResult(tasks=[self._info("inbound", stored, views["inbound"], history=True)]))
        elif direction == "inbound" or task.status.state in FINAL:
            why = "answer an inbound task with a2a_reply" if direction == "inbound" else "the task is over"
            answer(waiter, _error("task_not_cancelable", f"cannot cancel {request.task_id!r}: {why}"))
        else:
            try:
                cancelled = await self._outbound.cancel(agent, request.task_id)
            except (CardError, *CLIENT_ERRORS) as error:
                answer(waiter, _error("remote_refused", f"{type(error).__name__}: {error}"))
                return
            answer(waiter, TasksResult(tasks=[self._info("outbound", cancelled, views["outbound"], history=True)]))

    async def _list(self, direction: str, view: ServerCallContext, request: TasksRequest) -> list[TaskInfo]:
        query = ListTasksRequest(page_size=request.limit)
        if request.context_id:
            query.context_id = request.context_id
        if request.state:
            query.status = state_value(request.state)
        return [self._info(direction, task, view) for task in (await self._store.list(query, view)).tasks]

    def _info(self, direction: str, task: Task, view: ServerCallContext, history: bool = False) -> TaskInfo:
        status = task.status
        return TaskInfo(
            task_id=task.id,
            context_id=task.context_id,
            direction="inbound" if direction == "inbound" else "outbound",
            peer=self._store.remote_of(task.id, view) if direction == "outbound" else None,
            state=state_name(status.state),
            updated_at=status.timestamp.ToNanoseconds() / 1e9 if status.HasField("timestamp") else None,
            status_text="\n".join(get_text_parts(list(status.message.parts))) or None,
            artifacts=[_part("artifact", list(a.parts), a.name) for a in task.artifacts],
            history=[_message(m) for m in task.history] if history else [],
        )


def _matches(task: Task, request: TasksRequest) -> bool:
    """What the store's list query asks, asked of a task the store does not have yet."""
    return (not request.context_id or task.context_id == request.context_id) and (
        not request.state or state_name(task.status.state) == request.state
    )


def _message(message: Message) -> TaskPart:
    return _part("user" if message.role == Role.ROLE_USER else "agent", list(message.parts))


def _part(role: str, parts: list[Part], name: str | None = None) -> TaskPart:
    texts = get_text_parts(parts)
    data = [item for item in get_data_parts(parts) if isinstance(item, dict)]
    return TaskPart.model_validate({"role": role, "name": name, "text": "\n".join(texts) or None, "data": data})


def _error(code: str, message: str) -> ErrorInfo:
    return ErrorInfo.model_validate({"code": code, "message": message, "field": "task_id"})
