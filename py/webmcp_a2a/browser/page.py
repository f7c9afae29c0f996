"""The page's agent, wherever the page put it - main thread, worker or iframe.

``web/js/boot.js`` (main thread, iframe) and :mod:`.worker` call :func:`start` with
the agent's configuration (JSON), a JavaScript *bridge* and, when the agent has a
host page, an *uplink*:

* ``bridge.registerTool(name, title, description, schemaJson, annotationsJson, handler)``
  registers a WebMCP tool whose ``execute`` calls ``handler(argumentsJson)`` and
  parses the JSON it resolves to. On the main thread and in an iframe that is the
  document itself; in a worker the page registers the tools on the worker's behalf
  (``web/js/worker.js``, ``web/js/worker-host.js``).
* ``bridge.emit(kind, detailJson)`` dispatches a ``CustomEvent("a2a:" + kind)`` on
  ``window`` for page scripts and the test page's log.
* ``uplink`` is the line to the hub of the page hosting the agent (``web/js/hub.js``):
  the postMessage fallback and local routes (:mod:`.fallback`). Without one the agent
  only has its WebSocket.

The agent's status - where it lives, which transport it is on - is emitted as the
``state`` event, sent to the hub for the host page's table, and offered to AI agents
as the ``a2a_status`` tool.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field
from pyodide.ffi import create_proxy

from ..client.agent import Agent, MessageHandler
from ..protocol import (
    AgentId,
    AgentType,
    Capability,
    FanoutResult,
    Hello,
    LinkStatus,
    Placement,
    ReceivedMessage,
    Region,
    StatusArgs,
)
from . import user_agent
from .fallback import RouterLink
from .loop import ReadyQueueLoop
from .postmessage import HostUplink, JsUplink
from .tools import TOOLS, Tool
from .websocket import BrowserWebSocketTransport

if TYPE_CHECKING:
    from pyodide.ffi import JsCallable

ToolHandler = Callable[[str], str | asyncio.Task[str]]
"""A tool's ``execute``, as the page calls it: arguments as JSON in, an MCP result as JSON out;
the result itself when the call finished at once, else the task still working on it
(``runPythonTool`` in web/js/runtime.js awaits it)."""


class Bridge(Protocol):
    """The JavaScript that started the agent (``web/js/boot.js``, ``web/js/worker.js``)."""

    def registerTool(
        self,
        name: str,
        title: str,
        description: str,
        schema_json: str,
        annotations_json: str,
        handler: JsCallable[[str], str | asyncio.Task[str]],
    ) -> Awaitable[None]: ...

    def emit(self, kind: str, detail_json: str) -> None: ...


class PageConfig(BaseModel):
    agent_id: AgentId
    agent_type: AgentType
    credential: str | None = Field(None, repr=False, description="This agent id's credential, kept by the page")
    join_token: str | None = Field(None, repr=False, description="The router's join token (the page's ?token=)")
    capabilities: list[Capability] = Field(default_factory=list)
    region: Region | None = None
    router_url: str
    where: Placement = "main"
    probe_max_delay: float = Field(10.0, gt=0, le=60, description="Longest wait between WebSocket probes")
    open_timeout: float = Field(5.0, gt=0, le=60, description="Use the fallback if the WebSocket is not open by then")
    agent_url: str | None = Field(
        None, pattern=r"^/[^/]", description="A page agent file to run, on the page's own server (?agent=)"
    )


# What the page's configuration says of the agent's hello (the models say which fields those are).
_HELLO_FIELDS = set(Hello.model_fields) & set(PageConfig.model_fields)


class PageAgent:
    """The page's agent: its tools, its events, and its link to the router (WebSocket, or the host's relay)."""

    def __init__(self, config: PageConfig, bridge: Bridge, uplink: JsUplink | None = None) -> None:
        self.config = config
        self.bridge = bridge
        self.agent = Agent(Hello.model_validate(config.model_dump(include=_HELLO_FIELDS)))
        self.connected = asyncio.Event()
        self.uplink = HostUplink(uplink) if uplink is not None else None
        self.link = RouterLink(
            self.agent,
            config.router_url,
            open_websocket=BrowserWebSocketTransport,
            uplink=self.uplink,
            max_delay=config.probe_max_delay,
            open_timeout=config.open_timeout,
            on_change=self._link_changed,
        )
        # Proxies of the tool handlers, kept alive for the page's lifetime.
        self._handlers: list[JsCallable[[str], str | asyncio.Task[str]]] = []
        self._user_setup: asyncio.Future[None] | None = None
        self.agent.on_message(self._emit_message)
        self.agent.on_state(self._state_changed)

    def connect(self) -> None:
        if self.uplink is not None:
            self.uplink.post("hello", agent_id=self.agent.agent_id, where=self.config.where)
        self.link.start()

    async def register_tools(self, tools: tuple[Tool[Any, Any], ...] = TOOLS) -> None:
        registrations = []
        for tool in (*tools, self._status_tool()):
            handler = create_proxy(self._handler(tool))
            self._handlers.append(handler)
            registrations.append(
                self.bridge.registerTool(
                    tool.name,
                    tool.title,
                    tool.description,
                    json.dumps(tool.input_schema()),
                    json.dumps(tool.annotations()),
                    handler,
                )
            )
        # All at once: from a worker each registration is a round trip to the page.
        await asyncio.gather(*registrations)

    def start_user_agent(self, user: user_agent.PageAgentFile) -> None:
        """Its subscriptions and ``setup`` once joined; a failure there is the page's to see."""
        self._user_setup = asyncio.ensure_future(user.joined(self.agent))
        self._user_setup.add_done_callback(self._user_setup_done)

    def _user_setup_done(self, done: asyncio.Future[None]) -> None:
        if not done.cancelled() and (error := done.exception()) is not None:
            self.bridge.emit("error", json.dumps({"message": f"{self.config.agent_url}: setup failed: {error}"}))

    def on_message(self, handler: MessageHandler) -> Callable[[], None]:
        """Python handler for every message this agent receives; returns a function that removes it."""
        return self.agent.on_message(handler)

    async def publish(
        self, event_type: str, payload: dict[str, Any], region: dict[str, Any] | None = None
    ) -> FanoutResult:
        """Publish an event (region_change, task_available, knowledge_update, or any topic)."""
        return await self.agent.publish(event_type, payload, Region.model_validate(region) if region else None)

    def status_model(self) -> LinkStatus:
        link = self.link
        return LinkStatus(
            agent_id=self.agent.agent_id,
            agent_type=self.agent.agent_type,
            where=self.config.where,
            state="refused" if link.refused else self.agent.state,
            router_url=link.router_in_turn,
            **link.status(),
        )

    def status(self, **overrides: Any) -> dict[str, Any]:
        """For page scripts: id, type, where the agent lives, its state and transport."""
        return {**self.status_model().model_dump(mode="json"), **overrides}

    # --- internals ------------------------------------------------------------------

    def _handler(self, tool: Tool[Any, Any]) -> ToolHandler:
        loop = asyncio.get_running_loop()

        def handle(arguments_json: str) -> str | asyncio.Task[str]:
            # Run at once, up to the call's first real wait: most calls never wait, and a task
            # scheduled the usual way would first go round the browser's event loop. (Pyodide's
            # loop.create_task ignores eager_start; the Task itself honours it.)
            task = asyncio.Task(tool.call(self.agent, arguments_json), loop=loop, eager_start=True)  # type: ignore[call-arg]  # 3.12+: Pyodide has 3.14, mypy checks for 3.11
            return task.result() if task.done() else task

        return handle

    def _emit_message(self, message: ReceivedMessage) -> None:
        self.bridge.emit("message", message.model_dump_json())

    def _state_changed(self, state: str) -> None:
        credential = self.agent.credential
        if state == "connected" and credential is not None and credential != self.config.credential:
            # The router gave this id to this agent: the page keeps the credential (boot.js).
            self.config = self.config.model_copy(update={"credential": credential})
            self.bridge.emit("credential", json.dumps({"agent_id": self.agent.agent_id, "credential": credential}))
        if state == "connected":
            self.connected.set()
        else:
            self.connected.clear()
        self.bridge.emit("state", json.dumps(self.status()))
        self._tell_host()

    def _link_changed(self, **details: Any) -> None:
        if details.get("retry_in") is not None and self.agent.state == "disconnected":
            details["state"] = "reconnecting"
        self.bridge.emit("state", json.dumps(self.status(**details)))
        self._tell_host()

    def _tell_host(self) -> None:
        if self.uplink is not None:
            self.uplink.post("status", status=self.status())

    def _status_tool(self) -> Tool[Any, Any]:
        async def run(agent: Agent, args: StatusArgs) -> LinkStatus:
            return self.status_model()

        def summarize(status: LinkStatus) -> str:
            how = {
                "websocket": "its own WebSocket",
                "postmessage": "the postMessage fallback (relayed by its host page)",
                None: "nothing (not connected)",
            }[status.transport]
            return (
                f"Agent {status.agent_id} lives in the {_PLACES[status.where]} and reaches the router over {how}; "
                f"it is {status.state}. Agents in the same page: {', '.join(status.local_peers) or 'none'}."
            )

        return Tool(
            name="a2a_status",
            title="Where this agent lives and how it is connected",
            description=(
                "Report this agent's id, where it lives (page main thread, Web Worker or iframe), its "
                "connection state and transport (its own WebSocket, or the postMessage fallback through "
                "the page hosting it), and the agents in the same page."
            ),
            arguments=StatusArgs,
            run=run,
            summarize=summarize,
            read_only=True,
        )


_PLACES = {"main": "page's main thread", "worker": "a Web Worker", "iframe": "an iframe"}


async def start(config_json: str, bridge: Bridge, uplink: JsUplink | None = None) -> PageAgent:
    """Create the agent (running its page agent file, if it has one), start connecting (WebSocket
    first), and register its tools."""
    ReadyQueueLoop.install()
    config = PageConfig.model_validate_json(config_json)
    user = await user_agent.load(config.agent_url) if config.agent_url else None
    agent = PageAgent(config, bridge, uplink)
    if user is not None:
        user.attach(agent.agent)
    agent.connect()
    await agent.register_tools((*TOOLS, *(user.tools if user else ())))
    if user is not None:
        agent.start_user_agent(user)
    return agent
