"""Where A2A tasks live: a table of the router's SQLite file, behind the ``a2a-sdk``'s ``TaskStore``.

Tasks, their history, status and artifacts are in the table ``a2a_tasks`` of ``--store`` (the same
file as the router's other state; ``:memory:`` keeps them for the process only), so they survive a
router restart. Each agent's tasks are its own: the store's owner is the agent a request is for
(:class:`AgentContextBuilder` puts it in the SDK's call context), so an agent's ``ListTasks`` and
``GetTask`` see only its tasks.

Why not the SDK's ``DatabaseTaskStore``: it goes through SQLAlchemy and aiosqlite, a thread hop and
an ORM round per query, and the SDK saves a task at every event, several times per request. That
cost 4x the round trip of the SDK answering in memory (``bench/a2a_roundtrip.py``). Here each save
is one ``INSERT OR REPLACE`` of the serialised protobuf on the router's own thread, durable the
way the router's other state is (WAL, ``synchronous=NORMAL``: safe when the process is killed).
Listing follows the SDK's contract (its ordering, cursors and legacy page tokens).

An answer that arrives for a task nobody waits for any more (the router restarted between the
request and the answer) is applied here, to the stored task: :meth:`TaskStores.apply`.
"""

from __future__ import annotations

import sqlite3
from abc import abstractmethod
from typing import Any, cast

from a2a.helpers.proto_helpers import new_artifact, new_message
from a2a.server.context import ServerCallContext
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.tasks import TaskStore
from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, Part, Task, TaskState
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError
from a2a.utils.task import ListTasksCursor, decode_list_tasks_cursor, decode_page_token, encode_list_tasks_cursor
from starlette.requests import Request

from ...protocol import HUB_KEY_HEADER, A2AReply, TaskStateName
from ..tls import client_fingerprint

_SCHEMA = """
CREATE TABLE IF NOT EXISTS a2a_tasks (
    owner TEXT NOT NULL,
    task_id TEXT NOT NULL,
    context_id TEXT NOT NULL,
    state INTEGER NOT NULL,
    timed INTEGER NOT NULL,  -- 1 when the status has a timestamp: untimed tasks list last
    updated_ns INTEGER NOT NULL,
    task BLOB NOT NULL,  -- the Task, serialised protobuf
    PRIMARY KEY (owner, task_id)
);
CREATE INDEX IF NOT EXISTS a2a_tasks_by_update ON a2a_tasks (owner, timed DESC, updated_ns DESC, task_id DESC);
CREATE TABLE IF NOT EXISTS a2a_remote_tasks (
    owner TEXT NOT NULL,
    task_id TEXT NOT NULL,
    remote TEXT NOT NULL,  -- where the task runs: a registry id or the URL it was sent to
    PRIMARY KEY (owner, task_id)
);
"""
FINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}


def state_value(name: str) -> TaskState:
    """A task state as the mesh names it, as the SDK's enum: ``input-required`` -> ``TASK_STATE_INPUT_REQUIRED``."""
    return cast(TaskState, TaskState.Value("TASK_STATE_" + name.upper().replace("-", "_")))


def state_name(state: TaskState) -> TaskStateName:
    """The SDK's enum as the mesh names it: ``TASK_STATE_INPUT_REQUIRED`` -> ``input-required``."""
    name = TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")
    return "unknown" if name == "unspecified" else cast(TaskStateName, name)


AGENT_KEY = "webmcp_a2a.agent_id"
HUB_KEY = "webmcp_a2a.hub_key"  # what a federated hub presented, by trust tier


class AgentContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, plus which agent of the mesh the request is for (``/agents/{agent_id}``)."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[AGENT_KEY] = request.path_params["agent_id"]
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        context.state[HUB_KEY] = {
            "api-key": request.headers.get(HUB_KEY_HEADER),
            "bearer": token if scheme.lower() == "bearer" else None,
            "mtls": client_fingerprint(request.scope),
        }
        return context


def context_for(agent_id: str) -> ServerCallContext:
    """The store's view for ``agent_id``'s inbound tasks (those A2A clients gave it)."""
    return ServerCallContext(state={AGENT_KEY: agent_id})


def outbound_context_for(agent_id: str) -> ServerCallContext:
    """The store's view for the tasks ``agent_id`` gave remote agents (no agent id has a ':')."""
    return ServerCallContext(state={AGENT_KEY: f"out:{agent_id}"})


def owner_of(context: ServerCallContext) -> str:
    owner: str = context.state[AGENT_KEY]
    return owner


class MeshTaskStore(TaskStore):
    """The SDK's ``TaskStore``, and where each outbound task runs (a registry id or a URL)."""

    @abstractmethod
    def note_remote(self, task_id: str, remote: str, context: ServerCallContext) -> None:
        """Remember where an outbound task runs (to cancel it there)."""

    @abstractmethod
    def remote_of(self, task_id: str, context: ServerCallContext) -> str | None: ...

    @abstractmethod
    def close(self) -> None: ...


