"""Several routers, one mesh: three ``serve.py --redis`` processes sharing one real redis-server.

Agents (the CPython client) connect to different routers and must not be able to tell: direct
messages, broadcasts, topics, discovery, mail for absent agents, and who owns an agent id are
the same whichever router each side is on.
"""

from __future__ import annotations

import asyncio

import pytest
import websockets

from tests.integration.conftest import unique
from webmcp_a2a.client.agent import RouterError
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import BroadcastArgs, DiscoverArgs, Hello, InboxArgs, ReceivedMessage, SendMessageArgs


async def test_a_direct_message_to_an_agent_at_another_router_is_delivered_and_acknowledged(cluster_agents):
    alice, bob = await cluster_agents(0), await cluster_agents(1)
    received: list[ReceivedMessage] = []
    bob.on_message(received.append)

    result = await alice.send_message(
        SendMessageArgs(target_agent_id=bob.agent_id, message_type="notification", payload={"n": 1})
    )

    assert result.delivered
    assert result.target_status == "online"
    assert [(m.from_agent, m.payload) for m in received] == [(alice.agent_id, {"n": 1})]


async def test_a_broadcast_reaches_agents_at_every_router(cluster_agents):
    agent_type = unique("team")
    sender = await cluster_agents(0, agent_type)
    others = [await cluster_agents(at, agent_type) for at in (0, 1, 2, 2)]
    inboxes: dict[str, list[ReceivedMessage]] = {agent.agent_id: [] for agent in others}
    for agent in others:
        agent.on_message(inboxes[agent.agent_id].append)

    result = await sender.broadcast(
        BroadcastArgs(message_type="notification", payload={"all": True}, agent_type=agent_type)
    )

    assert sorted(result.recipient_ids) == sorted(inboxes)
    assert result.delivered_count == 4
    assert all(len(inbox) == 1 for inbox in inboxes.values())


async def test_a_topic_publication_reaches_subscribers_at_other_routers(cluster_agents):
    topic = unique("prices")
    publisher, near, far = await cluster_agents(0), await cluster_agents(0), await cluster_agents(2)
    got: dict[str, list[ReceivedMessage]] = {near.agent_id: [], far.agent_id: []}
    for agent in (near, far):
        agent.on_message(got[agent.agent_id].append)
        await agent.subscribe(topic)

    async def publish():
        return await publisher.publish(topic, {"p": 7})

    # The subscription made at router 2 reaches router 0 through the events channel.
    result = await eventually_async(publish, lambda result: result.recipients == 2)

    assert result.delivered_count == 2
    assert [m.payload for m in got[far.agent_id]] == [{"p": 7}]


async def test_unsubscribing_at_one_router_stops_publications_from_another(cluster_agents):
    topic = unique("news")
    publisher, reader = await cluster_agents(1), await cluster_agents(2)
    subscription = await reader.subscribe(topic)

    async def publish():
        return await publisher.publish(topic, {})

    await eventually_async(publish, lambda result: result.recipients == 1)
    await reader.unsubscribe(subscription.subscription_id)

    assert (await eventually_async(publish, lambda result: result.recipients == 0)).recipients == 0


async def test_discover_lists_the_agents_of_every_router(cluster_agents):
    agent_type = unique("finder")
    mine = [await cluster_agents(at, agent_type) for at in range(3)]

    async def discover():
        return await mine[0].discover(DiscoverArgs(agent_type=agent_type))

    found = await eventually_async(discover, lambda result: len(result.agents) == 3)

    assert sorted(agent.agent_id for agent in found.agents) == sorted(agent.agent_id for agent in mine)
    assert {agent.status for agent in found.agents} == {"online"}


async def test_an_agent_leaving_one_router_is_offline_at_the_others(cluster_agents):
    watcher, leaver = await cluster_agents(0), await cluster_agents(1)
    await eventually_async(lambda: status_of(watcher, leaver.agent_id), lambda status: status == "online")

    leaver.close()

    assert await eventually_async(lambda: status_of(watcher, leaver.agent_id), lambda s: s == "offline") == "offline"


async def test_a_message_for_an_absent_agent_waits_in_redis_and_reaches_it_at_another_router(cluster_agents, cluster):
    sender = await cluster_agents(0)
    absent_id = unique("absent")
    first = await connect(cluster[1].ws_url, Hello(agent_id=absent_id, agent_type="executor"), reconnect=False)
    credential = first.credential
    first.close()
    await eventually_async(lambda: status_of(sender, absent_id), lambda status: status == "offline")

    result = await sender.send_message(
        SendMessageArgs(target_agent_id=absent_id, message_type="notification", payload={"kept": 1})
    )
    assert result.stored
    assert not result.delivered

    back = await cluster_agents(2, agent_id=absent_id, credential=credential)
    arrived = await back.inbox(InboxArgs(wait_seconds=5))
    assert [message.payload for message in arrived.messages] == [{"kept": 1}]


async def test_an_agent_id_online_at_one_router_is_refused_at_another_with_try_again_later(cluster_agents, cluster):
    holder = await cluster_agents(0)

    with pytest.raises((RouterError, websockets.ConnectionClosed)) as refused:
        await connect(
            cluster[1].ws_url,
            Hello(agent_id=holder.agent_id, agent_type="executor", credential=holder.credential),
            reconnect=False,
        )

    assert "agent_id_taken" in str(refused.value)


async def test_an_agent_id_is_free_at_another_router_once_it_left(cluster_agents, cluster):
    first = await cluster_agents(0)
    agent_id, credential = first.agent_id, first.credential
    first.close()
    await asyncio.sleep(0.2)

    again = await cluster_agents(2, agent_id=agent_id, credential=credential)

    assert again.agent_id == agent_id


async def test_an_agent_id_s_credential_is_checked_at_every_router(cluster_agents, cluster):
    owner = await cluster_agents(0)
    agent_id = owner.agent_id
    owner.close()
    await asyncio.sleep(0.2)

    with pytest.raises((RouterError, websockets.ConnectionClosed)) as refused:
        await connect(
            cluster[1].ws_url,
            Hello(agent_id=agent_id, agent_type="executor", credential="not-the-credential-" + "x" * 30),
            reconnect=False,
        )

    assert "bad_credential" in str(refused.value)


async def status_of(agent, agent_id: str) -> str | None:
    found = await agent.discover(DiscoverArgs(include_offline=True))
    return next((info.status for info in found.agents if info.agent_id == agent_id), None)


async def eventually_async(call, accept, timeout: float = 5.0):
    """Call ``call()`` until ``accept`` takes its result (the other routers hear of a change within
    milliseconds, not at once); the last result."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await call()
        if accept(result) or asyncio.get_running_loop().time() > deadline:
            return result
        await asyncio.sleep(0.02)
