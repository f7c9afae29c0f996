"""A2A across routers: a standard A2A client asks one router of a cluster for an agent connected to
another; the task is answered, and visible and answerable from any router (the task store is Redis)."""

from __future__ import annotations

import asyncio

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_message_text, new_text_message
from a2a.types.a2a_pb2 import GetTaskRequest, Role, SendMessageRequest, TaskState

from tests.integration.conftest import unique
from webmcp_a2a.client.tasks import InboundTask
from webmcp_a2a.protocol import TaskAnswer, TasksArgs


async def echo(task: InboundTask) -> None:
    await task.complete(f"echo: {task.text}")


async def sdk_client(http: httpx.AsyncClient, url: str):
    card = await A2ACardResolver(http, url).get_agent_card()
    return await create_client(card, ClientConfig(httpx_client=http, streaming=False))


def user_message(text: str) -> SendMessageRequest:
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))


async def test_a_task_sent_to_one_router_is_answered_by_an_agent_at_another_and_seen_at_a_third(
    cluster, cluster_agents
):
    agent_id = unique("echo")
    await cluster_agents(2, "echo", agent_id=agent_id, on_task=echo)
    async with httpx.AsyncClient(timeout=15) as http:
        asking = await sdk_client(http, f"{cluster[0].http_url}/agents/{agent_id}")
        (response,) = [event async for event in asking.send_message(user_message("across"))]
        fetched = await (await sdk_client(http, f"{cluster[1].http_url}/agents/{agent_id}")).get_task(
            GetTaskRequest(id=response.task.id)
        )

    assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_message_text(response.task.status.message) == "echo: across"
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED


async def test_an_agent_answers_with_a2a_tasks_at_its_router_a_task_another_router_waits_for(cluster, cluster_agents):
    agent_id = unique("worker")
    worker = await cluster_agents(1, "worker", agent_id=agent_id)
    async with httpx.AsyncClient(timeout=15) as http:
        asking = await sdk_client(http, f"{cluster[0].http_url}/agents/{agent_id}")
        request = user_message("do it")
        request.configuration.return_immediately = True
        (started,) = [event async for event in asking.send_message(request)]
        for _ in range(50):  # the task reaches the store a moment after the client has its id
            listed = (await worker.tasks(TasksArgs(action="list", direction="inbound"))).tasks
            if listed:
                break
            await asyncio.sleep(0.05)
        (task,) = listed
        await worker.tasks(
            TasksArgs(action="reply", task_id=task.task_id, answer=TaskAnswer(state="completed", text="done"))
        )
        for _ in range(50):
            seen = await asking.get_task(GetTaskRequest(id=started.task.id))
            if seen.status.state == TaskState.TASK_STATE_COMPLETED:
                break
            await asyncio.sleep(0.05)

    assert seen.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_message_text(seen.status.message) == "done"
