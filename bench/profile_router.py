"""Where the router's CPU goes under load: py-spy on ``serve.py`` while simulated agents hammer it.

    python bench/profile_router.py [--n 100] [--seconds 8] [--broadcast] [--server router|relay|asgi-relay]

Needs py-spy (``.venv/bin/pip install py-spy``; a tool of this benchmark, not a project
dependency). Starts ``serve.py`` (or one of the baselines: the minimal ``websockets`` relay, or
the same relay on uvicorn + Starlette), connects
``--n`` agents with :mod:`bench.loadgen`, runs the closed loop of direct messages (or broadcasts)
and samples the server at 200 Hz. Prints the share of samples by layer (inclusive: a sample counts
for every layer on its stack) and by leaf line (self time), and keeps the raw stacks in
``bench/results/profile-*.tmp`` (git-ignored) for a flame graph.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import RESULTS, Server, baseline_server, project_server, raise_fd_limit, relay_server, servers
from bench.loadgen import Load, RelayDialect, RouterDialect

# Inclusive layers: a stack is counted once per layer whose marker appears in any of its frames.
LAYERS = [
    ("router: routing.py (validation, routing, acks, results)", "router/routing.py"),
    ("  pydantic validate (validate_json)", "validate_json"),
    ("  pydantic serialise (model_dump_json / model_dump)", "model_dump"),
    ("  router: ack timers (call_later / cancel)", "call_later"),
    ("  router: SQLite store", "router/store.py"),
    ("router: connection.py (write now, or queue for the writer task)", "router/connection.py"),
    ("router: direct_ws.py (frames in as parsed, out coalesced per turn)", "router/direct_ws.py"),
    ("starlette websocket layer", "starlette/"),
    ("uvicorn websockets-sansio protocol", "uvicorn/protocols/websockets"),
    ("permessage-deflate (zlib compress/decompress)", "permessage_deflate.py"),
    ("websockets frame parse/serialise", "websockets/frames.py"),
    ("selector register/unregister (uvicorn pauses reading per message)", "_PollLikeSelector.register"),
    ("  ... and unregister", "_PollLikeSelector.unregister"),
    ("asyncio event loop machinery", "asyncio/"),
]


def summarize(raw: Path, top: int = 25) -> str:
    stacks: list[tuple[list[str], int]] = []
    for line in raw.read_text().splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        if count.isdigit():  # py-spy may still be writing the last line when it is read
            stacks.append((stack.split(";"), int(count)))
    total = sum(count for _, count in stacks) or 1
    # Idle samples: the loop waiting in select/epoll.
    idle = sum(
        count
        for frames, count in stacks
        if "select (selectors.py" in frames[-1]
        or ("_run_once (asyncio/base_events.py" in frames[-1] and "select" in frames[-1])
    )
    out = [f"{total} samples ({idle / total:.0%} idle in select)", "", "inclusive share by layer:"]
    for label, marker in LAYERS:
        share = sum(count for frames, count in stacks if any(marker in frame for frame in frames))
        out.append(f"  {share / total:6.1%}  {label}")
    leaves: collections.Counter[str] = collections.Counter()
    for leaf_frames, leaf_count in stacks:
        leaves[leaf_frames[-1]] += leaf_count
    out += ["", f"top {top} leaf frames (self time):"]
    out += [f"  {count / total:6.1%}  {frame}" for frame, count in leaves.most_common(top)]
    return "\n".join(out)


async def load(server, kind: str, n: int, seconds: float, broadcast: bool, raw: Path) -> str:
    dialect: RouterDialect | RelayDialect
    if kind == "router":
        dialect = RouterDialect(server.ws)
    elif kind == "relay":
        dialect = RelayDialect(server.ws)
    else:
        dialect = RelayDialect(server.ws, "/relay/", "asgi relay")
    generator = Load(dialect, n, server.pid)
    await generator.connect()
    spy = subprocess.Popen(
        [
            shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy"),
            "record",
            "--pid",
            str(server.pid),
            "--duration",
            str(int(seconds)),
            "--rate",
            "200",
            "--format",
            "raw",
            "--nonblocking",
            "--output",
            str(raw),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    phase = await generator.closed_loop(
        broadcast=broadcast, senders=min(n, 10) if broadcast else n, warmup=0.5, window=seconds + 1
    )
    stderr = await asyncio.to_thread(spy.communicate)
    await generator.close()
    if spy.returncode != 0:
        raise RuntimeError(f"py-spy failed: {stderr[1].decode()[-500:]}")
    return (
        f"{dialect.name}, N={n}, {'broadcast' if broadcast else 'direct'}: "
        f"{phase.messages_per_s.median:,.0f} msgs/s, server CPU {phase.server_cpu_util:.0%}, "
        f"{phase.server_us_per_message.median:.0f} us CPU per message"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--broadcast", action="store_true")
    parser.add_argument(
        "--server",
        choices=["router", "relay", "asgi-relay"],
        default="router",
        help="serve.py (default), the minimal websockets relay, or the relay on uvicorn+Starlette",
    )
    args = parser.parse_args()
    raise_fd_limit(2 * args.n + 1000)
    RESULTS.mkdir(exist_ok=True)
    raw = RESULTS / f"profile-{args.server}-n{args.n}-{'bcast' if args.broadcast else 'direct'}.tmp"  # gitignored
    made: dict[str, Callable[[], Server]] = {
        "router": project_server,
        "relay": relay_server,
        "asgi-relay": baseline_server,
    }
    with servers(made[args.server]()) as (server,):
        headline = asyncio.run(load(server, args.server, args.n, args.seconds, args.broadcast, raw))
    print(headline)
    print(summarize(raw))
    print(f"\nraw stacks: {raw.relative_to(Path.cwd()) if raw.is_relative_to(Path.cwd()) else raw}")


if __name__ == "__main__":
    main()
