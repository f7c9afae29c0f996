"""Discovery, topics, locks, barriers and store-and-forward through the WebMCP tools, in both modes."""

from __future__ import annotations

import uuid

from tests.browser.test_page_agents import inbox_until, send


def structured(result: dict) -> dict:
    assert not result.get("isError"), result
    return result["structuredContent"]


def test_discover_lists_online_agents_by_type(mesh, alice, bob):
    agents = structured(mesh.call(alice, "a2a_discover", {"agent_type": "monitor"}))["agents"]
    mine = [agent for agent in agents if agent["agent_id"] == bob.agent_id]
    assert mine
    assert mine[0]["status"] == "online"
    assert all(agent["agent_type"] == "monitor" for agent in agents)


def test_topic_publication_reaches_the_subscriber(mesh, alice, bob):
    topic = f"news-{uuid.uuid4().hex[:8]}"
    structured(mesh.call(bob, "a2a_subscribe", {"topic": topic}))
    published = structured(mesh.call(alice, "a2a_publish", {"topic": topic, "payload": {"headline": "hi"}}))
    assert published["recipient_ids"] == [bob.agent_id]
    (event,) = inbox_until(mesh, bob, lambda m: m["to_agent"] == f"topic:{topic}")
    assert event["payload"] == {"headline": "hi"}


def test_unsubscribe_tool_stops_the_events(mesh, alice, bob):
    topic = f"quiet-{uuid.uuid4().hex[:8]}"
    subscription = structured(mesh.call(bob, "a2a_subscribe", {"topic": topic}))
    structured(mesh.call(bob, "a2a_unsubscribe", {"subscription_id": subscription["subscription_id"]}))
    assert structured(mesh.call(alice, "a2a_publish", {"topic": topic, "payload": {}}))["recipient_ids"] == []


def test_lock_is_exclusive_between_pages(mesh, alice, bob):
    name = f"lock-{uuid.uuid4().hex[:8]}"
    assert structured(mesh.call(alice, "a2a_lock", {"name": name}))["status"] == "acquired"
    refused = structured(mesh.call(bob, "a2a_lock", {"name": name, "wait_seconds": 0}))
    assert (refused["status"], refused["holder"]) == ("timeout", alice.agent_id)
    assert structured(mesh.call(alice, "a2a_lock", {"name": name, "action": "release"}))["status"] == "released"
    assert structured(mesh.call(bob, "a2a_lock", {"name": name, "wait_seconds": 0}))["status"] == "acquired"
    mesh.call(bob, "a2a_lock", {"name": name, "action": "release"})


def test_barrier_releases_both_pages_together(mesh, alice, bob):
    name = f"barrier-{uuid.uuid4().hex[:8]}"
    arguments = {"name": name, "expected_agents": [alice.agent_id, bob.agent_id], "timeout_seconds": 20}
    # Playwright's sync API is bound to its thread: start alice's call from page script, bob's as usual.
    alice.evaluate(
        "(args) => { window.barrierDone = navigator.modelContext.callTool('a2a_barrier', args); }", arguments
    )
    bob_result = structured(mesh.call(bob, "a2a_barrier", arguments))
    alice_result = structured(alice.evaluate("window.barrierDone"))
    assert bob_result["arrived"] == alice_result["arrived"] == sorted([alice.agent_id, bob.agent_id])


def test_barrier_timeout_names_the_missing_agent(mesh, alice):
    result = mesh.call(
        alice,
        "a2a_barrier",
        {
            "name": f"b-{uuid.uuid4().hex[:8]}",
            "expected_agents": [alice.agent_id, "absent-agent"],
            "timeout_seconds": 0.5,
        },
    )
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "barrier_timeout"
    assert "absent-agent" in result["content"][0]["text"]


def test_message_for_a_closed_page_is_kept_and_delivered_when_it_reopens(mesh, alice):
    page = mesh.open_agent("erin", "evolver")
    agent_id = page.agent_id
    page.close()
    marker = str(uuid.uuid4())
    result = structured(send(mesh, alice, agent_id, payload={"marker": marker}))
    assert (result["delivered"], result["stored"], result["target_status"]) == (False, True, "offline")
    reopened = mesh.reopen_agent(agent_id, "evolver")
    (message,) = inbox_until(mesh, reopened, lambda m: m["payload"].get("marker") == marker)
    assert message["from_agent"] == alice.agent_id
    reopened.close()
