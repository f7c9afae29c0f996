"""Load generator: many simulated agents in one process, light enough that the server is the bottleneck.

Each agent is one WebSocket connection driven by ``websockets``' sans-I/O ``ClientProtocol``
over a plain ``asyncio.Protocol`` (no task, no queue per connection), speaking pre-formatted
frames. It offers permessage-deflate with the library's defaults, as the project's CPython client
(``webmcp_a2a.client.cpython.connect``) and browsers do, so the servers run as they do in use.

Two dialects, one closed loop:

* :class:`RouterDialect` speaks the project's protocol (``hello`` / ``send`` / ``broadcast`` /
  ``ack``); a send completes when its ``result`` frame arrives, i.e. after the recipient's ack.
  What one read delivers is acked with one frame (``acks`` when several), as the project's
  CPython client acks a burst; of a delivery only the message id is read.
* :class:`RelayDialect` speaks the minimal relays' ``"TARGET SENDER KIND SEQ BODY"`` frames and
  does the acknowledgement end to end: the recipient answers ``"SENDER ME a SEQ"`` through the relay.
  A direct message therefore costs the same four frames through either server (in, out, ack in,
  ack out). A relay has no acknowledgements of its own, so in the broadcast closed loop only one
  recipient (the last connected) acks, to pace the sender; the single fan-out timing has every
  recipient ack, which is what the router's result stands for.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from websockets.client import ClientProtocol
from websockets.extensions.permessage_deflate import enable_client_permessage_deflate
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.protocol import State
from websockets.uri import parse_uri

from bench.common import Stats, cpu_seconds, self_cpu_seconds

PAYLOAD = '{"text":"benchmark message","values":[1,2,3],"nested":{"ok":true}}'


class Connection(asyncio.Protocol):
    """One client WebSocket: bytes in -> ``on_text(text)`` calls; ``send(text)`` writes at once."""

    def __init__(
        self,
        url: str,
        on_text: Callable[[str], None],
        after_read: Callable[[], None],
        deflate: bool = True,
    ) -> None:
        extensions = enable_client_permessage_deflate(None) if deflate else None
        self.protocol = ClientProtocol(parse_uri(url), extensions=extensions, max_size=None)
        self.on_text = on_text
        self.after_read = after_read  # once the frames of one read are handled, before writing
        self.opened: asyncio.Future = asyncio.get_running_loop().create_future()
        self.closed: asyncio.Future = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.protocol.send_request(self.protocol.connect())
        self._flush()

    def data_received(self, data: bytes) -> None:
        self.protocol.receive_data(data)
        for event in self.protocol.events_received():
            if isinstance(event, Response):
                if self.protocol.state is State.OPEN:
                    self.opened.set_result(None)
                elif not self.opened.done():
                    self.opened.set_exception(ConnectionError(f"handshake failed: HTTP {event.status_code}"))
            elif isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                self.on_text(bytes(event.data).decode())
        self.after_read()
        self._flush()

    def connection_lost(self, exc) -> None:
        if not self.opened.done():
            self.opened.set_exception(exc or ConnectionError("closed during handshake"))
        if not self.closed.done():
            self.closed.set_result(None)

    def send(self, text: str) -> None:
        self.protocol.send_text(text.encode())
        self._flush()

    def close(self) -> None:
        if self.protocol.state is State.OPEN:
            self.protocol.send_close()
            self._flush()
        if self.transport is not None:
            self.transport.close()

    def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data and self.transport is not None:
                self.transport.write(data)


@dataclass
class SimAgent:
    name: str
    conn: Connection = field(init=False)  # set before the agent is used
    seq: int = 0
    pending: dict = field(default_factory=dict)  # seq -> [future, acks still expected]
    taken: list[str] = field(default_factory=list)  # message ids delivered in this read, not acked yet
    welcomed: asyncio.Future = field(init=False)

    def complete(self, seq: int) -> None:
        entry = self.pending.get(seq)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del self.pending[seq]
            if not entry[0].done():
                entry[0].set_result(time.perf_counter())


class Counters:
    """Shared by every agent of a load: deliveries so far and when the last one arrived."""

    def __init__(self) -> None:
        self.deliveries = 0
        self.last_delivery = 0.0
        self.errors = 0
        self.last_error = ""

    def delivered(self) -> None:
        self.deliveries += 1
        self.last_delivery = time.perf_counter()


DELIVER = '{"type":"deliver","envelope":{"message_id":"'  # as the router writes a delivery: its id next


class RouterDialect:
    name = "router"
    aggregates_acks = True

    def __init__(self, base_ws: str) -> None:
        self.base = base_ws
        self.credentials: dict[str, str] = {}  # an agent id is its first registrant's: come back with it

    def url(self, agent: SimAgent) -> str:
        return f"{self.base}/a2a"

    async def join(self, agent: SimAgent) -> None:
        agent.welcomed = asyncio.get_running_loop().create_future()
        hello = {"type": "hello", "agent_id": agent.name, "agent_type": "executor"}
        if agent.name in self.credentials:
            hello["credential"] = self.credentials[agent.name]
        agent.conn.send(json.dumps(hello))
        await agent.welcomed

    def direct(self, agent: SimAgent, to: str, seq: int) -> str:
        return (
            '{"type":"send","id":%d,"envelope":{"message_id":"%s-%d","to_agent":"%s",'
            '"message_type":"notification","payload":%s}}' % (seq, agent.name, seq, to, PAYLOAD)
        )

    def broadcast(self, agent: SimAgent, seq: int, acker: str | None = None) -> str:
        return (
            '{"type":"broadcast","id":%d,"envelope":{"message_id":"%s-%d","to_agent":"broadcast",'
            '"message_type":"notification","payload":%s},"agent_type":"all"}' % (seq, agent.name, seq, PAYLOAD)
        )

    def on_text(self, agent: SimAgent, counters: Counters, text: str) -> None:
        if text.startswith(DELIVER):  # the bulk of the traffic: only its id is read, not the whole frame
            agent.taken.append(text[len(DELIVER) : text.index('"', len(DELIVER))])
            counters.delivered()
            return
        frame = json.loads(text)
        kind = frame["type"]
        if kind == "result":
            agent.complete(frame["ref"])
        elif kind == "welcome":
            if frame.get("credential"):
                self.credentials[agent.name] = frame["credential"]
            agent.welcomed.set_result(None)
        else:
            counters.errors += 1
            counters.last_error = text[:300]
            if frame.get("ref") is not None:
                agent.complete(frame["ref"])

    def after_read(self, agent: SimAgent) -> None:
        """Ack what one read delivered, as the CPython client does: one ``acks`` frame for several."""
        taken, agent.taken = agent.taken, []
        if len(taken) == 1:
            agent.conn.send('{"type":"ack","message_id":"%s"}' % taken[0])
        elif taken:
            agent.conn.send('{"type":"acks","message_ids":%s}' % json.dumps(taken))


class RelayDialect:
    aggregates_acks = False

    def __init__(self, base_ws: str, path: str = "/", name: str = "relay") -> None:
        self.base, self.path, self.name = base_ws, path, name

    def url(self, agent: SimAgent) -> str:
        return f"{self.base}{self.path}{agent.name}"

    async def join(self, agent: SimAgent) -> None:
        return None

    def direct(self, agent: SimAgent, to: str, seq: int) -> str:
        return '%s %s m %d {"message_id":"%s-%d","to_agent":"%s","message_type":"notification","payload":%s}' % (
            to,
            agent.name,
            seq,
            agent.name,
            seq,
            to,
            PAYLOAD,
        )

    def broadcast(self, agent: SimAgent, seq: int, acker: str | None = None) -> str:
        """Every recipient acks, or (``acker``) only that one."""
        kind = f"o:{acker}" if acker else "m"
        return '* %s %s %d {"message_id":"%s-%d","to_agent":"broadcast","message_type":"notification","payload":%s}' % (
            agent.name,
            kind,
            seq,
            agent.name,
            seq,
            PAYLOAD,
        )

    def on_text(self, agent: SimAgent, counters: Counters, text: str) -> None:
        _, sender, kind, seq = text.split(" ", 4)[:4]
        if kind == "a":
            agent.complete(int(seq))
            return
        if kind == "m" or kind[2:] == agent.name:
            agent.conn.send(f"{sender} {agent.name} a {seq}")
        counters.delivered()

    def after_read(self, agent: SimAgent) -> None:
        """Nothing gathered: a relay's recipient acks each message as it reads it (``on_text``)."""


