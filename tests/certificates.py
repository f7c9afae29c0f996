"""Certificates the tests make for themselves: a CA, and certificates it issues for loopback servers
and for clients (hubs under trust tier ``mtls``). Written as PEM files, as an operator would have them."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Issued:
    cert: Path
    key: Path
    fingerprint: str  # SHA-256, hex, as openssl prints it (AB:CD:...)


class TestCA:
    """A certificate authority in ``folder``: ``ca.pem``, and what :meth:`issue` writes beside it."""

    __test__ = False  # not a test class, whatever its name

    def __init__(self, folder: Path, name: str = "webmcp-a2a test CA") -> None:
        self.folder = folder
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + 30 * _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                    key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )  # fmt: skip
        self.cert = folder / "ca.pem"
        self.cert.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, name: str, server: bool = False) -> Issued:
        """A certificate for ``name``: for a loopback server (127.0.0.1, localhost) or a client."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + 30 * _DAY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
        )
        if server:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        cert_path, key_path = self.folder / f"{name}.pem", self.folder / f"{name}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        digest = cert.fingerprint(hashes.SHA256()).hex().upper()
        return Issued(cert_path, key_path, ":".join(digest[i : i + 2] for i in range(0, len(digest), 2)))


@dataclass
class PKI:
    """A CA and what it issued: server certificates ``server-a``, ``server-b``; client certificates
    ``client-a``, ``client-b`` and ``stranger``."""

    ca: TestCA
    issued: dict[str, Issued] = field(default_factory=dict)

    @classmethod
    def create(cls, folder: Path) -> PKI:
        ca = TestCA(folder)
        issued = {name: ca.issue(name, server=True) for name in ("server-a", "server-b")}
        issued |= {name: ca.issue(name) for name in ("client-a", "client-b", "stranger")}
        return cls(ca, issued)

    def serve_flags(self, server: str) -> tuple[str, ...]:
        """``serve.py`` flags: HTTPS with ``server``'s certificate, client certificates checked against the CA."""
        cert, key = self.issued[server].cert, self.issued[server].key
        return ("--tls-cert", str(cert), "--tls-key", str(key), "--tls-client-ca", str(self.ca.cert))

    def trusting(self) -> ssl.SSLContext:
        """A client context that trusts the CA."""
        return ssl.create_default_context(cafile=self.ca.cert)

    def mtls_registration(self, card_url: str, shows: str, expects: str) -> dict[str, str]:
        """The registry body for a hub under trust tier mtls: shown ``shows``, expecting ``expects`` back."""
        return {
            "card_url": card_url,
            "trust": "mtls",
            "ca_cert": str(self.ca.cert),
            "client_cert": str(self.issued[shows].cert),
            "client_key": str(self.issued[shows].key),
            "accept_key": self.issued[expects].fingerprint,
        }
