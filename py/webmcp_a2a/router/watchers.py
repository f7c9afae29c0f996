"""Those who watch the mesh (the ``/watch`` WebSocket): the mesh view, ``webmcp-a2a tail --mesh``.

A watcher sees who is there (agents as they come, go and change status; each topic's subscribers)
and every message's route as the router sends it on: sender, recipients, type, correlation id,
never a payload. Whoever may join may watch, unless the router has watch tokens: then only their
holders. Watching costs the message path nothing while nobody watches; a watcher that reads too
slowly misses events (its queue is bounded, and events go at the lowest priority) and nobody waits
for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from pydantic import BaseModel

from ..protocol import (
    AgentInfo,
    AgentSeen,
    Envelope,
    ErrorInfo,
    MeshSeen,
    MessageSeen,
    TopicSeen,
    WatchRequest,
)
from .connection import Peer
from .identity import one_of
from .settings import RouterSettings

EVENT_PRIORITY = 1  # the lowest: a watcher's backlog never holds up anything else


class Watchers:
    def __init__(self, settings: RouterSettings) -> None:
        self._settings = settings
        self._peers: set[Peer] = set()

    def __bool__(self) -> bool:
        return bool(self._peers)

    def refusal(self, request: WatchRequest) -> ErrorInfo | None:
        """Why ``request`` may not watch, or None when it may."""
        tokens = self._settings.watch_tokens or self._settings.join_tokens
        if not tokens:
            return None
        if request.token is None:
            return ErrorInfo(
                code="watch_token_required", message="this router requires a token to watch", field="token"
            )
        if not one_of(request.token, tokens):
            return ErrorInfo(code="bad_watch_token", message="the token is not one this router accepts", field="token")
        return None

    def add(self, peer: Peer, mesh: MeshSeen) -> None:
        self._peers.add(peer)
        peer.offer(mesh.model_dump_json())

    def remove(self, peer: Peer) -> None:
        self._peers.discard(peer)

    def agent(self, info: AgentInfo) -> None:
        if self._peers:
            self._tell(AgentSeen(agent=info))

    def topic(self, topic: str, subscribers: list[str]) -> None:
        if self._peers:
            self._tell(TopicSeen(topic=topic, subscribers=subscribers))

    def message(self, envelope: Envelope, recipients: Iterable[str]) -> None:
        if self._peers:
            self._tell(
                MessageSeen(
                    message_id=envelope.message_id,
                    from_agent=envelope.from_agent,
                    to_agent=envelope.to_agent,
                    recipients=list(recipients),
                    message_type=envelope.message_type,
                    correlation_id=envelope.metadata.correlation_id,
                    priority=envelope.priority,
                    at=time.time(),
                )
            )

    def _tell(self, frame: BaseModel) -> None:
        text = frame.model_dump_json()
        for peer in list(self._peers):
            peer.offer(text, EVENT_PRIORITY)
