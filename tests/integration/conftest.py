"""Fixtures of the integration tests: a cluster of routers on a real redis-server (tests/cluster.py)."""

from __future__ import annotations

import itertools

import pytest

from tests.cluster import RedisServer, RouterProcess
from webmcp_a2a.client.agent import TaskHandler
from webmcp_a2a.client.cpython import connect
from webmcp_a2a.protocol import Hello

_ids = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_ids)}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    redis_server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    routers = []
    try:
        routers = [RouterProcess(redis_server.url) for _ in range(3)]
        yield routers
    finally:
        for router in routers:
            router.stop()
        redis_server.stop()


@pytest.fixture
async def cluster_agents(cluster):
    """Factory: ``await agents(router_index)`` gives an agent welcomed at that router; closed after the test."""
    opened = []

    async def make(at: int, agent_type: str = "executor", on_task: TaskHandler | None = None, **hello):
        hello.setdefault("agent_id", unique(agent_type))
        agent = await connect(
            cluster[at].ws_url, Hello(agent_type=agent_type, **hello), reconnect=False, on_task=on_task
        )
        opened.append(agent)
        return agent

    yield make
    for agent in opened:
        agent.close()
