"""Who is there: one record per agent the router has met, online or not, and when it was last seen."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..protocol import RESERVED_AGENT_IDS, AgentInfo, Envelope, ErrorInfo, Hello, Region, TasksRequest

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .connection import Peer
    from .coordination import Waiter


Answer = Callable[["Waiter", "BaseModel | ErrorInfo"], None]


class OutboundSender(Protocol):
    """Sends envelopes addressed outside the mesh (remote A2A agents, :mod:`.a2a.outbound`)."""

    def handles(self, target: str) -> bool: ...

    def send(
        self, waiter: Waiter, envelope: Envelope, answer: Callable[[Waiter, BaseModel | ErrorInfo], None]
    ) -> None: ...


class TaskQueue(Protocol):
    """Answers ``a2a_tasks`` (:mod:`.a2a.book`)."""

    def handle(self, waiter: Waiter, request: TasksRequest, answer: Answer) -> None: ...


class RemoteDirectory(Protocol):
    """Agents outside the mesh that ``a2a_discover`` also lists (:mod:`.remotes`)."""

    def discover(self, agent_type: str | None, capability: str | None, include_offline: bool) -> list[AgentInfo]: ...


@dataclass
class AgentRecord:
    hello: Hello  # what the agent said it is (its secrets left out)
    connection: Peer | None
    busy: bool = False
    last_seen: float = field(default_factory=time.time)

    @property
    def agent_id(self) -> str:
        return self.hello.agent_id

    @property
    def agent_type(self) -> str:
        return self.hello.agent_type

    @property
    def capabilities(self) -> list[str]:
        return self.hello.capabilities

    @property
    def region(self) -> Region | None:
        return self.hello.region

    @property
    def requires_signatures(self) -> bool:
        return self.hello.require_signatures

    @property
    def listed(self) -> bool:
        """False for the router's own agents (the A2A bridge): not broadcast to, discovered or announced."""
        return self.agent_id not in RESERVED_AGENT_IDS

    @property
    def online(self) -> bool:
        return self.connection is not None

    @property
    def status(self) -> str:
        if self.connection is None:
            return "offline"
        return "busy" if self.busy else "online"

    def info(self) -> AgentInfo:
        return AgentInfo(
            agent_id=self.agent_id,
            agent_type=self.agent_type,
            capabilities=self.capabilities,
            region=self.region,
            status=self.status,
            last_seen=self.last_seen,
            where=self.hello.where,
        )


class AgentIdTaken(Exception):
    pass


class Registry:
    """Online agents by id, and the offline ones the router still remembers (at most ``offline_limit``)."""

    def __init__(self, offline_limit: int = 10_000) -> None:
        self._agents: dict[str, AgentRecord] = {}
        self._online = 0
        self.offline_limit = offline_limit

    def connect(self, hello: Hello, connection: Peer) -> AgentRecord:
        """Register ``hello``'s agent on ``connection``; raises :class:`AgentIdTaken` if it is online."""
        known = self._agents.get(hello.agent_id)
        if known is not None and known.online:
            raise AgentIdTaken(hello.agent_id)
        # Re-insert so the dict's order stays "least recently connected first" for eviction.
        self._agents.pop(hello.agent_id, None)
        record = _record_of(hello, connection)
        self._agents[hello.agent_id] = record
        self._online += 1
        return record

    def remember(self, hello: Hello, last_seen: float) -> None:
        """Know an agent met before (for example before a router restart) as offline."""
        self._agents.setdefault(
            hello.agent_id,
            _record_of(hello, None, last_seen),
        )

    def disconnect(self, agent_id: str, connection: Peer) -> AgentRecord | None:
        """Mark the agent offline if ``connection`` is still its connection; returns its record then."""
        record = self._agents.get(agent_id)
        if record is None or record.connection is not connection:
            return None
        record.connection = None
        record.busy = False
        record.last_seen = time.time()
        self._online -= 1
        self._forget_oldest_offline()
        return record

    def get(self, agent_id: str) -> AgentRecord | None:
        """The agent's record, online or offline; None if the router never met it (or forgot it)."""
        return self._agents.get(agent_id)

    def online(self, agent_id: str) -> AgentRecord | None:
        record = self._agents.get(agent_id)
        return record if record is not None and record.online else None

    def of_type(self, agent_type: str) -> Iterator[AgentRecord]:
        """Every online agent of ``agent_type``; ``"all"`` means every type."""
        for record in list(self._agents.values()):
            if record.online and (agent_type == "all" or record.agent_type == agent_type) and record.listed:
                yield record

    def find(
        self,
        agent_type: str | None = None,
        capability: str | None = None,
        region_overlaps: Region | None = None,
        include_offline: bool = False,
    ) -> list[AgentRecord]:
        return [
            record
            for record in self._agents.values()
            if record.listed
            and (include_offline or record.online)
            and (agent_type is None or record.agent_type == agent_type)
            and (capability is None or capability in record.capabilities)
            and (region_overlaps is None or (record.region is not None and record.region.overlaps(region_overlaps)))
        ]

    def __len__(self) -> int:
        """How many agents are online."""
        return self._online

    def _forget_oldest_offline(self) -> None:
        excess = len(self._agents) - self._online - self.offline_limit
        for agent_id in [r.agent_id for r in self._agents.values() if not r.online][: max(excess, 0)]:
            del self._agents[agent_id]


def _record_of(hello: Hello, connection: Peer | None, last_seen: float | None = None) -> AgentRecord:
    record = AgentRecord(hello.model_copy(update={"credential": None, "join_token": None}), connection)
    if last_seen is not None:
        record.last_seen = last_seen
    return record
