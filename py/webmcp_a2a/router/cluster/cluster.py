"""A router's membership in a cluster: presence, the events channel, and frames across routers.

Each router is a *node* with a lease in Redis (``nodes``), renewed every ``cluster_heartbeat``
seconds and lasting ``cluster_lease``. An agent id is online at one node at a time: a hello
claims it (:data:`.scripts.CLAIM`), refused while another node with a live lease has it - the
agent is told to try again later (close code 1013), so an agent whose router was killed gets in
once that router's lease has run out. The first node to see a lease run out buries the dead node:
its agents go offline, one event each (:data:`.scripts.BURY`).

Every node keeps the whole mesh in its registry - remote agents with a
:class:`~.links.NodeLink` for a connection - and every subscription, kept current by the
events channel and read afresh from Redis whenever the bus (re)connects.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...protocol import Hello
from ..store import StoreUnavailable
from ..subscriptions import SubscriptionTable
from . import scripts
from .bus import Bus
from .coordination import ClusterBarriers, ClusterLocks
from .links import RS, Links, NodeLink
from .redis_store import Keys, RedisStore, agent_of, subscription_of
from .tasks import WAITING

if TYPE_CHECKING:
    from ..coordination import Reply
    from ..registry import AgentRecord
    from ..routing import Router
    from ..settings import RouterSettings

log = logging.getLogger("webmcp_a2a.router.cluster")

CLOSE_TRY_AGAIN = 1013  # WebSocket "try again later": the agent's id is online at another router for now


class AgentIdElsewhere(Exception):
    """The agent id is online at another live router."""

    def __init__(self, node: str) -> None:
        super().__init__(node)
        self.node = node


class Cluster:
    def __init__(self, router: Router, settings: RouterSettings, reply: Reply) -> None:
        assert settings.redis_url is not None
        self.router = router
        self.node = f"{settings.hub_name}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.keys = Keys(settings.redis_prefix)
        self.heartbeat_seconds = settings.cluster_heartbeat
        self.lease_ms = int(settings.cluster_lease * 1000)
        self.store = RedisStore(
            settings.redis_url,
            self.node,
            self.keys,
            settings.store_limit_per_agent,
            settings.store_ttl,
            settings.store_bytes_per_agent,
            settings.store_bytes_total,
        )
        redis = self.store.redis
        self._heartbeat = redis.register_script(scripts.HEARTBEAT)
        self._claim = redis.register_script(scripts.CLAIM)
        self._release = redis.register_script(scripts.RELEASE)
        self._bury = redis.register_script(scripts.BURY)
        self._own_channel = f"{self.keys.node_channel}{self.node}"
        self.bus = Bus(settings.redis_url, [self.keys.events, self._own_channel], self._received, self._caught_up)
        self.links = Links(self.bus, self.node, self.channel_of, forget_after=3 * settings.ack_timeout)
        self._beating: asyncio.Task[None] | None = None
        self._beat_failed = False
        self._behind = True  # until the mesh has been read from Redis (again)
        # The A2A bridge's hand for answers to tasks it waits for that reached another router's bridge.
        self.task_answers: Callable[[str, str], None] | None = None
        self.locks = ClusterLocks(self, reply)
        self.barriers = ClusterBarriers(self, reply)

    def channel_of(self, node: str) -> str:
        return f"{self.keys.node_channel}{node}"

    # --- life ------------------------------------------------------------------------------

    async def start(self) -> None:
        self._beat()
        self.bus.start()
        self._beating = asyncio.create_task(self._beat_forever())

    async def stop(self) -> None:
        """Leave the cluster: this router's agents go offline everywhere now, not when its lease ends."""
        if self._beating is not None:
            self._beating.cancel()
        with contextlib.suppress(StoreUnavailable):
            for record in self._local_online():
                self.release(record)
            self.store.call(lambda: self.store.redis.zrem(self.keys.nodes, self.node))
        await self.bus.stop()
        self.store.close()

    async def _beat_forever(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_seconds)
            try:
                if self._beat() or self._behind:
                    self._catch_up()
                self._beat_failed = False
            except StoreUnavailable as exc:
                if not self._beat_failed:  # once per outage
                    log.warning("cluster heartbeat: %s", exc)
                self._beat_failed = True
            self.links.forget_old()

    def _beat(self) -> bool:
        """Renew this node's lease, and bury the nodes whose lease ran out. True when this node's own
        lease had run out (Redis was away or slow): the others may have buried it, it must catch up."""
        lapsed, *dead = self.store.call(lambda: self._heartbeat([self.keys.nodes], [self.node, self.lease_ms]))
        for node in (name.decode() for name in dead):
            keys = [self.keys.nodes, self.keys.online, self.keys.events]
            buried = self.store.call(functools.partial(self._bury, keys, [node, self.keys.prefix]))
            if buried >= 0:
                log.warning("router %s is gone (its lease ran out): %d agents offline", node, buried)
        return bool(lapsed)

    # --- presence of this router's agents --------------------------------------------------

    def claim(self, hello: Hello) -> None:
        """Take ``hello``'s agent id for this router; :class:`AgentIdElsewhere` when a live one has it."""
        event = json.dumps({"e": "online", "node": self.node, "hello": hello.model_dump(mode="json")})
        keys = [
            self.keys.online,
            self.keys.nodes,
            f"{self.keys.node_agents}{self.node}",
            self.keys.events,
            self.keys.node_agents,
        ]
        holder: bytes = self.store.call(lambda: self._claim(keys, [hello.agent_id, self.node, event]))
        if holder:
            raise AgentIdElsewhere(holder.decode())
        stale = self.router.registry.online(hello.agent_id)
        if stale is not None and isinstance(stale.connection, NodeLink):  # its router died, or it moved here
            self._went_offline(stale)

    def release(self, record: AgentRecord) -> None:
        event = json.dumps({"e": "offline", "node": self.node, "agent": record.agent_id})
        keys = [self.keys.online, f"{self.keys.node_agents}{self.node}", self.keys.events]
        self.store.call(lambda: self._release(keys, [record.agent_id, self.node, event]))

    def busy(self, record: AgentRecord) -> None:
        event = {"e": "busy", "node": self.node, "agent": record.agent_id, "busy": record.busy}
        self.bus.publish(self.keys.events, json.dumps(event).encode())

    def forward_ack(self, agent_id: str, message_id: str, accepted: bool, reason: str) -> bool:
        """Send an ack for another router's delivery back to it; False when no other router sent it."""
        return self.links.acknowledge(agent_id, message_id, accepted, reason)

    def look_up(self, agent_id: str) -> AgentRecord | None:
        """Ask Redis about an agent this router has not heard of (yet): the events channel may lag a
        hello at another router by a few milliseconds. None when the cluster never met it."""
        with self.store.redis.pipeline() as pipe:
            pipe.hget(self.keys.online, agent_id)
            pipe.hget(self.keys.agents, agent_id)
            try:
                node, row = self.store.call(pipe.execute)
            except StoreUnavailable:
                return None
        if row is None:
            return None
        hello, last_seen = agent_of(row)
        if node is not None and node.decode() != self.node:
            self._came_online(hello, node.decode())
        else:
            self.router.registry.remember(hello, last_seen)
        return self.router.registry.get(agent_id)

    # --- A2A tasks: answered at one router, awaited at another ---------------------------------

    def await_answers(self, task_id: str) -> None:
        """This router's bridge waits for ``task_id``'s answers: other routers pass them here."""
        with contextlib.suppress(StoreUnavailable):  # then only answers that reach this router count
            self.store.call(lambda: self.store.redis.hset(self.keys.prefix + WAITING, task_id, self.node))

    def stop_awaiting(self, task_id: str) -> None:
        with contextlib.suppress(StoreUnavailable):
            self.store.call(lambda: self.store.redis.hdel(self.keys.prefix + WAITING, task_id))

    def pass_answer(self, agent_id: str, task_id: str, reply: str) -> bool:
        """Pass an answer to the router whose bridge waits for its task; False when no live one does."""
        with self.store.redis.pipeline() as pipe:
            pipe.hget(self.keys.prefix + WAITING, task_id)
            pipe.zrange(self.keys.nodes, 0, -1)
            try:
                waiting, live = self.store.call(pipe.execute)
            except StoreUnavailable:
                return False
        # A buried router is out of the live ones: then the answer goes to the stored task.
        if waiting is None or waiting == self.node.encode() or waiting not in live or not self.bus.up:
            return False
        self.links.record(waiting.decode(), f"T {agent_id}\n{reply}")
        return True

    def _local_online(self) -> list[AgentRecord]:
        return [
            record
            for record in self.router.registry.find()
            if record.connection is not None and not isinstance(record.connection, NodeLink)
        ]

    # --- what the other routers say --------------------------------------------------------------

    def _received(self, channel: str, data: bytes) -> None:
        records = [data] if channel == self.keys.events else data.decode().split(RS)
        for record in records:
            try:
                if isinstance(record, bytes):
                    self._event(json.loads(record))
                else:
                    self._frame(record)
            except Exception:  # one bad record must not stop the bus, nor the records after it
                log.exception("cluster: cannot handle %r", record[:200])

    def _event(self, event: dict[str, Any]) -> None:
        kind = event["e"]
        if kind == "lock_free":  # these concern this router's waiters too, whoever caused them
            self.locks.lock_free(event["name"])
            return
        if kind == "barrier":
            self.barriers.ended(event)
            return
        if event.get("node") == self.node:
            return  # this router did it
        router, registry = self.router, self.router.registry
        if kind == "online":
            hello = Hello.model_validate(event["hello"])
            self._came_online(hello, event["node"])
        elif kind == "offline":
            record = registry.online(event["agent"])
            link = record.connection if record is not None else None
            if record is not None and isinstance(link, NodeLink) and link.node == event["node"]:
                self._went_offline(record)
        elif kind == "busy":
            record = registry.online(event["agent"])
            if record is not None and isinstance(record.connection, NodeLink):
                record.busy = event["busy"]
                router.watchers.agent(record.info())
        elif kind == "subscribed":
            subscription_id, agent_id, topic, filter = subscription_of(event["id"], event)
            router.subscriptions.add(agent_id, topic, filter, subscription_id)
            router.watchers.topic(topic, router.subscriptions.subscribers(topic))
        elif kind == "unsubscribed":
            emptied = router.subscriptions.remove_by_id(event["id"])
            if emptied is not None:
                router.watchers.topic(emptied, router.subscriptions.subscribers(emptied))
        elif kind == "mail":
            record = registry.online(event["agent"])
            if record is not None and not isinstance(record.connection, NodeLink):
                router.deliver_stored(record)

    def _came_online(self, hello: Hello, node: str) -> None:
        registry = self.router.registry
        known = registry.online(hello.agent_id)
        if known is not None:
            if isinstance(known.connection, NodeLink):
                if known.connection.node == node:
                    return  # already known there (read in a catch-up)
                self._went_offline(known)  # it moved
            elif known.connection is not None:
                # This router lost it to another (its lease ran out while Redis was away): let it go.
                known.connection.close(CLOSE_TRY_AGAIN, "agent id online at another router")
                return
        record = registry.connect(hello, self.links.link(node, hello.agent_id))
        self.router.watchers.agent(record.info())

    def _went_offline(self, record: AgentRecord) -> None:
        assert isinstance(record.connection, NodeLink)
        self.router.registry.disconnect(record.agent_id, record.connection)
        self.router.agent_gone(record)

    def _frame(self, text: str) -> None:
        header, _, frame = text.partition("\n")
        kind, *fields = header.split(" ", 5)
        if kind == "D":
            origin, priority, expires, message_id, targets = fields
            self._deliver(origin, int(priority), None if expires == "-" else float(expires), message_id, targets, frame)
        elif kind == "A":
            serial, agent_id, message_id, accepted, reason = fields
            self.links.answered(int(serial))
            self.router.acknowledged(agent_id, message_id, accepted == "1", reason)
        elif kind == "X":
            serial, reason = header[2:].split(" ", 1)
            self.links.dropped(int(serial), reason)
        elif kind == "T" and self.task_answers is not None:
            self.task_answers(fields[0], frame)

    def _deliver(
        self, origin: str, priority: int, expires_at: float | None, message_id: str, targets: str, frame: str
    ) -> None:
        for target in targets.split(" "):
            agent_id, serial_text = target.split(":")
            serial = int(serial_text)
            record = self.router.registry.online(agent_id)
            if record is None or record.connection is None or isinstance(record.connection, NodeLink):
                if serial:
                    self.links.tell_dropped(origin, agent_id, message_id, serial, "recipient disconnected")
                continue
            on_drop = self.links.forwarded(origin, agent_id, message_id, serial) if serial else None
            if not record.connection.offer(frame, priority, expires_at, on_drop) and serial:
                self.links.tell_dropped(origin, agent_id, message_id, serial, "queue_full")

    # --- catching up (first connection, and after Redis was away) ----------------------------

    async def _caught_up(self) -> None:
        """The bus (re)connected: read the mesh from Redis afresh (what this router missed while it
        could not listen); if Redis cannot be read yet, the heartbeat tries again until it can."""
        try:
            self._beat()
            self._catch_up()
        except StoreUnavailable as exc:
            log.warning("cluster: cannot catch up yet (%s)", exc)

    def _catch_up(self) -> None:
        self._behind = True
        for record in self._local_online():  # this router's agents: still this router's?
            try:
                self.claim(record.hello)
            except AgentIdElsewhere:
                assert record.connection is not None
                record.connection.close(CLOSE_TRY_AGAIN, "agent id online at another router")
        self._read_presence()
        self._read_subscriptions()
        for record in self._local_online():  # mail kept for them meanwhile
            self.router.deliver_stored(record)
        self._behind = False

    def _read_presence(self) -> None:
        redis, keys = self.store.redis, self.keys
        online: dict[bytes, bytes] = self.store.call(lambda: redis.hgetall(keys.online))
        remote = {agent.decode(): node.decode() for agent, node in online.items() if node.decode() != self.node}
        for record in self.router.registry.find():
            link = record.connection
            if isinstance(link, NodeLink) and remote.get(record.agent_id) != link.node:
                self._went_offline(record)
        if not remote:
            return
        ids = list(remote)
        known = self.store.call(lambda: redis.hmget(keys.agents, ids))
        for agent_id, row in zip(ids, known, strict=True):
            if row is not None:
                self._came_online(agent_of(row)[0], remote[agent_id])

    def _read_subscriptions(self) -> None:
        self.router.subscriptions = SubscriptionTable.of(self.store.subscriptions())
