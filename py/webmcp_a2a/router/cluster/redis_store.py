"""The store a cluster of routers shares: :class:`~..store.Store` on Redis.

Each call is one synchronous round trip (a command or a script of :mod:`.scripts`), as a
SQLite commit is for the embedded store: the router's handlers never await, and a message is
in Redis before its sender hears ``stored: true``. A call that fails marks Redis down for
``RETRY_AFTER`` seconds; meanwhile every call raises :class:`~..store.StoreUnavailable` at
once, so an unreachable Redis costs one timeout per ``RETRY_AFTER``, not one per message.

Kept messages carry the SQLite store's rules: de-duplicated by message id, in acceptance
order, dropped when expired, and bounded per agent (messages and bytes) and in all.
Durability is Redis's: run it with ``appendonly yes`` to keep them through a Redis restart.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import redis

from ...protocol import Envelope, Hello, SubscriptionFilter
from ..store import StoreUnavailable
from . import scripts

log = logging.getLogger("webmcp_a2a.router.cluster")

RETRY_AFTER = 1.0  # seconds Redis is left alone after a failed call
TIMEOUT = 0.5  # seconds a call (or a connection) may take
# Message ids this router put or took, so a delivered message that was never kept costs no round trip.
KNOWN_LIMIT = 100_000


class Keys:
    """The cluster's key names (:mod:`.scripts` lists them), under one prefix."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.online = f"{prefix}online"
        self.nodes = f"{prefix}nodes"
        self.node_agents = f"{prefix}node-agents:"
        self.agents = f"{prefix}agents"
        self.credentials = f"{prefix}credentials"
        self.secrets = f"{prefix}secrets"
        self.subscriptions = f"{prefix}subscriptions"
        self.mail_bytes = f"{prefix}mail-bytes"
        self.mail_seq = f"{prefix}mail-seq"
        self.events = f"{prefix}events"
        self.node_channel = f"{prefix}node:"

    def mail(self, agent_id: str) -> list[str]:
        return [f"{self.prefix}mail:{agent_id}", f"{self.prefix}mailq:{agent_id}", f"{self.prefix}mailx:{agent_id}"]


def connect(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=TIMEOUT, socket_connect_timeout=TIMEOUT, health_check_interval=0)


