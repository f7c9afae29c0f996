"""A standard A2A client gives a task to an agent in a page; the AI in the page answers with a2a_reply.

The clients are the official ``a2a-sdk`` 1.x client (asyncio, run on a thread of its own while the
test plays the AI through the page's tools) and raw A2A 0.3 JSON-RPC.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_artifact_text, get_message_text, new_text_message
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageRequest,
    TaskState,
)

from tests.browser.conftest import READY_TIMEOUT_MS, new_mesh, wait_until
from tests.certificates import PKI
from tests.conftest import ROOT, free_port, sdk_agent, serving

T = TypeVar("T")


@pytest.fixture
def a2a_client(server_url):
    """Runs ``work(client)`` for a page agent's SDK client on a thread of its own; returns a Future."""
    threads = ThreadPoolExecutor(max_workers=2)

    def run(agent_id: str, work: Callable[[Client], Coroutine[Any, Any, T]], streaming: bool = False) -> Future[T]:
        return threads.submit(asyncio.run, _with_client(server_url, agent_id, work, streaming))

    yield run
    threads.shutdown(wait=True)


def user_message(text: str, **ids: str) -> SendMessageRequest:
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER, **ids))


def reply(mesh, page, **arguments: Any) -> None:
    result = mesh.call(page, "a2a_reply", arguments)
    assert result["structuredContent"]["delivered"] is True, result


