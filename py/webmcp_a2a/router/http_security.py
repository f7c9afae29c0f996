"""The HTTP side of "only invited pages join": an ``Origin`` allowlist and the usual response headers.

Two small ASGI middlewares, in the manner of Starlette's own:

* :class:`OriginGate` refuses any request or WebSocket upgrade whose ``Origin`` header names a
  site that is not allowed: HTTP 403 before a route runs, and for a WebSocket an HTTP 403 instead
  of the upgrade (no frame is ever exchanged). A request without ``Origin`` comes from no
  browser's cross-site context (the CPython client, A2A clients, curl, or a page's own same-origin
  navigation and sub-resources), which a web site cannot forge; the join token governs those.
* :class:`SecurityHeaders` adds a Content-Security-Policy that permits exactly what the page
  needs (its own scripts, WebAssembly compilation for Pyodide, same-origin workers and frames,
  WebSockets to loopback routers), ``frame-ancestors 'self'``, ``nosniff`` and a strict referrer
  policy to every HTTP response.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .identity import one_of

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")  # as they are written in a URL
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def server_origins(host: str, port: int, scheme: str = "http") -> list[str]:
    """The origins a server on ``host:port`` serves its own pages from.

    Loopback (and wildcard) binds answer under every loopback name; another host under its own
    name. Other names (a LAN address, a proxy in front) are added with ``--allow-origin``.
    """
    names = LOOPBACK_HOSTS if host in (*LOOPBACK_NAMES, "[::1]", *WILDCARD_HOSTS) else (host,)
    return [f"{scheme}://{name}:{port}" for name in names]


def normalise_origin(origin: str) -> str:
    """``scheme://host[:port]``, lower-case, without a trailing slash (how browsers send ``Origin``)."""
    parts = urlsplit(origin.strip().rstrip("/"))
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an origin: {origin!r} (expected scheme://host[:port])")
    return f"{parts.scheme}://{parts.netloc}".lower()


class OriginGate:
    def __init__(self, app: ASGIApp, allowed: Iterable[str]) -> None:
        self.app = app
        self.allowed = frozenset(normalise_origin(origin) for origin in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            origin = Headers(scope=scope).get("origin")
            if origin is not None and origin.lower() not in self.allowed:
                if scope["type"] == "websocket":
                    # Closing before accepting: the server answers the upgrade with HTTP 403.
                    await send({"type": "websocket.close", "code": 1008, "reason": "origin not allowed"})
                else:
                    response = PlainTextResponse(f"origin not allowed: {origin}", status_code=403)
                    await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def bearer_refusal(request: Request, tokens: Iterable[str]) -> Response | None:
    """The 401 for an HTTP API request without one of the router's join tokens (``Authorization:
    Bearer TOKEN``); None when it has one, or when the router has none."""
    tokens = list(tokens)
    if not tokens:
        return None
    scheme, _, presented = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and one_of(presented, tokens):
        return None
    return JSONResponse(
        {"error": "this router requires its join token: Authorization: Bearer TOKEN"},
        status_code=401,
        headers={"WWW-Authenticate": "Bearer"},
    )


def content_security_policy(router_origins: Iterable[str] = ()) -> str:
    websockets = " ".join(
        f"{'wss' if origin.startswith('https') else 'ws'}://{urlsplit(origin).netloc}"
        for origin in router_origins
        if urlsplit(origin).hostname not in LOOPBACK_NAMES  # covered by the loopback sources
    )
    # CSP's host sources have no IPv6 literals (Chromium reports ws://[::1]:* invalid and ignores it).
    loopback = " ".join(f"ws://{host}:*" for host in LOOPBACK_HOSTS if not host.startswith("["))
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self' 'wasm-unsafe-eval'",  # Pyodide compiles WebAssembly; nothing is eval'd
            "style-src 'self'",
            "img-src 'self' data:",
            f"connect-src 'self' {loopback} {websockets}".strip(),  # a page may name a loopback router (?router=)
            "worker-src 'self'",
            "frame-src 'self'",
            "frame-ancestors 'self'",
            "object-src 'none'",
            "base-uri 'self'",
            "form-action 'self'",
        ]
    )


class SecurityHeaders:
    def __init__(self, app: ASGIApp, csp: str) -> None:
        self.app = app
        self.headers = {
            "Content-Security-Policy": csp,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "SAMEORIGIN",
            "Cross-Origin-Opener-Policy": "same-origin",
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in self.headers.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)
