"""The hub as an A2A agent: ask it anything and it answers with the mesh's directory.

The hub's card (``/.well-known/agent-card.json``) names JSON-RPC at the server's root, so a client
that only knows the host can ask it who is here. The answer is one message (no task: nothing to
wait for) with a line per agent and a data part a program can read::

    {"agents": [{"id": "alice", "type": "page", "status": "online",
                 "capabilities": [...], "card": "http://host/agents/alice/.well-known/agent-card.json"}]}
"""

from __future__ import annotations

from a2a.helpers.proto_helpers import new_data_part, new_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue

from ..registry import Registry
from .cards import agent_url


class DirectoryExecutor(AgentExecutor):
    """Answers every message with the agents the registry lists (online and offline)."""

    def __init__(self, registry: Registry, base_url: str) -> None:
        self._registry = registry
        self._base_url = base_url

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        records = self._registry.find(include_offline=True)
        agents = [
            {
                "id": record.agent_id,
                "type": record.agent_type,
                "status": record.status,
                "capabilities": record.capabilities,
                "card": f"{agent_url(self._base_url, record.agent_id)}/.well-known/agent-card.json",
            }
            for record in records
        ]
        lines = [f"{a['id']} ({a['type']}, {a['status']}): {a['card']}" for a in agents]
        text = f"{len(agents)} agent(s) in this mesh" + "".join(f"\n{line}" for line in lines)
        await event_queue.enqueue_event(
            new_message([new_text_part(text), new_data_part({"agents": agents})], context_id=context.context_id)
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Nothing to cancel: the directory answers at once, with a message and no task."""
