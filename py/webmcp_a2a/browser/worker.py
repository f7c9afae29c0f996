"""The entry of an agent that lives in a dedicated Web Worker (started by ``web/js/worker.js``).

Pyodide's start-up (2-3 s of one long task) then happens off the page's main thread.
The agent is the same :class:`~.page.PageAgent` as everywhere else; the worker's
``bridge`` posts the tool definitions (name, title, description, input schema from
:data:`~.tools.TOOLS`) to the page, which registers them - tools can only be registered
from a Window - and forwards each call back here over the worker's port; the page's
hub is the ``uplink`` (relay fallback, local routes).
"""

from __future__ import annotations

import json

from .page import Bridge, PageAgent
from .page import start as start_page
from .postmessage import JsUplink


async def start(config_json: str, bridge: Bridge, uplink: JsUplink) -> PageAgent:
    config = {**json.loads(config_json), "where": "worker"}
    return await start_page(json.dumps(config), bridge, uplink)
