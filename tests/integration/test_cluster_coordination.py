"""Locks and barriers across routers: the single router's specifications (tests/unit/test_coordination.py),
run again with each test's agents spread over three routers of one cluster, in turn."""

from __future__ import annotations

import itertools

import pytest

from tests.unit.test_coordination import (  # noqa: F401 (collected here, against the cluster)
    test_barrier_by_count,
    test_barrier_definitions_must_agree,
    test_barrier_names_who_never_came,
    test_barrier_of_four_releases_all_at_once,
    test_lease_end_hands_the_lock_over,
    test_lock_contention_among_five_is_fair_and_survives_a_holder_leaving,
    test_only_one_holder_at_a_time,
    test_waiting_for_a_held_lock_times_out,
)


@pytest.fixture
async def agents(cluster_agents):
    """The single router's ``agents`` factory, but each agent at the next router of the cluster."""
    turn = itertools.count()

    async def make(agent_type: str = "executor", **hello):
        return await cluster_agents(next(turn) % 3, agent_type, **hello)

    return make