def take_message(mesh, page, matches: Callable[[dict[str, Any]], bool], wait: float = 20) -> dict[str, Any]:
    """The first message in the page's inbox that ``matches``, read as an AI agent reads it."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        result = mesh.call(page, "a2a_inbox", {"wait_seconds": 2, "max_messages": 100})
        for message in result["structuredContent"]["messages"]:
            if matches(message):
                return message
    raise AssertionError(f"no such message reached {page.agent_id}")


def take_a2a_task(mesh, page, text: str) -> dict[str, Any]:
    """The inbound A2A task saying ``text``."""

    def saying(message: dict[str, Any]) -> bool:
        task = message["payload"].get("a2a_task")
        return message["message_type"] == "task_request" and bool(task) and task["text"] == text

    return dict(take_message(mesh, page, saying)["payload"]["a2a_task"])


def test_a_page_agent_answers_an_a2a_client_with_a2a_reply(mesh, alice, server_url):
    question = f"what time is it? {uuid.uuid4()}"
    answer: dict[str, Any] = {}
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",  # an A2A 0.3 client
        "params": {"message": {"role": "user", "parts": [{"kind": "text", "text": question}],
                               "messageId": str(uuid.uuid4()), "kind": "message"}},
    }  # fmt: skip

    def client() -> None:
        answer.update(httpx.post(f"{server_url}/agents/{alice.agent_id}", json=request, timeout=60).json())

    caller = threading.Thread(target=client)
    caller.start()
    task = take_a2a_task(mesh, alice, question)
    for arguments in (
        {"task_id": task["task_id"], "state": "working", "text": "looking at the clock"},
        {"task_id": task["task_id"], "state": "working", "text": "12:00", "artifact_name": "time"},
        {"task_id": task["task_id"], "text": "it is noon"},  # state defaults to completed
    ):
        result = mesh.call(alice, "a2a_reply", arguments)
        assert result["structuredContent"]["delivered"] is True, result
    caller.join(30)
    outcome = answer["result"]
    assert outcome["status"]["state"] == "completed"
    assert outcome["status"]["message"]["parts"] == [{"kind": "text", "text": "it is noon"}]
    (artifact,) = outcome["artifacts"]
    assert (artifact["name"], artifact["parts"]) == ("time", [{"kind": "text", "text": "12:00"}])


def test_a_page_answers_an_a2a_clients_task_with_a2a_tasks_reply(mesh, alice, server_url):
    question = f"how many legs has a spider? {uuid.uuid4()}"
    answer: dict[str, Any] = {}

    def client() -> None:
        message = {"role": "user", "parts": [{"kind": "text", "text": question}], "messageId": str(uuid.uuid4())}
        request = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
        answer.update(httpx.post(f"{server_url}/agents/{alice.agent_id}", json=request, timeout=60).json())

    caller = threading.Thread(target=client)
    caller.start()
    task = take_a2a_task(mesh, alice, question)
    arguments = {"action": "reply", "task_id": task["task_id"], "answer": {"text": "eight"}}
    result = mesh.call(alice, "a2a_tasks", arguments)
    assert result["structuredContent"]["tasks"][0]["direction"] == "inbound", result
    caller.join(30)
    assert answer["result"]["status"]["state"] == "completed"
    assert answer["result"]["status"]["message"]["parts"] == [{"kind": "text", "text": "eight"}]
    again = mesh.call(alice, "a2a_tasks", {**arguments, "answer": {"state": "sleeping"}})
    assert (again["isError"], again["structuredContent"]["error"]["field"]) == (True, "answer.state")


def test_a2a_reply_names_a_bad_argument(mesh, alice):
    result = mesh.call(alice, "a2a_reply", {"task_id": "t-1", "state": "done"})
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["field"] == "state"


def test_a_streaming_sdk_client_sees_each_a2a_reply_live_then_gets_and_lists_the_task(mesh, alice, a2a_client):
    question = f"what is the weather? {uuid.uuid4()}"

    async def ask(client: Client) -> tuple[list[str], Any, set[str]]:
        seen: list[str] = []
        async for event in client.send_message(user_message(question)):
            if event.HasField("status_update"):
                status = event.status_update.status
                seen.append(f"{TaskState.Name(status.state)}: {get_message_text(status.message)}")
            elif event.HasField("artifact_update"):
                artifact = event.artifact_update.artifact
                seen.append(f"artifact {artifact.name}: {get_artifact_text(artifact)}")
        task_id = event.status_update.task_id
        task = await client.get_task(GetTaskRequest(id=task_id))
        listed = {listed.id for listed in (await client.list_tasks(ListTasksRequest())).tasks}
        return seen, task, listed

    asked = a2a_client(alice.agent_id, ask, streaming=True)
    task = take_a2a_task(mesh, alice, question)
    reply(mesh, alice, task_id=task["task_id"], state="working", text="looking outside")
    reply(mesh, alice, task_id=task["task_id"], state="working", text="sunny, 21 C", artifact_name="forecast")
    reply(mesh, alice, task_id=task["task_id"], text="it is sunny")
    seen, got, listed = asked.result(60)
    assert seen[-3:] == [
        "TASK_STATE_WORKING: looking outside",
        "artifact forecast: sunny, 21 C",
        "TASK_STATE_COMPLETED: it is sunny",
    ]
    assert (got.id, got.status.state) == (task["task_id"], TaskState.TASK_STATE_COMPLETED)
    assert task["task_id"] in listed


def test_input_required_from_the_page_then_the_clients_answer_continues_the_task(mesh, alice, a2a_client):
    question = f"book a table {uuid.uuid4()}"
    asking = a2a_client(alice.agent_id, lambda client: _first(client.send_message(user_message(question))))
    task = take_a2a_task(mesh, alice, question)
    reply(mesh, alice, task_id=task["task_id"], state="input-required", text="for how many?")
    first = asking.result(60).task
    assert (first.status.state, get_message_text(first.status.message)) == (
        TaskState.TASK_STATE_INPUT_REQUIRED,
        "for how many?",
    )
    follow_up = user_message(f"four {question}", context_id=first.context_id, task_id=first.id)
    answering = a2a_client(alice.agent_id, lambda client: _first(client.send_message(follow_up)))
    again = take_a2a_task(mesh, alice, f"four {question}")
    assert again["task_id"] == task["task_id"]
    reply(mesh, alice, task_id=task["task_id"], text="booked for four")
    second = answering.result(60).task
    assert (second.id, second.status.state) == (first.id, TaskState.TASK_STATE_COMPLETED)


def test_a_clients_cancel_reaches_the_page(mesh, alice, a2a_client):
    question = f"count to a million {uuid.uuid4()}"
    request = user_message(question)
    request.configuration.return_immediately = True
    started = a2a_client(alice.agent_id, lambda client: _first(client.send_message(request))).result(60).task
    take_a2a_task(mesh, alice, question)

    async def cancel(client: Client) -> Any:
        return await client.cancel_task(CancelTaskRequest(id=started.id))

    cancelled = a2a_client(alice.agent_id, cancel).result(60)
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    notice = take_message(mesh, alice, lambda message: "a2a_cancel" in message["payload"])
    assert notice["payload"]["a2a_cancel"] == {"task_id": started.id}


async def _first(events: Any) -> Any:
    async for event in events:
        return event
    raise AssertionError("no answer")


def test_a_page_agents_answer_reaches_a_task_across_a_router_restart(mesh, tmp_path: Path):
    """Between the client's request and the page's answer the router restarts (same store, same port)."""
    store, port = str(tmp_path / "router.sqlite3"), free_port()
    agent_id = f"survivor-{mesh.mode}"
    question = f"still there? {uuid.uuid4()}"
    request = user_message(question)
    request.configuration.return_immediately = True

    async def start(client: Client) -> Any:
        return await _first(client.send_message(request))

    async def fetch(client: Client) -> Any:
        return await client.get_task(GetTaskRequest(id=started.id))

    with serving("--store", store, port=port) as first:
        page = mesh.context.new_page()
        page.agent_id = agent_id
        page.goto(f"{first}/?agent_id={agent_id}&agent_type=executor")
        wait_until(page, "document.documentElement?.dataset.a2a === 'ready'", timeout=READY_TIMEOUT_MS)
        with ThreadPoolExecutor(1) as thread:
            started = thread.submit(asyncio.run, _with_client(first, agent_id, start)).result(60).task
        task = take_a2a_task(mesh, page, question)
    try:
        with serving("--store", store, port=port) as second:
            wait_until(page, "document.querySelector('#state').textContent === 'connected'", timeout=30_000)
            reply(mesh, page, task_id=task["task_id"], text="yes, after the restart")
            with ThreadPoolExecutor(1) as thread:
                for _ in range(100):
                    got = thread.submit(asyncio.run, _with_client(second, agent_id, fetch)).result(60)
                    if got.status.state == TaskState.TASK_STATE_COMPLETED:
                        break
                    time.sleep(0.1)
            assert got.id == started.id
            assert (got.status.state, get_message_text(got.status.message)) == (
                TaskState.TASK_STATE_COMPLETED,
                "yes, after the restart",
            )
    finally:
        page.close()


async def _with_client(
    base_url: str, agent_id: str, work: Callable[[Client], Coroutine[Any, Any, T]], streaming: bool = False
) -> T:
    """``work(client)`` with the SDK client of ``agent_id`` at ``base_url``, made from its card."""
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, f"{base_url}/agents/{agent_id}").get_agent_card()
        return await work(await create_client(card, ClientConfig(httpx_client=http, streaming=streaming)))


@pytest.fixture(scope="module")
def remote_agent() -> Iterator[str]:
    """An a2a-sdk server with no mesh code in it (the SDK's own routes and an echo executor)."""
    with sdk_agent() as url:
        yield url


def test_a_page_agent_sends_to_a_remote_a2a_agent_by_url_and_reads_its_streamed_answer(mesh, alice, remote_agent):
    question = f"hello remote {uuid.uuid4()}"
    sent = mesh.call(
        alice,
        "a2a_send_message",
        {"target_agent_id": remote_agent, "message_type": "task_request", "payload": {"text": question}},
    )["structuredContent"]
    assert sent["delivered"] is True, sent
    task_id = sent["remote_task_id"]
    seen: list[dict[str, Any]] = []
    while not seen or not seen[-1]["final"]:
        got = mesh.call(alice, "a2a_inbox", {"wait_seconds": 10, "correlation_id": task_id})["structuredContent"]
        assert got["messages"], seen
        seen += [message["payload"]["a2a_remote"] for message in got["messages"]]
    assert [(update["state"], update["text"]) for update in seen][-2:] == [
        ("working", f"echoing {len(question)} characters"),
        ("completed", f"echo: {question}"),
    ]


def test_an_unreachable_remote_url_is_a_tool_error_naming_the_target(mesh, alice):
    result = mesh.call(
        alice,
        "a2a_send_message",
        {"target_agent_id": f"http://127.0.0.1:{free_port()}", "message_type": "task_request", "payload": {}},
    )
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "remote_unreachable"
    assert result["structuredContent"]["error"]["field"] == "target_agent_id"


@pytest.fixture(scope="module")
def conversing_agent() -> Iterator[str]:
    """An a2a-sdk server that asks a question ("ask ...") or works until cancelled ("wait ...")."""
    with sdk_agent(script=ROOT / "tests" / "servers" / "a2a_remote_agent.py") as url:
        yield url


def remote_updates(mesh, page, task_id: str, until: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """The remote task's updates from the page's inbox, up to the first that ``until`` accepts."""
    seen: list[dict[str, Any]] = []
    while not seen or not until(seen[-1]):
        got = mesh.call(page, "a2a_inbox", {"wait_seconds": 10, "correlation_id": task_id, "max_messages": 1})
        assert got["structuredContent"]["messages"], seen
        seen.append(got["structuredContent"]["messages"][0]["payload"]["a2a_remote"])
    return seen


def send_remote(mesh, page, target: str, **payload: str) -> dict[str, Any]:
    arguments = {"target_agent_id": target, "message_type": "task_request", "payload": payload}
    sent: dict[str, Any] = mesh.call(page, "a2a_send_message", arguments)["structuredContent"]
    assert sent["delivered"] is True, sent
    return sent


def test_a_page_answers_a_remote_agents_question_in_the_same_task(mesh, alice, conversing_agent):
    asked = send_remote(mesh, alice, conversing_agent, text=f"ask {uuid.uuid4()}")
    question = remote_updates(mesh, alice, asked["remote_task_id"], lambda u: u["state"] == "input-required")[-1]
    assert question["text"] == "which city?"
    send_remote(
        mesh, alice, conversing_agent, text="Oslo", context_id=question["context_id"], task_id=question["task_id"]
    )
    answer = remote_updates(mesh, alice, asked["remote_task_id"], lambda u: u["final"])[-1]
    assert (answer["state"], answer["text"]) == ("completed", "weather in Oslo: sunny")


def test_a_page_cancels_its_remote_task_with_a2a_tasks(mesh, alice, conversing_agent):
    started = send_remote(mesh, alice, conversing_agent, text=f"wait {uuid.uuid4()}")
    task_id = started["remote_task_id"]
    remote_updates(mesh, alice, task_id, lambda u: u["state"] == "working")
    listed = mesh.call(alice, "a2a_tasks", {"direction": "outbound", "state": "working"})["structuredContent"]
    assert task_id in {task["task_id"] for task in listed["tasks"]}
    cancelled = mesh.call(alice, "a2a_tasks", {"action": "cancel", "task_id": task_id})["structuredContent"]
    assert cancelled["tasks"][0]["state"] == "canceled"
    missing = mesh.call(alice, "a2a_tasks", {"action": "get"})
    assert (missing["isError"], missing["structuredContent"]["error"]["field"]) == (True, "task_id")


def open_page_on(mesh, base_url: str, agent_id: str) -> Any:
    page = mesh.context.new_page()
    page.agent_id = agent_id
    page.goto(f"{base_url}/?agent_id={agent_id}&agent_type=executor")
    wait_until(page, "document.documentElement?.dataset.a2a === 'ready'", timeout=READY_TIMEOUT_MS)
    return page


@contextlib.contextmanager
def federated_hubs(tier: str, pki: PKI, chromium, mesh) -> Iterator[tuple[str, str, Any]]:
    """Hubs ``east`` and ``west`` registered with each other under ``tier``, and the browser context to
    open their pages in (under mtls the hubs serve HTTPS with the test CA's certificates, which the
    browser is told to accept)."""
    if tier == "api-key":
        key_a, key_b = "page-key-for-hub-a-0123", "page-key-for-hub-b-0123"
        with serving("--hub-name", "east") as east, serving("--hub-name", "west") as west:
            for here, there, send, accept in ((west, east, key_a, key_b), (east, west, key_b, key_a)):
                body = {"card_url": there, "trust": "api-key", "send_key": send, "accept_key": accept}
                registered = httpx.post(f"{here}/registry", json=body, timeout=15)
                assert registered.status_code == 201, registered.text
            yield east, west, mesh
        return
    with (
        serving("--hub-name", "east", *pki.serve_flags("server-a")) as east,
        serving("--hub-name", "west", *pki.serve_flags("server-b")) as west,
        new_mesh(chromium, mesh.mode, east, ignore_https_errors=True) as tls_mesh,
    ):
        for here, there, shows, expects in ((west, east, "client-b", "client-a"), (east, west, "client-a", "client-b")):
            body = pki.mtls_registration(there, shows, expects)
            registered = httpx.post(f"{here}/registry", json=body, timeout=15, verify=pki.trusting())
            assert registered.status_code == 201, registered.text
        yield east, west, tls_mesh
        assert tls_mesh.foreign_requests == []


@pytest.mark.parametrize("tier", ["api-key", "mtls"])
def test_pages_on_two_federated_hubs_exchange_a_direct_message_and_an_a2a_task(mesh, chromium, pki, tier):
    with federated_hubs(tier, pki, chromium, mesh) as (east, west, browser):
        ann, ben = open_page_on(browser, east, f"ann-{mesh.mode}"), open_page_on(browser, west, f"ben-{mesh.mode}")
        note = {"target_agent_id": f"{ann.agent_id}@east", "message_type": "notification", "payload": {"hi": 1}}
        assert browser.call(ben, "a2a_send_message", note)["structuredContent"]["delivered"] is True
        got = take_message(browser, ann, lambda message: message["payload"] == {"hi": 1})
        assert got["from_agent"] == f"{ben.agent_id}@west"
        task = send_remote(browser, ann, f"{ben.agent_id}@west", text="sweep the porch")
        given = take_a2a_task(browser, ben, "sweep the porch")
        reply(browser, ben, task_id=given["task_id"], text="swept")
        answer = remote_updates(browser, ann, task["remote_task_id"], lambda update: update["final"])[-1]
        assert (answer["state"], answer["text"]) == ("completed", "swept")
        ann.close()
        ben.close()
