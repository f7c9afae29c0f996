"""Baseline server for the browser benchmarks: the project's server minus the product.

    python bench/baselines/server.py --port P

The same stack and configuration as ``serve.py`` (uvicorn with ``ws="websockets-sansio"``, the
same ``ws_max_size``, Starlette), the same ``/static`` mount (``StaticFiles(check_dir=False)``,
so the browser caches Pyodide and the wheels exactly as it does from the project's server), and:

* ``/bench/*.html``: the bare pages (``bare_page.html``, ``relay_pair.html``), served with the
  ``Cache-Control: no-cache`` the project serves its own page with;
* ``/relay/{id}``: a minimal WebSocket relay. A text frame ``"TARGET rest..."`` is forwarded
  unchanged to the connection named TARGET (``*``: to every other connection). No parsing
  beyond the first space, no validation, no acknowledgements, no registry beyond id -> socket.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "py"))

import uvicorn  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.routing import Mount, WebSocketRoute  # noqa: E402
from starlette.staticfiles import StaticFiles  # noqa: E402
from starlette.websockets import WebSocket  # noqa: E402

from webmcp_a2a.router import RouterSettings  # noqa: E402
from webmcp_a2a.router.app import NoCacheStaticFiles  # noqa: E402


def create_app() -> Starlette:
    peers: dict[str, WebSocket] = {}

    async def relay(websocket: WebSocket) -> None:
        await websocket.accept()
        me = websocket.path_params["agent_id"]
        peers[me] = websocket
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                text = message.get("text")
                if text is None:
                    continue
                target = text[: text.find(" ")]
                if target == "*":
                    for peer in list(peers.values()):
                        if peer is not websocket:
                            await peer.send_text(text)
                elif (recipient := peers.get(target)) is not None:
                    await recipient.send_text(text)
        finally:
            if peers.get(me) is websocket:
                del peers[me]

    return Starlette(
        routes=[
            WebSocketRoute("/relay/{agent_id}", relay),
            Mount("/bench", NoCacheStaticFiles(directory=HERE), name="bench"),
            Mount("/static", StaticFiles(directory=ROOT / "static", check_dir=False), name="static"),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    settings = RouterSettings()
    # The same uvicorn options as serve.py (router/server.py), per-message compression off included.
    config = uvicorn.Config(
        create_app(),
        host="127.0.0.1",
        port=args.port,
        ws="websockets-sansio",
        ws_max_size=settings.transport_max_bytes,
        ws_per_message_deflate=False,
        log_level="warning",
        access_log=False,
    )
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
