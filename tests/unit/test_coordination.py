"""Locks, barriers and request/response among real agents on a real router."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.unit.conftest import unique
from webmcp_a2a.client import RouterError
from webmcp_a2a.protocol import BarrierArgs, LockArgs, RequestArgs


def acquire(name: str, wait: float = 10, lease: float = 30) -> LockArgs:
    return LockArgs(name=name, action="acquire", wait_seconds=wait, lease_seconds=lease)


def release(name: str) -> LockArgs:
    return LockArgs(name=name, action="release")


async def test_lock_contention_among_five_is_fair_and_survives_a_holder_leaving(agents):
    name = unique("lock")
    contenders = [await agents() for _ in range(5)]
    first = await contenders[0].lock(acquire(name))
    assert first.status == "acquired"
    waiting = []
    for agent in contenders[1:]:
        waiting.append(asyncio.create_task(agent.lock(acquire(name))))
        await asyncio.sleep(0.05)  # a known arrival order
    granted_order = []
    contenders[0].close()  # the holder disconnects while holding
    for agent, task in zip(contenders[1:], waiting, strict=False):
        result = await asyncio.wait_for(task, 5)
        assert (result.status, result.holder) == ("acquired", agent.agent_id)
        granted_order.append(agent.agent_id)
        assert (await agent.lock(release(name))).status == "released"
    assert granted_order == [agent.agent_id for agent in contenders[1:]]


async def test_only_one_holder_at_a_time(agents):
    name = unique("lock")
    counter = {"inside": 0, "most": 0}

    async def critical_section(agent):
        assert (await agent.lock(acquire(name))).status == "acquired"
        counter["inside"] += 1
        counter["most"] = max(counter["most"], counter["inside"])
        await asyncio.sleep(0.02)
        counter["inside"] -= 1
        await agent.lock(release(name))

    contenders = [await agents() for _ in range(5)]
    await asyncio.gather(*(critical_section(agent) for agent in contenders))
    assert counter["most"] == 1


async def test_waiting_for_a_held_lock_times_out(agents):
    name = unique("lock")
    holder, hopeful = await agents(), await agents()
    await holder.lock(acquire(name))
    started = time.monotonic()
    result = await hopeful.lock(acquire(name, wait=0.2))
    assert (result.status, result.holder) == ("timeout", holder.agent_id)
    assert time.monotonic() - started >= 0.2


async def test_lease_end_hands_the_lock_over(agents):
    name = unique("lock")
    forgetful, next_in_line = await agents(), await agents()
    await forgetful.lock(acquire(name, lease=0.2))
    result = await next_in_line.lock(acquire(name, wait=5))
    assert (result.status, result.holder) == ("acquired", next_in_line.agent_id)
    with pytest.raises(RouterError) as caught:
        await forgetful.lock(release(name))
    assert caught.value.info.code == "not_lock_holder"


async def test_barrier_of_four_releases_all_at_once(agents):
    name = unique("barrier")
    party = [await agents() for _ in range(4)]
    expected = [agent.agent_id for agent in party]
    arrivals = [
        asyncio.create_task(agent.barrier(BarrierArgs(name=name, expected_agents=expected))) for agent in party[:3]
    ]
    await asyncio.sleep(0.2)
    assert not any(task.done() for task in arrivals)
    last = await party[3].barrier(BarrierArgs(name=name, expected_agents=expected))
    results = [await task for task in arrivals] + [last]
    assert all(result.arrived == sorted(expected) for result in results)


async def test_barrier_names_who_never_came(agents):
    name = unique("barrier")
    party = [await agents() for _ in range(3)]
    expected = [agent.agent_id for agent in party] + ["no-show-agent"]
    arrivals = [agent.barrier(BarrierArgs(name=name, expected_agents=expected, timeout_seconds=0.3)) for agent in party]
    outcomes = await asyncio.gather(*arrivals, return_exceptions=True)
    assert all(isinstance(o, RouterError) and o.info.code == "barrier_timeout" for o in outcomes)
    assert isinstance(outcomes[0], RouterError)
    assert "never came: no-show-agent" in outcomes[0].info.message


async def test_barrier_by_count(agents):
    name = unique("barrier")
    party = [await agents() for _ in range(3)]
    results = await asyncio.gather(*(agent.barrier(BarrierArgs(name=name, count=3)) for agent in party))
    assert {len(result.arrived) for result in results} == {3}


async def test_barrier_definitions_must_agree(agents):
    name = unique("barrier")
    first, second = await agents(), await agents()
    waiting = asyncio.create_task(first.barrier(BarrierArgs(name=name, count=2, timeout_seconds=1)))
    await asyncio.sleep(0.05)
    with pytest.raises(RouterError) as caught:
        await second.barrier(BarrierArgs(name=name, count=3))
    assert caught.value.info.code == "barrier_mismatch"
    with pytest.raises(RouterError):
        await waiting


async def test_request_gets_the_response_with_the_same_correlation_id(agents):
    requester, worker = await agents(), await agents()

    async def answer(message):
        if message.message_type == "task_request":
            await worker.respond(message, {"sum": sum(message.payload["numbers"])})

    worker.on_message(answer)
    outcome = await requester.request(
        RequestArgs(target_agent_id=worker.agent_id, payload={"numbers": [1, 2, 3]}, timeout_seconds=5)
    )
    assert (outcome.status, outcome.response, outcome.responder) == ("completed", {"sum": 6}, worker.agent_id)


async def test_failed_response_marks_the_task_failed(agents):
    requester, worker = await agents(), await agents()
    worker.on_message(lambda m: asyncio.ensure_future(worker.respond(m, {"status": "failed", "error": "no"})))
    outcome = await requester.request(RequestArgs(target_agent_id=worker.agent_id, payload={}, timeout_seconds=5))
    assert outcome.status == "failed"


async def test_unanswered_request_times_out(agents):
    requester, idler = await agents(), await agents()
    outcome = await requester.request(RequestArgs(target_agent_id=idler.agent_id, payload={}, timeout_seconds=0.3))
    assert (outcome.status, outcome.response) == ("timed_out", None)
