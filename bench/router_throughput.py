"""Benchmarks 3 and 5: router throughput, latency, broadcast fan-out, and how they scale with N.

Ours: ``serve.py`` in its own process. Baseline: ``bench/baselines/ws_relay.py``, a relay written
with the same ``websockets`` library that only forwards frames (no validation, no registry beyond
id -> socket, no acknowledgements, no timers), also in its own process, on asyncio's event loop. For
attribution, the same relay logic on the router's own stack (uvicorn + Starlette on uvloop,
``bench/baselines/server.py``) is measured at N=100 and 1,000 too, and the ``websockets`` relay on
uvloop (the router's loop) at N=100.

The load: N agents from :mod:`bench.loadgen` (raw sans-I/O WebSocket clients speaking the
frames directly; the project's CPython client costs about twice the router's CPU per message and
would saturate the load generator's core first). Each agent keeps one message in flight:

* direct: every agent sends to a random other agent; the next goes when the result (router) or
  the recipient's end-to-end ack (relay) is back. Messages per second = deliveries per second.
* broadcast: min(N, 10) agents broadcast to all others, one broadcast in flight each; messages per
  second = deliveries per second. The relay's next broadcast goes when one recipient has acked the
  last; the router's when every recipient has (its result says how many took it). At N=100 the
  relay is also measured with every recipient acking end to end, the router's guarantee.
* fan-out (N=1,000): one broadcast at a time from one agent to the 999 others; time until the last
  recipient has it, and until the sender has the acknowledged result.
* one in flight (N=10): a single sender, sequential round trips (pure latency).

Each measurement is repeated in blocks that alternate between the servers (ABBA...); msgs/s and
server CPU per delivered message are one sample per block (deliveries and /proc/PID/stat CPU over
the block's window), latency one sample per message. CPU per message is the cost of the scaling
curve, and it does not depend on how fast the load generator is.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    Row,
    Stats,
    baseline_server,
    project_server,
    raise_fd_limit,
    relay_server,
    servers,
    standalone,
)
from bench.loadgen import Load, Phase, RelayDialect, RouterDialect

BASE = "ws relay"
ASGI = "relay on uvicorn+Starlette"
UVLOOP = "ws relay on uvloop"


class Target:
    """One server and its load; measurements accumulate per kind and merge at the end."""

    def __init__(self, name: str, dialect, pid: int) -> None:
        self.name, self.dialect, self.pid = name, dialect, pid
        self.load: Load
        self.phases: dict[str, list[Phase]] = {}
        self.fanout_last: list[float] = []
        self.fanout_done: list[float] = []
        self.connect_s = 0.0

    async def connect(self, n: int) -> None:
        self.load = Load(self.dialect, n, self.pid)
        self.connect_s = await self.load.connect()

    async def phase(self, kind: str, **timing) -> None:
        broadcast = kind.startswith("broadcast")
        senders = self.load.n if kind == "direct" else min(self.load.n, 10) if broadcast else 1
        every_ack = kind == "broadcast-every-ack"
        phase = await self.load.closed_loop(broadcast=broadcast, senders=senders, every_ack=every_ack, **timing)
        self.phases.setdefault(kind, []).append(phase)

    async def fanout(self, reps: int) -> None:
        last, done = await self.load.fanout(reps)
        self.fanout_last += last
        self.fanout_done += done

    async def close(self) -> None:
        await self.load.close()

    def __getitem__(self, kind: str) -> Phase:
        return Phase.merge(self.phases[kind])


async def interleaved(
    targets: list[Target], n: int, kinds: tuple[str, ...], blocks: int, timing: dict, fanout_reps: int = 0
) -> None:
    """Connect N agents to each target, then measure in alternating blocks (ABBA) so drift hits all alike."""
    for target in targets:
        await target.connect(n)
    try:
        for kind in kinds:
            for block in range(blocks):
                for target in targets if block % 2 == 0 else targets[::-1]:
                    await target.phase(kind, **timing)
        for block in range(blocks if fanout_reps else 0):
            for target in targets if block % 2 == 0 else targets[::-1]:
                await target.fanout(max(1, fanout_reps // blocks))
    finally:
        for target in targets:
            await target.close()


CROWD = 10_000  # the scaling row's largest mesh (full mode)


def util(phase: Phase) -> str:
    return f"server CPU {phase.server_cpu_util:.0%}, load generator CPU {phase.client_cpu_util:.0%}"


async def run(quick: bool = False, notes: list | None = None) -> list[Row]:
    notes = notes if notes is not None else []
    raise_fd_limit(20_000)
    ns = (10, 100, 1000) if quick else (10, 30, 100, 300, 1000)
    blocks = 2 if quick else 5
    timing = {"warmup": 0.2, "window": 0.4} if quick else {"warmup": 0.3, "window": 0.8}
    fanout_reps = 4 if quick else 20
    results: dict[tuple[str, int], Target] = {}
    made = (project_server(), relay_server(), baseline_server(), relay_server(uvloop=True))
    with servers(*made) as (router, relay, asgi, relay_on_uvloop):
        router_dialect = RouterDialect(router.ws)  # one for the run: it keeps its agents' credentials between groups
        for n in ns:
            group = [
                Target("ours", router_dialect, router.pid),
                Target(BASE, RelayDialect(relay.ws), relay.pid),
            ]
            if n == 100 or (n == 1000 and not quick):  # attribution: the relay's logic on the router's stack
                group.append(Target(ASGI, RelayDialect(asgi.ws, "/relay/", ASGI), asgi.pid))
            if n == 100:  # attribution: the relay on the router's event loop
                group.append(Target(UVLOOP, RelayDialect(relay_on_uvloop.ws, name=UVLOOP), relay_on_uvloop.pid))
            kinds: tuple[str, ...] = ("direct", "broadcast", "single") if n == ns[0] else ("direct", "broadcast")
            if n == 100:  # attribution: relays whose every recipient acks end to end, as the router's do
                kinds += ("broadcast-every-ack",)
            await interleaved(group, n, kinds, blocks, timing, fanout_reps if n == 1000 else 0)
            results.update({(target.name, n): target for target in group})
        if not quick:  # 10,000 agents: the scaling row compares each server with itself at N=10
            # One mesh at a time: the load generator's descriptors (20,000 here) hold one 10,000-agent mesh.
            for alone in (Target("ours", router_dialect, router.pid), Target(BASE, RelayDialect(relay.ws), relay.pid)):
                await interleaved([alone], CROWD, ("direct",), blocks, {"warmup": 1.0, "window": 2.0})
                results[alone.name, CROWD] = alone

    rows: list[Row] = []
    for n in ns:
        ours, base = results["ours", n], results[BASE, n]
        target = (">=", 0.75) if n == 100 else None  # the performance issue's bar
        rows += [
            Row(
                "3 router",
                f"direct msgs/s, N={n}",
                "msg/s",
                ours["direct"].messages_per_s,
                base["direct"].messages_per_s,
                BASE,
                target=target,
                extra={"ours": util(ours["direct"]), "base": util(base["direct"])},
            ),
            Row(
                "3 router",
                f"direct latency (p99 in json), N={n}",
                "ms",
                ours["direct"].latency_ms,
                base["direct"].latency_ms,
                BASE,
            ),
            Row(
                "3 router",
                f"broadcast deliveries/s, N={n}",
                "msg/s",
                ours["broadcast"].messages_per_s,
                base["broadcast"].messages_per_s,
                BASE,
                target=target,
                extra={"ours": util(ours["broadcast"]), "base": util(base["broadcast"])},
            ),
        ]
        notes.append(
            f"router N={n}: direct {util(ours['direct'])} (relay: {util(base['direct'])}); broadcast "
            f"{util(ours['broadcast'])} (relay: {util(base['broadcast'])}); connecting took "
            f"{ours.connect_s:.2f} s (relay {base.connect_s:.2f} s)"
        )
    if ("ours", 100) in results:  # the broadcast miss, attributed: the relay's recipients ack as the router's do
        ours, base = results["ours", 100], results[BASE, 100]
        every_ack = f"{BASE}, every recipient acks end to end"
        rows += [
            Row(
                "3 router",
                "broadcast deliveries/s, N=100",
                "msg/s",
                ours["broadcast"].messages_per_s,
                base["broadcast-every-ack"].messages_per_s,
                every_ack,
                extra={"base": util(base["broadcast-every-ack"])},
            ),
            Row(
                "5 scaling",
                "server CPU per broadcast delivery, N=100",
                "us",
                ours["broadcast"].server_us_per_message,
                base["broadcast-every-ack"].server_us_per_message,
                every_ack,
            ),
        ]
    first = ns[0]
    rows.append(
        Row(
            "3 router",
            f"one message in flight, round trip, N={first}",
            "ms",
            results["ours", first]["single"].latency_ms,
            results[BASE, first]["single"].latency_ms,
            BASE,
            target=("<=", 1.3),
        )
    )
    if ("ours", 1000) in results:
        ours, base = results["ours", 1000], results[BASE, 1000]
        rows += [
            Row(
                "3 router",
                "fan-out, 1 broadcast -> 999 agents: last recipient has it",
                "ms",
                Stats.of(ours.fanout_last),
                Stats.of(base.fanout_last),
                BASE,
                target=("<=", 1.3),
            ),
            Row(
                "3 router",
                "fan-out, 1 broadcast -> 999 agents: sender has the acked result",
                "ms",
                Stats.of(ours.fanout_done),
                Stats.of(base.fanout_done),
                f"{BASE} (999 e2e acks)",
            ),
        ]
    # Attribution: the same relay logic on the router's stack (uvicorn + Starlette + websockets-sansio, uvloop),
    # and the minimal relay on uvloop.
    for other, n in ((ASGI, 100), (UVLOOP, 100), (ASGI, 1000)):
        if (other, n) not in results:
            continue
        ours, relay_there = results["ours", n], results[other, n]
        rows += [
            Row(
                "3 router",
                f"direct msgs/s, N={n}",
                "msg/s",
                ours["direct"].messages_per_s,
                relay_there["direct"].messages_per_s,
                other,
                extra={"base": util(relay_there["direct"])},
            ),
            Row(
                "3 router",
                f"broadcast deliveries/s, N={n}",
                "msg/s",
                ours["broadcast"].messages_per_s,
                relay_there["broadcast"].messages_per_s,
                other,
                extra={"base": util(relay_there["broadcast"])},
            ),
            Row(
                "5 scaling",
                f"server CPU per direct message, N={n}",
                "us",
                ours["direct"].server_us_per_message,
                relay_there["direct"].server_us_per_message,
                other,
            ),
        ]
        if n == 1000:
            rows.append(
                Row(
                    "3 router",
                    "fan-out, 1 broadcast -> 999 agents: last recipient has it",
                    "ms",
                    Stats.of(ours.fanout_last),
                    Stats.of(relay_there.fanout_last),
                    other,
                )
            )

    # 5: the scaling curve, as server CPU per delivered message.
    for n in ns:
        rows.append(
            Row(
                "5 scaling",
                f"server CPU per direct message, N={n}",
                "us",
                results["ours", n]["direct"].server_us_per_message,
                results[BASE, n]["direct"].server_us_per_message,
                BASE,
            )
        )
    for kind in ("direct", "broadcast"):
        low, high = results["ours", ns[0]][kind], results["ours", ns[-1]][kind]
        rows.append(
            Row(
                "5 scaling",
                f"CPU per {kind} message, N={ns[-1]} vs N={ns[0]}",
                "us",
                high.server_us_per_message,
                low.server_us_per_message,
                f"ours at N={ns[0]}",
                target=("<=", 1.5) if kind == "direct" else None,
            )
        )
    if ("ours", CROWD) in results:
        at_crowd, relay_crowd = results["ours", CROWD]["direct"], results[BASE, CROWD]["direct"]
        rows += [
            Row(
                "5 scaling",
                f"CPU per direct message, N={CROWD} vs N={ns[0]}",
                "us",
                at_crowd.server_us_per_message,
                results["ours", ns[0]]["direct"].server_us_per_message,
                f"ours at N={ns[0]}",
                target=("<=", 1.5),
                extra={"ours": util(at_crowd)},
            ),
            # Attribution: how much of that growth a server that only forwards shows too.
            Row(
                "5 scaling",
                f"ws relay: CPU per direct message, N={CROWD} vs N={ns[0]}",
                "us",
                relay_crowd.server_us_per_message,
                results[BASE, ns[0]]["direct"].server_us_per_message,
                f"ws relay at N={ns[0]}",
                extra={"ours": util(relay_crowd)},
            ),
            Row(
                "5 scaling",
                f"server CPU per direct message, N={CROWD}",
                "us",
                at_crowd.server_us_per_message,
                relay_crowd.server_us_per_message,
                BASE,
            ),
        ]
        notes.append(
            f"N={CROWD}: router direct {at_crowd.messages_per_s.median:.0f} msgs/s, {util(at_crowd)}, "
            f"{at_crowd.server_us_per_message.median:.0f} us of server CPU per message; ws relay "
            f"{relay_crowd.messages_per_s.median:.0f} msgs/s, {util(relay_crowd)}, "
            f"{relay_crowd.server_us_per_message.median:.0f} us"
        )
    curve = ", ".join(f"N={n} {results['ours', n]['direct'].server_us_per_message.median:.0f}" for n in ns)
    base_curve = ", ".join(f"N={n} {results[BASE, n]['direct'].server_us_per_message.median:.0f}" for n in ns)
    ours_growth = (
        results["ours", ns[-1]]["direct"].server_us_per_message.median
        / results["ours", ns[0]]["direct"].server_us_per_message.median
    )
    base_growth = (
        results[BASE, ns[-1]]["direct"].server_us_per_message.median
        / results[BASE, ns[0]]["direct"].server_us_per_message.median
    )
    notes.append(
        f"scaling: server CPU us per direct message - router {curve} (x{ours_growth:.2f} from N={ns[0]} to "
        f"N={ns[-1]}); ws relay {base_curve} (x{base_growth:.2f}). "
        + ("Flat within 1.5x." if ours_growth <= 1.5 else "Not flat: it grows more than 1.5x.")
    )
    return rows


if __name__ == "__main__":
    standalone("router_throughput", run)
