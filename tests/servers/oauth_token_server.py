"""An OAuth2 token endpoint for the tests (client-credentials grant, RFC 6749 section 4.4).

    python tests/servers/oauth_token_server.py --port P

``POST /token`` with ``grant_type=client_credentials``, ``client_id=C``, ``client_secret=secret-of-C``
answers ``{"access_token": "token-of-C-0123456789", "token_type": "Bearer", "expires_in": 600}``;
anything else is a 401. ``GET /issued`` says how many tokens it gave (to see them cached).
"""

from __future__ import annotations

import argparse
from urllib.parse import parse_qs

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

issued = 0


async def token(request: Request) -> JSONResponse:
    global issued
    form = {name: values[0] for name, values in parse_qs((await request.body()).decode()).items()}
    client = form.get("client_id", "")
    secret_ok = bool(client) and form.get("client_secret") == f"secret-of-{client}"
    if form.get("grant_type") != "client_credentials" or not secret_ok:
        return JSONResponse({"error": "invalid_client"}, status_code=401)
    issued += 1
    return JSONResponse({"access_token": f"token-of-{client}-0123456789", "token_type": "Bearer", "expires_in": 600})


async def count(request: Request) -> JSONResponse:
    return JSONResponse({"issued": issued})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    port = parser.parse_args().port
    app = Starlette(routes=[Route("/token", token, methods=["POST"]), Route("/issued", count)])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
