"""Start-up of the page's agent: connect, stay connected, register the tools, tell the page.

``web/js/boot.js`` calls :func:`start` with the page's configuration (JSON) and a
small JavaScript *bridge*:

* ``bridge.registerTool(name, title, description, schemaJson, annotationsJson, handler)``
  registers a WebMCP tool whose ``execute`` calls ``handler(argumentsJson)`` and
  parses the JSON it resolves to;
* ``bridge.emit(kind, detailJson)`` dispatches a ``CustomEvent("a2a:" + kind)`` on
  ``window`` for page scripts and the test page's log.
"""

from __future__ import annotations

import asyncio
import json
import random

from pydantic import BaseModel, Field
from pyodide.ffi import create_proxy

from ..client.agent import Agent, MessageHandler
from ..protocol import AgentId, AgentType, Capability, FanoutResult, Hello, ReceivedMessage, Region
from .tools import TOOLS, Tool
from .websocket import BrowserWebSocketTransport

RECONNECT_FIRST_DELAY = 0.5
RECONNECT_MAX_DELAY = 10.0
CLOSE_AGENT_ID_TAKEN = 4009


class PageConfig(BaseModel):
    agent_id: AgentId
    agent_type: AgentType
    capabilities: list[Capability] = Field(default_factory=list)
    region: Region | None = None
    router_url: str


class PageAgent:
    """The page's agent and its connection policy (reconnect with exponential backoff and jitter)."""

    def __init__(self, config: PageConfig, bridge) -> None:
        self.config = config
        self.bridge = bridge
        self.agent = Agent(Hello(agent_id=config.agent_id, agent_type=config.agent_type,
                                 capabilities=config.capabilities, region=config.region))
        self.transport: BrowserWebSocketTransport | None = None
        self.connected = asyncio.Event()
        self._attempt = 0
        self._handlers = []  # proxies of the tool handlers, kept alive for the page's lifetime
        self.agent.on_message(self._emit_message)
        self.agent.on_state(self._state_changed)

    def connect(self) -> None:
        self.transport = BrowserWebSocketTransport(self.config.router_url, self.agent, self._closed)

    async def register_tools(self, tools: tuple[Tool, ...] = TOOLS) -> None:
        for tool in tools:
            handler = create_proxy(self._handler(tool))
            self._handlers.append(handler)
            await self.bridge.registerTool(tool.name, tool.title, tool.description,
                                           json.dumps(tool.input_schema()), json.dumps(tool.annotations()), handler)

    def on_message(self, handler: MessageHandler):
        """Python handler for every message this agent receives; returns a function that removes it."""
        return self.agent.on_message(handler)

    async def publish(self, event_type: str, payload: dict, region: dict | None = None) -> FanoutResult:
        """Publish an event (region_change, task_available, knowledge_update, or any topic)."""
        return await self.agent.publish(event_type, payload, Region.model_validate(region) if region else None)

    def status(self, **overrides) -> dict:
        return {"agent_id": self.agent.agent_id, "agent_type": self.agent.agent_type, "state": self.agent.state,
                "transport": self.transport.name if self.transport else None,
                "router_url": self.config.router_url, **overrides}

    def status_json(self) -> str:
        """For page scripts: the agent's id, type, connection state and transport."""
        return json.dumps(self.status())

    # --- internals ------------------------------------------------------------------

    def _handler(self, tool: Tool):
        async def handle(arguments_json: str) -> str:
            return await tool.call(self.agent, arguments_json)
        return handle

    def _emit_message(self, message: ReceivedMessage) -> None:
        self.bridge.emit("message", message.model_dump_json())

    def _state_changed(self, state: str) -> None:
        if state == "connected":
            self._attempt = 0
            self.connected.set()
        else:
            self.connected.clear()
        self.bridge.emit("state", self.status_json())

    def _closed(self, reason: str) -> None:
        if reason.startswith(f"closed ({CLOSE_AGENT_ID_TAKEN}"):
            # Retrying cannot help: another page is this agent. Say so and stop.
            self.bridge.emit("state", json.dumps(self.status(state="refused", reason=reason)))
            return
        self._attempt += 1
        delay = min(RECONNECT_MAX_DELAY, RECONNECT_FIRST_DELAY * 2 ** (self._attempt - 1))
        delay *= random.uniform(0.5, 1.0)  # jitter: a restarted router is not hit by every page at once
        self.bridge.emit("state", json.dumps(self.status(state="reconnecting", reason=reason,
                                                         retry_in=round(delay, 2))))
        asyncio.get_running_loop().call_later(delay, self.connect)


async def start(config_json: str, bridge) -> PageAgent:
    """Create the page's agent, start connecting, and register its tools."""
    page = PageAgent(PageConfig.model_validate_json(config_json), bridge)
    page.connect()
    await page.register_tools()
    return page