class RedisStore:
    def __init__(
        self,
        url: str,
        node: str,
        keys: Keys,
        per_agent_limit: int = 10_000,
        default_ttl: float = 7 * 86400,
        per_agent_bytes: int = 64 * 1024 * 1024,
        total_bytes: int = 1024 * 1024 * 1024,
    ) -> None:
        self.node = node
        self.keys = keys
        self.per_agent_limit = per_agent_limit
        self.default_ttl = default_ttl
        self.per_agent_bytes = per_agent_bytes
        self.total_bytes = total_bytes
        self.redis = connect(url)
        self._down_until = 0.0
        self._put = self.redis.register_script(scripts.MAIL_PUT)
        self._remove = self.redis.register_script(scripts.MAIL_REMOVE)
        self._take = self.redis.register_script(scripts.MAIL_TAKE)
        self._forget_all = self.redis.register_script(scripts.MAIL_FORGET_ALL)
        self._known: OrderedDict[tuple[str, str], None] = OrderedDict()

    def call(self, operation: Callable[[], Any]) -> Any:
        """Run one Redis operation; :class:`StoreUnavailable` when Redis cannot be reached."""
        if time.monotonic() < self._down_until:
            raise StoreUnavailable("the cluster's Redis is unreachable")
        try:
            return operation()
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            self._down_until = time.monotonic() + RETRY_AFTER
            raise StoreUnavailable(f"the cluster's Redis is unreachable: {exc}") from None

    def close(self) -> None:
        self.redis.close()

    # --- messages for absent agents -----------------------------------------------------

    def _mail_keys(self, recipient: str) -> list[str]:
        return [*self.keys.mail(recipient), self.keys.mail_bytes]

    def put(self, recipient: str, envelope: Envelope) -> bool:
        """Keep ``envelope`` for ``recipient`` (and tell the router it is connected to, if any)."""
        expires_at = envelope.expires_at or time.time() + self.default_ttl
        event = json.dumps({"e": "mail", "node": self.node, "agent": recipient})
        keys = [*self._mail_keys(recipient), self.keys.mail_seq, self.keys.events]
        args: list[str | float] = [
            recipient,
            envelope.message_id,
            envelope.model_dump_json(),
            expires_at,
            self.per_agent_limit,
            self.per_agent_bytes,
            self.total_bytes,
            event,
        ]
        kept = bool(self.call(lambda: self._put(keys, args)))
        if kept:
            self._note(recipient, envelope.message_id)
        return kept

    def _note(self, recipient: str, message_id: str) -> None:
        self._known[(recipient, message_id)] = None
        if len(self._known) > KNOWN_LIMIT:
            self._known.popitem(last=False)

    def holds(self, recipient: str, message_id: str) -> bool:
        key = self.keys.mail(recipient)[0]
        return bool(self.call(lambda: self.redis.hexists(key, message_id)))

    def waiting_for(self, recipient: str) -> list[Envelope]:
        keys, now = self._mail_keys(recipient), time.time()
        kept: list[bytes] = self.call(lambda: self._take(keys, [recipient, now]))
        envelopes = [Envelope.model_validate_json(text) for text in kept if text is not None]
        for envelope in envelopes:
            self._note(recipient, envelope.message_id)
        return envelopes

    def remove(self, recipient: str, message_id: str) -> None:
        # Only what this router put or took can be kept: the rest (nearly every delivered message)
        # costs nothing. A copy another router kept, or one a failed call left, is redelivered
        # once more and de-duplicated by its recipient.
        if (recipient, message_id) not in self._known:
            return
        del self._known[(recipient, message_id)]
        keys = self._mail_keys(recipient)
        try:
            self.call(lambda: self._remove(keys, [recipient, message_id]))
        except StoreUnavailable:
            log.warning("kept message %s for %s stays in Redis (unreachable)", message_id, recipient)

    def count(self, recipient: str) -> int:
        key = self.keys.mail(recipient)[0]
        return int(self.call(lambda: self.redis.hlen(key)))

    # --- agents the routers have met --------------------------------------------------------

    def remember_agent(self, hello: Hello, last_seen: float) -> None:
        record = json.dumps(
            {"hello": hello.model_dump(mode="json", exclude={"credential", "join_token"}), "last_seen": last_seen}
        )
        self.call(lambda: self.redis.hset(self.keys.agents, hello.agent_id, record))

    def forget_agent(self, agent_id: str) -> None:
        """Forget an agent entirely: its record, credential, subscriptions and kept messages."""
        mine = [sid for sid, agent, _, _ in self.subscriptions() if agent == agent_id]
        with self.redis.pipeline() as pipe:
            pipe.hdel(self.keys.agents, agent_id)
            pipe.hdel(self.keys.credentials, agent_id)
            if mine:
                pipe.hdel(self.keys.subscriptions, *mine)
            self.call(pipe.execute)
        keys = self._mail_keys(agent_id)
        self.call(lambda: self._forget_all(keys, [agent_id]))

    def known_agents(self) -> Iterator[tuple[Hello, float]]:
        rows: dict[bytes, bytes] = self.call(lambda: self.redis.hgetall(self.keys.agents))
        yield from sorted((agent_of(row) for row in rows.values()), key=lambda known: known[1])

    # --- credentials and secrets ------------------------------------------------------------

    def credential(self, agent_id: str) -> tuple[bytes, bytes] | None:
        value: bytes | None = self.call(lambda: self.redis.hget(self.keys.credentials, agent_id))
        # The salt, then the SHA-256 digest (32 bytes).
        return (value[:-32], value[-32:]) if value is not None else None

    def set_credential(self, agent_id: str, salt: bytes, digest: bytes) -> None:
        self.call(lambda: self.redis.hset(self.keys.credentials, agent_id, salt + digest))

    def secret(self, name: str, make: Callable[[], bytes]) -> bytes:
        """The cluster's secret ``name``: whichever router made it first, every router shares it."""
        candidate = make()
        self.call(lambda: self.redis.hsetnx(self.keys.secrets, name, candidate))
        value: bytes = self.call(lambda: self.redis.hget(self.keys.secrets, name))
        return value

    def credential_count(self) -> int:
        return int(self.call(lambda: self.redis.hlen(self.keys.credentials)))

    # --- subscriptions (every router keeps all of them; the events channel tells the others) ----

    def add_subscription(
        self, subscription_id: str, agent_id: str, topic: str, filter: SubscriptionFilter | None
    ) -> None:
        record = {"agent_id": agent_id, "topic": topic, "filter": filter.model_dump(mode="json") if filter else None}
        event = json.dumps({"e": "subscribed", "node": self.node, "id": subscription_id, **record})
        with self.redis.pipeline() as pipe:
            pipe.hset(self.keys.subscriptions, subscription_id, json.dumps(record))
            pipe.publish(self.keys.events, event)
            self.call(pipe.execute)

    def remove_subscription(self, subscription_id: str) -> None:
        event = json.dumps({"e": "unsubscribed", "node": self.node, "id": subscription_id})
        with self.redis.pipeline() as pipe:
            pipe.hdel(self.keys.subscriptions, subscription_id)
            pipe.publish(self.keys.events, event)
            self.call(pipe.execute)

    def subscriptions(self) -> Iterator[tuple[str, str, str, SubscriptionFilter | None]]:
        rows: dict[bytes, bytes] = self.call(lambda: self.redis.hgetall(self.keys.subscriptions))
        for subscription_id, row in rows.items():
            yield subscription_of(subscription_id.decode(), json.loads(row))


def agent_of(row: bytes) -> tuple[Hello, float]:
    """An agent's record in the ``agents`` hash: its hello and when it was last seen."""
    record = json.loads(row)
    return Hello.model_validate(record["hello"]), record["last_seen"]


def subscription_of(subscription_id: str, record: dict[str, Any]) -> tuple[str, str, str, SubscriptionFilter | None]:
    filter = SubscriptionFilter.model_validate(record["filter"]) if record["filter"] else None
    return subscription_id, record["agent_id"], record["topic"], filter
