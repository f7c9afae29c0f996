"""Who is connected: one record per online agent, looked up by id or by type."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

from ..protocol import Region

if TYPE_CHECKING:
    from .connection import Connection


@dataclass
class AgentRecord:
    agent_id: str
    agent_type: str
    capabilities: list[str]
    region: Region | None
    connection: Connection
    connected_at: float = field(default_factory=time.time)

    def describe(self) -> dict:
        return {
            "agent_id": self.agent_id,
            "agent_type": self.agent_type,
            "capabilities": self.capabilities,
            "region": self.region.model_dump() if self.region else None,
        }


class AgentIdTaken(Exception):
    pass


class Registry:
    def __init__(self) -> None:
        self._agents: dict[str, AgentRecord] = {}

    def add(self, record: AgentRecord) -> None:
        if record.agent_id in self._agents:
            raise AgentIdTaken(record.agent_id)
        self._agents[record.agent_id] = record

    def remove(self, agent_id: str) -> None:
        self._agents.pop(agent_id, None)

    def get(self, agent_id: str) -> AgentRecord | None:
        return self._agents.get(agent_id)

    def of_type(self, agent_type: str) -> Iterator[AgentRecord]:
        """Every online agent of ``agent_type``; ``"all"`` means every type."""
        if agent_type == "all":
            return iter(list(self._agents.values()))
        return (record for record in list(self._agents.values()) if record.agent_type == agent_type)

    def __len__(self) -> int:
        return len(self._agents)