@dataclass
class Phase:
    """What closed-loop runs measured; runs of the same kind merge (``Phase.merge``).

    Throughput and CPU cost are one sample per run (deliveries and server CPU over the whole
    window): a closed loop of broadcasts is bursty, so shorter slices would sample its phases
    rather than its rate. Latency is one sample per completed send.
    """

    rates: list[float]  # deliveries per second, one sample per run
    latencies_ms: list[float]  # send -> completion (acknowledged), one sample per completed send
    costs_us: list[float]  # server CPU microseconds per delivery, one sample per run
    server_cpu_s: float
    client_cpu_s: float
    deliveries: int
    window_s: float

    @property
    def messages_per_s(self) -> Stats:
        return Stats.of(self.rates)

    @property
    def latency_ms(self) -> Stats:
        return Stats.of(self.latencies_ms)

    @property
    def server_us_per_message(self) -> Stats:
        return Stats.of(self.costs_us)

    @property
    def server_cpu_util(self) -> float:
        return self.server_cpu_s / self.window_s

    @property
    def client_cpu_util(self) -> float:
        return self.client_cpu_s / self.window_s

    @classmethod
    def merge(cls, phases: list[Phase]) -> Phase:
        return cls(
            [x for p in phases for x in p.rates],
            [x for p in phases for x in p.latencies_ms],
            [x for p in phases for x in p.costs_us],
            sum(p.server_cpu_s for p in phases),
            sum(p.client_cpu_s for p in phases),
            sum(p.deliveries for p in phases),
            sum(p.window_s for p in phases),
        )


