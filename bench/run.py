"""Run the benchmark suite: every figure a ratio against a baseline measured in the same run.

    python bench/run.py [--quick] [--only NAME ...]

Prints one table and writes ``bench/results/latest.json`` and ``bench/results/latest.md``
(date, machine, mode, wall time, every row and the notes); a run of the whole suite also writes
``full.*`` or ``quick.*``, so the last run of each mode stays. NAME is one of the modules below;
each also runs alone: ``python bench/NAME.py [--quick]`` (or ``python -m bench.NAME``).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
import time
from pathlib import Path

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, text_table, write_results

BENCHMARKS = {
    "page_ready": "1. page ready, cold and warm, vs a bare Pyodide + pydantic page",
    "tool_latency": "2. WebMCP a2a_send_message to delivery and to result, vs a bare JS relay pair",
    "router_throughput": "3 and 5. router msgs/s, latency, fan-out, scaling N=10..1000, vs a minimal websockets relay",
    "memory": "4. router memory per agent at 1,000 agents vs the relay; page memory vs the bare page",
    "a2a_roundtrip": "6. A2A SendMessage via the router to the echo agent vs an a2a-sdk server answering in-process",
    "mesh_view": "the mesh view's frame rate, 200 agents and 100 msgs/s vs the same view idle",
    "cluster": "1, 2 and 3 routers on one Redis (cross-router msgs/s, latency, CPU per message) vs one router",
}


async def run_all(names: list[str], quick: bool) -> tuple[list, list[str], dict[str, float]]:
    rows: list = []
    notes: list[str] = []
    walls: dict[str, float] = {}
    for name in names:
        print(f"[bench] {name}: {BENCHMARKS[name]} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        module = importlib.import_module(f"bench.{name}")
        rows += await module.run(quick=quick, notes=notes)
        walls[name] = round(time.perf_counter() - started, 1)
        print(f"[bench] {name}: {walls[name]} s", file=sys.stderr, flush=True)
    return rows, notes, walls


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="benchmarks: " + "; ".join(f"{k} ({v})" for k, v in BENCHMARKS.items()),
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and shorter windows (< 2 minutes)")
    parser.add_argument(
        "--only", nargs="+", choices=list(BENCHMARKS), metavar="NAME", help=f"run only these ({', '.join(BENCHMARKS)})"
    )
    parser.add_argument(
        "--max-load",
        type=float,
        metavar="L",
        help="first wait (up to 10 minutes) until the 1-minute load average is at most L",
    )
    args = parser.parse_args()
    names = args.only or list(BENCHMARKS)
    if args.max_load is not None:
        deadline = time.monotonic() + 600
        while os.getloadavg()[0] > args.max_load and time.monotonic() < deadline:
            print(
                f"[bench] load average {os.getloadavg()[0]:.2f} > {args.max_load}: waiting", file=sys.stderr, flush=True
            )
            time.sleep(15)
    started = time.perf_counter()
    load_before = os.getloadavg()
    rows, notes, walls = asyncio.run(run_all(names, args.quick))
    wall = time.perf_counter() - started
    print(text_table(rows))
    if notes:
        print("\nNotes:")
        for note in notes:
            print(f"- {note}")
    info = {
        "benchmarks": names,
        "wall_seconds_each": walls,
        "loadavg_at_end": os.getloadavg(),
        "command": " ".join(["python bench/run.py", *sys.argv[1:]]),
    }
    json_path, md_path = write_results(rows, "latest", quick=args.quick, wall_seconds=wall, notes=notes, info=info)
    if not args.only:  # the last complete run of each mode stays too
        write_results(
            rows, "quick" if args.quick else "full", quick=args.quick, wall_seconds=wall, notes=notes, info=info
        )
    print(
        f"\n{'quick' if args.quick else 'full'} suite: {wall:.0f} s wall (load average before "
        f"{load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}); wrote {json_path.relative_to(ROOT)} and "
        f"{md_path.relative_to(ROOT)}"
    )


if __name__ == "__main__":
    main()
