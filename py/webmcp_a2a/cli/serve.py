"""``webmcp-a2a serve`` (and ``python serve.py``): the test page, its assets and the A2A router on one port.

    webmcp-a2a serve [--host 127.0.0.1] [--port 8765] [...]

Then open the printed URL in Chromium (add ``?agent_id=alice&agent_type=executor``
to choose the agent's identity). The flags are argparse's, so ``serve.py`` (the
checkout's entry point, no install needed) and the CLI take exactly the same ones.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import sys
from pathlib import Path

import uvicorn

from ..router import RouterSettings
from ..router.cluster.redis_store import Keys, RedisStore
from ..router.http_security import LOOPBACK_NAMES, WILDCARD_HOSTS, normalise_origin, server_origins
from ..router.identity import MIN_PROVISIONED_LENGTH
from ..router.server import uvicorn_config
from ..router.store import SqliteStore, Store

# Flags that set the router setting of the same meaning; type, default and help come from the
# setting itself (webmcp_a2a/router/settings.py), so they are written once.
SETTING_FLAGS = {
    "--max-frame-bytes": "max_frame_bytes",
    "--queue-limit": "queue_limit",
    "--ack-timeout": "ack_timeout",
    "--a2a-reply-timeout": "a2a_reply_timeout",
    "--registry-health-interval": "registry_health_interval",
    "--registry-fetch-timeout": "registry_fetch_timeout",
    "--store-limit": "store_limit_per_agent",
    "--store-bytes-per-agent": "store_bytes_per_agent",
    "--store-bytes-total": "store_bytes_total",
    "--rate-frames": "rate_frames",
    "--rate-bytes": "rate_bytes",
    "--max-connections-per-address": "max_connections_per_address",
    "--max-new-agents-per-address": "max_new_agents_per_address",
    "--max-agents": "max_agents",
    "--max-subscriptions-per-agent": "max_subscriptions_per_agent",
    "--max-topics": "max_topics",
    "--cluster-heartbeat": "cluster_heartbeat",
    "--cluster-lease": "cluster_lease",
}


GC_THRESHOLDS = (100_000, 50, 100)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="webmcp-a2a serve", description="Serve the test page, its assets and the A2A router on one port."
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (default: %(default)s)")
    parser.add_argument(
        "--store",
        default="a2a-store.sqlite3",
        help="SQLite file keeping messages for absent agents, known agents, their credentials and subscriptions "
        "across restarts; ':memory:' keeps nothing (default: %(default)s)",
    )
    parser.add_argument(
        "--redis",
        metavar="URL",
        help="redis://HOST:PORT/DB: serve one mesh with every router given the same URL (README, 'Several "
        "routers'); Redis then keeps what --store would",
    )
    parser.add_argument("--redis-prefix", default="mesh:", help=RouterSettings.model_fields["redis_prefix"].description)
    for flag, name in SETTING_FLAGS.items():
        field = RouterSettings.model_fields[name]
        kind = int if field.annotation is int else float
        parser.add_argument(
            flag, dest=name, type=kind, default=field.default, help=f"{field.description} (default: %(default)s)"
        )
    security = parser.add_argument_group("who may join (SECURITY.md)")
    security.add_argument(
        "--allow-origin",
        action="append",
        type=_origin,
        default=[],
        metavar="ORIGIN",
        help="also let pages from ORIGIN (scheme://host:port) open the router's WebSocket; repeatable "
        "(the server's own origins are always allowed)",
    )
    security.add_argument(
        "--token", action="append", default=[], help="join token every hello must carry (?token= in the page)"
    )
    security.add_argument("--tokens-file", type=Path, help="file of join tokens, one a line (# starts a comment)")
    security.add_argument(
        "--watch-token",
        action="append",
        default=[],
        help="token that watching the mesh (/watch: the mesh view, tail --mesh) takes; repeatable "
        "(default: whoever may join may watch)",
    )
    security.add_argument(
        "--agents-file",
        type=Path,
        help='JSON {"agent id": "credential", ...}: agent ids the operator owns already (credentials of '
        f"{MIN_PROVISIONED_LENGTH}+ characters)",
    )
    security.add_argument(
        "--signing",
        action="store_true",
        help="sign and check every envelope with per-agent HMAC-SHA256 keys, handed to each agent in its welcome",
    )
    security.add_argument(
        "--signing-keys", type=Path, help='JSON {"agent id": "key", ...}: keys the operator gives (turns signing on)'
    )
    security.add_argument(
        "--require-signatures", action="store_true", help="refuse every envelope its sender did not sign"
    )
    security.add_argument(
        "--release-agent",
        metavar="AGENT_ID",
        help="forget AGENT_ID's owner, kept messages and subscriptions in --store (with the router stopped), then exit",
    )
    tls = parser.add_argument_group("TLS (HTTPS and WSS; trust tier mtls between hubs)")
    for flag, name in (("--tls-cert", "tls_cert"), ("--tls-key", "tls_key"), ("--tls-client-ca", "tls_client_ca")):
        tls.add_argument(flag, dest=name, metavar="PEM", help=RouterSettings.model_fields[name].description)
    parser.add_argument(
        "--page-agents",
        dest="page_agents_dir",
        metavar="DIR",
        help=RouterSettings.model_fields["page_agents_dir"].description,
    )
    parser.add_argument(
        "--hub-name",
        help="this router's name among federated hubs: another hub that registers this one reaches agent X "
        "as X@NAME (default: hub-PORT)",
    )
    parser.add_argument(
        "--ws-deflate",
        action="store_true",
        help="offer per-message compression (off by default: costs CPU and ~41 KB per connection)",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    if (args.tls_key or args.tls_client_ca) and not args.tls_cert:
        parser.error("--tls-key and --tls-client-ca need --tls-cert")
    return args


def _origin(text: str) -> str:
    try:
        return normalise_origin(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def settings_of(args: argparse.Namespace) -> RouterSettings:
    tokens = [*args.token, *(_lines(args.tokens_file) if args.tokens_file else [])]
    agents = json.loads(args.agents_file.read_text()) if args.agents_file else {}
    return RouterSettings(
        store_path=args.store,
        redis_url=args.redis,
        redis_prefix=args.redis_prefix,
        allowed_origins=args.allow_origin,
        join_tokens=tokens,
        watch_tokens=args.watch_token,
        provisioned_agents=agents,
        signing=args.signing,
        signing_keys=json.loads(args.signing_keys.read_text()) if args.signing_keys else {},
        require_signatures=args.require_signatures,
        hub_name=args.hub_name or f"hub-{args.port}",
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca,
        page_agents_dir=args.page_agents_dir,
        **{name: getattr(args, name) for name in SETTING_FLAGS.values()},
    )


def exposure_warnings(args: argparse.Namespace, settings: RouterSettings) -> list[str]:
    """What an operator listening beyond loopback should hear (SECURITY.md, "Running it exposed")."""
    if args.host in LOOPBACK_NAMES:
        return []
    warnings = []
    if not settings.join_tokens:
        warnings.append(
            f"WARNING: listening on {args.host} without a join token: anyone who reaches this port "
            "can join the mesh (see SECURITY.md; give --token)"
        )
    if not settings.allowed_origins:
        own = ", ".join(server_origins(args.host, args.port, settings.scheme))
        warnings.append(
            f"pages are allowed from {own} only: open them under "
            "another name (this machine's address, a proxy) after adding it with --allow-origin"
        )
    return warnings


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.release_agent:
        store: Store = (
            RedisStore(args.redis, "release", Keys(args.redis_prefix)) if args.redis else SqliteStore(args.store)
        )
        store.forget_agent(args.release_agent)
        store.close()
        print(f"webmcp-a2a: released agent id {args.release_agent!r} in {args.redis or args.store}")
        return
    settings = settings_of(args)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    for warning in exposure_warnings(args, settings):
        print(f"webmcp-a2a: {warning}", file=sys.stderr, flush=True)
    # A router holds a few objects per connected agent for as long as it stays; CPython's default
    # collection thresholds (700, 10, 10) walk them over and over. Fewer, larger collections: server
    # CPU per message at 10,000 agents went from 2-3x to about 1.2x that at 10 (bench/router_throughput.py).
    gc.set_threshold(*GC_THRESHOLDS)
    config = uvicorn_config(settings, args.host, args.port, ws_deflate=args.ws_deflate, log_level=args.log_level)
    server = uvicorn.Server(config)
    shown = "127.0.0.1" if args.host in WILDCARD_HOSTS else args.host  # a wildcard is no page's origin
    http, ws = settings.scheme, settings.scheme.replace("http", "ws")
    print(f"webmcp-a2a: open {http}://{shown}:{args.port}/  (router at {ws}://{shown}:{args.port}/a2a)", flush=True)
    server.run()  # uvicorn handles Ctrl-C: stops accepting, closes sockets, returns
