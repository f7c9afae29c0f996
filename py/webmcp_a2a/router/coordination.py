"""Locks and barriers: the router is the one place every agent agrees on.

Both answer through a ``reply(waiter, result_or_error)`` callback, later if they
must wait: a waiting agent costs a timer, not a task.

* A **lock** has at most one holder. ``acquire`` waits up to ``wait_seconds`` in a
  first-come, first-served queue; the holder keeps it for ``lease_seconds`` (an
  acquire by the holder renews the lease), until it releases it, or until it
  disconnects.
* A **barrier** releases everyone at once when the last expected agent (or the
  ``count``-th) arrives. If the first arrival's timeout passes first, every waiter
  gets a ``barrier_timeout`` error naming who never came.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel

from ..protocol import BarrierRequest, BarrierResult, ErrorInfo, LockRequest, LockResult
from .connection import Peer


@dataclass(eq=False)
class Waiter:
    """An agent waiting for an answer: where to send it and to which request."""

    agent_id: str
    connection: Peer
    ref: int
    timer: asyncio.TimerHandle | None = None

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


Reply = Callable[[Waiter, "BaseModel | ErrorInfo"], None]


@dataclass
class _Lock:
    holder: str | None = None
    lease_seconds: float = 0
    lease_expires_at: float | None = None
    lease_timer: asyncio.TimerHandle | None = None
    waiters: deque[tuple[Waiter, float]] = field(default_factory=deque)  # (waiter, its lease)


class Locks:
    def __init__(self, reply: Reply) -> None:
        self._reply = reply
        self._locks: dict[str, _Lock] = {}

    def request(self, waiter: Waiter, request: LockRequest) -> None:
        if request.action == "acquire":
            self._acquire(waiter, request)
        else:
            self._release(waiter, request.name)

    def holder(self, name: str) -> str | None:
        lock = self._locks.get(name)
        return lock.holder if lock else None

    def agent_left(self, agent_id: str) -> None:
        for name, lock in list(self._locks.items()):
            for queued in [q for q in lock.waiters if q[0].agent_id == agent_id]:
                queued[0].cancel_timer()
                lock.waiters.remove(queued)
            if lock.holder == agent_id:
                self._hand_over(name, lock)

    def _acquire(self, waiter: Waiter, request: LockRequest) -> None:
        lock = self._locks.setdefault(request.name, _Lock())
        if lock.holder is None or lock.holder == waiter.agent_id:
            self._grant(request.name, lock, waiter, request.lease_seconds)
            return
        if request.wait_seconds == 0:
            self._reply(waiter, self._status(request.name, lock, "timeout"))
            return
        queued = (waiter, request.lease_seconds)
        lock.waiters.append(queued)
        waiter.timer = asyncio.get_running_loop().call_later(request.wait_seconds, self._give_up, request.name, queued)

    def _release(self, waiter: Waiter, name: str) -> None:
        lock = self._locks.get(name)
        if lock is None or lock.holder != waiter.agent_id:
            self._reply(waiter, not_lock_holder(name, lock.holder if lock else None))
            return
        self._hand_over(name, lock)
        self._reply(waiter, self._status(name, self._locks.get(name, _Lock()), "released"))

    def _grant(self, name: str, lock: _Lock, waiter: Waiter, lease_seconds: float) -> None:
        if lock.lease_timer is not None:
            lock.lease_timer.cancel()
        lock.holder = waiter.agent_id
        lock.lease_expires_at = time.time() + lease_seconds
        lock.lease_timer = asyncio.get_running_loop().call_later(
            lease_seconds, self._lease_ended, name, waiter.agent_id
        )
        self._reply(waiter, self._status(name, lock, "acquired"))

    def _hand_over(self, name: str, lock: _Lock) -> None:
        """Release ``lock`` and give it to the longest waiter, if any."""
        if lock.lease_timer is not None:
            lock.lease_timer.cancel()
        lock.holder, lock.lease_expires_at, lock.lease_timer = None, None, None
        if lock.waiters:
            waiter, lease_seconds = lock.waiters.popleft()
            waiter.cancel_timer()
            self._grant(name, lock, waiter, lease_seconds)
        else:
            del self._locks[name]

    def _lease_ended(self, name: str, holder: str) -> None:
        lock = self._locks.get(name)
        if lock is not None and lock.holder == holder:
            self._hand_over(name, lock)

    def _give_up(self, name: str, queued: tuple[Waiter, float]) -> None:
        lock = self._locks.get(name)
        if lock is not None and queued in lock.waiters:
            lock.waiters.remove(queued)
            queued[0].timer = None
            self._reply(queued[0], self._status(name, lock, "timeout"))

    @staticmethod
    def _status(name: str, lock: _Lock, status: str) -> LockResult:
        return LockResult(
            name=name,
            status=status,
            holder=lock.holder,
            lease_expires_at=lock.lease_expires_at,
            waiters=len(lock.waiters),
        )


@dataclass
class _Barrier:
    expected: frozenset[str] | None
    count: int | None
    timeout_seconds: float
    arrivals: dict[str, Waiter] = field(default_factory=dict)
    timer: asyncio.TimerHandle | None = None

    def complete(self) -> bool:
        if self.expected is not None:
            return self.expected <= self.arrivals.keys()
        return self.count is not None and len(self.arrivals) >= self.count

    def missing(self) -> str:
        return barrier_missing(self.expected, self.count, self.arrivals)


class Barriers:
    def __init__(self, reply: Reply) -> None:
        self._reply = reply
        self._barriers: dict[str, _Barrier] = {}

    def arrive(self, waiter: Waiter, request: BarrierRequest) -> None:
        expected = frozenset(request.expected_agents) if request.expected_agents else None
        barrier = self._barriers.get(request.name)
        if barrier is None:
            barrier = _Barrier(expected, request.count, request.timeout_seconds)
            barrier.timer = asyncio.get_running_loop().call_later(request.timeout_seconds, self._time_out, request.name)
            self._barriers[request.name] = barrier
        elif (barrier.expected, barrier.count) != (expected, request.count):
            waits_for = barrier_rule_text(barrier.expected, barrier.count)
            self._reply(
                waiter, barrier_rule_mismatch(request.name, waits_for, barrier_rule_text(expected, request.count))
            )
            return
        if barrier.expected is not None and waiter.agent_id not in barrier.expected:
            self._reply(waiter, not_expected_at_barrier(request.name))
            return
        barrier.arrivals[waiter.agent_id] = waiter
        if barrier.complete():
            self._end(request.name, BarrierResult(name=request.name, arrived=sorted(barrier.arrivals)))

    def agent_left(self, agent_id: str) -> None:
        for barrier in self._barriers.values():
            barrier.arrivals.pop(agent_id, None)

    def _time_out(self, name: str) -> None:
        barrier = self._barriers[name]
        self._end(
            name,
            ErrorInfo(
                code="barrier_timeout",
                message=(f"barrier {name!r} gave up after {barrier.timeout_seconds:g}s: {barrier.missing()}"),
            ),
        )

    def _end(self, name: str, outcome: BaseModel | ErrorInfo) -> None:
        barrier = self._barriers.pop(name)
        if barrier.timer is not None:
            barrier.timer.cancel()
        for waiter in barrier.arrivals.values():
            self._reply(waiter, outcome)


def not_lock_holder(name: str, holder: str | None) -> ErrorInfo:
    return ErrorInfo(
        code="not_lock_holder", field="name", message=f"lock {name!r} is held by {holder or 'nobody'}, not by you"
    )


def not_expected_at_barrier(name: str) -> ErrorInfo:
    return ErrorInfo(
        code="barrier_mismatch",
        field="expected_agents",
        message=f"you are not one of the agents barrier {name!r} expects",
    )


def barrier_rule_mismatch(name: str, waits_for: str, asked_for: str) -> ErrorInfo:
    return ErrorInfo(
        code="barrier_mismatch",
        field="name",
        message=f"barrier {name!r} is already waiting for {waits_for}, not {asked_for}",
    )


def barrier_rule_text(expected: frozenset[str] | None, count: int | None) -> str:
    """What a barrier waits for, in words (for a barrier_mismatch error)."""
    if expected is not None:
        return "agents " + ", ".join(sorted(expected))
    return f"{count} agents"


def barrier_missing(expected: frozenset[str] | None, count: int | None, arrived: Iterable[str]) -> str:
    """Who a barrier that gave up was still waiting for, in words (for a barrier_timeout error)."""
    arrived = set(arrived)
    if expected is not None:
        return "never came: " + ", ".join(sorted(expected - arrived))
    return f"{len(arrived)} of {count} arrived ({', '.join(sorted(arrived)) or 'none'})"
