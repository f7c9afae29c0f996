"""From the mesh to remote A2A agents: ``a2a_send_message`` to a URL or a registered id reaches a
real ``a2a-sdk`` server (no mesh code in it) and the task's updates come back to the inbox."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.conftest import ROOT, RunningRouter, free_port, running_router, sdk_agent, spawned
from webmcp_a2a.client.agent import Agent, RouterError
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import (
    A2A_REMOTE_KEY,
    A2ARemoteUpdate,
    Envelope,
    Hello,
    InboxArgs,
    SendMessageArgs,
    TasksArgs,
)


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


@pytest.fixture(scope="module")
def conversing() -> Iterator[str]:
    with sdk_agent(script=ROOT / "tests" / "servers" / "a2a_remote_agent.py") as url:
        yield url


async def test_input_required_is_surfaced_and_the_answer_continues_the_remote_task(sender, conversing):
    asked = await sender.send_message(to(conversing, "ask about the weather"))
    (question,) = await until(sender, asked.remote_task_id or "", "input-required")
    assert (question.text, question.final) == ("which city?", False)
    answered = await sender.send_message(
        to(conversing, "Lyon", context_id=question.context_id, task_id=question.task_id)
    )
    assert answered.remote_task_id == asked.remote_task_id
    seen = await updates(sender, question.task_id)
    assert (seen[-1].state, seen[-1].text) == ("completed", "weather in Lyon: sunny")


async def test_a2a_tasks_lists_gets_and_cancels_an_outbound_task(sender, conversing):
    started = await sender.send_message(to(conversing, "wait for me"))
    task_id = started.remote_task_id or ""
    await until(sender, task_id, "working")
    (listed,) = (await sender.tasks(TasksArgs(direction="outbound", state="working"))).tasks
    assert (listed.task_id, listed.peer, listed.status_text) == (task_id, conversing, "waiting")
    (whole,) = (await sender.tasks(TasksArgs(action="get", task_id=task_id))).tasks
    assert [(part.role, part.text) for part in whole.history][:1] == [("user", "wait for me")]
    (cancelled,) = (await sender.tasks(TasksArgs(action="cancel", task_id=task_id))).tasks
    assert cancelled.state == "canceled"
    assert (await sender.tasks(TasksArgs(action="get", task_id=task_id))).tasks[0].state == "canceled"
    with pytest.raises(RouterError) as again:
        await sender.tasks(TasksArgs(action="cancel", task_id=task_id))
    assert (again.value.info.code, again.value.info.field) == ("task_not_cancelable", "task_id")


async def test_a_remote_task_still_open_when_the_ttl_runs_out_is_cancelled_there(sender, conversing):
    args = to(conversing, "wait past the ttl")
    started = await sender.send_message(args.model_copy(update={"ttl_seconds": 1.5}))
    seen = await updates(sender, started.remote_task_id or "")
    assert [u.state for u in seen][-2:] == ["working", "canceled"]
    assert seen[-1].text == "timed out (ttl_seconds): cancelled at the remote agent"
    (stored,) = (await sender.tasks(TasksArgs(action="get", task_id=started.remote_task_id))).tasks
    assert stored.state == "canceled"


async def test_a2a_tasks_cannot_reply_to_an_outbound_task(sender, conversing):
    started = await sender.send_message(to(conversing, "ask before replying"))
    await until(sender, started.remote_task_id or "", "input-required")
    with pytest.raises(RouterError) as closed:
        await sender.tasks(TasksArgs(action="reply", task_id=started.remote_task_id))
    assert (closed.value.info.code, closed.value.info.field) == ("task_closed", "task_id")


async def test_a2a_tasks_names_an_unknown_task(sender):
    with pytest.raises(RouterError) as failure:
        await sender.tasks(TasksArgs(action="get", task_id="no-such-task"))
    assert (failure.value.info.code, failure.value.info.field) == ("task_not_found", "task_id")


async def test_a2a_tasks_lists_inbound_tasks_too(router, sender):
    async def answer(task):
        await task.complete(f"done: {task.text}")

    sender.on_task(answer)
    async with httpx.AsyncClient(timeout=15) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
                "params": {"message": {"role": "user", "kind": "message", "messageId": uuid.uuid4().hex,
                                       "parts": [{"kind": "text", "text": "for you"}]}}}  # fmt: skip
        given = (await http.post(f"{router.http_url}/agents/{sender.agent_id}", json=body)).json()["result"]
    (inbound,) = (await sender.tasks(TasksArgs(direction="inbound"))).tasks
    assert (inbound.task_id, inbound.direction, inbound.state, inbound.status_text) == (
        given["id"], "inbound", "completed", "done: for you",
    )  # fmt: skip


async def until(agent: Agent, task_id: str, state: str) -> list[A2ARemoteUpdate]:
    """The task's updates from the inbox up to the first in ``state``."""
    seen: list[A2ARemoteUpdate] = []
    while not seen or seen[-1].state != state:
        got = await agent.inbox(InboxArgs(wait_seconds=10, correlation_id=task_id, max_messages=1))
        assert got.messages, f"{task_id} never reached {state}: {seen}"
        seen.append(A2ARemoteUpdate.model_validate(got.messages[0].payload[A2A_REMOTE_KEY]))
    return seen[-1:]


async def test_a_remote_agent_that_dies_mid_task_ends_the_task_failed_in_the_inbox(sender):
    port = free_port()
    script = ROOT / "tests" / "servers" / "a2a_remote_agent.py"
    url = f"http://127.0.0.1:{port}"
    with spawned([sys.executable, str(script), "--port", str(port)], f"{url}/.well-known/agent-card.json") as remote:
        started = await sender.send_message(to(url, "wait forever"))
        await until(sender, started.remote_task_id or "", "working")
        remote.kill()
    (last,) = await until(sender, started.remote_task_id or "", "failed")
    assert last.final is True
    assert url in (last.text or "")


async def test_a_resend_of_the_same_message_starts_no_second_remote_task(sender, remote):
    """What a sender's outbox does after a reconnect: the same envelope (same message id) again."""
    envelope = Envelope(to_agent=remote, message_type="task_request", payload={"text": "once"})
    first = await sender.send_envelope(envelope)
    again = await sender.send_envelope(envelope.model_copy(update={"from_agent": None}))
    assert again.remote_task_id == first.remote_task_id
    seen = await updates(sender, first.remote_task_id or "")
    assert [u.text for u in seen if u.final] == ["echo: once"]
    leftover = await sender.inbox(InboxArgs(wait_seconds=1, correlation_id=first.remote_task_id))
    assert leftover.messages == []  # one task: its updates came once
