"""What the router must not forget: messages accepted for absent agents, known agents, subscriptions.

:class:`Store` says what a store does; :class:`SqliteStore` is the embedded default
(``--store PATH``; ``:memory:`` keeps nothing across restarts), and a cluster of routers
shares :class:`~.cluster.redis_store.RedisStore` instead (``--redis URL``).

The SQLite database runs in WAL mode with ``synchronous=NORMAL``: a commit is
in the operating system's hands before the router answers, so killing the router
process (even with SIGKILL) loses nothing it has acknowledged; only a power cut
may lose the last commits.

Only messages the router *accepts without delivering* are written here. A delivery
to an online agent is answered only after that agent acknowledged it, so the
sender's outbox, not this store, covers a router crash in between.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

from ..protocol import Envelope, Hello, SubscriptionFilter

_SCHEMA = """
CREATE TABLE IF NOT EXISTS stored_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    recipient TEXT NOT NULL,
    message_id TEXT NOT NULL,
    expires_at REAL NOT NULL,
    envelope TEXT NOT NULL,
    UNIQUE (recipient, message_id)
);
CREATE TABLE IF NOT EXISTS agents (
    agent_id TEXT PRIMARY KEY,
    hello TEXT NOT NULL,
    last_seen REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS credentials (
    agent_id TEXT PRIMARY KEY,
    salt BLOB NOT NULL,
    digest BLOB NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS secrets (
    name TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS subscriptions (
    subscription_id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    filter TEXT
);
"""


class StoreUnavailable(Exception):
    """The store cannot be reached (a cluster's Redis is down): nothing can be made durable now."""


class Store(Protocol):
    """Where the router keeps what it must not forget. Every call is a short synchronous round
    trip (a SQLite commit, a Redis script); one that cannot be made raises :class:`StoreUnavailable`."""

    def close(self) -> None: ...

    def put(self, recipient: str, envelope: Envelope) -> bool: ...

    def holds(self, recipient: str, message_id: str) -> bool: ...

    def waiting_for(self, recipient: str) -> list[Envelope]: ...

    def remove(self, recipient: str, message_id: str) -> None: ...

    def count(self, recipient: str) -> int: ...

    def remember_agent(self, hello: Hello, last_seen: float) -> None: ...

    def forget_agent(self, agent_id: str) -> None: ...

    def credential(self, agent_id: str) -> tuple[bytes, bytes] | None: ...

    def set_credential(self, agent_id: str, salt: bytes, digest: bytes) -> None: ...

    def secret(self, name: str, make: Callable[[], bytes]) -> bytes: ...

    def credential_count(self) -> int: ...

    def known_agents(self) -> Iterable[tuple[Hello, float]]: ...

    def add_subscription(
        self, subscription_id: str, agent_id: str, topic: str, filter: SubscriptionFilter | None
    ) -> None: ...

    def remove_subscription(self, subscription_id: str) -> None: ...

    def subscriptions(self) -> Iterable[tuple[str, str, str, SubscriptionFilter | None]]: ...


class SqliteStore:
    def __init__(
        self,
        path: str = ":memory:",
        per_agent_limit: int = 10_000,
        default_ttl: float = 7 * 86400,
        per_agent_bytes: int = 64 * 1024 * 1024,
        total_bytes: int = 1024 * 1024 * 1024,
    ):
        self.per_agent_limit = per_agent_limit
        self.default_ttl = default_ttl
        self.per_agent_bytes = per_agent_bytes
        self.total_bytes = total_bytes
        # Autocommit: each statement is durable on its own. The router may be built in one
        # thread and served in another, but it is only ever used by one event loop at a time.
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        # An index of what is stored (and its size), so the hot path (a delivered message) asks no query.
        self._held: dict[str, dict[str, int]] = {}
        self._bytes: dict[str, int] = {}
        self.stored_bytes = 0
        for recipient, message_id, size in self._db.execute(
            "SELECT recipient, message_id, length(envelope) FROM stored_messages"
        ):
            self._note(recipient, message_id, size)

    def close(self) -> None:
        self._db.close()

    # --- messages for absent agents ------------------------------------------------

    def put(self, recipient: str, envelope: Envelope) -> bool:
        """Keep ``envelope`` for ``recipient``; False when its share of the store (messages or
        bytes) or the whole store is full.

        Storing the same message twice (a sender's resend) keeps one copy.
        """
        held = self._held.get(recipient, {})
        if envelope.message_id in held:
            return True
        text = envelope.model_dump_json()
        size = len(text)
        if (
            len(held) >= self.per_agent_limit
            or self._bytes.get(recipient, 0) + size > self.per_agent_bytes
            or self.stored_bytes + size > self.total_bytes
        ):
            return False
        expires_at = envelope.expires_at or time.time() + self.default_ttl
        self._db.execute(
            "INSERT OR IGNORE INTO stored_messages (recipient, message_id, expires_at, envelope) VALUES (?, ?, ?, ?)",
            (recipient, envelope.message_id, expires_at, text),
        )
        self._note(recipient, envelope.message_id, size)
        return True

    def _note(self, recipient: str, message_id: str, size: int) -> None:
        self._held.setdefault(recipient, {})[message_id] = size
        self._bytes[recipient] = self._bytes.get(recipient, 0) + size
        self.stored_bytes += size

    def _unnote(self, recipient: str, message_id: str) -> None:
        size = self._held[recipient].pop(message_id)
        self._bytes[recipient] -= size
        self.stored_bytes -= size

    def holds(self, recipient: str, message_id: str) -> bool:
        return message_id in self._held.get(recipient, ())

    def waiting_for(self, recipient: str) -> list[Envelope]:
        """What is kept for ``recipient``, in the order it was accepted; expired messages are dropped."""
        if not self._held.get(recipient):
            return []
        expired = self._db.execute(
            "DELETE FROM stored_messages WHERE recipient = ? AND expires_at <= ? RETURNING message_id",
            (recipient, time.time()),
        ).fetchall()
        for (message_id,) in expired:
            self._unnote(recipient, message_id)
        rows = self._db.execute(
            "SELECT envelope FROM stored_messages WHERE recipient = ? ORDER BY seq", (recipient,)
        ).fetchall()
        return [Envelope.model_validate_json(envelope) for (envelope,) in rows]

    def remove(self, recipient: str, message_id: str) -> None:
        held = self._held.get(recipient)
        if held is None or message_id not in held:
            return
        self._unnote(recipient, message_id)
        self._db.execute("DELETE FROM stored_messages WHERE recipient = ? AND message_id = ?", (recipient, message_id))

    def count(self, recipient: str) -> int:
        return len(self._held.get(recipient, ()))

    # --- agents the router has met ---------------------------------------------------

    def remember_agent(self, hello: Hello, last_seen: float) -> None:
        self._db.execute(
            "INSERT INTO agents (agent_id, hello, last_seen) VALUES (?, ?, ?) "
            "ON CONFLICT (agent_id) DO UPDATE SET hello = excluded.hello, last_seen = excluded.last_seen",
            (hello.agent_id, hello.model_dump_json(exclude={"credential", "join_token"}), last_seen),
        )

    def forget_agent(self, agent_id: str) -> None:
        """Forget an agent entirely: its record, credential, subscriptions and kept messages."""
        for message_id in list(self._held.get(agent_id, {})):
            self._unnote(agent_id, message_id)
        self._db.execute("DELETE FROM agents WHERE agent_id = ?", (agent_id,))
        self._db.execute("DELETE FROM credentials WHERE agent_id = ?", (agent_id,))
        self._db.execute("DELETE FROM subscriptions WHERE agent_id = ?", (agent_id,))
        self._db.execute("DELETE FROM stored_messages WHERE recipient = ?", (agent_id,))

    # --- credentials (salted digests only: the secrets themselves are never stored) -------------

    def credential(self, agent_id: str) -> tuple[bytes, bytes] | None:
        """The (salt, digest) of ``agent_id``'s credential, or None when nobody owns the id."""
        row = self._db.execute("SELECT salt, digest FROM credentials WHERE agent_id = ?", (agent_id,)).fetchone()
        return (bytes(row[0]), bytes(row[1])) if row else None

    def set_credential(self, agent_id: str, salt: bytes, digest: bytes) -> None:
        self._db.execute(
            "INSERT INTO credentials VALUES (?, ?, ?, ?) "
            "ON CONFLICT (agent_id) DO UPDATE SET salt = excluded.salt, digest = excluded.digest",
            (agent_id, salt, digest, time.time()),
        )

    def secret(self, name: str, make: Callable[[], bytes]) -> bytes:
        """The router's secret ``name``, made (and kept) on first use."""
        row = self._db.execute("SELECT value FROM secrets WHERE name = ?", (name,)).fetchone()
        if row is not None:
            return bytes(row[0])
        value = make()
        self._db.execute("INSERT INTO secrets VALUES (?, ?)", (name, value))
        return value

    def credential_count(self) -> int:
        (count,) = self._db.execute("SELECT count(*) FROM credentials").fetchone()
        return int(count)

    def known_agents(self) -> Iterator[tuple[Hello, float]]:
        for hello, last_seen in self._db.execute("SELECT hello, last_seen FROM agents ORDER BY last_seen"):
            yield Hello.model_validate_json(hello), last_seen

    # --- subscriptions -----------------------------------------------------------------

    def add_subscription(
        self, subscription_id: str, agent_id: str, topic: str, filter: SubscriptionFilter | None
    ) -> None:
        self._db.execute(
            "INSERT INTO subscriptions VALUES (?, ?, ?, ?)",
            (subscription_id, agent_id, topic, filter.model_dump_json() if filter else None),
        )

    def remove_subscription(self, subscription_id: str) -> None:
        self._db.execute("DELETE FROM subscriptions WHERE subscription_id = ?", (subscription_id,))

    def subscriptions(self) -> Iterator[tuple[str, str, str, SubscriptionFilter | None]]:
        for subscription_id, agent_id, topic, filter in self._db.execute(
            "SELECT subscription_id, agent_id, topic, filter FROM subscriptions"
        ):
            yield subscription_id, agent_id, topic, SubscriptionFilter.model_validate_json(filter) if filter else None
