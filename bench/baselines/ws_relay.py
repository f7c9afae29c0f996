"""The minimal relay: the router's job with nothing but the ``websockets`` library.

    python bench/baselines/ws_relay.py --port P [--uvloop]

Connect to ``ws://127.0.0.1:P/NAME``. A text frame ``"TARGET rest..."`` is forwarded unchanged
to the connection named TARGET; ``"* rest..."`` goes to every other connection
(``websockets.broadcast``). No JSON, no validation, no acknowledgements, no timers; the only state
is the id -> connection dict without which nothing can be addressed. The library's defaults
(permessage-deflate offered, keepalive pings) are kept, as the router keeps uvicorn's. It runs on
asyncio's own event loop, as the library's examples do; ``--uvloop`` runs it on uvloop's, the router's.
"""

from __future__ import annotations

import argparse
import asyncio

import websockets
from websockets.asyncio.server import ServerConnection, serve

peers: dict[str, ServerConnection] = {}


async def handler(websocket: ServerConnection) -> None:
    assert websocket.request is not None  # set once the handshake is done
    me = websocket.request.path[1:]
    peers[me] = websocket
    try:
        async for text in websocket:
            if not isinstance(text, str):
                continue
            target = text[: text.find(" ")]
            if target == "*":
                websockets.broadcast([peer for peer in peers.values() if peer is not websocket], text)
            elif (peer := peers.get(target)) is not None:
                await peer.send(text)
    except websockets.ConnectionClosed:
        pass
    finally:
        if peers.get(me) is websocket:
            del peers[me]


async def main(port: int) -> None:
    # No per-message compression: the router does not offer it by default either (same transport cost).
    async with serve(handler, "127.0.0.1", port, max_size=None, compression=None) as server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop's event loop")
    args = parser.parse_args()
    if args.uvloop:
        import uvloop

        uvloop.run(main(args.port))
    else:
        asyncio.run(main(args.port))
