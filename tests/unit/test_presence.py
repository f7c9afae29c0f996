"""Presence, discovery, topics and subscriptions that outlive a connection."""

from __future__ import annotations

from tests.conftest import eventually
from tests.unit.conftest import unique
from webmcp_a2a.protocol import DiscoverArgs, InboxArgs, Region, SendMessageArgs, SubscriptionFilter


async def events(agent, wait: float = 2.0):
    return (await agent.inbox(InboxArgs(wait_seconds=wait))).messages


async def test_discover_filters_by_type_capability_and_region(agents):
    kind = unique("scout")  # a type no other test uses
    seer = await agents(kind, capabilities=["vision"], region=Region(x=0, y=0, width=10, height=10))
    await agents(kind, capabilities=["hearing"], region=Region(x=100, y=100, width=5, height=5))
    by_type = await seer.discover(DiscoverArgs(agent_type=kind))
    assert len(by_type.agents) == 2
    by_capability = await seer.discover(DiscoverArgs(agent_type=kind, capability="vision"))
    assert [a.agent_id for a in by_capability.agents] == [seer.agent_id]
    by_region = await seer.discover(DiscoverArgs(agent_type=kind, region_overlaps=Region(x=5, y=5, width=1, height=1)))
    assert [a.agent_id for a in by_region.agents] == [seer.agent_id]
    assert by_region.agents[0].status == "online"


async def test_offline_agents_are_listed_with_last_seen_when_asked(agents, leave):
    kind = unique("ghost")
    watcher, leaver = await agents(kind), await agents(kind)
    await leave(leaver)
    online_only = await watcher.discover(DiscoverArgs(agent_type=kind))
    assert [a.agent_id for a in online_only.agents] == [watcher.agent_id]
    everyone = {
        a.agent_id: a for a in (await watcher.discover(DiscoverArgs(agent_type=kind, include_offline=True))).agents
    }
    assert everyone[leaver.agent_id].status == "offline"
    assert everyone[leaver.agent_id].last_seen <= everyone[watcher.agent_id].last_seen


async def test_busy_agent_is_reported_busy_and_still_receives(agents, router_server):
    kind = unique("worker")
    sender, worker = await agents(), await agents(kind)
    worker.set_busy(True)
    await eventually(lambda: router_server.router.registry.get(worker.agent_id).status == "busy")
    (info,) = (await sender.discover(DiscoverArgs(agent_type=kind))).agents
    assert info.status == "busy"
    result = await sender.send_message(
        SendMessageArgs(target_agent_id=worker.agent_id, message_type="notification", payload={})
    )
    assert (result.delivered, result.target_status) == (True, "busy")


async def test_going_offline_emits_peer_offline(agents):
    watcher = await agents("monitor")
    kind = unique("mayfly")
    await watcher.subscribe("peer_offline", SubscriptionFilter(agent_type=kind))
    mayfly = await agents(kind)
    mayfly.close()
    (event,) = await events(watcher)
    assert event.payload["agent_id"] == mayfly.agent_id
    assert event.payload["status"] == "offline"


async def test_custom_topic_reaches_its_subscribers_only(agents):
    topic = unique("alerts")
    subscriber, bystander, publisher = await agents(), await agents(), await agents()
    subscription = await subscriber.subscribe(topic)
    result = await publisher.publish(topic, {"level": "red"})
    assert (result.recipient_ids, result.delivered_count) == ([subscriber.agent_id], 1)
    (event,) = await events(subscriber)
    assert (event.to_agent, event.subscription_id, event.payload) == (
        f"topic:{topic}",
        subscription.subscription_id,
        {"level": "red"},
    )
    assert await events(bystander, wait=0.2) == []


async def test_subscription_survives_a_reconnect(agents, leave):
    topic = unique("news")
    subscriber_id = unique("reader")
    first = await agents(agent_id=subscriber_id)
    await first.subscribe(topic)
    await leave(first)
    again = await agents(agent_id=subscriber_id)
    publisher = await agents()
    result = await publisher.publish(topic, {"edition": 2})
    assert result.recipient_ids == [subscriber_id]
    assert [e.payload for e in await events(again)] == [{"edition": 2}]


async def test_events_are_not_kept_for_offline_subscribers(agents, leave):
    subscriber = await agents()
    topic = unique("flash")
    await subscriber.subscribe(topic)
    await leave(subscriber)
    result = await (await agents()).publish(topic, {})
    assert result.recipient_ids == []
