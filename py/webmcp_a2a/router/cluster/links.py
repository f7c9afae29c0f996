r"""Frames for agents on another router: a link per remote agent, and the way back for their acks.

A remote agent is in every router's registry with a :class:`NodeLink` for its connection: a
:class:`~..connection.Peer` whose ``offer`` publishes the frame on its router's channel. So the
router's routing (direct, broadcast, topics, events) needs no second path for remote agents.

The wire: what this router has for another in one turn of its event loop goes as *one* pub/sub
message on that router's channel - records separated by ``RS`` (``\x1e``), each a header line and
for some a body::

    D ORIGIN PRIORITY EXPIRES MESSAGE_ID AGENT:SERIAL[ AGENT:SERIAL...]\nFRAME
        deliver FRAME to each AGENT; SERIAL 0 wants no answer ("-" for no expiry or message id)
    A SERIAL AGENT MESSAGE_ID 1|0 REASON      AGENT acknowledged (1) or refused (0) the message
    X SERIAL REASON                           the frame was not delivered (expired, evicted, ...)
    T AGENT\nREPLY                            AGENT's answer (A2AReply JSON) to a task whose A2A
                                              request this router's bridge is serving (cluster.py)

Agent ids, message ids and router names have no spaces, colons or control characters
(protocol.py), and JSON text has no raw control characters, so nothing needs escaping. A burst of
messages costs one Redis round trip per router and turn, and a broadcast's frame crosses once per
router, not once per agent.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..connection import CONTROL_PRIORITY, DropCallback

RS = "\x1e"  # between two records of one pub/sub message

if TYPE_CHECKING:
    from ..limits import RateLimit
    from .bus import Bus


@dataclass
class _Waiting:
    on_drop: DropCallback | None
    since: float


class Links:
    """The frames this router sent to other routers' agents and still expects an answer for, and
    the ones other routers sent here (to send their answers back)."""

    def __init__(self, bus: Bus, node: str, channel_of: Callable[[str], str], forget_after: float) -> None:
        self.bus = bus
        self.node = node
        self.channel_of = channel_of
        self.forget_after = forget_after  # seconds: an answer later than this finds nobody waiting
        self._serials = itertools.count(1)
        self._batches: dict[tuple[str, str, int, float | None, str | None], list[tuple[str, int]]] = {}
        self._records: dict[str, list[str]] = {}  # router -> its records of this turn (answers, task replies)
        self._flushing = False  # a flush is due at the end of this turn
        self._waiting: OrderedDict[int, _Waiting] = OrderedDict()
        # (agent, message id) -> (origin router, serial): where this router sends the agent's ack.
        self._forwarded: OrderedDict[tuple[str, str], tuple[str, int, float]] = OrderedDict()

    def link(self, node: str, agent_id: str) -> NodeLink:
        return NodeLink(self, node, agent_id)

    # --- this router's frames to agents elsewhere ------------------------------------------

    def send(
        self,
        node: str,
        agent_id: str,
        text: str,
        priority: int,
        expires_at: float | None,
        on_drop: DropCallback | None,
        message_id: str | None,
    ) -> bool:
        """Queue ``text`` for ``agent_id`` at ``node``; False while the bus is down.

        The frames offered in one turn of the event loop go out together: the same frame for
        several agents of one router (a broadcast, a topic event) as one message.
        """
        if not self.bus.up:
            return False
        serial = 0
        if message_id is not None:  # a delivery: its ack comes back here
            serial = next(self._serials)
            self._waiting[serial] = _Waiting(on_drop, time.monotonic())
        key = (node, text, priority, expires_at, message_id)
        targets = self._batches.get(key)
        if targets is None:
            targets = self._batches[key] = []
            self._flush_soon()
        targets.append((agent_id, serial))
        return True

    def record(self, node: str, record: str) -> None:
        """Queue a record (an answer, a task reply) for ``node``, to go with this turn's frames."""
        self._records.setdefault(node, []).append(record)
        self._flush_soon()

    def _flush_soon(self) -> None:
        if not self._flushing:
            self._flushing = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flushing = False
        batches, self._batches = self._batches, {}
        records, self._records = self._records, {}
        serials: dict[str, list[int]] = {}
        for (node, text, priority, expires_at, message_id), targets in batches.items():
            expires = "-" if expires_at is None else repr(expires_at)
            to = " ".join(f"{agent_id}:{serial}" for agent_id, serial in targets)
            records.setdefault(node, []).append(f"D {self.node} {priority} {expires} {message_id or '-'} {to}\n{text}")
            serials.setdefault(node, []).extend(serial for _, serial in targets if serial)
        for node, lines in records.items():
            waiting = serials.get(node)
            failed = functools.partial(self._undelivered, waiting or [], "the cluster's Redis is unreachable")
            if not self.bus.publish(self.channel_of(node), RS.join(lines).encode(), failed if waiting else None):
                failed()

    def _undelivered(self, serials: list[int], reason: str) -> None:
        for serial in serials:
            self.dropped(serial, reason)

    def dropped(self, serial: int, reason: str) -> None:
        waiting = self._waiting.pop(serial, None)
        if waiting is not None and waiting.on_drop is not None:
            waiting.on_drop(reason)

    def answered(self, serial: int) -> None:
        self._waiting.pop(serial, None)

    # --- other routers' frames to agents here -----------------------------------------------

    def forwarded(self, origin: str, agent_id: str, message_id: str, serial: int) -> DropCallback:
        """Note a delivery from ``origin`` (its ack goes back there); the callback tells it of a drop."""
        self._forwarded[(agent_id, message_id)] = (origin, serial, time.monotonic())
        return lambda reason: self.tell_dropped(origin, agent_id, message_id, serial, reason)

    def tell_dropped(self, origin: str, agent_id: str, message_id: str, serial: int, reason: str) -> None:
        self._forwarded.pop((agent_id, message_id), None)
        self.record(origin, f"X {serial} {reason}")

    def acknowledge(self, agent_id: str, message_id: str, accepted: bool, reason: str) -> bool:
        """Send ``agent_id``'s ack back to the router whose delivery it answers; False if none did."""
        forwarded = self._forwarded.pop((agent_id, message_id), None)
        if forwarded is None:
            return False
        origin, serial, _ = forwarded
        self.record(origin, f"A {serial} {agent_id} {message_id} {int(accepted)} {reason}")
        return True

    def forget_old(self) -> None:
        """Drop what waited longer than ``forget_after`` (its router died, or its answer was lost)."""
        horizon = time.monotonic() - self.forget_after
        while self._waiting and next(iter(self._waiting.values())).since < horizon:
            self._waiting.popitem(last=False)
        while self._forwarded and next(iter(self._forwarded.values()))[2] < horizon:
            self._forwarded.popitem(last=False)


class NodeLink:
    """A remote agent as this router sees it: a connection whose frames go to its router."""

    internal = False
    rate: RateLimit | None = None  # its own router limits its frames

    def __init__(self, links: Links, node: str, agent_id: str) -> None:
        self._links = links
        self.node = node
        self.agent_id: str | None = agent_id
        self.remote = f"router {node}"

    @property
    def closing(self) -> bool:
        return not self._links.bus.up

    def offer(
        self,
        text: str,
        priority: int = CONTROL_PRIORITY,
        expires_at: float | None = None,
        on_drop: DropCallback | None = None,
        message_id: str | None = None,
    ) -> bool:
        assert self.agent_id is not None
        return self._links.send(self.node, self.agent_id, text, priority, expires_at, on_drop, message_id)

    def close(self, code: int, reason: str) -> None:
        """Nothing to close here: the agent's own router owns its connection."""

    def __repr__(self) -> str:
        return f"<NodeLink {self.agent_id} at {self.node}>"
