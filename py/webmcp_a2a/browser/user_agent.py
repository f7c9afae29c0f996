"""Page agents users write: a Python file the page loads by its URL (``?agent=/page-agents/NAME.py``).

The file is an ordinary module, run in the page's Python (Pyodide) before the agent joins the
mesh. Everything in it is optional::

    REQUIRES = ["requests"]          pure-Python packages it imports: micropip installs them from the
                                     wheels this server hosts (static/wheels, pinned), never the network
    SUBSCRIBE = ["region_change"]    topics the agent subscribes to once it has joined
    TOOLS = [greet]                  WebMCP tools of its own, made with :func:`tool` from pydantic models
    def on_message(agent, message)   every message that arrives (a topic's event has a subscription_id)
    def on_task(agent, task)         every A2A task given to the agent (an InboundTask: task.reply(...))
    async def setup(agent)           once, after the agent has joined

``agent`` is the agent's :class:`~webmcp_a2a.client.agent.Agent` (send, broadcast, publish, ...);
handlers may be coroutines. ``requests`` and ``urllib`` reach the page's own server: pyodide-http
is installed and patched in before the file runs (examples/page_agents/ has two such agents).
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

from pydantic import BaseModel, RootModel

from ..client.agent import Agent
from .tools import Tool

Args = TypeVar("Args", bound=BaseModel)

# Installed for every page agent: it makes requests and urllib work over the browser's HTTP.
ALWAYS_INSTALLED = ("pyodide-http",)


class PageAgentFileError(Exception):
    """The agent file could not be used; the message says which file and why."""


class ToolAnswer(RootModel[dict[str, Any]]):
    """What a user-written tool answered, as the tool result's structured content."""


def tool(
    arguments: type[Args],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    read_only: bool = False,
) -> Callable[[Callable[[Agent, Args], Any]], Tool[Args, BaseModel]]:
    """Make ``function(agent, args)`` a WebMCP tool whose input schema is ``arguments``' JSON Schema.

    It answers a pydantic model or a dict (any other value is given as ``{"result": value}``);
    the description defaults to the function's docstring, the name to the function's.
    """

    def make(function: Callable[[Agent, Args], Any]) -> Tool[Args, BaseModel]:
        async def run(agent: Agent, args: Args) -> BaseModel:
            answer = function(agent, args)
            if inspect.isawaitable(answer):
                answer = await answer
            if isinstance(answer, BaseModel):
                return answer
            return ToolAnswer(answer if isinstance(answer, dict) else {"result": answer})

        return Tool(
            name=name or function.__name__,
            title=title or (name or function.__name__).replace("_", " ").capitalize(),
            description=description or inspect.getdoc(function) or f"{function.__name__} (a page agent's tool)",
            arguments=arguments,
            run=run,
            summarize=lambda outcome: outcome.model_dump_json()[:300],
            read_only=read_only,
        )

    return make


@dataclass
class PageAgentFile:
    """What an agent file defines, once it has run."""

    url: str
    module: ModuleType
    tools: list[Tool[Any, Any]] = field(default_factory=list)
    subscribe: list[str] = field(default_factory=list)

    def handler(self, name: str) -> Callable[..., Any] | None:
        found = getattr(self.module, name, None)
        return found if callable(found) else None

    def attach(self, agent: Agent) -> None:
        """Hand the file's handlers what arrives (before the agent joins: kept mail comes with the welcome)."""
        if on_message := self.handler("on_message"):
            agent.on_message(lambda message: on_message(agent, message))
        if on_task := self.handler("on_task"):
            agent.on_task(lambda task: on_task(agent, task))

    async def joined(self, agent: Agent) -> None:
        """Once the agent has joined: its subscriptions, then the file's own ``setup``."""
        await agent.welcomed()
        for topic in self.subscribe:
            await agent.subscribe(topic)
        if setup := self.handler("setup"):
            answer = setup(agent)
            if inspect.isawaitable(answer):
                await answer


async def load(url: str) -> PageAgentFile:
    """Fetch the file at ``url`` (the page's own server), install what it requires, run it."""
    from pyodide.http import pyfetch

    response = await pyfetch(url)
    if not response.ok:
        raise PageAgentFileError(f"the agent file {url} could not be fetched: HTTP {response.status}")
    source = await response.string()
    try:
        tree = ast.parse(source, url)
    except SyntaxError as error:
        raise PageAgentFileError(f"the agent file {url} is not valid Python: {error}") from error
    requires = _literal_list(tree, "REQUIRES", url)
    await install(url, [*requires, *ALWAYS_INSTALLED])
    import pyodide_http

    pyodide_http.patch_all()
    module = ModuleType(re.sub(r"\W", "_", url.rsplit("/", 1)[-1].removesuffix(".py")) or "page_agent")
    module.__file__ = url
    exec(compile(tree, url, "exec"), module.__dict__)
    tools = list(getattr(module, "TOOLS", []))
    for index, item in enumerate(tools):
        if not isinstance(item, Tool):
            raise PageAgentFileError(f"the agent file {url}: TOOLS[{index}] is not made with @tool")
    return PageAgentFile(url, module, tools, _literal_list(tree, "SUBSCRIBE", url))


async def install(url: str, requirements: list[str]) -> None:
    """micropip, from the wheels the page's lock file lists; anything else is refused before it runs."""
    import pyodide_js
    from js import location

    hosted = set(pyodide_js.lockfile.packages.to_py())
    for requirement in requirements:
        name = _canonical(re.match(r"\s*([A-Za-z0-9._-]*)", requirement).group(1))  # type: ignore[union-attr]
        if name not in hosted:
            raise PageAgentFileError(
                f"the agent file {url} requires {requirement!r}, which this server does not host "
                f"(it has: {', '.join(sorted(hosted))})"
            )
    await pyodide_js.loadPackage("micropip")
    import micropip

    # An index on this origin that has nothing: a requirement the lock cannot meet fails here, offline.
    await micropip.install(requirements, index_urls=[f"{location.origin}/static/wheels/no-index/"])


def _literal_list(tree: ast.Module, name: str, url: str) -> list[str]:
    """A module-level ``NAME = [...]`` of strings, read without running the file."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError as error:
                raise PageAgentFileError(f"the agent file {url}: {name} must be a list of strings") from error
            if not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
                raise PageAgentFileError(f"the agent file {url}: {name} must be a list of strings")
            return value
    return []


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
