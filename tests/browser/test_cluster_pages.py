"""Pages served by different routers of one cluster are one mesh: messages, topics and locks between
them through the WebMCP tools, in both modes (two serve.py --redis processes on a real redis-server)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from tests.browser.conftest import Mesh, new_mesh
from tests.browser.test_mesh_tools import structured
from tests.browser.test_page_agents import inbox_until, send
from tests.cluster import RedisServer, RouterProcess
from tests.conftest import free_port


@pytest.fixture(scope="module")
def routers(tmp_path_factory) -> Iterator[list[RouterProcess]]:
    redis_server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    started: list[RouterProcess] = []
    try:
        started = [RouterProcess(redis_server.url, "--ack-timeout", "5") for _ in range(2)]
        yield started
    finally:
        for router in started:
            router.stop()
        redis_server.stop()


@pytest.fixture(scope="module")
def meshes(chromium: Browser, mode: str, routers: list[RouterProcess]) -> Iterator[list[Mesh]]:
    """One browser context per router: each opens its pages from its own router."""
    with (
        new_mesh(chromium, mode, routers[0].http_url) as first,
        new_mesh(chromium, mode, routers[1].http_url) as second,
    ):
        yield [first, second]
        assert first.foreign_requests == second.foreign_requests == []  # offline, as every browser test


@pytest.fixture(scope="module")
def pages(meshes: list[Mesh]) -> list[Page]:
    return [meshes[0].open_agent("west", "executor"), meshes[1].open_agent("east", "monitor")]


def test_a_page_at_one_router_sends_to_a_page_at_another(meshes, pages):
    marker = str(uuid.uuid4())

    sent = structured(send(meshes[0], pages[0], pages[1].agent_id, payload={"marker": marker}))

    assert sent["delivered"] is True
    (message,) = inbox_until(meshes[1], pages[1], lambda m: m["payload"].get("marker") == marker)
    assert message["from_agent"] == pages[0].agent_id


def test_a_broadcast_from_a_page_reaches_the_page_at_the_other_router(meshes, pages):
    marker = str(uuid.uuid4())

    result = structured(
        meshes[0].call(
            pages[0],
            "a2a_broadcast",
            {"message_type": "notification", "payload": {"marker": marker}, "agent_type": "monitor"},
        )
    )

    assert result["recipient_ids"] == [pages[1].agent_id]
    assert result["delivered_count"] == 1
    inbox_until(meshes[1], pages[1], lambda m: m["payload"].get("marker") == marker)


def test_a_page_subscribed_at_one_router_gets_a_publication_from_a_page_at_another(meshes, pages):
    topic = f"cross-{uuid.uuid4().hex[:8]}"
    structured(meshes[1].call(pages[1], "a2a_subscribe", {"topic": topic}))

    deadline = time.monotonic() + 5
    while True:  # the subscription reaches the other router through Redis within milliseconds
        published = structured(meshes[0].call(pages[0], "a2a_publish", {"topic": topic, "payload": {"n": 1}}))
        if published["recipient_ids"] or time.monotonic() > deadline:
            break

    assert published["recipient_ids"] == [pages[1].agent_id]
    (event,) = inbox_until(meshes[1], pages[1], lambda m: m["to_agent"] == f"topic:{topic}")
    assert event["payload"] == {"n": 1}


def test_a_lock_held_by_a_page_at_one_router_excludes_a_page_at_another(meshes, pages):
    name = f"lock-{uuid.uuid4().hex[:8]}"
    assert structured(meshes[0].call(pages[0], "a2a_lock", {"name": name}))["status"] == "acquired"

    refused = structured(meshes[1].call(pages[1], "a2a_lock", {"name": name, "wait_seconds": 0}))

    assert (refused["status"], refused["holder"]) == ("timeout", pages[0].agent_id)
    meshes[0].call(pages[0], "a2a_lock", {"name": name, "action": "release"})


def test_a_page_discovers_the_page_at_the_other_router(meshes, pages):
    agents = structured(meshes[0].call(pages[0], "a2a_discover", {"agent_type": "monitor"}))["agents"]

    assert pages[1].agent_id in {agent["agent_id"] for agent in agents}


def test_a_page_whose_router_is_killed_rejoins_the_mesh_at_the_next_router_of_its_list(
    chromium, mode, tmp_path_factory
):
    redis_server = RedisServer(tmp_path_factory.mktemp("redis-failover")).start()
    first_port, second_port = free_port(), free_port()
    # The second router lets the first's pages in (their origin is the first router's).
    first = RouterProcess(redis_server.url, port=first_port)
    second = RouterProcess(redis_server.url, "--allow-origin", first.http_url, port=second_port)
    try:
        with new_mesh(chromium, mode, first.http_url) as mesh:
            page = mesh.open_agent("nomad", "executor", router=f"{first.ws_url},{second.ws_url}")
            first.kill()
            status = structured(mesh.call(page, "a2a_status", {}))
            deadline = time.monotonic() + 20
            while status["state"] != "connected" or status["router_url"] != second.ws_url:
                assert time.monotonic() < deadline, status
                time.sleep(0.2)
                status = structured(mesh.call(page, "a2a_status", {}))
            assert mesh.foreign_requests == []
    finally:
        first.kill()
        second.stop()
        redis_server.stop()
