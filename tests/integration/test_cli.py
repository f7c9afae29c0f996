"""The ``webmcp-a2a`` command, run as a user runs it (the installed script, in its own process),
against a real router process; agents on the other end are the CPython client's."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import free_port, sdk_agent, serving, wait_until_answers
from webmcp_a2a.client.agent import Agent
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import Hello, InboxArgs, SendMessageArgs

COMMAND = str(Path(sys.executable).parent / "webmcp-a2a")


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture(scope="module")
def router_url() -> Iterator[str]:
    with serving("--ack-timeout", "5") as url:
        yield url.replace("http://", "ws://") + "/a2a"


async def webmcp_a2a(router: str, *args: str) -> Run:
    """The command with ``--router router``; asynchronous, so this test's own agents keep answering."""
    process = await asyncio.create_subprocess_exec(
        COMMAND, "--router", router, *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode is not None
    return Run(process.returncode, out.decode(), err.decode())


@pytest.fixture
async def bob(router_url: str) -> AsyncIterator[Agent]:
    agent = await connect(router_url, Hello(agent_id=f"bob-{free_port()}", agent_type="executor"), reconnect=False)
    yield agent
    agent.close()


async def test_send_delivers_to_an_online_agent_and_exits_0(router_url, bob):
    run = await webmcp_a2a(router_url, "send", bob.agent_id, "--text", "hello", "--payload", '{"n": 1}')
    assert run.code == 0, run
    assert f"delivered to {bob.agent_id} (online)" in run.out
    (message,) = (await bob.inbox(InboxArgs(wait_seconds=5))).messages
    assert message.payload == {"n": 1, "text": "hello"}
    assert message.from_agent.startswith("cli-")


async def test_send_to_an_unknown_agent_exits_4_with_the_reason(router_url):
    run = await webmcp_a2a(router_url, "send", "nobody-at-all", "--text", "hi")
    assert run.code == 4, run
    assert "not delivered to nobody-at-all" in run.out


async def test_an_invalid_argument_exits_2_naming_its_field(router_url):
    run = await webmcp_a2a(router_url, "send", "bob", "--priority", "99")
    assert run.code == 2, run
    assert "field: priority" in run.err


async def test_a_payload_that_is_not_a_json_object_exits_2(router_url):
    run = await webmcp_a2a(router_url, "send", "bob", "--payload", "[1, 2]")
    assert run.code == 2, run
    assert "--payload must be a JSON object" in run.err


async def test_an_unreachable_router_exits_3():
    run = await webmcp_a2a(f"ws://127.0.0.1:{free_port()}/a2a", "agents")
    assert run.code == 3, run
    assert "cannot reach the router" in run.err


async def test_agents_lists_the_mesh_as_a_table_and_as_json(router_url, bob):
    table = await webmcp_a2a(router_url, "agents", "--type", "executor")
    assert table.code == 0, table
    header, *rows = table.out.splitlines()
    assert header.split()[:4] == ["AGENT", "TYPE", "STATUS", "LAST"]
    assert any(row.split()[:3] == [bob.agent_id, "executor", "online"] for row in rows)
    listed = json.loads((await webmcp_a2a(router_url, "--json", "agents")).out)
    assert bob.agent_id in {info["agent_id"] for info in listed["agents"]}
    assert not any(info["agent_id"].startswith("cli-") and info["status"] == "online" for info in listed["agents"])


async def test_broadcast_answers_counts_and_ids(router_url, bob):
    run = await webmcp_a2a(router_url, "--json", "broadcast", "--to-type", "executor", "--text", "to all executors")
    assert run.code == 0, run
    result = json.loads(run.out)
    assert bob.agent_id in result["recipient_ids"]
    assert result["recipients"] == len(result["recipient_ids"])
    assert result["delivered_count"] == result["recipients"]


async def test_publish_reaches_a_subscriber(router_url, bob):
    topic = f"news-{bob.agent_id}"
    await bob.subscribe(topic)
    run = await webmcp_a2a(router_url, "publish", topic, "--payload", '{"headline": "cli"}')
    assert run.code == 0, run
    assert f"published on {topic}: delivered to 1 of 1: {bob.agent_id}" in run.out
    (event,) = (await bob.inbox(InboxArgs(wait_seconds=5))).messages
    assert event.payload == {"headline": "cli"}


async def test_tail_prints_what_arrives_and_stops_after_count(router_url, bob, tmp_path):
    tailing = asyncio.create_task(
        webmcp_a2a(
            router_url, "--as", "tail-me", "--credential-file", str(tmp_path / "cred"), "--json", "tail", "--count", "1"
        )
    )
    await _online(bob, "tail-me")
    sent = await bob.send_message(_args("tail-me", {"seq": 7}))
    assert sent.delivered
    run = await tailing
    assert run.code == 0, run
    assert json.loads(run.out)["payload"] == {"seq": 7}


async def test_tail_as_a_known_agent_gets_the_mail_kept_while_it_was_away(router_url, bob, tmp_path):
    credential = tmp_path / "away.credential"
    as_away = ["--as", "away-agent", "--credential-file", str(credential)]
    assert (await webmcp_a2a(router_url, *as_away, "tail", "--seconds", "0.2")).code == 0  # registered, then gone
    assert credential.read_text().strip()
    kept = await bob.send_message(_args("away-agent", {"kept": True}))
    assert kept.stored
    assert not kept.delivered
    run = await webmcp_a2a(router_url, *as_away, "--json", "tail", "--count", "1", "--seconds", "10")
    assert run.code == 0, run
    assert json.loads(run.out)["payload"] == {"kept": True}


async def test_a_router_with_a_join_token_refuses_the_command_without_it():
    port = free_port()
    with serving("--token", "let-me-in-please", port=port):
        router = f"ws://127.0.0.1:{port}/a2a"
        refused = await webmcp_a2a(router, "agents")
        admitted = await webmcp_a2a(router, "--token", "let-me-in-please", "agents")
    assert refused.code == 1, refused
    assert "join_token_required" in refused.err
    assert admitted.code == 0, admitted


async def test_call_asks_an_a2a_agent_and_prints_its_answer(router_url):
    with sdk_agent() as url:
        run = await webmcp_a2a(router_url, "--json", "call", url, "ping from the shell")
    assert run.code == 0, run
    answer = json.loads(run.out)
    assert answer["state"] == "completed"
    said = [*answer["texts"], *(text for texts in answer["artifacts"].values() for text in texts)]
    assert "echo: ping from the shell" in "\n".join(said)


async def test_call_where_no_agent_card_answers_exits_3(router_url):
    run = await webmcp_a2a(router_url, "call", f"http://127.0.0.1:{free_port()}", "anyone?")
    assert run.code == 3, run
    assert "no usable agent card" in run.err


def test_serve_runs_the_router_with_serve_py_flags(tmp_path):
    usage = subprocess.run([COMMAND, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    assert "usage: webmcp-a2a serve" in usage
    assert "--store" in usage
    port = free_port()
    argv = [COMMAND, "serve", "--port", str(port), "--store", ":memory:", "--log-level", "warning"]
    process = subprocess.Popen(argv, cwd=tmp_path)
    try:
        wait_until_answers(f"http://127.0.0.1:{port}/healthz", process)
    finally:
        process.terminate()
        process.wait(10)


def _args(target: str, payload: dict) -> SendMessageArgs:
    return SendMessageArgs(target_agent_id=target, message_type="notification", payload=payload)


async def _online(agent: Agent, agent_id: str) -> None:
    for _ in range(100):
        if any(info.agent_id == agent_id for info in (await agent.discover()).agents):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{agent_id} never came online")


async def test_tail_mesh_shows_the_mesh_and_each_messages_route(router_url, bob):
    watching = asyncio.create_task(webmcp_a2a(router_url, "--json", "tail", "--mesh", "--count", "2"))
    await asyncio.sleep(1.5)  # the watch is open before the message goes
    sender = await connect(router_url, Hello(agent_id=f"sender-{free_port()}", agent_type="executor"), reconnect=False)
    try:
        sent = await sender.send_message(_args(bob.agent_id, {"private": "not for watchers"}))
    finally:
        sender.close()
    run = await watching
    assert run.code == 0, run
    mesh, *events = [json.loads(line) for line in run.out.splitlines()]
    assert mesh["type"] == "mesh"
    assert bob.agent_id in {info["agent_id"] for info in mesh["agents"]}
    came, message = events
    assert (came["type"], came["agent"]["agent_id"], came["agent"]["status"]) == ("agent", sender.agent_id, "online")
    assert (message["type"], message["message_id"], message["recipients"]) == (
        "message",
        sent.message_id,
        [bob.agent_id],
    )
    assert "not for watchers" not in run.out


async def test_tail_mesh_without_the_watch_token_exits_1():
    port = free_port()
    with serving("--watch-token", "only-ops-watch", port=port):
        run = await webmcp_a2a(f"ws://127.0.0.1:{port}/a2a", "tail", "--mesh", "--seconds", "2")
    assert run.code == 1, run
    assert "watch_token_required" in run.err
