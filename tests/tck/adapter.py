"""Put one agent of the router at the root of a port, for clients that only take a host (the A2A TCK).

    python tests/tck/adapter.py http://127.0.0.1:8765/agents/echo 9000

``GET /.well-known/agent-card.json`` and ``POST /`` on port 9000 are forwarded, bodies and streams
byte for byte, to the agent's card and JSON-RPC URL. A test harness, not part of the product.
"""

from __future__ import annotations

import sys

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

FORWARDED = ("content-type", "accept", "a2a-version", "authorization")


def create_app(agent_url: str) -> Starlette:
    client = httpx.AsyncClient(timeout=120)

    async def card(request: Request) -> Response:
        answer = await client.get(f"{agent_url}/.well-known/agent-card.json")
        return Response(answer.content, status_code=answer.status_code, media_type="application/json")

    async def rpc(request: Request) -> Response:
        headers = {name: value for name, value in request.headers.items() if name in FORWARDED}
        outgoing = client.build_request("POST", agent_url, content=await request.body(), headers=headers)
        answer = await client.send(outgoing, stream=True)
        return StreamingResponse(
            answer.aiter_raw(),
            status_code=answer.status_code,
            media_type=answer.headers.get("content-type"),
            background=BackgroundTask(answer.aclose),
        )

    return Starlette(routes=[Route("/.well-known/agent-card.json", card), Route("/", rpc, methods=["POST"])])


if __name__ == "__main__":
    agent, port = sys.argv[1], int(sys.argv[2])
    uvicorn.run(create_app(agent), host="127.0.0.1", port=port, log_level="warning", access_log=False)
