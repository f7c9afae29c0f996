"""What the registry does: register by card URL, update, forget, check health (on demand and
periodically), and answer the router's ``a2a_discover`` for remote agents."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time

from ...protocol import AgentInfo
from ..tls import TLSFileError
from .cards import CardError, card_url, fetch_card, hub_name
from .catalog import (
    REMOTE_TYPE,
    Catalog,
    Health,
    RegisterRequest,
    RemoteAgent,
    TLSFiles,
    UpdateRequest,
    id_from_name,
)
from .credentials import Clients

log = logging.getLogger("webmcp_a2a.router.remotes")


class RegistryError(Exception):
    """A refused registry operation: an HTTP status, and the request field at fault when there is one."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


class Remotes:
    """The catalog, an HTTP client to fetch cards with, and the periodic health check."""

    def __init__(self, store_path: str, health_interval: float, fetch_timeout: float) -> None:
        self.catalog = Catalog(store_path)
        self.health_interval = health_interval
        self._clients = Clients(fetch_timeout)
        self._checker: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._checker = asyncio.create_task(self._check_periodically())

    async def stop(self) -> None:
        if self._checker is not None:
            self._checker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._checker
        await self._clients.aclose()
        self.catalog.close()

    async def register(self, request: RegisterRequest, taken: set[str]) -> RemoteAgent:
        """Fetch and validate the card, then keep the agent; ``taken``: the mesh's own ids."""
        url = card_url(request.card_url)
        try:
            http = self._clients.for_files(TLSFiles(request.ca_cert, request.client_cert, request.client_key))
        except TLSFileError as error:
            raise RegistryError(422, str(error), error.field) from error
        try:
            fetched = await fetch_card(http, url)
        except CardError as error:
            raise RegistryError(502 if error.kind == "unreachable" else 422, str(error), "card_url") from error
        assert fetched.card is not None  # no etag was sent: never "not modified"
        assert fetched.data is not None
        agent_id = request.id or hub_name(fetched.card) or id_from_name(fetched.card.name)
        if agent_id in taken or agent_id in self.catalog:
            raise RegistryError(409, f"the id {agent_id!r} is taken in this mesh; give another with 'id'", "id")
        agent = RemoteAgent(
            id=agent_id,
            card_url=url,
            card=fetched.data,
            etag=fetched.etag,
            health=Health(status="ok", checked_at=time.time(), latency_ms=fetched.latency_ms),
            **request.model_dump(exclude={"id", "card_url"}),
        )
        self.catalog.save(agent)
        return agent

    def update(self, agent_id: str, request: UpdateRequest) -> RemoteAgent:
        agent = self.known(agent_id)
        changes = request.model_dump(exclude_none=True)
        updated = agent.model_copy(update=changes)
        self.catalog.save(updated)
        return updated

    def refuses(self, hub: str, presented: dict[str, str | None]) -> str | None:
        """Why direct messages from the agents of registered hub ``hub`` are refused; None: taken.
        ``presented``: what the request carried, by tier (``api-key``: its hub key, ``bearer``: its token)."""
        record = self.catalog.get(hub)
        if record is None or record.hub is None:
            return f"{hub!r} is not a hub registered here: its agents' direct messages are refused"
        if record.trust == "none":
            return f"hub {hub!r} has trust tier none: its agents' direct messages are refused"
        shown = presented.get(record.trust)
        if record.accept_key is None or shown is None or not hmac.compare_digest(shown, record.accept_key):
            return f"hub {hub!r} did not present the {record.trust} credential this router expects from it"
        return None

    def forget(self, agent_id: str) -> None:
        self.catalog.delete(self.known(agent_id).id)

    async def check(self, agent_id: str) -> RemoteAgent:
        """Fetch the card again (conditionally): the agent's health now, and its card if it changed."""
        agent = self.known(agent_id)
        health = agent.health.model_copy()
        health.checked_at = time.time()
        card, etag = agent.card, agent.etag
        try:
            fetched = await fetch_card(self._clients.for_record(agent), agent.card_url, agent.etag)
        except (CardError, TLSFileError) as error:
            health.status, health.error, health.failures = "failing", str(error), health.failures + 1
        else:
            health.status, health.error, health.failures, health.latency_ms = "ok", None, 0, fetched.latency_ms
            if fetched.data is not None:
                card, etag = fetched.data, fetched.etag
        if agent_id not in self.catalog:  # forgotten while we fetched
            return agent
        checked = agent.model_copy(update={"health": health, "card": card, "etag": etag})
        self.catalog.save(checked)
        return checked

    def discover(self, agent_type: str | None, capability: str | None, include_offline: bool) -> list[AgentInfo]:
        """Registered remote agents (type ``remote``) and the agents of registered hubs (``ID@HUB``)."""
        found = [
            member
            for agent in self.catalog
            for member in agent.hub_agents()
            if (include_offline or member.status != "offline")
            and agent_type in (None, member.agent_type)
            and capability in (None, *member.capabilities)
        ]
        if agent_type in (None, REMOTE_TYPE):
            found += [
                agent.info() for agent in self.catalog.search(capability=capability) if include_offline or agent.online
            ]
        return found

    def known(self, agent_id: str) -> RemoteAgent:
        agent = self.catalog.get(agent_id)
        if agent is None:
            raise RegistryError(404, f"no remote agent {agent_id!r} in the registry")
        return agent

    async def _check_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.health_interval)
            agents = list(self.catalog)
            results = await asyncio.gather(*(self.check(agent.id) for agent in agents), return_exceptions=True)
            for agent, result in zip(agents, results, strict=True):
                if isinstance(result, Exception) and not isinstance(result, RegistryError):
                    log.warning("health check of %s failed: %r", agent.id, result)
