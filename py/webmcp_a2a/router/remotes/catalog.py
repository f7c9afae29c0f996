"""The registry of remote A2A agents: what the operator registered, kept in the router's store.

Each remote agent is its card (as fetched, JSON), where it came from, the operator's own tags, notes
and facts about it, and its health (the last check of its card: when, how long it took, what went
wrong). The catalog is a dict in memory written through to the table ``remote_agents`` of
``--store``, so lookups on the message path ask no query and a restart forgets nothing.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Iterator
from typing import Annotated, Any, Literal, NamedTuple

from a2a.types.a2a_pb2 import AgentCard
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator

from ...protocol import AgentId, AgentInfo, AgentStatus
from ..tls import normalise_fingerprint
from .cards import DIRECTORY_SKILL, hub_name, parse_card

REMOTE_TYPE = "remote"  # the agent_type registered remote agents are listed with
Tag = Annotated[str, Field(min_length=1, max_length=64)]
Key = Annotated[str, Field(min_length=16, max_length=256)]
FilePath = Annotated[str, Field(min_length=1, max_length=4096)]  # on the router's machine
Trust = Literal["none", "api-key", "bearer", "mtls"]
"""none: no direct messages from this hub are taken, nothing is presented to it. api-key: ``send_key``
goes with every request to it (``X-A2A-Hub-Key``), and its agents' direct messages must come with
``accept_key`` there. bearer: the same as ``Authorization: Bearer``, the token sent being ``send_key``
or one obtained from ``token_url`` (OAuth2 client credentials). mtls: we connect to it with our client
certificate ``client_cert`` (and ``client_key``), and its agents' direct messages must come over a
connection whose client certificate (verified by ``serve.py --tls-client-ca``) has the SHA-256
fingerprint ``accept_key``."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS remote_agents (
    agent_id TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
