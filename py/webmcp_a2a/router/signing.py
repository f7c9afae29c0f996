"""Signed envelopes: per-agent HMAC-SHA256 keys, checked on the way in, signed again on the way out.

With signing on (``serve.py --signing``, ``--signing-keys``, ``--require-signatures``) every agent
gets its key in its welcome: the operator's, when ``--signing-keys`` names the agent, otherwise one
derived from a router secret kept in the store (so it survives restarts). See
:func:`~webmcp_a2a.protocol.canonical_envelope` for what a signature covers.

* **In.** A signed envelope must carry its sender's valid signature (``bad_signature``
  otherwise: tampered, or signed with another key). An unsigned one is refused
  (``signature_required``) when the router requires signatures, or when it is a direct message to
  an agent whose hello said ``require_signatures``; a broadcast or topic event without a signature
  skips such agents.
* **Out.** Every delivered envelope is signed again with its recipient's key, so the recipient
  checks it with the only key it has (the client does, and refuses a delivery that fails).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from ..protocol import Envelope, sign_envelope, signature_valid
from .errors import RequestError
from .settings import RouterSettings
from .store import Store


class Signer:
    def __init__(self, settings: RouterSettings, store: Store) -> None:
        self.enabled = settings.signs
        self.required = settings.require_signatures
        self._given = {agent_id: key.encode() for agent_id, key in settings.signing_keys.items()}
        self._secret = store.secret("signing", lambda: secrets.token_bytes(32)) if self.enabled else b""
        self._derived: dict[str, bytes] = {}

    def key_for(self, agent_id: str) -> bytes | None:
        """``agent_id``'s key (None when signing is off)."""
        if not self.enabled:
            return None
        key = self._given.get(agent_id) or self._derived.get(agent_id)
        if key is None:
            key = hmac.new(self._secret, b"webmcp-a2a agent key:" + agent_id.encode(), hashlib.sha256).digest()
            self._derived[agent_id] = key
        return key

    def check(self, envelope: Envelope, sender_id: str, recipient_requires: bool = False) -> None:
        """Raise :class:`RequestError` unless ``envelope`` (stamped with ``sender_id``) may pass."""
        if not self.enabled:
            return
        if envelope.signature is None:
            if self.required or recipient_requires:
                raise RequestError(
                    "signature_required", "sign this envelope with the key your welcome gave", "envelope.signature"
                )
            return
        key = self.key_for(sender_id)
        assert key is not None
        if not signature_valid(envelope, key):
            raise RequestError(
                "bad_signature", "the signature does not match the envelope and its sender's key", "envelope.signature"
            )

    def accepts_unsigned(self, requires: bool) -> bool:
        """May an unsigned envelope go to an agent that ``requires`` signatures (or not)?"""
        return not (self.enabled and requires)

    def seal(self, envelope: Envelope, recipient: str) -> Envelope:
        """``envelope`` signed for ``recipient`` (unchanged when signing is off)."""
        key = self.key_for(recipient)
        if key is None:
            return envelope
        return envelope.model_copy(update={"signature": sign_envelope(envelope, key)})
