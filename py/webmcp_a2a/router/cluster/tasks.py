"""A2A tasks a cluster shares: the SDK's ``TaskStore`` on Redis, so any router shows and updates any task.

One hash per owner (``a2a-tasks:OWNER``: task id -> the serialised ``Task``) and one for where
outbound tasks run (``a2a-remote:OWNER``). Each call is one round trip through the cluster's
:class:`~.redis_store.RedisStore`, as each is one SQLite statement in
:class:`~..a2a.tasks.SqliteTaskStore`. Listing reads the owner's tasks and sorts them here, in the
SDK's order and with its cursors (an agent has hundreds of tasks, not millions).

Which router *executes* a task is another matter: the one whose A2A endpoint received the request.
An agent's answer that reaches another router's bridge is passed to it (:data:`WAITING`).
"""

from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, Task
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE
from a2a.utils.errors import InvalidParamsError
from a2a.utils.task import decode_list_tasks_cursor, decode_page_token, encode_list_tasks_cursor

from ..a2a.tasks import MeshTaskStore, cursor_of, owner_of, sort_key
from .redis_store import RedisStore

#: Hash: task id -> the router whose bridge waits for the task's answers (while it does).
WAITING = "a2a-waiting"


class RedisTaskStore(MeshTaskStore):
    def __init__(self, store: RedisStore) -> None:
        self._store = store
        self._prefix = store.keys.prefix

    def _tasks(self, context: ServerCallContext) -> str:
        return f"{self._prefix}a2a-tasks:{owner_of(context)}"

    def _remotes(self, context: ServerCallContext) -> str:
        return f"{self._prefix}a2a-remote:{owner_of(context)}"

    def close(self) -> None:
        """Nothing of its own: the cluster closes its Redis connection."""

    async def save(self, task: Task, context: ServerCallContext) -> None:
        key, data = self._tasks(context), task.SerializeToString()
        self._store.call(lambda: self._store.redis.hset(key, task.id, data))

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        key = self._tasks(context)
        data: bytes | None = self._store.call(lambda: self._store.redis.hget(key, task_id))
        return None if data is None else Task.FromString(data)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        key = self._tasks(context)
        self._store.call(lambda: self._store.redis.hdel(key, task_id))

    def note_remote(self, task_id: str, remote: str, context: ServerCallContext) -> None:
        key = self._remotes(context)
        self._store.call(lambda: self._store.redis.hsetnx(key, task_id, remote))

    def remote_of(self, task_id: str, context: ServerCallContext) -> str | None:
        key = self._remotes(context)
        remote: bytes | None = self._store.call(lambda: self._store.redis.hget(key, task_id))
        return None if remote is None else remote.decode()

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """As :meth:`~..a2a.tasks.SqliteTaskStore.list`: newest status first, filtered, paged by cursor."""
        key = self._tasks(context)
        every = [Task.FromString(data) for data in self._store.call(lambda: self._store.redis.hvals(key))]
        after = params.status_timestamp_after.ToNanoseconds() if params.HasField("status_timestamp_after") else None
        chosen = sorted(
            (
                task
                for task in every
                if (not params.context_id or task.context_id == params.context_id)
                and (not params.status or task.status.state == params.status)
                and (after is None or (sort_key(task)[0] == 1 and sort_key(task)[1] >= after))
            ),
            key=sort_key,
            reverse=True,
        )
        total = len(chosen)
        if params.page_token:
            start = _page_start(params.page_token, every)
            chosen = [task for task in chosen if sort_key(task) < start]
        page_size = params.page_size or DEFAULT_LIST_TASKS_PAGE_SIZE
        tasks = chosen[:page_size]
        return ListTasksResponse(
            tasks=tasks,
            total_size=total,
            page_size=page_size,
            next_page_token=encode_list_tasks_cursor(cursor_of(tasks[-1])) if len(chosen) > page_size else None,
        )


def _page_start(token: str, tasks: list[Task]) -> tuple[int, int, str]:
    cursor = decode_list_tasks_cursor(token)
    if cursor is not None:
        has_time, updated_ns, task_id = cursor.sort_key()
        return int(has_time), updated_ns, task_id
    first = decode_page_token(token)  # a legacy token names the first task of the page: start just above it
    for task in tasks:
        if task.id == first:
            timed, updated_ns, task_id = sort_key(task)
            return timed, updated_ns, task_id + "\0"
    raise InvalidParamsError(f"Invalid page token: {token}")
