"""The registry's HTTP API, JSON in and out, under ``/registry``.

* ``POST /registry`` ``{"card_url", "id"?, "tags"?, "notes"?, "facts"?}``: the router fetches and
  validates the card, then keeps the agent (201). 422 for a bad body or a card that is not one,
  502 when the card cannot be fetched, 409 when the id is taken. Errors: ``{"error", "field"}``.
* ``GET /registry?q=&skill=&tag=&capability=``: ``{"agents": [...]}``, every given criterion met
  (``q``: text anywhere in the card, tags and notes).
* ``GET /registry/{id}``, ``PATCH /registry/{id}`` (tags, notes, facts), ``DELETE /registry/{id}`` (204).
* ``POST /registry/{id}/check``: check its health now (the same conditional fetch of its card as the
  periodic check) and answer the record.

The same rules as the rest of the router's HTTP API: the Origin allowlist (browsers), and with join
tokens an ``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ..http_security import bearer_refusal
from .catalog import RegisterRequest, UpdateRequest
from .service import RegistryError, Remotes

Handler = Callable[[Request], Awaitable[Response]]
M = TypeVar("M", bound=BaseModel)
MAX_BODY = 64 * 1024


def registry_routes(remotes: Remotes, join_tokens: list[str], local_ids: Callable[[], set[str]]) -> list[BaseRoute]:
    def guarded(handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            if refusal := bearer_refusal(request, join_tokens):
                return refusal
            try:
                return await handler(request)
            except RegistryError as error:
                return _error(error.status, str(error), error.field)

        return endpoint

    async def register(request: Request) -> Response:
        body = await _body(request, RegisterRequest)
        agent = await remotes.register(body, local_ids())
        return JSONResponse(agent.public(), status_code=201)

    async def search(request: Request) -> Response:
        query = request.query_params
        unknown = set(query) - {"q", "skill", "tag", "capability"}
        if unknown:
            return _error(422, f"unknown query parameter {sorted(unknown)[0]!r}", sorted(unknown)[0])
        found = remotes.catalog.search(
            text=query.get("q"), skill=query.get("skill"), tag=query.get("tag"), capability=query.get("capability")
        )
        return JSONResponse({"agents": [agent.public() for agent in found]})

    async def one(request: Request) -> Response:
        agent_id = request.path_params["agent_id"]
        if request.method == "DELETE":
            remotes.forget(agent_id)
            return Response(status_code=204)
        if request.method == "PATCH":
            agent = remotes.update(agent_id, await _body(request, UpdateRequest))
        else:
            agent = remotes.known(agent_id)
        return JSONResponse(agent.public())

    async def check(request: Request) -> Response:
        agent = await remotes.check(request.path_params["agent_id"])
        return JSONResponse(agent.public())

    return [
        Route("/registry", guarded(search), methods=["GET"]),
        Route("/registry", guarded(register), methods=["POST"]),
        Route("/registry/{agent_id}", guarded(one), methods=["GET", "PATCH", "DELETE"]),
        Route("/registry/{agent_id}/check", guarded(check), methods=["POST"]),
    ]


async def _body(request: Request, model: type[M]) -> M:
    """The request's JSON body as ``model``, or a :class:`RegistryError` naming the field at fault."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise RegistryError(413, f"the body is over {MAX_BODY} bytes")
    try:
        data: Any = json.loads(raw)
    except ValueError as error:
        raise RegistryError(400, f"the body is not JSON: {error}") from error
    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        raise RegistryError(422, f"{field or 'body'}: {first['msg']}", field) from error


def _error(status: int, message: str, field: str | None = None) -> Response:
    return JSONResponse({"error": message, "field": field}, status_code=status)
