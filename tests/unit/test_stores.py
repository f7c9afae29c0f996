"""What a router must not forget, one specification for both stores: SQLite (one router) and Redis
(a cluster's, on a real redis-server)."""

from __future__ import annotations

import itertools
import time

import pytest

from webmcp_a2a.protocol import Envelope, Hello, SubscriptionFilter
from webmcp_a2a.router.cluster.redis_store import Keys, RedisStore
from webmcp_a2a.router.store import SqliteStore, Store

_prefixes = itertools.count()


@pytest.fixture(params=["sqlite", "redis"])
def make_store(request, tmp_path):
    """Factory: a store with the given limits; ``again()`` opens a second view of the same data."""
    opened: list[Store] = []
    prefix = f"stores-{next(_prefixes)}:"

    def make(**limits) -> Store:
        if request.param == "sqlite":
            store: Store = SqliteStore(str(tmp_path / "router.sqlite3"), **limits)
        else:
            store = RedisStore(request.getfixturevalue("redis_url"), f"node-{len(opened)}", Keys(prefix), **limits)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def note(message_id: str, size: int = 10, expires_at: float | None = None) -> Envelope:
    return Envelope(
        message_id=message_id,
        from_agent="sender",
        to_agent="away",
        message_type="notification",
        payload={"blob": "x" * size},
        expires_at=expires_at,
    )


def test_kept_messages_come_back_in_the_order_they_were_accepted(make_store):
    store = make_store()
    for message_id in ("m1", "m2", "m3"):
        assert store.put("away", note(message_id))

    assert [envelope.message_id for envelope in store.waiting_for("away")] == ["m1", "m2", "m3"]


def test_a_message_kept_twice_is_kept_once(make_store):
    store = make_store()
    store.put("away", note("m1"))
    store.put("away", note("m1"))

    assert store.count("away") == 1


def test_an_expired_message_is_dropped_when_its_agent_comes_for_its_mail(make_store):
    store = make_store()
    store.put("away", note("old", expires_at=time.time() - 1))
    store.put("away", note("fresh"))

    assert [envelope.message_id for envelope in store.waiting_for("away")] == ["fresh"]
    assert store.count("away") == 1


def test_an_agent_gets_at_most_its_share_of_messages_and_bytes(make_store):
    by_count = make_store(per_agent_limit=2)
    assert [by_count.put("away", note(f"c{i}")) for i in range(3)] == [True, True, False]
    by_bytes = make_store(per_agent_bytes=3000, total_bytes=10_000)  # about 1.3 KB each
    assert [by_bytes.put("heavy", note(f"b{i}", size=1000)) for i in range(3)] == [True, True, False]


def test_the_store_holds_at_most_its_total_bytes(make_store):
    store = make_store(total_bytes=3000)  # about 1.3 KB each

    assert [store.put(agent, note(f"t-{agent}", size=1000)) for agent in ("a", "b", "c")] == [True, True, False]


def test_a_removed_message_is_gone_and_its_bytes_are_free_again(make_store):
    store = make_store(per_agent_bytes=1500)
    store.put("away", note("m1", size=1000))
    store.waiting_for("away")
    store.remove("away", "m1")

    assert not store.holds("away", "m1")
    assert store.put("away", note("m2", size=1000))


def test_forgetting_an_agent_forgets_its_record_credential_subscriptions_and_mail(make_store):
    store = make_store()
    store.remember_agent(Hello(agent_id="away", agent_type="executor"), 1.0)
    store.set_credential("away", b"s" * 16, b"d" * 32)
    store.add_subscription("sub-1", "away", "news", SubscriptionFilter(agent_type="monitor"))
    store.put("away", note("m1"))

    store.forget_agent("away")

    assert store.credential("away") is None
    assert [hello.agent_id for hello, _ in store.known_agents()] == []
    assert list(store.subscriptions()) == []
    assert store.count("away") == 0


def test_credentials_agents_and_subscriptions_read_back_as_written(make_store):
    store = make_store()
    store.remember_agent(Hello(agent_id="ann", agent_type="executor", capabilities=["x"]), 5.0)
    store.set_credential("ann", b"s" * 16, b"d" * 32)
    store.add_subscription("sub-1", "ann", "news", SubscriptionFilter(agent_type="monitor"))

    assert store.credential("ann") == (b"s" * 16, b"d" * 32)
    assert store.credential_count() == 1
    ((hello, last_seen),) = store.known_agents()
    assert (hello.agent_id, hello.capabilities, last_seen) == ("ann", ["x"], 5.0)
    assert list(store.subscriptions()) == [("sub-1", "ann", "news", SubscriptionFilter(agent_type="monitor"))]


def test_a_secret_is_made_once_and_shared_by_every_view_of_the_store(make_store):
    first, second = make_store(), make_store()

    made = first.secret("signing", lambda: b"first")

    assert made == b"first"
    assert second.secret("signing", lambda: b"second") == b"first"
