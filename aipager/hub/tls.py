"""TLS for a hub other machines reach: its own certificate authority and server certificate.

A hub that listens on anything but loopback runs its ``nats-server`` with TLS, so
that a host's password (or its NKey's signature) and every prompt and answer
cross the network encrypted, and a host knows it talks to its hub and no other.
At the first such start the hub makes, under ``<state>/hub/tls/``:

- ``ca.pem`` / ``ca.key``: a certificate authority of its own (ten years), used
  only to sign this hub's server certificate.  ``hub invite`` copies ``ca.pem``
  (public) into each host's credential file; the host trusts that and nothing
  else, so no public CA and no name registration are needed.
- ``server.pem`` / ``server.key``: the server's certificate, naming every
  address a host may dial (the listen address, ``hub.advertise``, this
  machine's name, loopback for the hub's own client).  It is made again when
  that list changes; the CA stays, so the hosts' files stay good.

The keys are 0600 in a 0700 folder.  Made with the ``cryptography`` package
(a hub extra) rather than the ``openssl`` tool: no external program whose
presence and options vary, and the same code in the tests.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import ssl
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from aipager.proto.errors import ConfigError
from aipager.hub import layout
from aipager.proto import fsio

#: how long the CA and the server certificate are good for
CA_DAYS = 3650
SERVER_DAYS = 825


@dataclass(frozen=True)
class TlsFiles:
    """The files the server's ``tls`` block names, and the CA that hosts trust."""

    cert: str
    key: str
    ca: str

    def ca_pem(self) -> str:
        with open(self.ca, encoding="ascii") as fh:
            return fh.read()


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) stays on this machine."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def tls_dir(env: Mapping[str, str]) -> str:
    return os.path.join(layout.hub_dir(env), "tls")


def files(env: Mapping[str, str]) -> TlsFiles:
    folder = tls_dir(env)
    return TlsFiles(os.path.join(folder, "server.pem"), os.path.join(folder, "server.key"),
                    os.path.join(folder, "ca.pem"))


def ensure(env: Mapping[str, str], names: Iterable[str]) -> TlsFiles:
    """The hub's CA (made once) and a server certificate for ``names`` (made again when
    they change); returns their files.

    Raises:
        ConfigError: the ``cryptography`` package is missing (the hub extra).
    """
    try:
        from cryptography.hazmat.primitives.asymmetric import ec
    except ImportError as exc:
        msg = ("a hub that other machines reach uses TLS, which needs the cryptography "
               "package: pip install 'aipager[hub]'")
        raise ConfigError(msg) from exc
    layout.make_private(layout.hub_dir(env))  # (makedirs gives the leaf alone its mode)
    folder = layout.make_private(tls_dir(env))
    out = files(env)
    ca_key_path = os.path.join(folder, "ca.key")
    if not (os.path.exists(out.ca) and os.path.exists(ca_key_path)):
        key = ec.generate_private_key(ec.SECP256R1())
        _write(ca_key_path, _key_pem(key))
        _write(out.ca, _ca_cert(key))
    wanted = sorted({n.strip("[]") for n in names if n})
    names_file = os.path.join(folder, "server-names.json")
    if _read_names(names_file) != wanted or not os.path.exists(out.cert):
        ca_key = _load_key(ca_key_path)
        key = ec.generate_private_key(ec.SECP256R1())
        _write(out.key, _key_pem(key))
        _write(out.cert, _server_cert(key, ca_key, _load_cert(out.ca), wanted))
        _write(names_file, json.dumps(wanted).encode())
    return out


def client_context(ca_pem: str) -> ssl.SSLContext:
    """What a client verifies the hub with: its CA only (never the system's), its name
    checked against the certificate.

    Raises:
        ConfigError: ``ca_pem`` is no certificate.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_verify_locations(cadata=ca_pem)
    except (ssl.SSLError, ValueError) as exc:
        msg = f"the credential's hub certificate cannot be read ({exc})"
        raise ConfigError(msg) from exc
    return ctx


# -- making certificates (cryptography's objects, imported late: Any) ---------------------

def _write(path: str, data: bytes) -> None:
    fsio.write_atomic(path, data, 0o600, sync=True)


def _read_names(path: str) -> list[str] | None:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, list) else None


def _key_pem(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _load_key(path: str) -> Any:
    from cryptography.hazmat.primitives import serialization

    with open(path, "rb") as fh:
        return serialization.load_pem_private_key(fh.read(), None)


def _load_cert(path: str) -> Any:
    from cryptography import x509

    with open(path, "rb") as fh:
        return x509.load_pem_x509_certificate(fh.read())


def _builder(subject: str, issuer: Any, days: int, public_key: Any) -> Any:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    return (x509.CertificateBuilder().subject_name(name)
            .issuer_name(issuer if issuer is not None else name)
            .public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days)))


def _ca_cert(key: Any) -> bytes:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization

    cert = (_builder("aipager hub CA", None, CA_DAYS, key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False,
                                         decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM)


def _server_cert(key: Any, ca_key: Any, ca_cert: Any, names: list[str]) -> bytes:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID

    alt: list[x509.GeneralName] = []
    for n in names:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            alt.append(x509.DNSName(n))
    cert = (_builder(names[0] if names else "aipager hub", ca_cert.subject, SERVER_DAYS,
                     key.public_key())
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM)
