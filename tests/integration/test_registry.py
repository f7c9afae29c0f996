"""The registry of remote A2A agents (``/registry``): a real router, and a real ``a2a-sdk`` agent
server with no mesh code in it (``bench/baselines/a2a_sdk_echo.py``) in a process of its own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.conftest import RunningRouter, free_port, running_router, sdk_agent
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import DiscoverArgs, Hello


@pytest.fixture(scope="module")
def remote() -> Iterator[str]:
    with sdk_agent() as url:
        yield url


@pytest.fixture
def router() -> Iterator[RunningRouter]:
    with running_router() as server:
        yield server


@pytest.fixture
async def http(router) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=router.http_url, timeout=15) as client:
        yield client


async def test_registering_a_base_url_fetches_and_keeps_the_agents_card(http, remote):
    created = await http.post("/registry", json={"card_url": remote, "tags": ["demo"], "notes": "the SDK alone"})
    assert created.status_code == 201, created.text
    agent = created.json()
    assert agent["id"] == "echo"  # from the card's name
    assert agent["card_url"] == f"{remote}/.well-known/agent-card.json"
    assert agent["card"]["skills"][0]["id"] == "echo"
    assert agent["health"]["status"] == "ok"
    assert agent["health"]["latency_ms"] > 0
    assert (await http.get("/registry/echo")).json() == agent


async def test_an_unreachable_card_is_a_502_naming_card_url(http):
    answer = await http.post("/registry", json={"card_url": f"http://127.0.0.1:{free_port()}"})
    assert answer.status_code == 502
    assert answer.json()["field"] == "card_url"


async def test_a_document_that_is_not_a_card_is_refused(http, router):
    answer = await http.post("/registry", json={"card_url": f"{router.http_url}/healthz.json"})
    assert answer.status_code == 502  # the router's 404
    answer = await http.post("/registry", json={"card_url": f"{router.http_url}/static/assets.lock.json"})
    assert (answer.status_code, answer.json()["field"]) == (422, "card_url")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "card_url"),
        ({"card_url": "ftp://example/card.json"}, "card_url"),
        ({"card_url": "http://127.0.0.1:1", "id": "no spaces"}, "id"),
        ({"card_url": "http://127.0.0.1:1", "colour": "red"}, "colour"),
    ],
    ids=["missing", "not-http", "bad-id", "unknown-field"],
)
async def test_a_bad_registration_names_its_field(http, body, field):
    answer = await http.post("/registry", json=body)
    assert (answer.status_code, answer.json()["field"]) == (422, field)


async def test_an_id_already_in_the_mesh_is_a_409(http, router, remote):
    local = await connect(router.ws_url, Hello(agent_id="echo", agent_type="executor"), reconnect=False)
    try:
        answer = await http.post("/registry", json={"card_url": remote})
        assert (answer.status_code, answer.json()["field"]) == (409, "id")
        assert (await http.post("/registry", json={"card_url": remote, "id": "echo-remote"})).status_code == 201
    finally:
        local.close()


async def test_search_by_text_skill_tag_and_capability(http, remote):
    await http.post("/registry", json={"card_url": remote, "id": "a", "tags": ["weather"]})
    await http.post("/registry", json={"card_url": remote, "id": "b", "notes": "translates poems"})

    async def ids(**query: str) -> set[str]:
        return {agent["id"] for agent in (await http.get("/registry", params=query)).json()["agents"]}

    assert await ids() == {"a", "b"}
    assert await ids(q="POEMS") == {"b"}
    assert await ids(tag="weather") == {"a"}
    assert await ids(skill="echo", capability="streaming") == {"a", "b"}
    assert await ids(capability="push_notifications") == set()
    assert (await http.get("/registry", params={"colour": "red"})).status_code == 422


async def test_update_replaces_tags_notes_and_facts_and_delete_forgets(http, remote):
    await http.post("/registry", json={"card_url": remote})
    patched = await http.patch("/registry/echo", json={"tags": ["x"], "facts": {"owner": "ops"}})
    assert (patched.json()["tags"], patched.json()["facts"], patched.json()["notes"]) == (["x"], {"owner": "ops"}, "")
    assert (await http.patch("/registry/echo", json={"card": {}})).json()["field"] == "card"  # the card is the agent's
    assert (await http.delete("/registry/echo")).status_code == 204
    assert (await http.get("/registry/echo")).status_code == 404
    assert (await http.delete("/registry/echo")).status_code == 404


async def test_a_health_check_of_a_stopped_agent_fails_and_recovers_when_it_is_back(http):
    port = free_port()
    with sdk_agent(port) as url:
        await http.post("/registry", json={"card_url": url, "id": "flaky"})
        assert (await http.post("/registry/flaky/check")).json()["health"]["status"] == "ok"
    failing = (await http.post("/registry/flaky/check")).json()["health"]
    assert (failing["status"], failing["failures"]) == ("failing", 1)
    assert "ConnectError" in failing["error"]
    with sdk_agent(port):
        healthy = (await http.post("/registry/flaky/check")).json()["health"]
    assert (healthy["status"], healthy["failures"], healthy["error"]) == ("ok", 0, None)


async def test_health_is_checked_periodically():
    port = free_port()
    with running_router(registry_health_interval=0.2) as server:
        async with httpx.AsyncClient(base_url=server.http_url, timeout=15) as http:
            with sdk_agent(port) as url:
                await http.post("/registry", json={"card_url": url, "id": "watched"})
            for _ in range(100):
                if (await http.get("/registry/watched")).json()["health"]["status"] == "failing":
                    break
                await asyncio.sleep(0.1)
            assert (await http.get("/registry/watched")).json()["health"]["status"] == "failing"


async def test_registered_agents_are_listed_by_discover_marked_remote(http, router, remote):
    await http.post("/registry", json={"card_url": remote, "id": "far-away"})
    agent = await connect(router.ws_url, Hello(agent_id="looker", agent_type="monitor"), reconnect=False)
    try:
        found = await agent.discover(DiscoverArgs())
        (listed,) = [info for info in found.agents if info.agent_id == "far-away"]
        assert (listed.remote, listed.agent_type, listed.capabilities) == (True, "remote", ["echo"])
        assert listed.url == f"{remote}/.well-known/agent-card.json"
        only_local = await agent.discover(DiscoverArgs(agent_type="monitor"))
        assert "far-away" not in {info.agent_id for info in only_local.agents}
    finally:
        agent.close()


def test_the_registry_survives_a_restart_of_the_router(tmp_path, remote):
    store = str(tmp_path / "router.sqlite3")
    with running_router(store_path=store) as first:
        httpx.post(f"{first.http_url}/registry", json={"card_url": remote, "tags": ["kept"]}, timeout=15)
    with running_router(store_path=store) as second:
        kept = httpx.get(f"{second.http_url}/registry/echo", timeout=15).json()
    assert kept["tags"] == ["kept"]


async def test_with_a_join_token_the_registry_needs_it():
    token = "registry-token-0123456789"
    with running_router(join_tokens=[token]) as server:
        async with httpx.AsyncClient(base_url=server.http_url, timeout=5) as http:
            assert (await http.get("/registry")).status_code == 401
            granted = await http.get("/registry", headers={"Authorization": f"Bearer {token}"})
            assert granted.json() == {"agents": []}
