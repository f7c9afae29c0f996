"""Standard A2A clients reach agents of the mesh: the official a2a-sdk client, and raw JSON-RPC 0.3,
against the example echo agent (a real process) through a real router."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, create_client
from a2a.helpers.proto_helpers import (
    get_artifact_text,
    get_data_parts,
    get_message_text,
    new_task_from_user_message,
    new_text_message,
)
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)

from tests.conftest import ROOT, RunningRouter, eventually, free_port, running_router, serving
from webmcp_a2a.client.agent import Agent, RouterError
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import A2AReply, Hello, TaskAnswer, TasksArgs
from webmcp_a2a.router.a2a.bridge import InProcessLink


@pytest.fixture(scope="module")
def router() -> Iterator[RunningRouter]:
    with running_router(ack_timeout=5.0, a2a_reply_timeout=10.0) as server:
        yield server


@pytest.fixture(scope="module")
def echo(router: RunningRouter, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """examples/echo_agent.py, as a user runs it; yields its A2A URL."""
    credential = tmp_path_factory.mktemp("echo") / "echo.credential"
    argv = [sys.executable, str(ROOT / "examples" / "echo_agent.py"), "--router", router.ws_url, "--id", "echo"]
    process = subprocess.Popen([*argv, "--credential-file", str(credential)])
    try:
        asyncio.run(eventually(lambda: router.router.registry.online("echo") is not None, timeout=20))
        yield f"{router.http_url}/agents/echo"
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=15) as client:
        yield client


def user_message(text: str) -> SendMessageRequest:
    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))


async def sdk_client(http: httpx.AsyncClient, url: str, streaming: bool = False) -> Client:
    """The a2a-sdk client for the agent at ``url``, made from its card as a user makes it."""
    card = await A2ACardResolver(http, url).get_agent_card()
    return await create_client(card, ClientConfig(httpx_client=http, streaming=streaming))


async def completed(client: Client, task_id: str) -> Task:
    """The task once it is completed (or as it stands after ten seconds)."""
    for _ in range(100):
        task = await client.get_task(GetTaskRequest(id=task_id))
        if task.status.state == TaskState.TASK_STATE_COMPLETED:
            break
        await asyncio.sleep(0.1)
    return task


async def start_task(client: Client, text: str) -> Task:
    """Send ``text`` without waiting for the answer (``return_immediately``): the task as it starts."""
    request = user_message(text)
    request.configuration.return_immediately = True
    (started,) = [event async for event in client.send_message(request)]
    return started.task


async def test_an_sdk_client_finds_the_agents_card_and_gets_its_answer(echo, http):
    card = await A2ACardResolver(http, echo).get_agent_card()
    assert card.name == "echo"
    assert {(i.url, i.protocol_version) for i in card.supported_interfaces} == {(echo, "1.0"), (echo, "0.3")}
    client = await create_client(card, ClientConfig(httpx_client=http, streaming=False))
    (response,) = [event async for event in client.send_message(user_message("hello mesh"))]
    task = response.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert get_message_text(task.status.message) == "echo: hello mesh"
    fetched = await client.get_task(GetTaskRequest(id=task.id))
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED


async def test_a_streaming_client_sees_the_working_update_then_the_answer(echo, http):
    client = await sdk_client(http, echo, streaming=True)
    states = []
    texts = []
    async for event in client.send_message(user_message("stream me")):
        if event.HasField("status_update"):
            states.append(event.status_update.status.state)
            texts.append(get_message_text(event.status_update.status.message))
    assert states[-2:] == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]
    assert texts[-2:] == ["echoing 9 characters", "echo: stream me"]


async def test_a_0_3_client_sends_with_the_0_3_method_name(echo):
    request = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "message/send",
        "params": {"message": {"role": "user", "parts": [{"kind": "text", "text": "old school"}],
                               "messageId": "m-03", "kind": "message"}},
    }  # fmt: skip
    async with httpx.AsyncClient(timeout=15) as http:  # no A2A-Version header: 0.3
        answer = (await http.post(echo, json=request)).json()
    assert answer["result"]["status"]["state"] == "completed"
    assert answer["result"]["status"]["message"]["parts"] == [{"kind": "text", "text": "echo: old school"}]


async def test_the_sdks_0_3_client_is_served(echo, http):
    """The SDK speaks 0.3 (its compat transport) to a card whose only JSON-RPC interface is 0.3."""
    card = await A2ACardResolver(http, echo).get_agent_card()
    legacy = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(legacy)
    client = await create_client(card, ClientConfig(httpx_client=http, streaming=False))
    assert type(client._transport).__name__ == "CompatJsonRpcTransport"  # type: ignore[attr-defined]
    (response,) = [event async for event in client.send_message(user_message("from 0.3"))]
    assert get_message_text(response.task.status.message) == "echo: from 0.3"
    fetched = await client.get_task(GetTaskRequest(id=response.task.id))
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED


V1 = {"A2A-Version": "1.0"}


@pytest.mark.parametrize(
    ("body", "headers", "code"),
    [
        ("{not json", {}, -32700),
        ('{"jsonrpc": "2.0", "id": 1}', {}, -32600),
        ('{"jsonrpc": "2.0", "id": 1, "method": "tasks/teleport", "params": {}}', {}, -32601),
        ('{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 5}}', V1, -32602),
        ('{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "no-such-task"}}', {}, -32001),
        ('{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}', {"A2A-Version": "9.9"}, -32009),
    ],
    ids=["parse-error", "invalid-request", "method-not-found", "invalid-params", "task-not-found", "version"],
)
async def test_bad_json_rpc_gets_the_specs_error_code(echo, body, headers, code):
    async with httpx.AsyncClient(timeout=15) as http:
        response = await http.post(echo, content=body, headers={"Content-Type": "application/json", **headers})
    assert response.json()["error"]["code"] == code


async def test_cancelling_a_finished_task_is_task_not_cancelable(echo, http):
    client = await sdk_client(http, echo)
    (done,) = [event async for event in client.send_message(user_message("quick"))]
    cancel = {"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": done.task.id}}
    answer = await http.post(echo, json=cancel, headers=V1)
    assert answer.json()["error"]["code"] == -32002


async def test_cards_are_dual_stack_and_revalidate_with_their_etag(echo, router, http):
    for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
        response = await http.get(echo + path)
        card = response.json()
        assert (card["url"], card["protocolVersion"], card["preferredTransport"]) == (echo, "0.3", "JSONRPC")
        again = await http.get(echo + path, headers={"If-None-Match": response.headers["etag"]})
        assert again.status_code == 304
    hub = (await http.get(f"{router.http_url}/.well-known/agent-card.json")).json()
    assert "echo" in {skill["id"] for skill in hub["skills"]}
    assert "a2a" not in {skill["id"] for skill in hub["skills"]}  # the router's own bridge is not listed


async def test_the_hub_answers_any_message_with_the_directory(echo, router, http):
    card = await A2ACardResolver(http, router.http_url).get_agent_card()
    assert {(i.url, i.protocol_version) for i in card.supported_interfaces} == {
        (f"{router.http_url}/", "1.0"),
        (f"{router.http_url}/", "0.3"),
    }
    client = await create_client(card, ClientConfig(httpx_client=http, streaming=False))
    (response,) = [event async for event in client.send_message(user_message("who is here?"))]
    (data,) = get_data_parts(response.message.parts)
    (listed,) = [agent for agent in data["agents"] if agent["id"] == "echo"]
    assert listed["status"] == "online"
    assert listed["card"] == f"{echo}/.well-known/agent-card.json"
    assert "a2a" not in {agent["id"] for agent in data["agents"]}


async def test_the_extended_card_is_for_token_holders_and_says_whether_the_agent_is_connected_now():
    token = "a2a-token-0123456789"
    with running_router(join_tokens=[token]) as server:
        hello = Hello(agent_id="napper", agent_type="executor", join_token=token)
        napper = await connect(server.ws_url, hello, reconnect=False)
        url = f"{server.http_url}/agents/napper"
        ask = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}
        async with httpx.AsyncClient(timeout=5) as anonymous:
            assert (await anonymous.post(url, json=ask)).status_code == 401
        async with httpx.AsyncClient(timeout=5, headers={"Authorization": f"Bearer {token}"}) as http:
            client = await sdk_client(http, url)
            awake = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
            assert awake.description.endswith("Now online.")
            napper.close()
            await eventually(lambda: server.router.registry.online("napper") is None)
            asleep = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
            assert "Now offline, last seen 20" in asleep.description


async def test_without_join_tokens_no_extended_card_is_offered(echo, http):
    """Without authentication there is nobody to show more to: the card does not offer one."""
    assert not (await A2ACardResolver(http, echo).get_agent_card()).capabilities.extended_agent_card
    ask = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}
    assert (await http.post(echo, json=ask)).json()["error"]["code"] == -32004  # unsupported operation


async def test_subscribing_to_a_running_task_streams_its_next_updates(router, http):
    go_on = asyncio.Event()

    async def work(task):
        await task.update("step 1")
        await go_on.wait()
        await task.update("step 2")
        await task.complete("all steps done")

    stepper = await connect(router.ws_url, Hello(agent_id="stepper", agent_type="executor"), reconnect=False)
    stepper.on_task(work)
    try:
        url = f"{router.http_url}/agents/stepper"
        task_id = (await start_task(await sdk_client(http, url), "in steps")).id
        watcher = await sdk_client(http, url, streaming=True)
        texts: list[str] = []
        async for event in watcher.subscribe(SubscribeToTaskRequest(id=task_id)):
            if event.HasField("task"):  # the task as it stands, first
                assert event.task.id == task_id
                go_on.set()
            elif event.HasField("status_update"):
                texts.append(get_message_text(event.status_update.status.message))
        assert texts[-2:] == ["step 2", "all steps done"]
    finally:
        stepper.close()


async def test_an_agent_the_mesh_does_not_know_is_a_404(router, http):
    assert (await http.get(f"{router.http_url}/agents/nobody/.well-known/agent-card.json")).status_code == 404
    assert (await http.post(f"{router.http_url}/agents/nobody", json={})).status_code == 404
    assert (await http.post(f"{router.http_url}/agents/a2a", json={})).status_code == 404  # reserved


async def test_with_a_join_token_a2a_requests_need_it_as_a_bearer_token():
    with running_router(join_tokens=["a2a-token-0123456789"]) as server:
        base = f"{server.http_url}/agents/someone"
        server.router.registry.remember(Hello(agent_id="someone", agent_type="executor"), 0.0)
        async with httpx.AsyncClient(timeout=5) as http:
            card = (await http.get(f"{base}/.well-known/agent-card.json")).json()
            assert card["securitySchemes"]["joinToken"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
            refused = await http.post(base, json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {}})
            assert refused.status_code == 401
            allowed = await http.post(
                base,
                json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}},
                headers={"Authorization": "Bearer a2a-token-0123456789"},
            )
            assert allowed.json()["error"]["code"] == -32001  # through to the SDK: no such task


async def test_with_a_join_token_the_hub_lists_its_agents_only_to_token_holders():
    token = "a2a-token-0123456789"
    with running_router(join_tokens=[token]) as server:
        server.router.registry.remember(Hello(agent_id="hidden", agent_type="executor"), 0.0)
        async with httpx.AsyncClient(timeout=5) as http:
            public = (await http.get(f"{server.http_url}/.well-known/agent-card.json")).json()
            assert [skill["id"] for skill in public["skills"]] == ["webmcp-a2a.directory"]  # no agent
            ask = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}
            assert (await http.post(f"{server.http_url}/", json=ask)).status_code == 401
            granted = await http.post(f"{server.http_url}/", json=ask, headers={"Authorization": f"Bearer {token}"})
            assert "hidden" in {skill["id"] for skill in granted.json()["result"]["skills"]}


async def test_an_artifact_reaches_the_client(router, http):
    maker = await connect(router.ws_url, Hello(agent_id="maker", agent_type="executor"), reconnect=False)

    async def make(task):
        await task.add_artifact("report", text=f"report on {task.text}")
        await task.complete("done")

    maker.on_task(make)
    try:
        client = await sdk_client(http, f"{router.http_url}/agents/maker")
        (response,) = [event async for event in client.send_message(user_message("the weather"))]
        (artifact,) = response.task.artifacts
        assert (artifact.name, get_artifact_text(artifact)) == ("report", "report on the weather")
    finally:
        maker.close()


async def test_input_required_then_the_clients_answer_continues_the_same_task(router, http):
    asker = await connect(router.ws_url, Hello(agent_id="asker", agent_type="executor"), reconnect=False)
    seen: list[tuple[str, str]] = []

    async def ask(task):
        seen.append((task.task_id, task.text))
        if len(seen) == 1:
            await task.require_input("which city?")
        else:
            await task.complete(f"weather in {task.text}: sunny")

    asker.on_task(ask)
    try:
        client = await sdk_client(http, f"{router.http_url}/agents/asker")
        (first,) = [event async for event in client.send_message(user_message("weather please"))]
        assert first.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert get_message_text(first.task.status.message) == "which city?"
        follow_up = new_text_message(
            "Lyon", role=Role.ROLE_USER, context_id=first.task.context_id, task_id=first.task.id
        )
        (second,) = [event async for event in client.send_message(SendMessageRequest(message=follow_up))]
        assert second.task.id == first.task.id
        assert second.task.status.state == TaskState.TASK_STATE_COMPLETED
        assert get_message_text(second.task.status.message) == "weather in Lyon: sunny"
        assert [task_id for task_id, _ in seen] == [first.task.id, first.task.id]
    finally:
        asker.close()


async def test_a_cancel_from_the_client_reaches_the_agent(router, http):
    worker = await connect(router.ws_url, Hello(agent_id="slowpoke", agent_type="executor"), reconnect=False)
    heard: list[str] = []

    async def work(task):
        await task.update("started")
        await asyncio.wait_for(task.cancelled.wait(), 10)
        heard.append(task.task_id)

    worker.on_task(work)
    try:
        client = await sdk_client(http, f"{router.http_url}/agents/slowpoke")
        started = await start_task(client, "take your time")
        cancelled = await client.cancel_task(CancelTaskRequest(id=started.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        await eventually(lambda: heard == [started.id])
    finally:
        worker.close()


async def test_a_task_survives_a_router_restart_between_request_and_answer(tmp_path):
    store, port = str(tmp_path / "router.sqlite3"), free_port()
    release = asyncio.Event()

    async def work(task):
        await task.update("on it")
        await release.wait()
        await task.complete("done after the restart")

    with serving("--store", store, port=port) as first:  # a real serve.py process, restarted below
        hello = Hello(agent_id="patient", agent_type="executor")
        worker = await connect(f"ws://127.0.0.1:{port}/a2a", hello, on_task=work)  # reconnects by itself
        async with httpx.AsyncClient(timeout=15) as http:
            client = await sdk_client(http, f"{first}/agents/patient")
            started = await start_task(client, "survive this")
    with serving("--store", store, port=port) as second:
        await eventually(lambda: worker.state == "connected", timeout=20)
        release.set()  # the answer goes to the new router, which has no request waiting for it
        async with httpx.AsyncClient(timeout=15) as http:
            client = await sdk_client(http, f"{second}/agents/patient")
            task = await completed(client, started.id)
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            assert get_message_text(task.status.message) == "done after the restart"
        worker.close()


async def test_a_task_for_an_offline_agent_waits_and_is_handed_over_when_it_connects(router, http):
    hello = Hello(agent_id="sleeper", agent_type="executor")
    sleeper = await connect(router.ws_url, hello, reconnect=False)
    credential = sleeper.credential
    sleeper.close()
    await eventually(lambda: router.router.registry.online("sleeper") is None)
    client = await sdk_client(http, f"{router.http_url}/agents/sleeper")
    waiting = await start_task(client, "for when you wake up")
    assert waiting.status.state == TaskState.TASK_STATE_SUBMITTED

    async def answer(task):
        await task.complete(f"good morning: {task.text}")

    # on_task before the hello: the waiting task is handed over right after the welcome
    awake = await connect(
        router.ws_url, hello.model_copy(update={"credential": credential}), reconnect=False, on_task=answer
    )
    try:
        task = await completed(client, waiting.id)
        assert get_message_text(task.status.message) == "good morning: for when you wake up"
    finally:
        awake.close()


async def test_a_task_fails_when_its_agent_does_not_answer_in_time():
    with running_router(a2a_reply_timeout=0.5) as server:
        mute = await connect(server.ws_url, Hello(agent_id="mute", agent_type="executor"), reconnect=False)
        mute.on_task(lambda task: None)  # takes tasks, never answers
        try:
            async with httpx.AsyncClient(timeout=15) as http:
                client = await sdk_client(http, f"{server.http_url}/agents/mute")
                (response,) = [event async for event in client.send_message(user_message("hello?"))]
            assert response.task.status.state == TaskState.TASK_STATE_FAILED
            assert "no answer from mute" in get_message_text(response.task.status.message)
        finally:
            mute.close()


async def test_list_tasks_shows_only_the_agents_own_tasks(echo, router, http):
    client = await sdk_client(http, echo)
    (response,) = [event async for event in client.send_message(user_message("list me"))]
    listed = await client.list_tasks(ListTasksRequest())
    assert response.task.id in {task.id for task in listed.tasks}
    other = await create_client(
        await A2ACardResolver(http, f"{router.http_url}/agents/maker").get_agent_card(),
        ClientConfig(httpx_client=http, streaming=False),
    )
    assert response.task.id not in {task.id for task in (await other.list_tasks(ListTasksRequest())).tasks}


async def test_a_1_0_method_name_without_the_version_header_is_served_as_1_0(echo):
    """Clients (the A2A TCK among them) send 1.0 method names without A2A-Version; the SDK alone answers -32009."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "no-such-task"}}
    async with httpx.AsyncClient(timeout=15) as http:
        assert (await http.post(echo, json=body)).json()["error"]["code"] == -32001  # task not found
        sent = await http.post(
            echo,
            json={"jsonrpc": "2.0", "id": 2, "method": "SendMessage",
                  "params": {"message": {"role": "ROLE_USER", "messageId": "m-10", "parts": [{"text": "v1"}]}}},
        )  # fmt: skip
    assert sent.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a2a_tasks_reply_answers_an_inbound_task_as_a2a_reply_does(router, http):
    quiet = await connect(router.ws_url, Hello(agent_id="quiet", agent_type="executor"), reconnect=False)
    try:
        client = await sdk_client(http, f"{router.http_url}/agents/quiet")
        task_id = (await start_task(client, "what is 6 x 7?")).id
        (listed,) = (await quiet.tasks(TasksArgs(direction="inbound"))).tasks
        assert (listed.task_id, listed.state) == (task_id, "submitted")
        answer = TaskAnswer(state="working", text="42", artifact_name="product")
        await quiet.tasks(TasksArgs(action="reply", task_id=task_id, answer=answer))
        await quiet.tasks(TasksArgs(action="reply", task_id=task_id, answer=TaskAnswer(text="done")))
        task = await completed(client, task_id)
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert [(a.name, get_artifact_text(a)) for a in task.artifacts] == [("product", "42")]
        assert get_message_text(task.status.message) == "done"
    finally:
        quiet.close()


