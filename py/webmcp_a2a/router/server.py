"""How the router is served: uvicorn with the ``websockets`` implementation, set up in one place."""

from __future__ import annotations

import uvicorn

from .app import create_app
from .direct_ws import DirectWebSocketProtocol
from .http_security import server_origins
from .settings import RouterSettings
from .tls import TLSH11Protocol, server_context


def uvicorn_config(
    settings: RouterSettings,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    ws_deflate: bool = False,
    log_level: str = "info",
) -> uvicorn.Config:
    """A uvicorn configuration serving :func:`~.app.create_app` for ``settings``.

    Per-message compression is off by default: frames are small JSON, and deflate
    state costs ~41 KB of memory per connection and 10-25 % of the router's CPU per
    message (bench/README.md). WebSocket messages take the direct path of
    :mod:`.direct_ws`. With ``settings.tls_cert`` it serves HTTPS and WSS, and each
    request's scope carries the client's certificate (:mod:`.tls`). The event loop is uvloop's
    where it is installed (a dependency, except on Windows), else asyncio's. HTTP is h11's even
    when httptools is installed: h11 refuses a request head over 16 KB, httptools reads any size.
    """
    tls = settings.tls_cert is not None
    own = [o for o in server_origins(host, port, settings.scheme) if o not in settings.allowed_origins]
    settings = settings.model_copy(update={"allowed_origins": [*settings.allowed_origins, *own]})
    return uvicorn.Config(
        create_app(settings),
        host=host,
        port=port,
        ws=DirectWebSocketProtocol,
        ws_max_size=settings.transport_max_bytes,
        ws_per_message_deflate=ws_deflate,
        log_level=log_level,
        access_log=False,
        loop="auto",
        http=TLSH11Protocol if tls else "h11",
        ssl_context_factory=(lambda _config, _default: server_context(settings)) if tls else None,
    )
