from __future__ import annotations

import itertools

import pytest
import websockets

from tests.conftest import eventually
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import Hello

_ids = itertools.count()
_credentials: dict[tuple[str, str], str | None] = {}  # (router URL, agent id) -> its credential


def unique(prefix: str) -> str:
    """Agent ids unique across the session, since the tests share one router."""
    return f"{prefix}-{next(_ids)}"


@pytest.fixture
async def agents(router_server):
    """Factory: ``await agents("executor")`` gives a connected, welcomed Agent; all closed after the test."""
    opened = []

    async def make(agent_type: str = "executor", url: str | None = None, **hello_fields):
        url = url or router_server.ws_url
        agent_id = hello_fields.setdefault("agent_id", unique(agent_type))
        # Coming back as an agent met before: present its credential, as its owner would.
        hello_fields.setdefault("credential", _credentials.get((url, agent_id)))
        agent = await connect(url, Hello(agent_type=agent_type, **hello_fields))
        _credentials[(url, agent_id)] = agent.credential
        opened.append(agent)
        return agent

    yield make
    for agent in opened:
        agent.close()


@pytest.fixture
async def raw(router_server):
    """Factory for bare WebSocket connections, to send frames no well-behaved client would."""
    opened = []

    async def make(url: str | None = None):
        websocket = await websockets.connect(url or router_server.ws_url)
        opened.append(websocket)
        return websocket

    yield make
    for websocket in opened:
        await websocket.close()


@pytest.fixture
def leave(router_server):
    """``await leave(agent)``: close the agent and wait until the router has it offline."""

    async def close_and_wait(agent) -> None:
        agent.close()
        await eventually(lambda: router_server.router.registry.online(agent.agent_id) is None)

    return close_and_wait