"""


class TLSFiles(NamedTuple):
    """How we connect to one remote over HTTPS: the CA bundle that verifies it, the certificate we show it."""

    ca_cert: str | None = None
    client_cert: str | None = None
    client_key: str | None = None


class Health(BaseModel):
    status: Literal["unknown", "ok", "failing"] = Field("unknown", description="The last check's verdict")
    checked_at: float | None = Field(None, description="Seconds since the epoch of the last check")
    latency_ms: float | None = Field(None, description="How long the last successful fetch of the card took")
    error: str | None = Field(None, description="What went wrong, when the last check failed")
    failures: int = Field(0, description="Checks failed in a row")


class RemoteAgent(BaseModel):
    """One registered remote agent, as the registry API shows it."""

    model_config = ConfigDict(extra="forbid")

    id: AgentId
    card_url: str = Field(description="Where its card is fetched from")
    card: dict[str, Any] = Field(description="The card, as last fetched")
    etag: str | None = Field(None, description="The card's ETag, for conditional fetches")
    tags: list[Tag] = Field(default_factory=list)
    notes: str = ""
    facts: dict[str, Any] = Field(default_factory=dict)
    registered_at: float = Field(default_factory=time.time)
    health: Health = Field(default_factory=Health)
    trust: Trust = "none"
    send_key: str | None = None  # presented to it with every request (api-key, bearer)
    accept_key: str | None = None  # what a hub must present for its agents' direct messages
    token_url: str | None = None  # bearer: where to obtain the token (OAuth2 client credentials)
    client_id: str | None = None
    client_secret: str | None = None
    ca_cert: str | None = None  # PEM CA bundle that verifies its HTTPS certificate (default: the system's)
    client_cert: str | None = None  # mtls: the certificate chain (PEM) we present to it
    client_key: str | None = None  # mtls: that certificate's key, when not in the same file

    def tls_files(self) -> TLSFiles:
        return TLSFiles(self.ca_cert, self.client_cert, self.client_key)

    def public(self) -> dict[str, Any]:
        """The record as the API shows it: secrets left out."""
        return self.model_dump(mode="json", exclude={"send_key", "accept_key", "client_secret"})

    _parsed: tuple[dict[str, Any], AgentCard] | None = PrivateAttr(None)

    @property
    def parsed(self) -> AgentCard:
        """The card as the SDK reads it: parsed once per card (a fetched card replaces the dict)."""
        if self._parsed is None or self._parsed[0] is not self.card:
            self._parsed = (self.card, parse_card(self.card))
        return self._parsed[1]

    @property
    def online(self) -> bool:
        return self.health.status != "failing"

    @property
    def hub(self) -> str | None:
        """The hub's own name, when this is a webmcp-a2a hub's card."""
        return hub_name(self.parsed)

    def info(self) -> AgentInfo:
        """How ``a2a_discover`` lists it: type ``remote``, its skills as capabilities."""
        return AgentInfo(
            agent_id=self.id,
            agent_type=REMOTE_TYPE,
            capabilities=self.skill_ids(),
            region=None,
            status="online" if self.online else "offline",
            last_seen=self.health.checked_at or self.registered_at,
            remote=True,
            url=self.card_url,
        )

    def hub_agents(self) -> list[AgentInfo]:
        """A hub's agents as ``ID@HUB``, as its card lists them (a skill each: tags = type, status,
        capabilities); all offline while the hub's check fails."""
        card = self.parsed
        if hub_name(card) is None:
            return []
        return [
            AgentInfo(
                agent_id=f"{skill.id}@{self.id}",
                agent_type=skill.tags[0] if skill.tags else "agent",
                capabilities=list(skill.tags[2:]),
                region=None,
                status=_status(skill.tags[1]) if len(skill.tags) > 1 and self.online else "offline",
                last_seen=self.health.checked_at or self.registered_at,
                remote=True,
                url=f"{self.root_url}/agents/{skill.id}/.well-known/agent-card.json",
            )
            for skill in card.skills
            if skill.id != DIRECTORY_SKILL
        ]

    @property
    def root_url(self) -> str:
        """A hub's root: its card's first interface (the hub's own JSON-RPC, at /)."""
        return str(self.parsed.supported_interfaces[0].url).rstrip("/")

    def words(self) -> str:
        """Everything a text search looks through, lower-cased."""
        card = self.parsed
        skills = [f"{s.id} {s.name} {s.description} {' '.join(s.tags)}" for s in card.skills]
        return " ".join([self.id, card.name, card.description, *skills, *self.tags, self.notes]).lower()

    def skill_ids(self) -> list[str]:
        return [skill.id for skill in self.parsed.skills]

    def matches(
        self, text: str | None = None, skill: str | None = None, tag: str | None = None, capability: str | None = None
    ) -> bool:
        card = self.parsed
        return (
            (text is None or text.lower() in self.words())
            and (skill is None or any(skill in (s.id, s.name) for s in card.skills))
            and (tag is None or tag in self.tags or any(tag in s.tags for s in card.skills))
            and (capability is None or _declares(card, capability) or capability in self.skill_ids())
        )


class RegisterRequest(BaseModel):
    """``POST /registry``: register the agent whose card is at (or under) ``card_url``."""

    model_config = ConfigDict(extra="forbid")

    card_url: str = Field(description="The card's URL, or the agent's base URL (the well-known path is added)")
    id: AgentId | None = Field(None, description="The id to give it in the mesh; default: from the card's name")
    tags: list[Tag] = Field(default_factory=list)
    notes: str = Field("", max_length=4000)
    facts: dict[str, Any] = Field(default_factory=dict)
    trust: Trust = Field("none", description="none, api-key, bearer or mtls")
    send_key: Key | None = Field(None, description="api-key, bearer: the key or token to present to it")
    token_url: str | None = Field(None, description="bearer: obtain the token here (OAuth2 client credentials)")
    client_id: str | None = Field(None, max_length=256)
    client_secret: str | None = Field(None, max_length=256)
    ca_cert: FilePath | None = Field(None, description="PEM CA bundle that verifies its HTTPS certificate")
    client_cert: FilePath | None = Field(None, description="mtls: our certificate chain (PEM) to present to it")
    client_key: FilePath | None = Field(None, description="mtls: its private key, if not in client_cert")
    accept_key: Key | None = Field(
        None,
        validate_default=True,
        description="the key or token it must present; under mtls its certificate's SHA-256 fingerprint",
    )

    @field_validator("accept_key")
    @classmethod
    def _credentials_for_the_tier(cls, accept_key: str | None, info: ValidationInfo) -> str | None:
        trust = info.data.get("trust")
        if trust == "mtls":
            if not (accept_key or info.data.get("client_cert")):
                raise ValueError("trust mtls needs client_cert, accept_key (a certificate fingerprint), or both")
            return normalise_fingerprint(accept_key) if accept_key else None
        given = accept_key or info.data.get("send_key") or info.data.get("token_url")
        if trust in ("api-key", "bearer") and not given:
            raise ValueError(f"trust {trust} needs send_key (or token_url), accept_key, or both")
        return accept_key

    @field_validator("card_url")
    @classmethod
    def _http(cls, url: str) -> str:
        if not re.match(r"^https?://[^/\s]+", url):
            raise ValueError("must be an http:// or https:// URL")
        return url


