"""From the mesh to remote A2A agents: ``a2a_send_message`` to a URL or a registered id reaches a
real ``a2a-sdk`` server (no mesh code in it) and the task's updates come back to the inbox."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.conftest import RunningRouter, free_port, running_router, sdk_agent
from webmcp_a2a.client.agent import Agent, RouterError
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import A2A_REMOTE_KEY, A2ARemoteUpdate, Hello, InboxArgs, SendMessageArgs


@pytest.fixture(scope="module")
def remote() -> Iterator[str]:
    with sdk_agent() as url:
        yield url


@pytest.fixture(scope="module")
def router() -> Iterator[RunningRouter]:
    with running_router() as server:
        yield server


@pytest.fixture
async def sender(router) -> AsyncIterator[Agent]:
    hello = Hello(agent_id=f"sender-{uuid.uuid4().hex[:8]}", agent_type="executor")
    agent = await connect(router.ws_url, hello, reconnect=False)
    yield agent
    agent.close()


async def updates(agent: Agent, task_id: str) -> list[A2ARemoteUpdate]:
    """The task's updates from the inbox, until the final one."""
    seen: list[A2ARemoteUpdate] = []
    while not seen or not seen[-1].final:
        got = await agent.inbox(InboxArgs(wait_seconds=10, correlation_id=task_id))
        assert got.messages, f"no update for {task_id} after {seen}"
        for message in got.messages:
            assert (message.from_agent, message.message_type) == ("a2a", "task_response")
            seen.append(A2ARemoteUpdate.model_validate(message.payload[A2A_REMOTE_KEY]))
    return seen


def to(target: str, text: str, **payload: str) -> SendMessageArgs:
    return SendMessageArgs(target_agent_id=target, message_type="task_request", payload={"text": text, **payload})


async def test_a_message_to_a_remote_url_starts_a_task_whose_updates_reach_the_inbox(sender, remote):
    result = await sender.send_message(to(remote, "hello out there"))
    assert result.delivered is True
    assert result.remote_task_id
    seen = await updates(sender, result.remote_task_id)
    assert [(u.state, u.text) for u in seen][-2:] == [
        ("working", "echoing 15 characters"),
        ("completed", "echo: hello out there"),
    ]
    assert {u.context_id for u in seen} == {result.context_id}
    assert {u.agent for u in seen} == {remote}


async def test_a_registered_remote_agent_is_reached_by_its_id(sender, router, remote):
    async with httpx.AsyncClient(timeout=15) as http:
        registered = await http.post(f"{router.http_url}/registry", json={"card_url": remote, "id": "echo-far"})
    assert registered.status_code == 201
    result = await sender.send_message(to("echo-far", "by id"))
    seen = await updates(sender, result.remote_task_id or "")
    assert (seen[-1].agent, seen[-1].text) == ("echo-far", "echo: by id")


async def test_the_same_context_id_continues_the_conversation(sender, remote):
    first = await sender.send_message(to(remote, "one"))
    await updates(sender, first.remote_task_id or "")
    second = await sender.send_message(to(remote, "two", context_id=first.context_id or ""))
    assert second.context_id == first.context_id
    assert second.remote_task_id != first.remote_task_id  # the first task is over: a new one, same conversation


async def test_an_unreachable_remote_is_a_tool_error_naming_the_target(sender):
    with pytest.raises(RouterError) as failure:
        await sender.send_message(to(f"http://127.0.0.1:{free_port()}", "anyone?"))
    assert (failure.value.info.code, failure.value.info.field) == ("remote_unreachable", "target_agent_id")


async def test_a_url_that_serves_no_card_is_a_tool_error(sender, router):
    with pytest.raises(RouterError) as failure:
        await sender.send_message(to(f"{router.http_url}/static/assets.lock.json", "card?"))
    assert (failure.value.info.code, failure.value.info.field) == ("remote_invalid", "target_agent_id")


async def test_an_unknown_plain_id_is_still_an_absent_mesh_agent(sender):
    result = await sender.send_message(to("nobody-here", "hello"))
    assert (result.delivered, result.target_status) == (False, "offline")
