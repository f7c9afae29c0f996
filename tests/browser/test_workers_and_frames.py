"""Agents in a Web Worker and in same-origin iframes, the postMessage fallback, local routes.

One mesh page per WebMCP mode (web/mesh.html) hosts four agents: on its main thread, in a
Web Worker (tools registered by the page, prefixed ``worker.``) and in two iframes (tools in
their own documents, reached through ``frame.webmcp``). The worker's and the second iframe's
router URL is a :class:`~tests.browser.conftest.RouterGate` that starts closed: those two
start on the postMessage fallback, relayed by the page, until a test opens the gate.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest

from tests.browser.conftest import READY_TIMEOUT_MS, wait_until

KEYS = ("main", "worker", "frame_a", "frame_b")
WHERE = {"main": "main", "worker": "worker", "frame_a": "iframe", "frame_b": "iframe"}
BLOCKED = ("worker", "frame_b")
MARK = "webmcp-a2a/1"


@dataclass
class Hosted:
    key: str
    agent_id: str
    target: object  # the Page or Frame whose document registered the agent's tools
    prefix: str


class MeshPage:
    def __init__(self, mesh, page) -> None:
        self.mesh = mesh
        self.page = page
        ids = page.evaluate("window.mesh.ids")
        self.frame_a, self.frame_b = page.frame(name="frame-a"), page.frame(name="frame-b")
        self.agents = {
            "main": Hosted("main", ids["main"], page, ""),
            "worker": Hosted("worker", ids["worker"], page, "worker."),
            "frame_a": Hosted("frame_a", ids["frameA"], self.frame_a, ""),
            "frame_b": Hosted("frame_b", ids["frameB"], self.frame_b, ""),
        }

    def id(self, key: str) -> str:
        return self.agents[key].agent_id

    def call(self, key: str, tool: str, arguments: dict) -> dict:
        agent = self.agents[key]
        result = self.mesh.call(agent.target, agent.prefix + tool, arguments)
        assert not result.get("isError"), (key, tool, result)
        return result["structuredContent"]

    def inbox(self, key: str, predicate=lambda message: True, want: int = 1, wait: float = 3) -> list[dict]:
        found: list[dict] = []
        deadline = time.monotonic() + 15
        while len(found) < want and time.monotonic() < deadline:
            found += [m for m in self.call(key, "a2a_inbox", {"wait_seconds": wait})["messages"] if predicate(m)]
        return found

    def table(self) -> dict[str, dict]:
        rows = self.page.evaluate("window.mesh.hub.table().map(({status, ...row}) => row)")
        return {row["agent_id"]: row for row in rows}

    def stats(self) -> dict:
        return self.page.evaluate("({...window.mesh.hub.stats})")

    def wait_for_transport(self, keys, transport: str, timeout: float = 30) -> None:
        ids = [self.id(key) for key in keys]
        wait_until(
            self.page,
            """([ids, transport]) => ids.every((id) => window.mesh.hub.table().some(
                   (row) => row.agent_id === id && row.transport === transport && row.state === "connected"))""",
            arg=[ids, transport],
            timeout=timeout * 1000,
        )


@pytest.fixture(scope="module")
def mesh_page(mesh, router_gate):
    page = mesh.context.new_page()
    query = urlencode(
        {
            "prefix": f"mesh-{mesh.mode}-{uuid.uuid4().hex[:4]}",
            "worker_router": router_gate.ws_url,
            "frame_b_router": router_gate.ws_url,
            "probe_max_delay": 1.5,
            "open_timeout": 3,
        }
    )
    page.goto(f"{mesh.base_url}/web/mesh.html?{query}")
    wait_until(page, "document.documentElement?.dataset.mesh === 'ready'", timeout=2 * READY_TIMEOUT_MS)
    yield MeshPage(mesh, page)
    page.close()


def test_the_page_shows_where_each_agent_lives_and_its_transport(mesh_page):
    table = mesh_page.table()
    for key in KEYS:
        row = table[mesh_page.id(key)]
        assert (row["where"], row["state"]) == (WHERE[key], "connected")
        assert row["transport"] == ("postmessage" if key in BLOCKED else "websocket")
        assert row["relayed"] is (key in BLOCKED)
    cells = mesh_page.page.locator(f"tr[data-agent-id='{mesh_page.id('worker')}'] td").all_text_contents()
    assert cells[1:3] == ["worker", "postmessage"]
    # an iframe's own test page says it too
    assert "postmessage" in mesh_page.frame_b.text_content("#transport")
    assert "iframe" in mesh_page.frame_b.text_content("#where")
    assert mesh_page.frame_a.text_content("#transport") == "websocket"


def test_each_agent_reports_where_it_lives_and_its_transport(mesh_page):
    for key in KEYS:
        status = mesh_page.call(key, "a2a_status", {})
        assert (status["agent_id"], status["where"]) == (mesh_page.id(key), WHERE[key])
        assert status["transport"] == ("postmessage" if key in BLOCKED else "websocket")
        assert status["fallback"] is (key in BLOCKED)
        assert set(status["local_peers"]) == {mesh_page.id(other) for other in KEYS if other != key}


def test_tools_are_registered_by_the_right_document(mesh, mesh_page):
    def names(target) -> set[str]:
        if mesh.native:
            return {tool["name"] for tool in target.webmcp.tools()}
        return set(target.evaluate("navigator.modelContext.listTools().then(tools => tools.map(t => t.name))"))

    page_tools = names(mesh_page.page)
    assert {"a2a_send_message", "worker.a2a_send_message", "a2a_status", "worker.a2a_status"} <= page_tools
    for frame in (mesh_page.frame_a, mesh_page.frame_b):
        frame_tools = names(frame)
        assert {"a2a_send_message", "a2a_inbox", "a2a_status"} <= frame_tools
        assert not any(name.startswith("worker.") for name in frame_tools)


def test_messages_between_all_pairs_stay_in_the_page(mesh_page):
    correlation_id = f"pairs-{uuid.uuid4()}"
    before = mesh_page.stats()
    for sender, recipient in itertools.permutations(KEYS, 2):
        result = mesh_page.call(
            sender,
            "a2a_send_message",
            {
                "target_agent_id": mesh_page.id(recipient),
                "message_type": "notification",
                "payload": {"from": sender},
                "correlation_id": correlation_id,
            },
        )
        assert (result["delivered"], result["target_status"]) == (True, "online"), (sender, recipient, result)
    after = mesh_page.stats()
    assert after["local_delivered"] - before["local_delivered"] == 12
    for recipient in KEYS:
        messages = mesh_page.inbox(recipient, lambda m: m["metadata"]["correlation_id"] == correlation_id, want=3)
        assert sorted(m["from_agent"] for m in messages) == sorted(
            mesh_page.id(sender) for sender in KEYS if sender != recipient
        )
        assert all(m["payload"]["from"] in KEYS for m in messages)


def test_a_local_send_cannot_claim_another_sender(mesh_page):
    """The hub stamps the sender from the channel, as the router does from the connection."""
    frame = json.dumps(
        {
            "type": "send",
            "id": 99,
            "envelope": {
                "message_id": str(uuid.uuid4()),
                "to_agent": mesh_page.id("main"),
                "from_agent": mesh_page.id("worker"),
                "message_type": "notification",
                "payload": {},
            },
        }
    )
    answer = mesh_page.frame_a.evaluate(
        """(frame) => new Promise((resolve) => {
        addEventListener("message", (event) => event.data?.kind === "local-result" && resolve(event.data.frame));
        parent.postMessage({a2a: "webmcp-a2a/1", kind: "local-send", frame}, location.origin);
    })""",
        frame,
    )
    assert json.loads(answer)["error"]["code"] == "spoofed_sender"


def test_a_broadcast_from_any_agent_reaches_all_the_others(mesh_page):
    markers = {}
    for sender in KEYS:
        markers[sender] = str(uuid.uuid4())
        result = mesh_page.call(
            sender,
            "a2a_broadcast",
            {"agent_type": "all", "message_type": "data_share", "payload": {"marker": markers[sender]}},
        )
        others = {mesh_page.id(key) for key in KEYS if key != sender}
        assert others <= set(result["recipient_ids"])
        assert mesh_page.id(sender) not in result["recipient_ids"]
    for recipient in KEYS:
        expected = {markers[sender] for sender in KEYS if sender != recipient}
        got = mesh_page.inbox(recipient, lambda m, expected=expected: m["payload"].get("marker") in expected, want=3)
        assert {m["payload"]["marker"] for m in got} == expected, recipient


def test_subscriptions_across_the_agents(mesh_page):
    topic = f"mesh-{uuid.uuid4().hex[:8]}"
    subscriptions = {key: mesh_page.call(key, "a2a_subscribe", {"topic": topic})["subscription_id"] for key in KEYS}
    for publisher in KEYS:
        result = mesh_page.call(publisher, "a2a_publish", {"topic": topic, "payload": {"by": publisher}})
        assert set(result["recipient_ids"]) == {mesh_page.id(key) for key in KEYS if key != publisher}
        assert result["delivered_count"] == 3
    for key in KEYS:
        events = mesh_page.inbox(key, lambda m: m["to_agent"] == f"topic:{topic}", want=3)
        assert sorted(e["payload"]["by"] for e in events) == sorted(other for other in KEYS if other != key)
        assert {e["subscription_id"] for e in events} == {subscriptions[key]}
        mesh_page.call(key, "a2a_unsubscribe", {"subscription_id": subscriptions[key]})


def test_the_fallback_carries_traffic_with_an_agent_outside_the_page(mesh, mesh_page, alice):
    before = mesh_page.stats()
    for key in BLOCKED:
        assert mesh_page.call(key, "a2a_status", {})["transport"] == "postmessage"
        correlation_id = f"outside-{uuid.uuid4()}"
        sent = mesh.call(
            alice,
            "a2a_send_message",
            {
                "target_agent_id": mesh_page.id(key),
                "message_type": "task_request",
                "payload": {"task": "ping"},
                "correlation_id": correlation_id,
            },
        )
        assert sent["structuredContent"]["delivered"] is True, sent
        (request,) = mesh_page.inbox(
            key, lambda m, correlation_id=correlation_id: m["metadata"]["correlation_id"] == correlation_id
        )
        assert request["from_agent"] == alice.agent_id
        answered = mesh_page.call(
            key,
            "a2a_send_message",
            {
                "target_agent_id": alice.agent_id,
                "message_type": "task_response",
                "payload": {"task": "pong"},
                "correlation_id": correlation_id,
            },
        )
        assert answered["delivered"] is True
    after = mesh_page.stats()
    # each agent: its send and the ack of alice's message out, alice's message and its send's result in
    assert after["relayed_out"] - before["relayed_out"] >= 4
    assert after["relayed_in"] - before["relayed_in"] >= 4


def test_messages_from_another_origin_or_an_unknown_window_are_dropped_and_counted(mesh, mesh_page):
    page, frame_a = mesh_page.page, mesh_page.frame_a
    marker = str(uuid.uuid4())
    forged_send = {
        "a2a": MARK,
        "kind": "local-send",
        "frame": json.dumps(
            {
                "type": "send",
                "id": 1,
                "envelope": {
                    "message_id": str(uuid.uuid4()),
                    "to_agent": mesh_page.id("main"),
                    "message_type": "notification",
                    "payload": {"marker": marker},
                },
            }
        ),
    }
    forged_deliver = {
        "a2a": MARK,
        "kind": "local-deliver",
        "frame": json.dumps(
            {
                "type": "deliver",
                "envelope": {
                    "to_agent": mesh_page.id("frame_a"),
                    "from_agent": mesh_page.id("main"),
                    "message_type": "notification",
                    "payload": {"marker": marker},
                },
            }
        ),
    }
    top_before = page.evaluate("({...window.mesh.drops})")
    frame_before = frame_a.evaluate("({...window.a2a.drops})")

    add_frame = """([name, url]) => new Promise((resolve) => {
        const frame = Object.assign(document.createElement("iframe"), {name, src: url, hidden: true});
        frame.onload = resolve;
        document.body.append(frame);
    })"""
    foreign = mesh.base_url.replace("127.0.0.1", "localhost")
    page.evaluate(add_frame, ["intruder", f"{foreign}/healthz"])
    page.evaluate(add_frame, ["stranger", f"{mesh.base_url}/healthz"])
    try:
        # Another origin: to the hosting page, and to an iframe agent.
        page.frame(name="intruder").evaluate(
            """([send, deliver]) => {
            parent.postMessage(send, "*");
            parent.frames[0].postMessage(deliver, "*");
        }""",
            [forged_send, forged_deliver],
        )
        wait_until(page, "(n) => window.mesh.drops.foreign_origin > n", arg=top_before["foreign_origin"])
        wait_until(frame_a, "(n) => window.a2a.drops.foreign_origin > n", arg=frame_before["foreign_origin"])
        # Same origin, but a window the page does not host.
        page.frame(name="stranger").evaluate("(send) => parent.postMessage(send, location.origin)", forged_send)
        wait_until(page, "(n) => window.mesh.drops.unknown_source > n", arg=top_before["unknown_source"])
        # Malformed, from a hosted window.
        frame_a.evaluate("() => parent.postMessage({a2a: 'webmcp-a2a/1', kind: 'local-send'}, location.origin)")
        wait_until(page, "(n) => window.mesh.drops.malformed > n", arg=top_before["malformed"])
    finally:
        page.evaluate(
            "document.querySelectorAll('iframe[name=intruder], iframe[name=stranger]').forEach(f => f.remove())"
        )
    # Never acted on: nothing with the marker arrived anywhere.
    for key in ("main", "frame_a"):
        assert [
            m
            for m in mesh_page.call(key, "a2a_inbox", {"wait_seconds": 0.5})["messages"]
            if m["payload"].get("marker") == marker
        ] == []
    assert "from another origin" in page.text_content("#dropped")
    assert page.evaluate("window.mesh.drops.foreign_origin") == top_before["foreign_origin"] + 1


def test_the_websocket_coming_back_moves_agents_off_the_fallback_and_back(mesh, mesh_page, router_gate, alice):
    router_gate.open()
    try:
        mesh_page.wait_for_transport(BLOCKED, "websocket")
        for key in BLOCKED:
            status = mesh_page.call(key, "a2a_status", {})
            assert (status["transport"], status["fallback"], status["state"]) == ("websocket", False, "connected")
            assert status["switches"] >= 1
        wait_until(mesh_page.page, "!window.mesh.hub.relayOpen")  # nothing left to relay
        before = mesh_page.stats()
        sent = mesh.call(
            alice,
            "a2a_send_message",
            {
                "target_agent_id": mesh_page.id("worker"),
                "message_type": "notification",
                "payload": {"via": "websocket"},
            },
        )
        assert sent["structuredContent"]["delivered"] is True
        assert mesh_page.stats()["relayed_in"] == before["relayed_in"]
    finally:
        router_gate.close()  # cuts the connections that went through it: back onto the fallback
    mesh_page.wait_for_transport(BLOCKED, "postmessage")
    sent = mesh.call(
        alice,
        "a2a_send_message",
        {"target_agent_id": mesh_page.id("frame_b"), "message_type": "notification", "payload": {"via": "relay"}},
    )
    assert sent["structuredContent"]["delivered"] is True
    assert mesh_page.call("frame_b", "a2a_status", {})["switches"] >= 2


def test_a_relayed_iframe_agent_that_reloads_comes_back_on_the_fallback(mesh, mesh_page, alice):
    frame_b = mesh_page.frame_b
    with mesh_page.page.expect_event("framenavigated", predicate=lambda frame: frame.name == "frame-b"):
        frame_b.evaluate("setTimeout(() => location.reload())")
    wait_until(frame_b, "document.documentElement?.dataset.a2a === 'ready'", timeout=READY_TIMEOUT_MS)
    mesh_page.wait_for_transport(["frame_b"], "postmessage")
    assert mesh_page.call("frame_b", "a2a_status", {})["switches"] == 0  # a new runtime
    sent = mesh.call(
        alice,
        "a2a_send_message",
        {"target_agent_id": mesh_page.id("frame_b"), "message_type": "notification", "payload": {"after": "reload"}},
    )
    assert sent["structuredContent"]["delivered"] is True
    local = mesh_page.call(
        "main",
        "a2a_send_message",
        {"target_agent_id": mesh_page.id("frame_b"), "message_type": "notification", "payload": {"local": 1}},
    )
    assert local["delivered"] is True


def test_the_test_page_runs_its_agent_where_mode_says(mesh, alice, bob):
    assert "Web Worker" in alice.text_content("#where")  # the default: see docs/notes/workers-and-frames.md
    assert alice.evaluate("window.a2a.config.mode") == "worker"
    assert "main thread" in bob.text_content("#where")
    for page in (alice, bob):
        assert page.text_content("#transport") == "websocket"
        status = mesh.call(page, "a2a_status", {})["structuredContent"]
        assert status["where"] == page.evaluate("window.a2a.config.mode")
