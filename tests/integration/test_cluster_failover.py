"""A cluster loses a router: SIGKILL in mid-stream, and Redis going away for a while.

Each test has its own redis-server and routers (they are killed), and agents on the CPython
client with its outbox, its reconnection and a list of the cluster's routers.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from tests.cluster import RedisServer, RouterProcess
from tests.conftest import eventually
from tests.integration.test_cluster import eventually_async
from tests.streams import SENDERS, assert_every_message_applied_once, stream
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import DiscoverArgs, Hello, LockArgs, SendMessageArgs


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


@pytest.fixture
def routers(redis_server):
    started: list[RouterProcess] = []

    def start(count: int = 1) -> list[RouterProcess]:
        fresh = [RouterProcess(redis_server.url) for _ in range(count)]
        started.extend(fresh)
        return fresh

    yield start
    for router in started:
        router.kill()


@pytest.mark.parametrize("killed", ["recipient's", "senders'"])
async def test_sigkill_of_a_router_in_mid_stream_loses_nothing_and_applies_nothing_twice(routers, killed):
    senders_router, recipients_router, spare = routers(3)
    victim = recipients_router if killed == "recipient's" else senders_router
    every = [router.ws_url for router in (senders_router, recipients_router, spare)]

    def starting_at(router: RouterProcess) -> list[str]:  # this router first, then the others in turn
        return [router.ws_url, *(url for url in every if url != router.ws_url)]

    recipient = await connect(
        starting_at(recipients_router),
        Hello(agent_id="sink", agent_type="analyzer"),
        inbox_limit=10_000,
        request_timeout=60,
    )
    applied: list[str] = []
    recipient.on_message(lambda message: applied.append(message.payload["key"]))
    senders = [
        await connect(
            starting_at(senders_router), Hello(agent_id=f"source-{n}", agent_type="executor"), request_timeout=60
        )
        for n in range(SENDERS)
    ]

    streams = asyncio.gather(*(stream(sender, n, "sink") for n, sender in enumerate(senders)))
    await eventually(lambda: len(applied) >= 200, timeout=20, interval=0.001)
    os.kill(victim.process.pid, signal.SIGKILL)
    victim.process.wait()
    applied_before_kill = len(applied)

    await assert_every_message_applied_once(applied, applied_before_kill, streams)
    for agent in (recipient, *senders):
        agent.close()


async def test_a_killed_router_s_agents_go_offline_at_the_others_when_its_lease_runs_out(routers):
    survivor, victim = routers(2)
    watcher = await connect(survivor.ws_url, Hello(agent_id="watcher", agent_type="executor"), reconnect=False)
    doomed = await connect(victim.ws_url, Hello(agent_id="doomed", agent_type="executor"), reconnect=False)

    async def status() -> str | None:
        found = await watcher.discover(DiscoverArgs(include_offline=True))
        return next((agent.status for agent in found.agents if agent.agent_id == "doomed"), None)

    await eventually_async(status, lambda seen: seen == "online")
    victim.kill()
    deadline = asyncio.get_running_loop().time() + 10
    while await status() != "offline" and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.1)

    assert await status() == "offline"
    watcher.close()
    doomed.close()


async def test_while_redis_is_away_local_traffic_flows_and_what_cannot_be_kept_is_refused(redis_server, routers):
    near, far = routers(2)
    a, b = [await connect(near.ws_url, Hello(agent_id=name, agent_type="executor")) for name in ("a", "b")]
    remote = await connect(far.ws_url, Hello(agent_id="remote", agent_type="executor"))
    absent = await connect(far.ws_url, Hello(agent_id="absent", agent_type="executor"), reconnect=False)
    absent.close()
    await asyncio.sleep(0.3)

    redis_server.stop()
    await asyncio.sleep(0.3)

    def to(agent_id: str) -> SendMessageArgs:
        return SendMessageArgs(target_agent_id=agent_id, message_type="notification", payload={})

    local = await a.send_message(to("b"))
    across = await a.send_message(to("remote"))
    kept = await a.send_message(to("absent"))
    with pytest.raises(Exception, match="store_unavailable"):
        await connect(near.ws_url, Hello(agent_id="newcomer", agent_type="executor"), reconnect=False)

    assert local.delivered
    assert not across.delivered
    assert not kept.stored
    assert kept.reason is not None
    assert kept.reason.startswith("store_unavailable")
    for agent in (a, b, remote):
        agent.close()


@pytest.mark.parametrize("outage", ["stopped", "frozen"])
async def test_when_redis_comes_back_the_cluster_carries_traffic_across_routers_again(redis_server, routers, outage):
    near, far = routers(2)
    sender = await connect(near.ws_url, Hello(agent_id="sender", agent_type="executor"))
    recipient = await connect(far.ws_url, Hello(agent_id="recipient", agent_type="executor"))

    async def recipient_seen_near() -> bool:  # the far router's event has reached the near one
        found = await sender.discover(DiscoverArgs())
        return any(agent.agent_id == "recipient" for agent in found.agents)

    await eventually_async(recipient_seen_near, bool)
    # Longer than the routers' leases (1 s here): each finds the other's lease run out when Redis is back.
    if outage == "stopped":  # connections refused
        redis_server.stop()
        await asyncio.sleep(1.5)
        redis_server.start()
    else:  # SIGSTOP: connections hang, calls time out
        assert redis_server.process is not None
        redis_server.process.send_signal(signal.SIGSTOP)
        frozen_at = asyncio.get_running_loop().time()
        args = SendMessageArgs(target_agent_id="recipient", message_type="notification", payload={})
        during = await asyncio.wait_for(sender.send_message(args), 5)  # answered, not left hanging
        assert not during.delivered
        assert during.reason == "the cluster's Redis is unreachable"
        await asyncio.sleep(max(0.0, 1.5 - (asyncio.get_running_loop().time() - frozen_at)))
        redis_server.process.send_signal(signal.SIGCONT)

    async def delivered() -> bool:
        args = SendMessageArgs(target_agent_id="recipient", message_type="notification", payload={})
        return (await sender.send_message(args)).delivered

    deadline = asyncio.get_running_loop().time() + 15
    while not await delivered() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.2)

    assert await delivered()
    sender.close()
    recipient.close()


async def test_a_lock_held_at_a_killed_router_goes_to_the_next_waiter_when_that_router_is_buried(routers):
    doomed_router, survivor = routers(2)
    holder = await connect(doomed_router.ws_url, Hello(agent_id="holder", agent_type="executor"), reconnect=False)
    waiter = await connect(survivor.ws_url, Hello(agent_id="waiter", agent_type="executor"), reconnect=False)
    assert (await holder.lock(LockArgs(name="rota", wait_seconds=0, lease_seconds=600))).status == "acquired"
    waiting = asyncio.create_task(waiter.lock(LockArgs(name="rota", wait_seconds=20, lease_seconds=5)))
    await asyncio.sleep(0.3)
    assert not waiting.done()

    doomed_router.kill()
    result = await asyncio.wait_for(waiting, 15)

    assert (result.status, result.holder) == ("acquired", "waiter")
    waiter.close()