class Load:
    """``n`` simulated agents connected to one server through one dialect."""

    def __init__(
        self,
        dialect,
        n: int,
        server_pid: int | Sequence[int],
        *,
        deflate: bool = True,
        prefix: str = "c",
        target_of: Callable[[int, random.Random], int] | None = None,
    ) -> None:
        """``server_pid``: the server's process, or all of them (a cluster: routers and Redis), whose CPU
        a message costs. ``target_of(i, rng)``: the index of agent i's next recipient (default: any other)."""
        self.dialect, self.n, self.deflate = dialect, n, deflate
        self.server_pids = [server_pid] if isinstance(server_pid, int) else list(server_pid)
        self.agents = [SimAgent(f"{prefix}{i}") for i in range(n)]
        self.counters = Counters()
        self.target_of = target_of

    def server_cpu_seconds(self) -> float:
        return sum(cpu_seconds(pid) for pid in self.server_pids)

    async def connect(self, batch: int = 100) -> float:
        """Connect (and register) every agent, ``batch`` at a time; returns the seconds it took."""
        loop = asyncio.get_running_loop()
        started = time.perf_counter()

        async def one(agent: SimAgent) -> None:
            url = self.dialect.url(agent)
            parts = urlsplit(url)
            agent.conn = Connection(
                url,
                lambda text: self.dialect.on_text(agent, self.counters, text),
                lambda: self.dialect.after_read(agent),
                self.deflate,
            )
            await loop.create_connection(lambda: agent.conn, parts.hostname, parts.port)
            await asyncio.wait_for(agent.conn.opened, 30)
            await asyncio.wait_for(self.dialect.join(agent), 30)

        for first in range(0, self.n, batch):
            await asyncio.gather(*(one(agent) for agent in self.agents[first : first + batch]))
        return time.perf_counter() - started

    async def close(self) -> None:
        for agent in self.agents:
            if agent.conn is not None:
                agent.conn.close()
        await asyncio.gather(
            *(asyncio.wait_for(agent.conn.closed, 5) for agent in self.agents if agent.conn), return_exceptions=True
        )

    def _send(self, agent: SimAgent, broadcast: bool, target: str | None, every_ack: bool = False) -> asyncio.Future:
        agent.seq += 1
        future = asyncio.get_running_loop().create_future()
        acker = None
        if broadcast and not every_ack and not self.dialect.aggregates_acks:
            acker = self.agents[-1].name if self.agents[-1] is not agent else self.agents[-2].name
        acks = self.n - 1 if broadcast and acker is None and not self.dialect.aggregates_acks else 1
        agent.pending[agent.seq] = [future, acks]
        text = (
            self.dialect.broadcast(agent, agent.seq, acker)
            if broadcast
            else self.dialect.direct(agent, target, agent.seq)
        )
        agent.conn.send(text)
        return future

    async def closed_loop(
        self, *, broadcast: bool, senders: int, warmup: float, window: float, every_ack: bool = False
    ) -> Phase:
        """``senders`` agents each keep one message in flight (the next goes when the last is acknowledged).

        ``every_ack``: through a relay, a broadcast completes when every recipient has acked it end to
        end (what the router's result stands for), not when one has."""
        stop = False
        completions: list[tuple[float, float]] = []
        names = [agent.name for agent in self.agents]

        async def sender(index: int) -> None:
            agent, rng = self.agents[index], random.Random(index)
            while not stop:
                target = None
                if not broadcast and self.target_of is not None:
                    target = names[self.target_of(index, rng)]
                elif not broadcast:
                    target = names[rng.randrange(self.n - 1)]
                    if target == agent.name:
                        target = names[-1]
                sent = time.perf_counter()
                done = await asyncio.wait_for(self._send(agent, broadcast, target, every_ack), 30)
                completions.append((done, done - sent))

        tasks = [asyncio.create_task(sender(i)) for i in range(senders)]
        try:
            await asyncio.sleep(warmup)
            t0, d0, c0, m0 = (
                time.perf_counter(),
                self.counters.deliveries,
                self.server_cpu_seconds(),
                self_cpu_seconds(),
            )
            await asyncio.sleep(window)
            t1, d1, c1, m1 = (
                time.perf_counter(),
                self.counters.deliveries,
                self.server_cpu_seconds(),
                self_cpu_seconds(),
            )
        finally:
            stop = True
            results = await asyncio.gather(*tasks, return_exceptions=True)
        failures = [result for result in results if isinstance(result, BaseException)]
        if failures:
            raise RuntimeError(
                f"{len(failures)} senders failed, first: {failures[0]!r}; last error frame: {self.counters.last_error}"
            )
        if self.counters.errors:
            raise RuntimeError(f"{self.counters.errors} error frames, last: {self.counters.last_error}")
        latencies = [latency * 1000 for done, latency in completions if t0 <= done <= t1]
        delivered = d1 - d0
        return Phase(
            [delivered / (t1 - t0)],
            latencies,
            [(c1 - c0) / delivered * 1e6] if delivered else [],
            c1 - c0,
            m1 - m0,
            delivered,
            t1 - t0,
        )

    async def fanout(self, reps: int, pause: float = 0.05) -> tuple[list[float], list[float]]:
        """One broadcast at a time from agent 0 to all others.

        Returns ms to the last recipient and ms to the sender's completion."""
        last, complete = [], []
        for _ in range(reps):
            await asyncio.sleep(pause)
            before = self.counters.deliveries
            sent = time.perf_counter()
            done = await asyncio.wait_for(self._send(self.agents[0], True, None, every_ack=True), 60)
            deadline = time.perf_counter() + 10
            while self.counters.deliveries - before < self.n - 1 and time.perf_counter() < deadline:
                await asyncio.sleep(0.001)
            if self.counters.deliveries - before < self.n - 1:
                raise RuntimeError(f"broadcast reached {self.counters.deliveries - before} of {self.n - 1}")
            last.append((self.counters.last_delivery - sent) * 1000)
            complete.append((done - sent) * 1000)
        return last, complete
