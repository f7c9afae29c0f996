"""Fetching remote Agent Cards: where a card lives, a conditional GET, the SDK's parser, a verdict.

A card URL may be given whole (``.../agent-card.json``, or any URL whose path ends in ``.json``) or as the
agent's base URL, to which the well-known path is added. Fetches are conditional when an ``ETag`` is
known (``If-None-Match``; a 304 keeps the card), and parsed with the ``a2a-sdk``'s own
``parse_agent_card`` (1.0 cards and 0.3 ones, which it converts). A card must name the agent and
say where to reach it (at least one interface, or a 0.3 ``url``) to be usable.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from a2a.client.card_resolver import parse_agent_card
from a2a.types.a2a_pb2 import AgentCard
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from google.protobuf.json_format import ParseError  # type: ignore[import-untyped]

HUB_EXTENSION = "urn:webmcp-a2a:hub:v1"  # marks a webmcp-a2a hub's card; params {"hub": its name}
DIRECTORY_SKILL = "webmcp-a2a.directory"  # a hub card's own skill (the directory), not one of its agents


class CardError(Exception):
    """The card could not be had: ``kind`` is ``unreachable``, ``refused`` (HTTP 401/403) or ``invalid``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Fetched:
    card: AgentCard | None  # None: not modified since ``etag``
    data: dict[str, Any] | None
    etag: str | None
    latency_ms: float
    max_age: float = 0.0  # seconds the card may be used without asking again (Cache-Control)


def card_url(url: str) -> str:
    """The URL of the card: ``url`` itself when it names a JSON file, else its well-known card."""
    trimmed = url.rstrip("/")
    return trimmed if urlsplit(trimmed).path.endswith(".json") else f"{trimmed}{AGENT_CARD_WELL_KNOWN_PATH}"


def parse_card(data: Any) -> AgentCard:
    """The SDK's reading of a card's JSON, or :class:`CardError` ``invalid`` saying what is wrong."""
    if not isinstance(data, dict):
        raise CardError("invalid", "the card is not a JSON object")
    try:
        card = parse_agent_card(json.loads(json.dumps(data)))  # the parser edits what it is given
    except (ParseError, ValueError, TypeError, KeyError) as error:
        raise CardError("invalid", f"not an Agent Card: {error}") from error
    if not card.name:
        raise CardError("invalid", "the card has no name")
    if not any(interface.url for interface in card.supported_interfaces):
        raise CardError("invalid", "the card says nowhere to reach the agent (no interface URL)")
    return card


async def fetch_card(http: httpx.AsyncClient, url: str, etag: str | None = None) -> Fetched:
    """GET the card at ``url`` (conditional on ``etag``) and parse it."""
    headers = {"Accept": "application/json"}
    if etag:
        headers["If-None-Match"] = etag
    started = time.perf_counter()
    try:
        response = await http.get(url, headers=headers)
    except httpx.HTTPError as error:
        raise CardError("unreachable", f"{url}: {type(error).__name__}: {error}") from error
    latency_ms = round((time.perf_counter() - started) * 1000, 2)
    max_age = _max_age(response.headers.get("cache-control", ""))
    if response.status_code == 304 and etag:
        return Fetched(None, None, etag, latency_ms, max_age)
    if response.status_code in (401, 403):
        raise CardError("refused", f"{url}: HTTP {response.status_code}")
    if response.status_code != 200:
        raise CardError("unreachable", f"{url}: HTTP {response.status_code}")
    try:
        data = response.json()
    except ValueError as error:
        raise CardError("invalid", f"{url}: not JSON") from error
    return Fetched(parse_card(data), data, response.headers.get("etag"), latency_ms, max_age)


def _max_age(cache_control: str) -> float:
    directives = [part.strip().lower() for part in cache_control.split(",")]
    if "no-cache" in directives or "no-store" in directives:
        return 0.0
    for directive in directives:
        name, _, value = directive.partition("=")
        if name == "max-age" and value.strip('"').isdigit():
            return float(value.strip('"'))
    return 0.0


def hub_name(card: AgentCard) -> str | None:
    """The hub's own name, when ``card`` is a webmcp-a2a hub's (it carries the hub extension)."""
    for extension in card.capabilities.extensions:
        if extension.uri == HUB_EXTENSION:
            return str(extension.params["hub"]) if "hub" in extension.params else card.name
    return None
