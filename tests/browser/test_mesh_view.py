"""The mesh view (web/watch.html): agents appear and leave as pages open and close, topics are hubs,
a message is drawn when sent and listed with its correlation id; never a payload."""

from __future__ import annotations

import uuid

import pytest

from tests.browser.conftest import READY_TIMEOUT_MS, wait_until
from tests.browser.test_page_agents import send


@pytest.fixture(scope="module")
def view(mesh):
    page = mesh.context.new_page()
    page.goto(f"{mesh.base_url}/web/watch.html")
    wait_until(page, "document.documentElement?.dataset.watch === 'ready'", timeout=READY_TIMEOUT_MS)
    yield page
    page.close()


STATUS_IS = "([id, status]) => window.watch.cy.getElementById('agent:' + id).data('status') === status"


def node(view, agent_id: str) -> dict:
    """The agent's node's data ({} when the view has no such node)."""
    return view.evaluate(
        "(id) => { const n = window.watch.cy.getElementById('agent:' + id); return n.nonempty() ? n.data() : {}; }",
        agent_id,
    )


def test_an_agent_appears_when_its_page_opens_and_goes_offline_when_it_closes(mesh, view):
    page = mesh.open_agent("comer", "monitor")
    wait_until(view, STATUS_IS, [page.agent_id, "online"])
    assert node(view, page.agent_id)["where"] == "worker"  # the test page's default placement
    page.close()
    wait_until(view, STATUS_IS, [page.agent_id, "offline"])


def test_the_mesh_as_it_stood_is_drawn_when_the_view_opens(view, alice, bob):
    assert node(view, alice.agent_id)["status"] == "online"
    assert node(view, bob.agent_id)["status"] == "online"


def test_a_message_is_drawn_and_listed_with_its_correlation_id(mesh, view, alice, bob):
    drawn_before = view.evaluate("window.watch.counts.drawn")
    correlation = f"job-{uuid.uuid4().hex[:8]}"
    result = send(mesh, alice, bob.agent_id, payload={"secret": "payloads stay out"}, correlation_id=correlation)
    assert result["structuredContent"]["delivered"] is True, result
    message_id = result["structuredContent"]["message_id"]
    wait_until(view, "(id) => window.watch.timeline.some((m) => m.message_id === id)", message_id)
    assert view.evaluate("window.watch.counts.drawn") > drawn_before
    wait_until(view, "window.watch.flights.length === 0")  # drawn all the way, and gone
    row = view.locator(f"#timeline tr[data-message-id='{message_id}']")
    assert row.locator("td").all_text_contents()[1:] == [alice.agent_id, bob.agent_id, "notification", correlation]
    row.click()
    assert message_id in view.text_content("#details")
    assert "payloads stay out" not in view.content()


def test_a_topic_is_a_hub_joined_to_its_subscribers(mesh, view, carol):
    topic = f"weather-{uuid.uuid4().hex[:6]}"
    subscribed = mesh.call(carol, "a2a_subscribe", {"topic": topic})
    assert not subscribed.get("isError"), subscribed
    wait_until(
        view,
        "([topic, id]) => window.watch.cy.getElementById('topic:' + topic + '->' + id).nonempty()",
        [topic, carol.agent_id],
    )


def test_clicking_an_agent_shows_its_details(view, alice):
    view.evaluate("(id) => window.watch.cy.getElementById('agent:' + id).emit('tap')", alice.agent_id)
    assert f'"agent_id": "{alice.agent_id}"' in view.text_content("#details")