class SqliteTaskStore(MeshTaskStore):
    """The SDK's ``TaskStore`` on one SQLite table, each task owned by the agent it was sent to."""

    def __init__(self, path: str) -> None:
        # Autocommit, one event loop: as the router's own store (router/store.py).
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    async def save(self, task: Task, context: ServerCallContext) -> None:
        timed, updated_ns, _ = sort_key(task)
        self._db.execute(
            "INSERT OR REPLACE INTO a2a_tasks VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                owner_of(context),
                task.id,
                task.context_id,
                task.status.state,
                timed,
                updated_ns,
                task.SerializeToString(),
            ),
        )

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        row = self._db.execute(
            "SELECT task FROM a2a_tasks WHERE owner = ? AND task_id = ?", (owner_of(context), task_id)
        ).fetchone()
        return None if row is None else Task.FromString(row[0])

    def note_remote(self, task_id: str, remote: str, context: ServerCallContext) -> None:
        self._db.execute(
            "INSERT OR IGNORE INTO a2a_remote_tasks VALUES (?, ?, ?)", (owner_of(context), task_id, remote)
        )

    def remote_of(self, task_id: str, context: ServerCallContext) -> str | None:
        row = self._db.execute(
            "SELECT remote FROM a2a_remote_tasks WHERE owner = ? AND task_id = ?", (owner_of(context), task_id)
        ).fetchone()
        return None if row is None else str(row[0])

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._db.execute("DELETE FROM a2a_tasks WHERE owner = ? AND task_id = ?", (owner_of(context), task_id))

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """Newest status first (then by id), filtered by context, state and update time; a page
        token is the SDK's cursor (the last task of the previous page) or a legacy task id."""
        where = ["owner = ?"]
        args: list[Any] = [owner_of(context)]
        if params.context_id:
            where.append("context_id = ?")
            args.append(params.context_id)
        if params.status:
            where.append("state = ?")
            args.append(params.status)
        if params.HasField("status_timestamp_after"):
            where.append("timed = 1 AND updated_ns >= ?")
            args.append(params.status_timestamp_after.ToNanoseconds())
        filtered = " AND ".join(where)
        (total,) = self._db.execute(f"SELECT count(*) FROM a2a_tasks WHERE {filtered}", args).fetchone()
        page = list(args)
        if params.page_token:
            filtered += " AND (timed, updated_ns, task_id) < (?, ?, ?)"
            page += self._page_start(params.page_token, context)
        page_size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
        rows = self._db.execute(
            f"SELECT task FROM a2a_tasks WHERE {filtered} ORDER BY timed DESC, updated_ns DESC, task_id DESC LIMIT ?",
            [*page, page_size + 1],
        ).fetchall()
        tasks = [Task.FromString(task) for (task,) in rows[:page_size]]
        more = len(rows) > page_size
        return ListTasksResponse(
            tasks=tasks,
            total_size=total,
            page_size=page_size,
            next_page_token=encode_list_tasks_cursor(cursor_of(tasks[-1])) if more else None,
        )

    def _page_start(self, token: str, context: ServerCallContext) -> tuple[Any, ...]:
        cursor = decode_list_tasks_cursor(token)
        if cursor is not None:
            return cursor.sort_key()
        row = self._db.execute(  # a legacy token names the first task of the page: start just above it
            "SELECT timed, updated_ns, task_id || char(0) FROM a2a_tasks WHERE owner = ? AND task_id = ?",
            (owner_of(context), decode_page_token(token)),
        ).fetchone()
        if row is None:
            raise InvalidParamsError(f"Invalid page token: {token}")
        return tuple(row)


def sort_key(task: Task) -> tuple[int, int, str]:
    """Where ``task`` lists: by (has a status time, that time, id), descending (the SDK's order)."""
    timed = task.HasField("status") and task.status.HasField("timestamp")
    return int(timed), task.status.timestamp.ToNanoseconds() if timed else 0, task.id


def cursor_of(task: Task) -> ListTasksCursor:
    timed, updated_ns, task_id = sort_key(task)
    return ListTasksCursor(timestamp_ns=updated_ns if timed else None, task_id=task_id)


class TaskStores:
    """The A2A task store, and late answers applied to it."""

    def __init__(self, store: MeshTaskStore) -> None:
        self.store = store

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
            task.status.state = state_value(reply.state)
            if parts:
                task.status.message.CopyFrom(new_message(parts, context_id=task.context_id, task_id=task.id))
            task.status.timestamp.GetCurrentTime()
        await store.save(task, context)
        return True

    async def close(self) -> None:
        self.store.close()
