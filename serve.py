"""Serve the test page, its assets and the A2A router on one port.

    python serve.py [--host 127.0.0.1] [--port 8765]

Then open the printed URL in Chromium (add ``?agent_id=alice&agent_type=executor``
to choose the agent's identity).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "py"))

import uvicorn

from webmcp_a2a.router import RouterSettings
from webmcp_a2a.router.server import uvicorn_config


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    defaults = RouterSettings()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (default: %(default)s)")
    parser.add_argument(
        "--max-frame-bytes",
        type=int,
        default=defaults.max_frame_bytes,
        help="largest frame the router reads (default: %(default)s)",
    )
    parser.add_argument(
        "--queue-limit",
        type=int,
        default=defaults.queue_limit,
        help="frames queued per connection before deliveries are refused (default: %(default)s)",
    )
    parser.add_argument(
        "--ack-timeout",
        type=float,
        default=defaults.ack_timeout,
        help="seconds to wait for a recipient's acknowledgement (default: %(default)s)",
    )
    parser.add_argument(
        "--store",
        default="a2a-store.sqlite3",
        help="SQLite file keeping messages for absent agents, known agents and subscriptions "
        "across restarts; ':memory:' keeps nothing (default: %(default)s)",
    )
    parser.add_argument(
        "--store-limit",
        type=int,
        default=defaults.store_limit_per_agent,
        help="messages kept for one absent agent at most (default: %(default)s)",
    )
    parser.add_argument(
        "--ws-deflate",
        action="store_true",
        help="offer per-message compression (off by default: costs CPU and ~41 KB per connection)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = RouterSettings(
        max_frame_bytes=args.max_frame_bytes,
        queue_limit=args.queue_limit,
        ack_timeout=args.ack_timeout,
        store_path=args.store,
        store_limit_per_agent=args.store_limit,
    )
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    config = uvicorn_config(settings, args.host, args.port, ws_deflate=args.ws_deflate, log_level=args.log_level)
    server = uvicorn.Server(config)
    print(f"webmcp-a2a: open http://{args.host}:{args.port}/  (router at ws://{args.host}:{args.port}/a2a)", flush=True)
    server.run()  # uvicorn handles Ctrl-C: stops accepting, closes sockets, returns


if __name__ == "__main__":
    main()
