"""An agent wherever the page put it - main thread, worker or iframe - with its host's fallback.

The same :class:`HostedAgent` runs in the three places; only what the JavaScript hands
it differs:

* ``bridge`` registers its WebMCP tools and dispatches its events. On the main thread
  and in an iframe that is the document itself (``web/js/boot.js``); in a worker it
  posts them to the page, which registers the tools on the worker's behalf
  (``web/js/worker.js``, ``web/js/worker-host.js``).
* ``uplink`` (optional) is the line to the hub of the page hosting the agent
  (``web/js/hub.js``): the postMessage fallback and local routes
  (:mod:`.fallback`). Without one the agent only has its WebSocket.

The agent's status - where it lives, which transport it is on - is emitted as the
``state`` event, sent to the hub for the host page's table, and offered to AI agents
as the ``a2a_status`` tool.
"""

from __future__ import annotations

import json

from pydantic import Field

from ..protocol import LinkStatus, Placement, StatusArgs
from .fallback import RouterLink
from .page import PageAgent, PageConfig
from .postmessage import HostUplink
from .tools import TOOLS, Tool
from .websocket import BrowserWebSocketTransport


class HostedConfig(PageConfig):
    where: Placement = "main"
    probe_max_delay: float = Field(10.0, gt=0, le=60, description="Longest wait between WebSocket probes")
    open_timeout: float = Field(5.0, gt=0, le=60, description="Use the fallback if the WebSocket is not open by then")


class HostedAgent(PageAgent):
    def __init__(self, config: HostedConfig, bridge, uplink=None) -> None:
        super().__init__(config, bridge)
        self.uplink = HostUplink(uplink) if uplink is not None else None
        self.link = RouterLink(self.agent, config.router_url, open_websocket=BrowserWebSocketTransport,
                               uplink=self.uplink, max_delay=config.probe_max_delay,
                               open_timeout=config.open_timeout, on_change=self._link_changed)

    def connect(self) -> None:
        if self.uplink is not None:
            self.uplink.post("hello", agent_id=self.agent.agent_id, where=self.config.where)
        self.link.start()

    async def register_tools(self, tools: tuple[Tool, ...] = TOOLS) -> None:
        await super().register_tools((*tools, self._status_tool()))

    def status_model(self) -> LinkStatus:
        link = self.link
        return LinkStatus(agent_id=self.agent.agent_id, agent_type=self.agent.agent_type, where=self.config.where,
                          state="refused" if link.refused else self.agent.state, router_url=self.config.router_url,
                          **link.status())

    def status(self, **overrides) -> dict:
        return {**self.status_model().model_dump(mode="json"), **overrides}

    # --- internals ----------------------------------------------------------------------------

    def _state_changed(self, state: str) -> None:
        super()._state_changed(state)  # emits the state event with status_json()
        self._tell_host()

    def _link_changed(self, **details) -> None:
        if details.get("retry_in") is not None and self.agent.state == "disconnected":
            details["state"] = "reconnecting"
        self.bridge.emit("state", json.dumps(self.status(**details)))
        self._tell_host()

    def _tell_host(self) -> None:
        if self.uplink is not None:
            self.uplink.post("status", status=self.status())

    def _status_tool(self) -> Tool:
        async def run(agent, args: StatusArgs) -> LinkStatus:
            return self.status_model()

        def summarize(status: LinkStatus) -> str:
            how = {"websocket": "its own WebSocket", "postmessage": "the postMessage fallback (relayed by its host page)",
                   None: "nothing (not connected)"}[status.transport]
            return (f"Agent {status.agent_id} lives in the {_PLACES[status.where]} and reaches the router over {how}; "
                    f"it is {status.state}. Agents in the same page: {', '.join(status.local_peers) or 'none'}.")

        return Tool(
            name="a2a_status",
            title="Where this agent lives and how it is connected",
            description=("Report this agent's id, where it lives (page main thread, Web Worker or iframe), its "
                         "connection state and transport (its own WebSocket, or the postMessage fallback through "
                         "the page hosting it), and the agents in the same page."),
            arguments=StatusArgs,
            run=run,
            summarize=summarize,
            read_only=True,
        )


_PLACES = {"main": "page's main thread", "worker": "a Web Worker", "iframe": "an iframe"}


async def start(config_json: str, bridge, uplink=None) -> HostedAgent:
    """Create the agent, start connecting (WebSocket first), and register its tools."""
    agent = HostedAgent(HostedConfig.model_validate_json(config_json), bridge, uplink)
    agent.connect()
    await agent.register_tools()
    return agent
