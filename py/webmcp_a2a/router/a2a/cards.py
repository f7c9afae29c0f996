"""Agent Cards: what an A2A client reads before it talks to an agent of the mesh (or to the hub).

Cards are ``a2a-sdk`` protobuf ``AgentCard`` objects; the SDK's card route serialises them
dual-stack (A2A 1.0 ``supportedInterfaces`` plus the 0.3 ``url``, ``preferredTransport``,
``protocolVersion``) and answers ``If-None-Match`` with 304.
"""

from __future__ import annotations

from datetime import UTC, datetime

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    MutualTlsSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from ...protocol import HUB_KEY_HEADER
from ..registry import AgentRecord
from ..remotes.cards import DIRECTORY_SKILL, HUB_EXTENSION
from ..settings import RouterSettings

VERSION = "1"

MODES = ["text/plain", "application/json"]


def agent_url(base_url: str, agent_id: str) -> str:
    return f"{base_url}/agents/{agent_id}"


def _json_rpc(url: str) -> list[AgentInterface]:
    """JSON-RPC at ``url`` for A2A 1.0 and 0.3 clients (the SDK serves both there): a dual-stack card."""
    return [AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=version) for version in ("1.0", "0.3")]


def agent_card(record: AgentRecord, base_url: str, settings: RouterSettings) -> AgentCard:
    """The card of one agent of the mesh: JSON-RPC at ``/agents/X``, its capabilities as skills."""
    url = agent_url(base_url, record.agent_id)
    skills = [
        AgentSkill(id=capability, name=capability, description=f"{record.agent_id} can {capability}", tags=[capability])
        for capability in record.capabilities
    ] or [
        AgentSkill(
            id=record.agent_type,
            name=record.agent_type,
            description=f"an agent of type {record.agent_type}",
            tags=[record.agent_type],
        )
    ]
    card = AgentCard(
        name=record.agent_id,
        description=f"{record.agent_type} agent {record.agent_id!r} of a webmcp-a2a mesh, reached through its router",
        version=VERSION,
        supported_interfaces=_json_rpc(url),
        capabilities=AgentCapabilities(streaming=True, extended_agent_card=bool(settings.join_tokens)),
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=skills,
    )
    _declare_security(card, settings)
    return card


def with_presence(card: AgentCard, record: AgentRecord | None) -> AgentCard:
    """The extended card (``GetExtendedAgentCard``, offered only behind the router's join tokens:
    an extended card must need authentication): the public one plus whether the agent is connected
    now, read from the registry at the time of the call."""
    extended = AgentCard()
    extended.CopyFrom(card)
    if record is None or record.connection is None:
        seen = "" if record is None else f", last seen {_utc(record.last_seen)}"
        extended.description += f" Now offline{seen}: tasks wait for it."
    else:
        extended.description += f" Now {record.status}."
    return extended


def _utc(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def hub_card(records: list[AgentRecord], base_url: str, settings: RouterSettings) -> AgentCard:
    """The router's own card: the mesh, with one skill per agent naming where its card is. The hub
    answers JSON-RPC at the root with the directory (:mod:`.directory`). A router with join tokens
    lists its agents only to clients that present one (``GetExtendedAgentCard``, the directory)."""
    root = f"{base_url}/"
    card = AgentCard(
        name="webmcp-a2a hub",
        description=(
            "A router of a webmcp-a2a mesh. Every agent of the mesh is an A2A agent at /agents/ID "
            "(its card at /agents/ID/.well-known/agent-card.json); the skills below list them. "
            "Send the hub any message and it answers with the directory. Remote A2A agents are kept in the "
            "registry at /registry (JSON: POST a card_url to register, GET ?q=&skill=&tag=&capability= to search)."
        ),
        version=VERSION,
        supported_interfaces=_json_rpc(root),
        capabilities=AgentCapabilities(
            streaming=False,
            extended_agent_card=bool(settings.join_tokens),
            extensions=[
                AgentExtension(
                    uri=HUB_EXTENSION,
                    description="A webmcp-a2a hub: its agents (the skills) are at /agents/ID; a hub that "
                    "registers this card reaches them as ID@HUB",
                    params={"hub": settings.hub_name},
                )
            ],
        ),
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=[
            AgentSkill(
                id=DIRECTORY_SKILL,
                name="directory",
                description="Send the hub any message: it answers with the mesh's agents and their cards",
                tags=["directory"],
            ),
            *(
                AgentSkill(
                    id=record.agent_id,
                    name=record.agent_id,
                    description=f"{record.agent_type} agent, {record.status}: {agent_url(base_url, record.agent_id)}",
                    tags=[record.agent_type, record.status, *record.capabilities],
                )
                for record in records
            ),
        ],
    )
    _declare_security(card, settings)
    _declare_federation(card, settings)
    return card


def _declare_security(card: AgentCard, settings: RouterSettings) -> None:
    """The router's join token, when it has one, is a bearer token on every A2A request."""
    if settings.join_tokens:
        card.security_schemes["joinToken"].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="bearer", description="The router's join token (serve.py --token)"
                )
            )
        )
        card.security_requirements.append(SecurityRequirement(schemes={"joinToken": StringList(list=[])}))


def _declare_federation(card: AgentCard, settings: RouterSettings) -> None:
    """What a federated hub presents (on the hub's card only: ordinary clients need none of it, and an
    agent's card declares only what every request must carry)."""
    card.security_schemes["hubKey"].CopyFrom(
        SecurityScheme(
            api_key_security_scheme=APIKeySecurityScheme(
                location="header",
                name=HUB_KEY_HEADER,
                description="Federated hubs under trust tier api-key: the key this hub expects from the sender",
            )
        )
    )
    card.security_schemes["hubToken"].CopyFrom(
        SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="bearer", description="Federated hubs under trust tier bearer: the sender's token"
            )
        )
    )
    if settings.tls_client_ca:
        card.security_schemes["hubCertificate"].CopyFrom(
            SecurityScheme(
                mtls_security_scheme=MutualTlsSecurityScheme(
                    description="Federated hubs under trust tier mtls: the sender's client certificate (its "
                    "SHA-256 fingerprint registered here), issued by a CA this hub trusts"
                )
            )
        )
