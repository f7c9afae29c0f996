"""Who may join, and who owns which agent id.

* **Join token.** When the operator gives the router join tokens (``--token``, ``--tokens-file``),
  every hello must carry one (``join_token``); otherwise the router is open to whatever reaches
  it (the app checks browsers' ``Origin`` before that: see ``app.py``).
* **Agent credentials.** The first registration of an agent id makes a secret credential and
  hands it out in that ``welcome`` only; from then on a hello for that id must present it. The
  router keeps a salted SHA-256 digest, never the secret, in its store, so a restart keeps every
  id's owner. Credentials are 256 random bits, so a fast digest is enough; an operator who
  provisions agents (``--agents-file``) must give credentials at least as long
  (``MIN_PROVISIONED_LENGTH``). Releasing an id (``serve.py --release-agent``) forgets its owner.
* **Quotas.** One remote address registers at most ``max_new_agents_per_address`` new ids while
  the router runs, and the router owns at most ``max_agents`` ids in all.

Every refusal is a :class:`~.errors.RequestError` naming what is missing or wrong.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import Counter
from collections.abc import Iterable

from ..protocol import Hello
from .errors import RequestError
from .settings import RouterSettings
from .store import Store

MIN_PROVISIONED_LENGTH = 24


def one_of(presented: str, tokens: Iterable[str]) -> bool:
    """Whether ``presented`` is one of ``tokens``, compared in constant time."""
    return any(hmac.compare_digest(presented, token) for token in tokens)


def _digest(salt: bytes, secret: str) -> bytes:
    return hashlib.sha256(salt + secret.encode()).digest()


class Gate:
    """Checks each hello against the join tokens and the agent id's owner; issues credentials."""

    def __init__(self, settings: RouterSettings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self._new_by_address: Counter[str] = Counter()
        for agent_id, secret in settings.provisioned_agents.items():
            if len(secret) < MIN_PROVISIONED_LENGTH:
                raise ValueError(
                    f"the credential provisioned for {agent_id!r} is shorter than {MIN_PROVISIONED_LENGTH} characters"
                )
            self._store_secret(agent_id, secret)

    def admit(self, hello: Hello, address: str) -> bool:
        """Raise :class:`RequestError` unless ``hello`` may register; True when its id is new (unowned)."""
        if self.settings.join_tokens:
            if hello.join_token is None:
                raise RequestError("join_token_required", "this router requires a join token", "join_token")
            if not one_of(hello.join_token, self.settings.join_tokens):
                raise RequestError("bad_join_token", "the join token is not one this router accepts", "join_token")
        owned = self.store.credential(hello.agent_id)
        if owned is not None:
            salt, digest = owned
            if hello.credential is None:
                raise RequestError(
                    "credential_required",
                    f"agent id {hello.agent_id!r} is registered: present the credential its first welcome gave",
                    "credential",
                )
            if not hmac.compare_digest(_digest(salt, hello.credential), digest):
                raise RequestError("bad_credential", f"wrong credential for agent id {hello.agent_id!r}", "credential")
            return False
        if self._new_by_address[address] >= self.settings.max_new_agents_per_address:
            raise RequestError(
                "too_many_agents",
                f"{address} has registered {self.settings.max_new_agents_per_address} agent ids already",
                "agent_id",
            )
        if self.store.credential_count() >= self.settings.max_agents:
            raise RequestError("too_many_agents", f"the router knows {self.settings.max_agents} agents already")
        return True

    def issue(self, agent_id: str, address: str) -> str:
        """Make ``agent_id``'s credential (after :meth:`admit` said it is new) and return the secret."""
        secret = secrets.token_urlsafe(32)
        self._store_secret(agent_id, secret)
        self._new_by_address[address] += 1
        return secret

    def _store_secret(self, agent_id: str, secret: str) -> None:
        salt = secrets.token_bytes(16)
        self.store.set_credential(agent_id, salt, _digest(salt, secret))
