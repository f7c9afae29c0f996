"""Locks and barriers across routers, kept in Redis (:mod:`.scripts`): the cluster's one place to agree.

The semantics are those of :mod:`..coordination`, whichever router each agent is on:

* **Locks.** At most one holder (a script takes the lock only when it is free and the agent is
  first in the lock's queue); first come, first served (the queue is ordered by arrival across
  the cluster); the lease ends by itself (Redis's clock); a release, or the end of a wait, wakes
  the routers with waiters (``lock_free`` event); the holder's disconnection releases the lock,
  and so does its router's death (its lease runs out and the router is buried:
  :data:`.scripts.BURY`). Waiting routers also look again when the lease they wait behind ends,
  and every half second, so a lost event costs a delay, never a lock.
* **Barriers.** Arrivals are kept in Redis; the arrival that completes the barrier, or the first
  router whose timer finds the deadline passed, ends it, and one ``barrier`` event tells every
  router to answer its own waiters.

A Redis that cannot be reached answers a ``store_unavailable`` error: nothing is promised that
the cluster cannot keep.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...protocol import BarrierRequest, BarrierResult, ErrorInfo, LockRequest, LockResult
from ..coordination import (
    Reply,
    Waiter,
    barrier_missing,
    barrier_rule_mismatch,
    barrier_rule_text,
    not_expected_at_barrier,
    not_lock_holder,
)
from ..store import StoreUnavailable
from . import scripts

if TYPE_CHECKING:
    from .cluster import Cluster

log = logging.getLogger("webmcp_a2a.router.cluster")

LOOK_AGAIN = 0.5  # seconds: a waiting router's longest pause between two looks at its lock


@dataclass(eq=False)
class _Queued:
    waiter: Waiter
    lease_seconds: float
    gives_up_at: float  # time.monotonic()


class ClusterLocks:
    def __init__(self, cluster: Cluster, reply: Reply) -> None:
        self._cluster = cluster
        self._reply = reply
        redis = cluster.store.redis
        self._acquire = redis.register_script(scripts.LOCK_ACQUIRE)
        self._release = redis.register_script(scripts.LOCK_RELEASE)
        self._give_up = redis.register_script(scripts.LOCK_GIVE_UP)
        self._queued: dict[str, dict[str, _Queued]] = {}  # lock -> this router's waiting agents, in order
        self._held: dict[str, set[str]] = {}  # this router's agents -> the locks they were given

    def request(self, waiter: Waiter, request: LockRequest) -> None:
        try:
            if request.action == "release":
                self._let_go(waiter, request.name)
            else:
                deadline = time.monotonic() + request.wait_seconds
                self._try(request.name, _Queued(waiter, request.lease_seconds, deadline))
        except StoreUnavailable as exc:
            self._reply(waiter, ErrorInfo(code="store_unavailable", message=str(exc)))

    def lock_free(self, name: str) -> None:
        """The lock may be free (an event, or a timer): this router's waiters try again, in order."""
        for queued in list(self._queued.get(name, {}).values()):
            try:
                self._try(name, queued)
            except StoreUnavailable as exc:
                log.warning("lock %s: %s", name, exc)
                self._wake_later(name, queued, LOOK_AGAIN)

    def agent_left(self, agent_id: str) -> None:
        """A local agent left: its locks are released, its waits end (another router's agents are its own)."""
        try:
            for name in self._held.pop(agent_id, set()):
                self._run(self._release, name, [agent_id, name, self._free_event(name)])
            for name, queued in list(self._queued.items()):
                gone = queued.pop(agent_id, None)
                if gone is not None:
                    gone.waiter.cancel_timer()
                    self._run(self._give_up, name, [agent_id, name, self._free_event(name)])
                if not queued:
                    del self._queued[name]
        except StoreUnavailable as exc:  # their leases end by themselves
            log.warning("locks of %s not released: %s", agent_id, exc)

    def _try(self, name: str, queued: _Queued) -> None:
        waiter = queued.waiter
        left = queued.gives_up_at - time.monotonic()
        wait_ms = max(int(left * 1000), 0)
        was_queued = self._queued.get(name, {}).get(waiter.agent_id) is queued
        lease_ms = int(queued.lease_seconds * 1000)
        state = self._run(self._acquire, name, [waiter.agent_id, self._cluster.node, lease_ms, wait_ms, name])
        if state[0] == 1:
            self._forget(name, waiter.agent_id)
            self._held.setdefault(waiter.agent_id, set()).add(name)
            self._reply(waiter, _result(name, "acquired", state))
        elif wait_ms == 0:  # its wait is over
            self._forget(name, waiter.agent_id)
            if was_queued:  # out of the queue, and the next one woken if the lock is free
                state = self._run(self._give_up, name, [waiter.agent_id, name, self._free_event(name)])
            self._reply(waiter, _result(name, "timeout", state))
        else:
            self._queued.setdefault(name, {})[waiter.agent_id] = queued
            delay = min(left, LOOK_AGAIN)
            if state[1]:  # held: look again when its lease ends, if that comes first
                delay = min(delay, max((int(state[2]) - int(state[4])) / 1000, 0.01))
            self._wake_later(name, queued, delay)

    def _wake_later(self, name: str, queued: _Queued, delay: float) -> None:
        queued.waiter.cancel_timer()
        queued.waiter.timer = asyncio.get_running_loop().call_later(max(delay, 0.0), self._look_again, name, queued)

    def _look_again(self, name: str, queued: _Queued) -> None:
        queued.waiter.timer = None
        if self._queued.get(name, {}).get(queued.waiter.agent_id) is queued:
            try:
                self._try(name, queued)
            except StoreUnavailable as exc:
                self._forget(name, queued.waiter.agent_id)
                self._reply(queued.waiter, ErrorInfo(code="store_unavailable", message=str(exc)))

    def _forget(self, name: str, agent_id: str) -> None:
        queued = self._queued.get(name)
        if queued is not None:
            gone = queued.pop(agent_id, None)
            if gone is not None:
                gone.waiter.cancel_timer()
            if not queued:
                del self._queued[name]

    def _let_go(self, waiter: Waiter, name: str) -> None:
        state = self._run(self._release, name, [waiter.agent_id, name, self._free_event(name)])
        if state[0] != 1:
            self._reply(waiter, not_lock_holder(name, state[1].decode() if state[1] else None))
            return
        self._held.get(waiter.agent_id, set()).discard(name)
        self._reply(waiter, _result(name, "released", state))

    def _run(self, script: Callable[..., Any], name: str, args: list[Any]) -> list[Any]:
        keys = self._cluster.keys
        prefix = keys.prefix
        lock_keys = [
            f"{prefix}lock:{name}",
            f"{prefix}lockq:{name}",
            f"{prefix}lockqx:{name}",
            f"{prefix}lock-seq",
            f"{prefix}node-locks:{self._cluster.node}",
            keys.events,
        ]
        state: list[Any] = self._cluster.store.call(lambda: script(lock_keys, args))
        return state

    @staticmethod
    def _free_event(name: str) -> str:
        return json.dumps({"e": "lock_free", "name": name})


