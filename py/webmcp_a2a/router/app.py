"""The ASGI app: the test page, its assets, the page's Python package and the router's WebSocket."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..protocol import RESERVED_AGENT_IDS
from .a2a import A2AService
from .a2a.book import TaskBook
from .a2a.outbound import Outbound
from .connection import Connection
from .direct_ws import direct_channel
from .http_security import OriginGate, SecurityHeaders, content_security_policy
from .limits import RateLimit
from .remotes.api import registry_routes
from .remotes.service import Remotes
from .routing import CLOSE_POLICY, Router
from .settings import RouterSettings

PACKAGE_DIR = Path(__file__).resolve().parent.parent
PROJECT_DIR = PACKAGE_DIR.parent.parent
# The page gets the shared layers and its own; never the router.
PAGE_SUBPACKAGES = ("client", "browser")


def _page_sources() -> list[Path]:
    sources = sorted(PACKAGE_DIR.glob("*.py"))
    for subpackage in PAGE_SUBPACKAGES:
        sources += sorted((PACKAGE_DIR / subpackage).glob("*.py"))
    return sources


@functools.lru_cache(maxsize=1)
def _zip_of(stamp: tuple[tuple[str, int, int], ...]) -> tuple[bytes, str]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, _, _ in stamp:
            source = Path(path)
            archive.write(source, source.relative_to(PACKAGE_DIR.parent).as_posix())
    data = buffer.getvalue()
    return data, f'"{hashlib.sha256(data).hexdigest()[:32]}"'


def page_package_zip() -> tuple[bytes, str]:
    """The Python the page runs, and its ETag; zipped again only when a source file changed."""
    return _zip_of(tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in _page_sources()))


class NoCacheStaticFiles(StaticFiles):
    """The project's own files: always revalidated, so a reload picks up an edit."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = "no-cache"
        return response


def create_app(
    settings: RouterSettings | None = None, *, static_dir: Path | None = None, web_dir: Path | None = None
) -> Starlette:
    router = Router(settings)
    web_dir = web_dir or PROJECT_DIR / "web"
    static_dir = static_dir or PROJECT_DIR / "static"
    page_agents_dir = Path(router.settings.page_agents_dir or PROJECT_DIR / "examples" / "page_agents")

    async def opened(
        websocket: WebSocket,
        send_text: Callable[[str], Awaitable[None]] | None = None,
        close: Callable[[int, str], Awaitable[None]] | None = None,
        **options: Any,
    ) -> Connection | None:
        """Accept the socket: its Connection, counted by the router until ``closed``; None when the router
        refuses it (over its address's limit: the refusal is written, and the socket closed)."""
        # The Origin was checked before this runs (OriginGate): only allowed pages, or no browser, get here.
        await websocket.accept()
        settings = router.settings
        conn = Connection(
            send_text or websocket.send_text,
            close or _closer(websocket),
            settings.queue_limit,
            settings.reply_limit,
            remote=websocket.client.host if websocket.client else "unknown",
            peer_gone=(WebSocketDisconnect, RuntimeError, OSError),
            **options,
        )
        if not router.connection_opened(conn):
            await conn.flushed()
            return None
        return conn

    def closed(conn: Connection) -> None:
        router.connection_closed(conn)
        conn.stop()

    async def a2a_socket(websocket: WebSocket) -> None:
        direct = direct_channel(websocket.scope)
        if direct is None:  # another server or protocol: the ASGI way, this coroutine reading until the end
            conn = await opened(websocket, rate=RateLimit(router.settings))
            if conn is None:
                return
            try:
                while (message := await websocket.receive())["type"] != "websocket.disconnect":
                    if message.get("text") is not None:
                        router.receive(conn, message["text"])
                    else:
                        router.reject_binary(conn)
            except WebSocketDisconnect:
                pass
            finally:
                closed(conn)
            return
        conn = await opened(
            websocket, direct.send_text, direct.close, rate=RateLimit(router.settings), write_now=direct.write_now
        )
        if conn is not None:  # messages reach the router as they are parsed; this coroutine ends here
            direct.attach(
                functools.partial(router.receive, conn),
                functools.partial(router.reject_binary, conn),
                functools.partial(closed, conn),
            )

    async def watch_socket(websocket: WebSocket) -> None:
        # Watching the mesh: one watch frame in, then the router's frames out until either side leaves.
        conn = await opened(websocket)
        if conn is None:
            return
        try:
            first = await websocket.receive()
            if first.get("text") is None or not router.watch(conn, first["text"]):
                conn.close(CLOSE_POLICY, "not allowed to watch")
                await conn.flushed()
            elif (await websocket.receive())["type"] != "websocket.disconnect":
                conn.close(CLOSE_POLICY, "a watcher only listens")  # nothing more to say: no flood to read
                await conn.flushed()
        except WebSocketDisconnect:
            pass
        finally:
            closed(conn)

    async def python_package(request: Request) -> Response:
        # Revalidated on every load (an edit under py/ shows on reload), downloaded only when changed.
        data, etag = page_package_zip()
        headers = {"Cache-Control": "no-cache", "ETag": etag}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(data, media_type="application/zip", headers=headers)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "agents": len(router.registry.find())})

    async def index(request: Request) -> Response:
        return FileResponse(web_dir / "index.html", headers={"Cache-Control": "no-cache"})

    a2a = A2AService(router)
    settings = router.settings
    remotes = Remotes(settings.store_path, settings.registry_health_interval, settings.registry_fetch_timeout)
    router.remotes = remotes
    outbound = Outbound(a2a.bridge, remotes.catalog, settings.registry_fetch_timeout, settings.hub_name)
    a2a.bridge.refuses = remotes.refuses
    router.outbound = outbound
    router.task_queue = TaskBook(a2a.tasks, a2a.bridge, outbound)

    def local_ids() -> set[str]:
        return {record.agent_id for record in router.registry.find(include_offline=True)} | set(RESERVED_AGENT_IDS)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if router.cluster is not None:
            await router.cluster.start()
        await a2a.start()
        remotes.start()
        yield
        await outbound.stop()
        await remotes.stop()
        await a2a.stop()
        if router.cluster is not None:
            await router.cluster.stop()

    app = Starlette(
        lifespan=lifespan,
        middleware=[
            Middleware(OriginGate, allowed=router.settings.allowed_origins),
            Middleware(SecurityHeaders, csp=content_security_policy(router.settings.allowed_origins)),
        ],
        routes=[
            Route("/", index),
            Route("/index.html", lambda request: RedirectResponse("/")),
            Route("/healthz", health),
            Route("/py/webmcp_a2a.zip", python_package),
            WebSocketRoute("/a2a", a2a_socket),
            WebSocketRoute("/watch", watch_socket),
            *a2a.routes(),
            *registry_routes(remotes, settings.join_tokens, local_ids),
            Mount("/web", NoCacheStaticFiles(directory=web_dir), name="web"),
            Mount("/page-agents", NoCacheStaticFiles(directory=page_agents_dir, check_dir=False), name="page-agents"),
            # Pinned, hash-named-by-version assets: the browser may cache them.
            Mount("/static", StaticFiles(directory=static_dir, check_dir=False), name="static"),
        ],
    )
    app.state.router = router
    app.state.a2a = a2a
    return app


def _closer(websocket: WebSocket) -> Callable[[int, str], Awaitable[None]]:
    async def close(code: int, reason: str) -> None:
        await websocket.close(code, reason)

    return close