class UpdateRequest(BaseModel):
    """``PATCH /registry/{id}``: replace the operator's tags, notes or facts (the card is the agent's)."""

    model_config = ConfigDict(extra="forbid")

    tags: list[Tag] | None = None
    notes: str | None = Field(None, max_length=4000)
    facts: dict[str, Any] | None = None
    trust: Trust | None = None
    send_key: Key | None = None
    accept_key: Key | None = None
    token_url: str | None = None
    client_id: str | None = Field(None, max_length=256)
    client_secret: str | None = Field(None, max_length=256)
    ca_cert: FilePath | None = None
    client_cert: FilePath | None = None
    client_key: FilePath | None = None


def id_from_name(name: str) -> str:
    """An agent id made from a card's name: ``Weather Bot`` -> ``weather-bot``."""
    slug = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-.")[:64]
    return slug or "remote"


class Catalog:
    """Registered remote agents by id, in memory and in the store."""

    def __init__(self, path: str) -> None:
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._agents = {
            agent_id: RemoteAgent.model_validate_json(record)
            for agent_id, record in self._db.execute("SELECT agent_id, record FROM remote_agents")
        }

    def close(self) -> None:
        self._db.close()

    def __contains__(self, agent_id: str) -> bool:
        return agent_id in self._agents

    def __iter__(self) -> Iterator[RemoteAgent]:
        return iter(list(self._agents.values()))

    def get(self, agent_id: str) -> RemoteAgent | None:
        return self._agents.get(agent_id)

    def save(self, agent: RemoteAgent) -> None:
        self._agents[agent.id] = agent
        self._db.execute(
            "INSERT OR REPLACE INTO remote_agents (agent_id, record) VALUES (?, ?)", (agent.id, agent.model_dump_json())
        )

    def delete(self, agent_id: str) -> None:
        self._db.execute("DELETE FROM remote_agents WHERE agent_id = ?", (agent_id,))
        self._agents.pop(agent_id, None)

    def record_for(self, target: str) -> RemoteAgent | None:
        """The registration that governs ``target``: its own, or its hub's for ``ID@HUB``."""
        return self._agents.get(target) or self._agents.get(target.rpartition("@")[2] if "@" in target else "")

    def hub_agent_url(self, target: str) -> str | None:
        """Where ``ID@HUB`` answers A2A, for a registered hub HUB (listed by its card yet or not: the
        hub knows its agents better than our last look at its card)."""
        agent_id, at, hub = target.rpartition("@")
        registered = self._agents.get(hub) if at else None
        if registered is None or registered.hub is None:
            return None
        return f"{registered.root_url}/agents/{agent_id}"

    def search(self, **criteria: str | None) -> list[RemoteAgent]:
        return [agent for agent in self._agents.values() if agent.matches(**criteria)]


def _status(listed: str) -> AgentStatus:
    return "busy" if listed == "busy" else "offline" if listed == "offline" else "online"


def _declares(card: AgentCard, capability: str) -> bool:
    """``streaming``, ``push_notifications``, ``extended_agent_card``: what the card's capabilities say."""
    return capability in card.capabilities.DESCRIPTOR.fields_by_name and bool(getattr(card.capabilities, capability))