def _result(name: str, status: str, state: list[Any]) -> LockResult:
    _, holder, ends_ms, waiters, _ = state
    return LockResult(
        name=name,
        status=status,
        holder=holder.decode() if holder else None,
        lease_expires_at=int(ends_ms) / 1000 if holder else None,
        waiters=int(waiters),
    )


@dataclass
class _Arrived:
    generation: bytes
    waiters: dict[str, Waiter]
    timer: asyncio.TimerHandle | None = None


class ClusterBarriers:
    def __init__(self, cluster: Cluster, reply: Reply) -> None:
        self._cluster = cluster
        self._reply = reply
        redis = cluster.store.redis
        self._arrive = redis.register_script(scripts.BARRIER_ARRIVE)
        self._time_out = redis.register_script(scripts.BARRIER_TIMEOUT)
        self._here: dict[str, _Arrived] = {}  # barrier -> this router's agents waiting at it

    def arrive(self, waiter: Waiter, request: BarrierRequest) -> None:
        expected = sorted(set(request.expected_agents)) if request.expected_agents else None
        if expected is not None and waiter.agent_id not in expected:
            self._reply(waiter, not_expected_at_barrier(request.name))
            return
        rule = json.dumps({"expected": expected} if expected is not None else {"count": request.count})
        args = [waiter.agent_id, self._cluster.node, rule, int(request.timeout_seconds * 1000), request.name]
        try:
            state = self._run(self._arrive, request.name, args)
        except StoreUnavailable as exc:
            self._reply(waiter, ErrorInfo(code="store_unavailable", message=str(exc)))
            return
        if state[0] == 0:
            self._reply(waiter, barrier_rule_mismatch(request.name, _rule_text(state[1].decode()), _rule_text(rule)))
            return
        here = self._here.get(request.name)
        if here is None or here.generation != state[1]:
            here = self._here[request.name] = _Arrived(state[1], {})
        here.waiters[waiter.agent_id] = waiter
        if state[0] == 1 and here.timer is None:
            self._time_out_in(request.name, here, int(state[2]) / 1000)
        # Completed (2): the barrier event answers everyone, here as at the other routers.

    def ended(self, event: dict[str, Any]) -> None:
        """A barrier ended (completed, or timed out): answer this router's waiters."""
        name = event["name"]
        here = self._here.get(name)
        if here is None or here.generation.decode() != str(event["generation"]):
            return
        del self._here[name]
        if here.timer is not None:
            here.timer.cancel()
        arrived = sorted(event["arrived"]) if isinstance(event["arrived"], list) else []
        outcome: BarrierResult | ErrorInfo = BarrierResult(name=name, arrived=arrived)
        if event.get("timed_out"):
            wanted = json.loads(event["rule"])
            expected = frozenset(wanted["expected"]) if "expected" in wanted else None
            missing = barrier_missing(expected, wanted.get("count"), arrived)
            seconds = int(event["timeout"]) / 1000
            outcome = ErrorInfo(
                code="barrier_timeout", message=f"barrier {name!r} gave up after {seconds:g}s: {missing}"
            )
        for waiter in here.waiters.values():
            self._reply(waiter, outcome)

    def agent_left(self, agent_id: str) -> None:
        for name, here in list(self._here.items()):
            if here.waiters.pop(agent_id, None) is not None:
                key = f"{self._cluster.keys.prefix}barrier-arrivals:{name}"
                try:
                    self._cluster.store.call(functools.partial(self._cluster.store.redis.hdel, key, agent_id))
                except StoreUnavailable as exc:
                    log.warning("barrier %s still counts %s: %s", name, agent_id, exc)

    def _time_out_in(self, name: str, here: _Arrived, delay: float) -> None:
        here.timer = asyncio.get_running_loop().call_later(max(delay, 0.0) + 0.005, self._check_time, name, here)

    def _check_time(self, name: str, here: _Arrived) -> None:
        here.timer = None
        if self._here.get(name) is not here:
            return
        try:
            left = self._run(self._time_out, name, [name, here.generation])
        except StoreUnavailable:
            left = LOOK_AGAIN * 1000
        if left:
            self._time_out_in(name, here, int(left) / 1000)

    def _run(self, script: Callable[..., Any], name: str, args: list[Any]) -> Any:
        prefix = self._cluster.keys.prefix
        keys = [f"{prefix}barrier:{name}", f"{prefix}barrier-arrivals:{name}", f"{prefix}barrier-seq"]
        keys.append(self._cluster.keys.events)
        return self._cluster.store.call(lambda: script(keys, args))


def _rule_text(rule: str) -> str:
    wanted = json.loads(rule)
    return barrier_rule_text(frozenset(wanted["expected"]) if "expected" in wanted else None, wanted.get("count"))
