"""Where A2A tasks live: the ``a2a-sdk``'s own ``DatabaseTaskStore`` over the router's SQLite file.

Tasks, their history, status and artifacts are in the table ``tasks`` of ``--store`` (the same
file as the router's other state; ``:memory:`` keeps them for the process only), so they survive a
router restart. Each agent's tasks are its own: the store's owner is the agent a request is for
(:class:`AgentContextBuilder` puts it in the SDK's call context), so an agent's ``ListTasks`` and
``GetTask`` see only its tasks.

An answer that arrives for a task nobody waits for any more (the router restarted between the
request and the answer) is applied here, to the stored task: :meth:`TaskStores.apply`.
"""

from __future__ import annotations

from pathlib import Path

from a2a.helpers.proto_helpers import new_artifact, new_message
from a2a.server.context import ServerCallContext
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.tasks.database_task_store import DatabaseTaskStore
from a2a.types.a2a_pb2 import Part, TaskState
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool
from starlette.requests import Request

from ...protocol import A2AReply

TABLE = "tasks"  # the SDK's default: another name makes it declare a new ORM class per store
FINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}
STATES = {
    "working": TaskState.TASK_STATE_WORKING,
    "input-required": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "rejected": TaskState.TASK_STATE_REJECTED,
}


def _engine(store_path: str) -> AsyncEngine:
    if store_path == ":memory:":  # one connection, or every session would see another empty database
        return create_async_engine("sqlite+aiosqlite://", poolclass=StaticPool)
    return create_async_engine(f"sqlite+aiosqlite:///{Path(store_path).resolve()}")


AGENT_KEY = "webmcp_a2a.agent_id"


class AgentContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, plus which agent of the mesh the request is for (``/agents/{agent_id}``)."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[AGENT_KEY] = request.path_params["agent_id"]
        return context


def context_for(agent_id: str) -> ServerCallContext:
    return ServerCallContext(state={AGENT_KEY: agent_id})


def _owner(context: ServerCallContext) -> str:
    owner: str = context.state[AGENT_KEY]
    return owner


class TaskStores:
    """The SDK's ``DatabaseTaskStore`` in one table of the router's store, owned per agent."""

    def __init__(self, store_path: str) -> None:
        self.engine = _engine(store_path)
        self.store = DatabaseTaskStore(self.engine, table_name=TABLE, owner_resolver=_owner)

    async def apply(self, agent_id: str, reply: A2AReply, parts: list[Part]) -> bool:
        """Apply a late answer to the stored task; False when the agent has no such open task."""
        store = self.store
        context = context_for(agent_id)
        task = await store.get(reply.task_id, context)
        if task is None or task.status.state in FINAL:
            return False  # unknown, or over already (failed for want of an answer, cancelled)
        if reply.artifact_name is not None:
            task.artifacts.append(new_artifact(parts, name=reply.artifact_name))
            parts = []
        if reply.state != "working" or parts:
            task.status.state = STATES[reply.state]
            if parts:
                task.status.message.CopyFrom(new_message(parts, context_id=task.context_id, task_id=task.id))
            task.status.timestamp.GetCurrentTime()
        await store.save(task, context)
        return True

    async def close(self) -> None:
        await self.engine.dispose()
