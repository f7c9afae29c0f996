"""Who wants which topic, and with which filter."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..protocol import Region, SubscriptionFilter


@dataclass(frozen=True)
class Subscription:
    subscription_id: str
    agent_id: str
    topic: str
    filter: SubscriptionFilter | None

    def matches(self, subject_type: str | None, region: Region | None) -> bool:
        """Does an event about an agent of ``subject_type`` in ``region`` pass the filter?"""
        if self.filter is None:
            return True
        if self.filter.agent_type is not None and self.filter.agent_type != subject_type:
            return False
        return not (self.filter.region is not None and (region is None or not self.filter.region.overlaps(region)))


def new_subscription_id() -> str:
    return f"sub-{uuid.uuid4().hex[:16]}"


class SubscriptionTable:
    @classmethod
    def of(cls, kept: Iterable[tuple[str, str, str, SubscriptionFilter | None]]) -> SubscriptionTable:
        """A table of the subscriptions a store kept: (id, agent id, topic, filter) each."""
        table = cls()
        for subscription_id, agent_id, topic, filter in kept:
            table.add(agent_id, topic, filter, subscription_id)
        return table

    def __init__(self) -> None:
        self._by_topic: dict[str, dict[str, Subscription]] = {}
        self._by_id: dict[str, Subscription] = {}
        self._per_agent: Counter[str] = Counter()

    def add(
        self, agent_id: str, topic: str, filter: SubscriptionFilter | None, subscription_id: str | None = None
    ) -> Subscription:
        subscription = Subscription(subscription_id or new_subscription_id(), agent_id, topic, filter)
        if subscription.subscription_id in self._by_id:  # told twice (a cluster's event, then its catch-up)
            return self._by_id[subscription.subscription_id]
        self._by_topic.setdefault(topic, {})[subscription.subscription_id] = subscription
        self._by_id[subscription.subscription_id] = subscription
        self._per_agent[agent_id] += 1
        return subscription

    def remove_by_id(self, subscription_id: str) -> str | None:
        """Remove a subscription, whoever's it is, and say its topic; None when there is none by that id."""
        subscription = self._by_id.pop(subscription_id, None)
        if subscription is None:
            return None
        agent_id = subscription.agent_id
        self._per_agent[agent_id] -= 1
        topic = self._by_topic[subscription.topic]
        del topic[subscription_id]
        if not topic:
            del self._by_topic[subscription.topic]
        return subscription.topic

    def owns(self, agent_id: str, subscription_id: str) -> bool:
        subscription = self._by_id.get(subscription_id)
        return subscription is not None and subscription.agent_id == agent_id

    def count(self, agent_id: str) -> int:
        """How many subscriptions ``agent_id`` has."""
        return self._per_agent[agent_id]

    def has_topic(self, topic: str) -> bool:
        return topic in self._by_topic

    def topics(self) -> int:
        """How many topics have subscribers."""
        return len(self._by_topic)

    def subscribers(self, topic: str) -> list[str]:
        """The agents subscribed to ``topic`` (each once)."""
        return sorted({subscription.agent_id for subscription in self._by_topic.get(topic, {}).values()})

    def all_subscribers(self) -> dict[str, list[str]]:
        return {topic: self.subscribers(topic) for topic in sorted(self._by_topic)}

    def matching(self, topic: str, subject_type: str | None, region: Region | None) -> Iterator[Subscription]:
        for subscription in list(self._by_topic.get(topic, {}).values()):
            if subscription.matches(subject_type, region):
                yield subscription
