"""A page agent that needs a package and HTTP: ``?agent=/page-agents/router_watch.py``.

``REQUIRES`` has micropip install ``requests`` (and what it needs) from the wheels this server
hosts; pyodide-http makes ``requests`` work in the page, so the ``router_health`` tool can ask the
page's own server how the router is.
"""

from importlib.metadata import version

import requests
from js import location
from pydantic import BaseModel

from webmcp_a2a.browser.user_agent import tool
from webmcp_a2a.client.agent import Agent

REQUIRES = ["requests"]


class NoArguments(BaseModel):
    pass


@tool(NoArguments, read_only=True)
def router_health(agent: Agent, args: NoArguments) -> dict[str, object]:
    """Ask the page's own server (GET /healthz, with requests) how the router is."""
    response = requests.get(f"{location.origin}/healthz", timeout=5)
    return {"status_code": response.status_code, "health": response.json(), "requests": version("requests")}


TOOLS = [router_health]
