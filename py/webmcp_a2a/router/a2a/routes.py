"""The A2A endpoints, served through the official ``a2a-sdk``.

* ``GET /.well-known/agent-card.json``: the hub's card (the router, listing the mesh's agents);
  ``POST /``: the hub's JSON-RPC, which answers any message with the directory.
* ``GET /agents/X/.well-known/agent-card.json`` (and the 0.2-era ``agent.json``): agent X's card.
* ``POST /agents/X``: JSON-RPC 2.0, A2A 1.0 methods and their 0.3 names (the SDK's dispatcher
  with its 0.3 compatibility on; a 1.0 method name without ``A2A-Version`` is taken as 1.0), SSE
  for streaming. One SDK dispatcher per agent, made when the agent is first addressed; its
  executor is :class:`~.bridge.MeshExecutor`.

When the router has join tokens, A2A requests must carry one as ``Authorization: Bearer TOKEN``
(the cards declare it); browsers' requests are held to the Origin allowlist like the rest.
"""

from __future__ import annotations

import json

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import AgentCard
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Message

from ...protocol import RESERVED_AGENT_IDS, json_too_deep
from ..cluster.tasks import RedisTaskStore
from ..http_security import bearer_refusal
from ..registry import AgentRecord
from ..routing import Router
from .bridge import Bridge, MeshExecutor
from .cards import agent_card, hub_card, with_presence
from .directory import DirectoryExecutor
from .tasks import AgentContextBuilder, SqliteTaskStore, TaskStores

CARD_CACHE = "no-cache"  # cards change as agents come and go: revalidate (ETag) every time


class A2AService:
    """The bridge agent, the per-agent SDK dispatchers, and the routes that reach them."""

    def __init__(self, router: Router) -> None:
        self.router = router
        cluster = router.cluster
        store = RedisTaskStore(cluster.store) if cluster is not None else SqliteTaskStore(router.settings.store_path)
        self.tasks = TaskStores(store)
        self.bridge = Bridge(router, self.tasks)
        self._dispatchers: dict[str, JsonRpcDispatcher] = {}
        self._hub: JsonRpcDispatcher | None = None

    async def start(self) -> None:
        await self.bridge.start()

    async def stop(self) -> None:
        self.bridge.stop()
        await self.tasks.close()

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/.well-known/agent-card.json", self._hub_card, methods=["GET"]),
            Route("/", self._hub_rpc, methods=["POST"]),
            Route("/agents/{agent_id}/.well-known/agent-card.json", self._agent_card, methods=["GET"]),
            Route("/agents/{agent_id}/.well-known/agent.json", self._agent_card, methods=["GET"]),
            Route("/agents/{agent_id}", self._rpc, methods=["POST"]),
        ]

    async def _hub_card(self, request: Request) -> Response:
        settings = self.router.settings
        agents = [] if settings.join_tokens else self.router.registry.find(include_offline=True)
        return await _serve_card(hub_card(agents, _base(request), settings), request)

    async def _hub_rpc(self, request: Request) -> Response:
        if refusal := bearer_refusal(request, self.router.settings.join_tokens):
            return refusal
        if self._hub is None:
            base, settings = _base(request), self.router.settings
            registry = self.router.registry

            async def full_listing(card: AgentCard, context: ServerCallContext) -> AgentCard:
                return hub_card(registry.find(include_offline=True), base, settings)

            handler = DefaultRequestHandler(
                agent_executor=DirectoryExecutor(registry, base),
                task_store=InMemoryTaskStore(),  # the directory answers with messages, never tasks
                agent_card=hub_card([], base, settings),
                extended_agent_card=hub_card([], base, settings) if settings.join_tokens else None,
                extended_card_modifier=full_listing,
            )
            self._hub = JsonRpcDispatcher(request_handler=handler, enable_v0_3_compat=True)
        return await self._hub.handle_requests(await _versioned(request))

    async def _agent_card(self, request: Request) -> Response:
        record = self._agent(request)
        if record is None:
            return _no_agent(request)
        return await _serve_card(agent_card(record, _base(request), self.router.settings), request)

    async def _rpc(self, request: Request) -> Response:
        record = self._agent(request)
        if record is None:
            return _no_agent(request)
        if refusal := bearer_refusal(request, self.router.settings.join_tokens):
            return refusal
        dispatcher = self._dispatchers.get(record.agent_id)
        if dispatcher is None:
            settings, registry, agent_id = self.router.settings, self.router.registry, record.agent_id

            async def presence(card: AgentCard, context: ServerCallContext) -> AgentCard:
                return with_presence(card, registry.get(agent_id))

            card = agent_card(record, _base(request), settings)
            handler = DefaultRequestHandler(
                agent_executor=MeshExecutor(self.bridge, agent_id, settings.a2a_reply_timeout),
                task_store=self.tasks.store,
                agent_card=card,
                extended_agent_card=card if settings.join_tokens else None,
                extended_card_modifier=presence,
            )
            dispatcher = self._dispatchers[record.agent_id] = JsonRpcDispatcher(
                request_handler=handler, context_builder=AgentContextBuilder(), enable_v0_3_compat=True
            )
        return await dispatcher.handle_requests(await _versioned(request))

    def _agent(self, request: Request) -> AgentRecord | None:
        agent_id = request.path_params["agent_id"]
        return None if agent_id in RESERVED_AGENT_IDS else self.router.registry.get(agent_id)


async def _serve_card(card: AgentCard, request: Request) -> Response:
    """Through the SDK's own card route: its dual-stack JSON, ETag and 304."""
    (route,) = create_agent_card_routes(card, card_url=request.url.path, cache_control=CARD_CACHE)
    response: Response = await route.endpoint(request)
    return response


async def _versioned(request: Request) -> Request:
    """A request without ``A2A-Version`` is 0.3 to the SDK; one that names a 1.0 method (``GetTask``,
    not ``tasks/get``: 0.3 names all have a slash) is taken as 1.0, so such clients are served."""
    if "a2a-version" in request.headers:
        return request
    body = await request.body()
    try:
        method = json.loads(body).get("method") if not json_too_deep(body.decode(errors="replace")) else None
    except (ValueError, AttributeError):
        method = None  # the SDK answers the parse error
    if not isinstance(method, str) or "/" in method:
        return request
    scope = {**request.scope, "headers": [*request.scope["headers"], (b"a2a-version", b"1.0")]}

    async def replay() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(scope, replay)


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def _no_agent(request: Request) -> Response:
    return JSONResponse({"error": f"no agent {request.path_params['agent_id']!r} in this mesh"}, status_code=404)
