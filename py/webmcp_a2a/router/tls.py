"""Serving over TLS, and who the client's certificate says it is (trust tier ``mtls``).

``serve.py --tls-cert --tls-key`` serves the page, the router and A2A over HTTPS/WSS;
``--tls-client-ca`` also asks each client for a certificate, optional (browsers present none) but
verified against that CA when one is given. uvicorn does not hand the peer's certificate to the
application, so :class:`TLSH11Protocol` puts it in each request's scope the way the
ASGI TLS extension describes (``scope["extensions"]["tls"]["client_cert_chain"]``, PEM); a
federated hub under ``mtls`` is then known by its certificate's SHA-256 fingerprint.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import ssl
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .settings import RouterSettings

_FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")


def server_context(settings: RouterSettings) -> ssl.SSLContext:
    """The server side: our certificate, and client certificates optional but verified."""
    assert settings.tls_cert is not None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(settings.tls_cert, settings.tls_key)
    if settings.tls_client_ca is not None:
        context.load_verify_locations(settings.tls_client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


class TLSFileError(ValueError):
    """A certificate or key file that cannot be used; ``field`` names the setting that gave it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def client_context(ca_cert: str | None, client_cert: str | None, client_key: str | None) -> ssl.SSLContext:
    """The client side, towards one remote: the CA bundle that verifies it (default: the system's)
    and the certificate we present to it."""
    try:
        context = ssl.create_default_context(cafile=ca_cert)
    except (OSError, ssl.SSLError) as error:
        raise TLSFileError("ca_cert", f"CA bundle {ca_cert}: {error}") from error
    if client_cert is not None:
        try:
            context.load_cert_chain(client_cert, client_key)
        except (OSError, ssl.SSLError) as error:
            raise TLSFileError("client_cert", f"client certificate {client_cert}: {error}") from error
    return context


def fingerprint(der: bytes) -> str:
    """A certificate's SHA-256 fingerprint: 64 lower-case hex digits."""
    return hashlib.sha256(der).hexdigest()


def normalise_fingerprint(text: str) -> str:
    """``AB:CD:...`` (as ``openssl x509 -fingerprint -sha256`` prints it) or plain hex, as 64 lower-case
    hex digits; ValueError for anything else."""
    digits = text.replace(":", "").strip().lower()
    if not _FINGERPRINT.match(digits):
        raise ValueError("not a SHA-256 certificate fingerprint (64 hex digits, colons allowed)")
    return digits


def client_fingerprint(scope: Any) -> str | None:
    """The fingerprint of the certificate the client presented on this request's connection (verified
    by the TLS handshake), or None."""
    chain = scope.get("extensions", {}).get("tls", {}).get("client_cert_chain") or []
    return fingerprint(ssl.PEM_cert_to_DER_cert(chain[0])) if chain else None


class TLSH11Protocol(H11Protocol):
    """uvicorn's h11 protocol for TLS connections: the ASGI TLS extension in every scope, and a shutdown
    that does not wait on idle peers."""

    _tls: dict[str, Any] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None:
            return
        der = ssl_object.getpeercert(binary_form=True)
        self._tls = {
            "server_cert": None,
            "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)] if der else [],
            "client_cert_name": None,
            "client_cert_error": None,
            "tls_version": None,
            "cipher_suite": None,
        }

    # uvicorn builds a fresh scope per request (``self.scope = {...}``): it gains the extension there.
    @property
    def scope(self) -> Any:
        return self._scope

    @scope.setter
    def scope(self, scope: Any) -> None:
        if self._tls is not None:
            scope.setdefault("extensions", {})["tls"] = self._tls
        self._scope = scope

    def shutdown(self) -> None:
        """An idle connection is dropped at once. A TLS close waits for the peer's close_notify, which a
        client's connection pool (another hub's) sends only when it next reads the connection, so the
        closing server would wait out asyncio's 30 s SSL shutdown timeout; nothing is in flight on it."""
        if self.cycle is None or self.cycle.response_complete:
            self.transport.abort()
        else:
            super().shutdown()
