"""Several routers, one mesh: what Redis costs, and what more routers carry (issue: scale out on Redis).

Baseline: one router as shipped (no Redis), measured in the same run. Against it, meshes of 1, 2 and
3 ``serve.py --redis`` routers sharing one ``redis-server`` (append-only file on, as a cluster runs
it), all processes on this machine. N agents (:mod:`bench.loadgen`) connect to the routers in turn
(agent i to router i mod k); each keeps one direct message in flight, and with k > 1 routers each
message goes to an agent at *another* router - cross-router traffic only: in through one router,
across Redis pub/sub, out through another, and its acknowledgement back the same way.

Rows: msgs/s and latency (median, p99 in the JSON) against the single router; and server CPU per
message, summed over every router and Redis, against the single router's - the CPU Redis adds.
Blocks alternate between the meshes (ABBA), so drift hits all alike.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

if __name__ == "__main__" and __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Row, Server, project_server, raise_fd_limit, redis_server, servers, standalone
from bench.loadgen import Load, Phase, RouterDialect, SimAgent

BASE = "one router, no Redis"


class SpreadDialect(RouterDialect):
    """The router's protocol, agent i at router i mod k."""

    def __init__(self, bases: list[str]) -> None:
        super().__init__(bases[0])
        self.bases = bases

    def url(self, agent: SimAgent) -> str:
        return f"{self.bases[int(agent.name[1:]) % len(self.bases)]}/a2a"


def elsewhere(routers: int, n: int):
    """Agent i's next recipient: any agent at another router (any other agent with one router)."""

    def target_of(i: int, rng: random.Random) -> int:
        while True:
            j = rng.randrange(n)
            if j != i and (routers == 1 or j % routers != i % routers):
                return j

    return target_of


class Mesh:
    def __init__(self, name: str, routers: list[Server], redis: Server | None) -> None:
        self.name, self.routers, self.redis = name, routers, redis
        self.phases: list[Phase] = []
        self.load: Load

    async def connect(self, n: int) -> None:
        pids = [router.pid for router in self.routers] + ([self.redis.pid] if self.redis is not None else [])
        dialect = SpreadDialect([router.ws for router in self.routers])
        self.load = Load(dialect, n, pids, target_of=elsewhere(len(self.routers), n))
        await self.load.connect()

    def __getattr__(self, name: str):
        return getattr(Phase.merge(self.phases), name)


async def run(quick: bool = False, notes: list | None = None) -> list[Row]:
    notes = notes if notes is not None else []
    raise_fd_limit(4096)
    n = 60 if quick else 120
    blocks = 2 if quick else 6
    warmup, window = (0.3, 0.6) if quick else (0.5, 1.0)
    redis = redis_server()
    # Short leases are not needed here: nobody dies. Each mesh its own key prefix on the one Redis.
    made: list[Server] = [redis]
    single = project_server(name="router")
    made.append(single)
    clustered: dict[int, list[Server]] = {}
    for k in (1, 2, 3):
        clustered[k] = [
            project_server("--redis", "{redis}", "--redis-prefix", f"k{k}:", name=f"router-{k}-{i}") for i in range(k)
        ]
        made += clustered[k]
    with servers(redis) as _:
        for server in made[1:]:
            server.argv = [arg.replace("{redis}", f"redis://127.0.0.1:{redis.port}/0") for arg in server.argv]
        with servers(*made[1:]):
            meshes = [Mesh(BASE, [single], None)]
            meshes += [Mesh(f"{k} router{'s' * (k > 1)} on Redis", clustered[k], redis) for k in (1, 2, 3)]
            for mesh in meshes:
                await mesh.connect(n)
            try:
                for block in range(blocks):
                    for mesh in meshes if block % 2 == 0 else meshes[::-1]:
                        mesh.phases.append(
                            await mesh.load.closed_loop(broadcast=False, senders=n, warmup=warmup, window=window)
                        )
            finally:
                for mesh in meshes:
                    await mesh.load.close()

    base = Phase.merge(meshes[0].phases)
    rows: list[Row] = []
    for mesh in meshes[1:]:
        ours = Phase.merge(mesh.phases)
        traffic = "cross-router" if len(mesh.routers) > 1 else "same router"
        rows += [
            Row("cluster", f"direct msgs/s, {mesh.name} ({traffic}), N={n}", "msg/s", ours.messages_per_s,
                base.messages_per_s, BASE),
            Row("cluster", f"direct latency (p99 in json), {mesh.name}, N={n}", "ms", ours.latency_ms,
                base.latency_ms, BASE),
            Row("cluster", f"CPU per message, routers + Redis, {mesh.name}", "us", ours.server_us_per_message,
                base.server_us_per_message, BASE),
        ]  # fmt: skip
        notes.append(
            f"{mesh.name}: {ours.deliveries} deliveries in {ours.window_s:.1f} s; CPU {ours.server_cpu_util:.0%} "
            f"of a core over all its processes, load generator {ours.client_cpu_util:.0%}"
        )
    notes.append(
        f"{BASE}: {base.deliveries} deliveries in {base.window_s:.1f} s; CPU {base.server_cpu_util:.0%}, "
        f"load generator {base.client_cpu_util:.0%}"
    )
    return rows


if __name__ == "__main__":
    standalone("cluster", run)
