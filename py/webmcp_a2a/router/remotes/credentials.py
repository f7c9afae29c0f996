"""What this router presents to a registered remote agent or hub, by its trust tier.

* ``mtls``: the client certificate ``client_cert`` in the TLS handshake (:class:`Clients`);
* ``api-key``: ``send_key`` in the ``X-A2A-Hub-Key`` header (the scheme the hubs' cards declare);
* ``bearer``: ``Authorization: Bearer TOKEN``, TOKEN being ``send_key`` or, when the registration
  names a ``token_url``, an access token obtained there with the OAuth2 client-credentials grant
  (``client_id``, ``client_secret``; RFC 6749 section 4.4), kept until shortly before it expires;
* ``none``: nothing.
"""

from __future__ import annotations

import time

import httpx

from ...protocol import HUB_KEY_HEADER
from ..tls import client_context
from .cards import CardError
from .catalog import RemoteAgent, TLSFiles

EARLY = 30.0  # seconds before its expiry a token is fetched again


class Clients:
    """The HTTP clients that talk to remotes: one per TLS setup (the CA bundle that verifies the remote,
    the certificate we show it), each pooling its connections; the default one for the system's CAs."""

    def __init__(self, timeout: httpx.Timeout | float) -> None:
        self._timeout = timeout
        self.default = httpx.AsyncClient(timeout=timeout, follow_redirects=True)
        self._by_files: dict[TLSFiles, httpx.AsyncClient] = {}

    def for_record(self, record: RemoteAgent | None) -> httpx.AsyncClient:
        return self.for_files(record.tls_files()) if record is not None else self.default

    def for_files(self, files: TLSFiles) -> httpx.AsyncClient:
        """Raises :class:`~..tls.TLSFileError` for a file that cannot be used."""
        if files == TLSFiles():
            return self.default
        client = self._by_files.get(files)
        if client is None:
            verify = client_context(*files)
            client = httpx.AsyncClient(timeout=self._timeout, follow_redirects=True, verify=verify)
            self._by_files[files] = client
        return client

    async def aclose(self) -> None:
        for client in [self.default, *self._by_files.values()]:
            await client.aclose()


class Credentials:
    def __init__(self, clients: Clients) -> None:
        self._clients = clients
        self._tokens: dict[str, tuple[str, float]] = {}  # token URL + client id -> token, good until

    async def headers_for(self, record: RemoteAgent | None) -> dict[str, str]:
        if record is None or record.trust == "none":
            return {}
        if record.trust == "api-key":
            return {HUB_KEY_HEADER: record.send_key} if record.send_key else {}
        token = await self._token(record) if record.token_url else record.send_key
        return {"Authorization": f"Bearer {token}"} if token else {}

    async def _token(self, record: RemoteAgent) -> str:
        assert record.token_url is not None
        key = f"{record.token_url} {record.client_id}"
        cached = self._tokens.get(key)
        if cached is not None and cached[1] > time.monotonic():
            return cached[0]
        form = {
            "grant_type": "client_credentials",
            "client_id": record.client_id or "",
            "client_secret": record.client_secret or "",
        }
        try:
            answer = await self._clients.for_record(record).post(record.token_url, data=form)
        except httpx.HTTPError as error:
            raise CardError("unreachable", f"token URL {record.token_url}: {error}") from error
        if answer.status_code != 200:
            raise CardError("refused", f"token URL {record.token_url}: HTTP {answer.status_code}")
        granted = answer.json()
        token = str(granted["access_token"])
        lifetime = float(granted.get("expires_in", 300))
        self._tokens[key] = (token, time.monotonic() + max(lifetime - EARLY, 0))
        return token
