"""The router over real WebSocket connections: routing, identity, and bad input."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from pathlib import Path

import pytest
import websockets

from tests.conftest import running_router
from tests.unit.conftest import unique
from webmcp_a2a.client import RouterError
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import (
    MAX_ACKS_PER_FRAME,
    BroadcastArgs,
    Hello,
    InboxArgs,
    Region,
    SendMessageArgs,
    SendResult,
    SubscriptionFilter,
)
from webmcp_a2a.router import routing


def note(target: str, **payload) -> SendMessageArgs:
    return SendMessageArgs(target_agent_id=target, message_type="notification", payload=payload)


async def inbox_of(agent, wait: float = 2.0):
    return (await agent.inbox(InboxArgs(wait_seconds=wait))).messages


async def hello_frame(websocket, agent_id: str, agent_type: str = "executor", credential: str | None = None) -> dict:
    await websocket.send(Hello(agent_id=agent_id, agent_type=agent_type, credential=credential).model_dump_json())
    return json.loads(await websocket.recv())


# --- direct delivery ---------------------------------------------------------


async def test_direct_message_is_delivered_and_acknowledged(agents):
    alice, bob = await agents(), await agents()
    result = await alice.send_message(
        SendMessageArgs(
            target_agent_id=bob.agent_id, message_type="task_request", payload={"task": "scan"}, correlation_id="corr-1"
        )
    )
    assert (result.delivered, result.target_status) == (True, "online")
    (message,) = await inbox_of(bob)
    assert message.message_id == result.message_id
    assert message.payload == {"task": "scan"}
    assert message.metadata.correlation_id == "corr-1"


async def test_router_stamps_the_sender(agents):
    alice, bob = await agents(), await agents()
    await alice.send_message(note(bob.agent_id))
    (message,) = await inbox_of(bob)
    assert message.from_agent == alice.agent_id


async def test_send_to_unknown_agent_is_not_delivered(agents):
    alice = await agents()
    result = await alice.send_message(note("nobody-home"))
    assert (result.delivered, result.target_status) == (False, "offline")


async def test_send_to_agent_that_left_is_not_delivered(agents):
    alice, bob = await agents(), await agents()
    bob.close()
    await asyncio.sleep(0.2)
    result = await alice.send_message(note(bob.agent_id))
    assert (result.delivered, result.target_status) == (False, "offline")


async def test_full_inbox_refuses_and_sender_learns_it(agents, router_server):
    alice = await agents()
    bob = await connect(router_server.ws_url, Hello(agent_id=unique("bob"), agent_type="executor"), inbox_limit=1)
    try:
        first = await alice.send_message(note(bob.agent_id, n=1))
        second = await alice.send_message(note(bob.agent_id, n=2))
        assert first.delivered is True
        assert (second.delivered, second.target_status, second.reason) == (False, "busy", "inbox_full")
    finally:
        bob.close()


async def test_expired_message_is_not_delivered(agents):
    alice, bob = await agents(), await agents()
    args = note(bob.agent_id)
    args.ttl_seconds = 1e-6
    result = await alice.send_message(args)
    assert (result.delivered, result.reason) == (False, "expired")
    assert await inbox_of(bob, wait=0.2) == []


async def test_silent_recipient_makes_delivery_false_after_ack_timeout():
    with running_router(ack_timeout=0.3) as server:
        alice = await connect(server.ws_url, Hello(agent_id="alice", agent_type="executor"))
        async with websockets.connect(server.ws_url) as mute:
            await hello_frame(mute, "mute")
            result = await alice.send_message(note("mute"))
        alice.close()
    assert (result.delivered, result.target_status) == (False, "busy")
    assert "acknowledgement" in (result.reason or "")


async def test_each_delivery_is_late_on_its_own_deadline_and_never_sooner():
    timeout = 0.6
    with running_router(ack_timeout=timeout) as server:
        alice = await connect(server.ws_url, Hello(agent_id="alice", agent_type="executor"))
        async with websockets.connect(server.ws_url) as quiet:
            await hello_frame(quiet, "quiet")
            loop = asyncio.get_running_loop()

            async def send(n: int) -> tuple[float, SendResult]:
                sent = loop.time()
                result = await alice.send_message(note("quiet", n=n))
                return loop.time() - sent, result

            first = asyncio.ensure_future(send(1))
            first_id = json.loads(await quiet.recv())["envelope"]["message_id"]
            await asyncio.sleep(timeout / 2)
            second, third = asyncio.ensure_future(send(2)), asyncio.ensure_future(send(3))
            await quiet.recv(), await quiet.recv()
            await quiet.send(json.dumps({"type": "ack", "message_id": first_id, "accepted": True}))
            (_, acked), (waited_second, late_second), (waited_third, late_third) = await asyncio.gather(
                first, second, third
            )
        alice.close()
    assert acked.delivered is True
    assert (late_second.delivered, late_third.delivered) == (False, False)
    assert "acknowledgement" in (late_second.reason or "")
    assert timeout <= waited_second < timeout + 2  # not before its own deadline, and not forgotten
    assert timeout <= waited_third < timeout + 2


async def test_an_acknowledged_delivery_leaves_nothing_behind_in_the_router(agents):
    alice, bob = await agents(), await agents()
    for n in range(50):  # the router's caches and the clients' buffers reach their size
        await alice.send_message(note(bob.agent_id, n=n))
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for n in range(500):
            assert (await alice.send_message(note(bob.agent_id, n=n))).delivered is True
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    in_router = [tracemalloc.Filter(True, str(Path(routing.__file__)))]
    grown = after.filter_traces(in_router).compare_to(before.filter_traces(in_router), "filename")
    assert sum(stat.size_diff for stat in grown) < 8_000  # bytes; a trace per message would be 500 x that


async def test_one_acks_frame_settles_every_delivery_it_names(agents, raw):
    alice = await agents()
    quiet = await raw()
    await hello_frame(quiet, recipient := unique("quiet"))
    sends = [asyncio.ensure_future(alice.send_message(note(recipient, n=n))) for n in range(3)]
    delivered = [json.loads(await quiet.recv())["envelope"]["message_id"] for _ in sends]
    await quiet.send(json.dumps({"type": "acks", "message_ids": delivered}))
    results = await asyncio.gather(*sends)
    assert [(result.message_id, result.delivered) for result in results] == [(id_, True) for id_ in delivered]


# --- broadcast ---------------------------------------------------------------


async def test_broadcast_reaches_only_the_named_type(agents):
    sender, monitor, executor = await agents("analyzer"), await agents("monitor"), await agents("executor")
    result = await sender.broadcast(
        BroadcastArgs(agent_type="monitor", message_type="notification", payload={"alert": 1})
    )
    assert monitor.agent_id in result.recipient_ids
    assert executor.agent_id not in result.recipient_ids
    assert result.recipients == result.delivered_count == len(result.recipient_ids)
    assert [m.payload for m in await inbox_of(monitor)] == [{"alert": 1}]
    assert await inbox_of(executor, wait=0.2) == []


async def test_broadcast_to_all_excludes_the_sender_by_default(agents):
    sender, other = await agents("evolver"), await agents("monitor")
    result = await sender.broadcast(BroadcastArgs(message_type="data_share", payload={}))
    assert other.agent_id in result.recipient_ids
    assert sender.agent_id not in result.recipient_ids


async def test_broadcast_can_include_the_sender(agents):
    sender = await agents("evolver")
    result = await sender.broadcast(
        BroadcastArgs(agent_type="evolver", message_type="data_share", payload={}, exclude_self=False)
    )
    assert sender.agent_id in result.recipient_ids
    assert len(await inbox_of(sender)) == 1


# --- subscriptions -----------------------------------------------------------


async def test_peer_discovered_event_reaches_subscriber(agents):
    watcher = await agents("monitor")
    subscription = await watcher.subscribe("peer_discovered")
    newcomer = await agents("analyzer", capabilities=["vision"], region=Region(x=1, y=2, width=3, height=4))
    messages = [m for m in await inbox_of(watcher) if m.payload["agent_id"] == newcomer.agent_id]
    (event,) = messages
    assert event.subscription_id == subscription.subscription_id
    assert event.from_agent == "router"
    assert event.payload["capabilities"] == ["vision"]
    assert event.payload["region"] == {"x": 1, "y": 2, "width": 3, "height": 4}


async def test_peer_discovered_filter_by_agent_type(agents):
    watcher = await agents("monitor")
    await watcher.subscribe("peer_discovered", SubscriptionFilter(agent_type="executor"))
    wanted, unwanted = await agents("executor"), await agents("analyzer")
    seen = {m.payload["agent_id"] for m in await inbox_of(watcher, wait=0.5)}
    assert wanted.agent_id in seen
    assert unwanted.agent_id not in seen


async def test_region_filter_passes_only_overlapping_events(agents):
    watcher, publisher = await agents("monitor"), await agents("executor")
    await watcher.subscribe("region_change", SubscriptionFilter(region=Region(x=0, y=0, width=10, height=10)))
    inside = await publisher.publish("region_change", {"n": "inside"}, Region(x=5, y=5, width=1, height=1))
    outside = await publisher.publish("region_change", {"n": "outside"}, Region(x=50, y=50, width=1, height=1))
    assert (inside.recipient_ids, inside.delivered_count) == ([watcher.agent_id], 1)
    assert outside.recipient_ids == []
    assert [m.payload["n"] for m in await inbox_of(watcher)] == ["inside"]


async def test_unsubscribe_stops_events(agents):
    watcher, publisher = await agents("monitor"), await agents("executor")
    subscription = await watcher.subscribe("knowledge_update")
    await watcher.unsubscribe(subscription.subscription_id)
    result = await publisher.publish("knowledge_update", {"fact": 1})
    assert watcher.agent_id not in result.recipient_ids


async def test_unsubscribe_unknown_id_is_an_error(agents):
    watcher = await agents("monitor")
    with pytest.raises(RouterError) as caught:
        await watcher.unsubscribe("sub-nope")
    assert (caught.value.info.code, caught.value.info.field) == ("unknown_subscription", "subscription_id")


# --- identity ------------------------------------------------------------------


async def test_spoofed_sender_is_rejected(raw, agents):
    bob = await agents()
    mallory = await raw()
    await hello_frame(mallory, unique("mallory"))
    await mallory.send(
        json.dumps(
            {
                "type": "send",
                "id": 1,
                "envelope": {"to_agent": bob.agent_id, "from_agent": "alice", "message_type": "notification"},
            }
        )
    )
    reply = json.loads(await mallory.recv())
    assert reply["type"] == "error"
    assert reply["ref"] == 1
    assert (reply["error"]["code"], reply["error"]["field"]) == ("spoofed_sender", "envelope.from_agent")
    assert await inbox_of(bob, wait=0.2) == []


async def test_second_connection_with_an_online_id_is_refused(raw, agents):
    alice = await agents()
    impostor = await raw()  # even one holding the credential: an id is online once
    reply = await hello_frame(impostor, alice.agent_id, credential=alice.credential)
    assert reply["error"]["code"] == "agent_id_taken"
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await impostor.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4009
    bob = await agents()
    assert (await bob.send_message(note(alice.agent_id))).delivered is True


async def test_request_before_hello_is_refused(raw):
    websocket = await raw()
    await websocket.send(json.dumps({"type": "subscribe", "id": 3, "topic": "region_change"}))
    reply = json.loads(await websocket.recv())
    assert (reply["ref"], reply["error"]["code"]) == (3, "not_registered")


async def test_reserved_agent_id_is_refused(raw):
    websocket = await raw()
    reply = await hello_frame(websocket, "router")
    assert (reply["error"]["code"], reply["error"]["field"]) == ("invalid_frame", "agent_id")


# --- bad frames do not hurt anyone ----------------------------------------------


@pytest.mark.parametrize(
    ("frame", "code", "field"),
    [
        ("{not json", "malformed_frame", None),
        ("[1, 2]", "malformed_frame", None),
        ('{"type": "teleport", "id": 1}', "invalid_frame", "type"),
        ('{"type": "acks", "message_ids": []}', "invalid_frame", "message_ids"),
        (json.dumps({"type": "acks", "message_ids": ["m"] * (MAX_ACKS_PER_FRAME + 1)}), "invalid_frame", "message_ids"),
        (
            '{"type": "send", "id": 4, "envelope": {"to_agent": "x", "message_type": "notification", "priority": 0}}',
            "invalid_frame",
            "envelope.priority",
        ),
    ],
)
async def test_bad_frame_gets_error_frame_and_connection_lives_on(raw, agents, frame, code, field):
    websocket = await raw()
    await hello_frame(websocket, unique("sloppy"))
    await websocket.send(frame)
    reply = json.loads(await websocket.recv())
    assert (reply["type"], reply["error"]["code"], reply["error"]["field"]) == ("error", code, field)
    await websocket.send(json.dumps({"type": "subscribe", "id": 9, "topic": "region_change"}))
    assert json.loads(await websocket.recv())["type"] == "result"


async def test_invalid_frame_error_carries_the_request_id(raw):
    websocket = await raw()
    await hello_frame(websocket, unique("sloppy"))
    await websocket.send('{"type": "subscribe", "id": 12, "topic": ""}')
    reply = json.loads(await websocket.recv())
    assert (reply["ref"], reply["error"]["field"]) == (12, "topic")


async def test_oversized_frame_is_answered_and_others_keep_working(raw, agents, router_server):
    alice, bob = await agents(), await agents()
    websocket = await raw()
    await hello_frame(websocket, unique("big"))
    await websocket.send(
        json.dumps(
            {
                "type": "send",
                "id": 1,
                "envelope": {
                    "to_agent": bob.agent_id,
                    "message_type": "notification",
                    "payload": {"blob": "x" * (router_server.settings.max_frame_bytes + 1)},
                },
            }
        )
    )
    reply = json.loads(await websocket.recv())
    assert reply["error"]["code"] == "frame_too_large"
    assert (await alice.send_message(note(bob.agent_id))).delivered is True
    assert len(await inbox_of(bob)) == 1


async def test_binary_frame_is_answered_with_an_error(raw):
    websocket = await raw()
    await websocket.send(b"\x00\x01")
    reply = json.loads(await websocket.recv())
    assert reply["error"]["code"] == "binary_not_supported"


async def test_absurdly_large_frame_closes_only_that_connection(raw, agents, router_server):
    alice, bob = await agents(), await agents()
    websocket = await raw()
    with pytest.raises(websockets.ConnectionClosed) as closed:  # noqa: PT012 - the close shows on send or on recv
        await websocket.send("x" * (router_server.settings.transport_max_bytes + 1))
        await websocket.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1009
    assert (await alice.send_message(note(bob.agent_id))).delivered is True
