"""Who may join the hub, and a host's credential file.

The hub keeps ``hub.json`` (0600)::

    {"hub": {"seed": "SU…", "nkey": "UA…"},
     "hosts": {"box": {"nkey": "UA…", "created_at": 1760000000},
               "vm": {"password": "…", "created_at": 1760000000}}}

``aipager hub invite box`` adds ``box`` with a fresh NKey and writes the host's
credential file (0600), which is all the host needs::

    {"user": "box", "seed": "SU…", "url": "nats://hub.example:4222",
     "ca": "-----BEGIN CERTIFICATE-----…", "hub_key": "OC…"}

An NKey (the default) is an Ed25519 key pair: the hub keeps only its public
half, the host signs the server's challenge with the seed, and nothing secret
crosses the network or sits on the hub.  ``--password`` makes a user and
password instead (for a server that takes only those).  ``ca`` is the hub's
certificate authority (``tls``) when the hub uses TLS: the host trusts that
and nothing else.  ``hub_key`` is the hub's public signing key: the host runs only
commands the hub signed, once, while fresh (``signing``).

The hub signs in to its own server with an NKey too (``hub.seed``): the server's
configuration holds only public keys (and the passwords of hosts invited with
``--password``).  A hub made when it signed in with a password (``{"hub":
{"password": …}}``) gets its key as it next starts (``hub_nkey``).

The server grants each user only its own subjects (``server.render_config``):
a credential is good for one host, never for another's sessions.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from typing import Any, Mapping

from aipager.proto.errors import ConfigError
from aipager.hub import layout, names, signing
from aipager.proto import fsio, paths


@dataclass(frozen=True)
class Creds:
    """What a client connects with: its NATS user (the host's name) and password, or the
    seed of its NKey; and the hub's CA certificate when the hub uses TLS."""

    user: str
    password: str = ""
    #: the hub's address as the invite printed it ("" when not known)
    url: str = ""
    #: the hub's CA certificate (PEM), "" for a hub without TLS
    ca: str = ""
    #: the NKey seed (``SU…``) this host signs the server's challenge with
    seed: str = ""
    #: the hub's public signing key (``signing``): the host runs only commands it signed
    #: ("" in a credential from before commands were signed)
    hub_key: str = ""

    def __repr__(self) -> str:
        secret = "seed='***'" if self.seed else "password='***'"
        return f"Creds(user={self.user!r}, {secret}, url={self.url!r}, tls={bool(self.ca)})"

    __str__ = __repr__

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"user": self.user, "url": self.url}
        doc.update({k: v for k, v in (("password", self.password), ("seed", self.seed),
                                      ("ca", self.ca), ("hub_key", self.hub_key)) if v})
        return doc


def new_nkey() -> tuple[str, str]:
    """A fresh user NKey: (seed, public key).

    Raises:
        ConfigError: the ``nkeys`` package is missing (the hub extra).
    """
    nkeys = signing.nkeys_module()
    seed = nkeys.encode_seed(secrets.token_bytes(32), nkeys.PREFIX_BYTE_USER)
    return seed.decode("ascii"), nkeys.from_seed(bytearray(seed)).public_key.decode("ascii")




def check_seed(seed: str, where: str) -> str:
    """``seed`` when it is a user NKey's seed whose checksum holds.

    Raises:
        ConfigError: it is not (a typo, a truncated copy, a tampered file).
    """
    import base64

    nkeys = signing.nkeys_module()
    text = seed.strip()
    try:
        prefix, _raw = nkeys.decode_seed(bytearray(text.encode("ascii")))
        # decode_seed drops the checksum unread: a changed letter would make another key
        raw = base64.b32decode(text + "=" * (-len(text) % 8))
        if prefix != nkeys.PREFIX_BYTE_USER or bytes(nkeys.crc16_checksum(raw[:-2])) != raw[-2:]:
            raise ValueError("not a user key's seed")
    except Exception as exc:  # noqa: BLE001 - nkeys raises its own errors, and ValueError
        msg = f"{where}: the NKey seed is damaged (copy the file from the hub again)"
        raise ConfigError(msg) from exc
    return text


def _secret() -> str:
    return secrets.token_urlsafe(24)


