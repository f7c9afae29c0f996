"""The A2A task stores: the SDK's TaskStore contract on the router's SQLite file, and on a cluster's Redis."""

from __future__ import annotations

import pytest
from a2a.types.a2a_pb2 import ListTasksRequest, Task, TaskState, TaskStatus
from a2a.utils.errors import InvalidParamsError
from a2a.utils.task import encode_page_token

from webmcp_a2a.router.a2a.tasks import MeshTaskStore, SqliteTaskStore, context_for
from webmcp_a2a.router.cluster.redis_store import Keys, RedisStore
from webmcp_a2a.router.cluster.tasks import RedisTaskStore

ALICE, BOB = context_for("alice"), context_for("bob")


def task(task_id: str, seconds: int, state: TaskState = TaskState.TASK_STATE_WORKING, context_id: str = "c1") -> Task:
    made = Task(id=task_id, context_id=context_id, status=TaskStatus(state=state))
    made.status.timestamp.FromSeconds(1_800_000_000 + seconds)
    return made


@pytest.fixture(params=["sqlite", "redis"])
def store(request, tmp_path):
    if request.param == "sqlite":
        opened: MeshTaskStore = SqliteTaskStore(str(tmp_path / "router.sqlite3"))
        yield opened
        opened.close()
        return
    shared = RedisStore(request.getfixturevalue("redis_url"), "test", Keys(f"{tmp_path.name}:"))
    yield RedisTaskStore(shared)
    shared.close()


async def test_a_saved_task_is_read_back_whole(store):
    saved = task("t1", 1)
    saved.history.add(message_id="m1", parts=[{"text": "hello"}])
    await store.save(saved, ALICE)
    assert await store.get("t1", ALICE) == saved


async def test_an_agent_sees_only_its_own_tasks(store):
    await store.save(task("t1", 1), ALICE)
    assert await store.get("t1", BOB) is None
    assert (await store.list(ListTasksRequest(), BOB)).tasks == []


async def test_tasks_survive_reopening_the_file(tmp_path):
    path = str(tmp_path / "router.sqlite3")
    first = SqliteTaskStore(path)
    await first.save(task("t1", 1, TaskState.TASK_STATE_COMPLETED), ALICE)
    first.close()
    again = SqliteTaskStore(path)
    try:
        stored = await again.get("t1", ALICE)
        assert stored is not None
        assert stored.status.state == TaskState.TASK_STATE_COMPLETED
    finally:
        again.close()


async def test_saving_again_replaces_the_task(store):
    await store.save(task("t1", 1), ALICE)
    await store.save(task("t1", 2, TaskState.TASK_STATE_COMPLETED), ALICE)
    listed = await store.list(ListTasksRequest(), ALICE)
    assert [(t.id, t.status.state) for t in listed.tasks] == [("t1", TaskState.TASK_STATE_COMPLETED)]


async def test_listing_is_newest_first_and_pages_follow_the_cursor(store):
    for n in range(5):
        await store.save(task(f"t{n}", n), ALICE)
    first = await store.list(ListTasksRequest(page_size=2), ALICE)
    assert ([t.id for t in first.tasks], first.total_size, first.page_size) == (["t4", "t3"], 5, 2)
    second = await store.list(ListTasksRequest(page_size=2, page_token=first.next_page_token), ALICE)
    third = await store.list(ListTasksRequest(page_size=2, page_token=second.next_page_token), ALICE)
    assert [t.id for t in second.tasks] == ["t2", "t1"]
    assert ([t.id for t in third.tasks], third.next_page_token) == (["t0"], "")


async def test_a_legacy_page_token_names_the_first_task_of_the_page(store):
    for n in range(3):
        await store.save(task(f"t{n}", n), ALICE)
    listed = await store.list(ListTasksRequest(page_token=encode_page_token("t1")), ALICE)
    assert [t.id for t in listed.tasks] == ["t1", "t0"]
    with pytest.raises(InvalidParamsError):
        await store.list(ListTasksRequest(page_token=encode_page_token("nope")), ALICE)


async def test_listing_filters_by_context_state_and_update_time(store):
    await store.save(task("old", 1), ALICE)
    await store.save(task("done", 5, TaskState.TASK_STATE_COMPLETED), ALICE)
    await store.save(task("elsewhere", 9, context_id="c2"), ALICE)
    by_context = await store.list(ListTasksRequest(context_id="c2"), ALICE)
    by_state = await store.list(ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED), ALICE)
    recent = ListTasksRequest()
    recent.status_timestamp_after.FromSeconds(1_800_000_000 + 5)
    assert [t.id for t in by_context.tasks] == ["elsewhere"]
    assert [t.id for t in by_state.tasks] == ["done"]
    assert [t.id for t in (await store.list(recent, ALICE)).tasks] == ["elsewhere", "done"]