async def test_a2a_tasks_reply_to_a_finished_task_is_task_closed(router, http):
    closer = await connect(router.ws_url, Hello(agent_id="closer", agent_type="executor"), reconnect=False)
    closer.on_task(lambda task: task.complete("closed"))
    try:
        client = await sdk_client(http, f"{router.http_url}/agents/closer")
        (response,) = [event async for event in client.send_message(user_message("close it"))]
        with pytest.raises(RouterError) as closed:
            await closer.tasks(TasksArgs(action="reply", task_id=response.task.id, answer=TaskAnswer(text="again")))
        assert (closed.value.info.code, closed.value.info.field) == ("task_closed", "task_id")
        assert get_message_text((await completed(client, response.task.id)).status.message) == "closed"
    finally:
        closer.close()


async def in_process_agent(router: RunningRouter, agent_id: str) -> Agent:
    """An agent inside the router's process (as the A2A bridge is), welcomed; run on the router's loop."""
    agent = Agent(Hello(agent_id=agent_id, agent_type="executor"))
    agent.connection_made(InProcessLink(router.router, agent))
    await agent.welcomed()
    return agent


async def test_a2a_tasks_lists_and_finds_a_task_given_a_moment_ago_that_the_sdk_has_not_stored_yet(router):
    # The SDK stores a new task a few turns of the loop after the request starts; the bridge gives
    # it to the agent at once. Here the store never gets it: the agent's lookup must not need it.
    bridge = router.app.state.a2a.bridge
    task = new_task_from_user_message(new_text_message("quick, before it is stored", role=Role.ROLE_USER))

    async def ask_and_answer_at_once() -> tuple[str, A2AReply]:
        agent = await in_process_agent(router, "early")
        answers = bridge.expect(task, "early")
        try:
            (listed,) = (await agent.tasks(TasksArgs(direction="inbound", state="submitted"))).tasks
            assert listed.task_id == task.id
            (found,) = (await agent.tasks(TasksArgs(action="get", task_id=task.id))).tasks
            await agent.tasks(TasksArgs(action="reply", task_id=task.id, answer=TaskAnswer(text="here")))
            return found.state, await asyncio.wait_for(answers.get(), 5)
        finally:
            bridge.forget(task.id)
            agent.close()

    state, answer = asyncio.run_coroutine_threadsafe(ask_and_answer_at_once(), router.loop).result(10)
    assert (state, answer.text) == ("submitted", "here")


async def test_a_task_given_to_another_agent_is_neither_listed_nor_found(router):
    bridge = router.app.state.a2a.bridge
    task = new_task_from_user_message(new_text_message("not yours", role=Role.ROLE_USER))

    async def look_up() -> str:
        agent = await in_process_agent(router, "nosy")
        bridge.expect(task, "someone-else")
        try:
            assert (await agent.tasks(TasksArgs(direction="inbound"))).tasks == []
            await agent.tasks(TasksArgs(action="get", task_id=task.id))
        except RouterError as error:
            return error.info.code
        finally:
            bridge.forget(task.id)
            agent.close()
        return "found"

    assert asyncio.run_coroutine_threadsafe(look_up(), router.loop).result(10) == "task_not_found"