def _write_private(path: str, doc: Any) -> None:
    layout.make_private(os.path.dirname(path) or ".")
    data = (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()
    fsio.write_atomic(path, data, 0o600, sync=True)


def load_hosts(env: Mapping[str, str]) -> dict[str, Any]:
    """The hub's ``hub.json`` (made, with the hub's own password, when missing).

    Raises:
        ConfigError: the file is unreadable or not what ``hub.json`` holds.
    """
    path = layout.hosts_file(env)
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError:
        if _nkeys_available():
            seed, public = new_nkey()
            doc = {"hub": {"seed": seed, "nkey": public}, "hosts": {}}
        else:  # (the hub extra missing: the server still takes a password)
            doc = {"hub": {"password": _secret()}, "hosts": {}}
        _write_private(path, doc)
        return doc
    except (OSError, ValueError) as exc:
        msg = f"cannot read {path}: {exc}"
        raise ConfigError(msg) from exc
    hub = doc.get("hub") if isinstance(doc, dict) else None
    if (not isinstance(doc, dict) or not isinstance(doc.get("hosts"), dict)
            or not isinstance(hub, dict)
            or not (isinstance(hub.get("password"), str)
                    or (isinstance(hub.get("seed"), str) and isinstance(hub.get("nkey"), str)))):
        msg = f"{path} is not a hub host list; move it away to start a new one"
        raise ConfigError(msg)
    return doc


def hub_creds(env: Mapping[str, str]) -> Creds:
    """What the hub itself connects to its embedded server with: its NKey's seed (a hub
    made before the hub signed in so: its password, until ``hub_nkey`` gives it a key)."""
    hub = load_hosts(env)["hub"]
    if isinstance(hub.get("seed"), str):
        return Creds(names.HUB_USER, seed=hub["seed"])
    return Creds(names.HUB_USER, hub["password"])


def hub_public_key(env: Mapping[str, str]) -> str:
    """The hub's own NKey's public half ("" for a hub that signs in with a password): all
    the server's configuration holds of it."""
    public = load_hosts(env)["hub"].get("nkey")
    return public if isinstance(public, str) else ""


def hub_nkey(env: Mapping[str, str]) -> None:
    """Give a hub that signs in to its server with a password an NKey instead (its password
    forgotten), so the server's configuration holds no secret of the hub's.  Called as the
    hub starts, before it writes that configuration: a hub already running keeps signing
    in as it did until its next start."""
    doc = load_hosts(env)
    if isinstance(doc["hub"].get("seed"), str) or not _nkeys_available():
        return
    seed, public = new_nkey()
    doc["hub"] = {"seed": seed, "nkey": public}
    _write_private(layout.hosts_file(env), doc)


def _nkeys_available() -> bool:
    try:
        signing.nkeys_module()
    except ConfigError:
        return False
    return True


def _host_field(env: Mapping[str, str], key: str) -> dict[str, str]:
    hosts = load_hosts(env)["hosts"]
    return {name: entry[key] for name, entry in sorted(hosts.items())
            if isinstance(entry, dict) and isinstance(entry.get(key), str)}


def host_passwords(env: Mapping[str, str]) -> dict[str, str]:
    """Every host invited with a password → its password (for the server's configuration)."""
    return _host_field(env, "password")


def host_nkeys(env: Mapping[str, str]) -> dict[str, str]:
    """Every host invited with an NKey → its public key (for the server's configuration)."""
    return _host_field(env, "nkey")


def host_names(env: Mapping[str, str]) -> list[str]:
    """Every invited host, by name."""
    return sorted({*host_passwords(env), *host_nkeys(env)})


def invite(env: Mapping[str, str], host: str, url: str, *, nkey: bool = True,
           ca: str = "") -> Creds:
    """Add ``host`` with a fresh NKey (or password); an existing host's old credential
    stops working.  ``ca``: the hub's CA certificate, for the host to verify it by."""
    names.check_host(host)
    doc = load_hosts(env)
    entry: dict[str, Any] = {"created_at": int(time.time())}
    hub_key = signing.public_key(signing.hub_seed(env))
    if nkey:
        seed, public = new_nkey()
        entry["nkey"] = public
        who = Creds(host, url=url, ca=ca, seed=seed, hub_key=hub_key)
    else:
        entry["password"] = _secret()
        who = Creds(host, entry["password"], url, ca, hub_key=hub_key)
    doc["hosts"][host] = entry
    _write_private(layout.hosts_file(env), doc)
    return who


def revoke(env: Mapping[str, str], host: str) -> bool:
    """Remove ``host``; returns whether it was there."""
    doc = load_hosts(env)
    if doc["hosts"].pop(host, None) is None:
        return False
    _write_private(layout.hosts_file(env), doc)
    return True


def write_creds(path: str, creds: Creds) -> str:
    """Write a host's credential file 0600 (never replacing a symlink's target)."""
    _write_private(path, creds.to_json())
    return path


def record_join(env: Mapping[str, str], url: str, path: str) -> str:
    """Keep which hub this host joins and with which credential file, by absolute path
    (``paths.joined_hub_file``, 0600): wherever the person put the file, the floor the
    daemon publishes keeps it from every task but the owner's (``model.config_secrets``).
    Returns the record's path.

    Raises:
        OSError: the state folder cannot take it.
    """
    record = paths.joined_hub_file(env)
    layout.make_private(os.path.dirname(record))
    fsio.write_json_atomic(record, {"url": url, "creds": os.path.abspath(path)})
    return record


def read_creds(path: str) -> Creds:
    """Read a credential file ``aipager hub invite`` wrote.

    Raises:
        ConfigError: missing, unreadable, not JSON, or without user and password.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        msg = f"cannot read the credential file {path}: {exc.strerror}"
        raise ConfigError(msg) from exc
    except ValueError:
        msg = f"{path} is not a credential file from `aipager hub invite` (not JSON)"
        raise ConfigError(msg) from None
    if (not isinstance(doc, dict) or not isinstance(doc.get("user"), str)
            or not any(isinstance(doc.get(k), str) and doc[k] for k in ("password", "seed"))
            or not all(isinstance(doc.get(k, ""), str)
                       for k in ("password", "seed", "ca", "url", "hub_key"))):
        msg = (f"{path} is not a credential file from `aipager hub invite` "
               "(user, and password or seed)")
        raise ConfigError(msg)
    seed = check_seed(doc["seed"], path) if doc.get("seed") else ""
    ca = doc.get("ca") or ""
    if ca and "BEGIN CERTIFICATE" not in ca:
        msg = f"{path}: its hub certificate (ca) is not a PEM certificate"
        raise ConfigError(msg)
    return Creds(doc["user"], doc.get("password") or "", str(doc.get("url") or ""), ca, seed,
                 str(doc.get("hub_key") or ""))
