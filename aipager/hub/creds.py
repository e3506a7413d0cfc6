"""Who may join the hub, and a host's credential file.

The hub keeps ``hub.json`` (0600)::

    {"hub": {"password": "…"},
     "hosts": {"box": {"password": "…", "created_at": 1760000000}}}

``aipager hub invite box`` adds ``box`` with a fresh password and writes the
host's credential file (0600), which is all the host needs::

    {"user": "box", "password": "…", "url": "nats://hub.example:4222"}

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
from aipager.hub import layout, names
from aipager.proto import fsio


@dataclass(frozen=True)
class Creds:
    """What a client connects with: NATS user (the host's name) and password."""

    user: str
    password: str
    #: the hub's address as the invite printed it ("" when not known)
    url: str = ""

    def __repr__(self) -> str:
        return f"Creds(user={self.user!r}, password='***', url={self.url!r})"

    __str__ = __repr__

    def to_json(self) -> dict[str, Any]:
        return {"user": self.user, "password": self.password, "url": self.url}


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
        doc = {"hub": {"password": _secret()}, "hosts": {}}
        _write_private(path, doc)
        return doc
    except (OSError, ValueError) as exc:
        msg = f"cannot read {path}: {exc}"
        raise ConfigError(msg) from exc
    if (not isinstance(doc, dict) or not isinstance(doc.get("hosts"), dict)
            or not isinstance((doc.get("hub") or {}).get("password"), str)):
        msg = f"{path} is not a hub host list; move it away to start a new one"
        raise ConfigError(msg)
    return doc


def hub_creds(env: Mapping[str, str]) -> Creds:
    """What the hub itself connects to its embedded server with."""
    return Creds(names.HUB_USER, load_hosts(env)["hub"]["password"])


def host_passwords(env: Mapping[str, str]) -> dict[str, str]:
    """Every invited host → its password (for the server's configuration)."""
    hosts = load_hosts(env)["hosts"]
    return {name: entry["password"] for name, entry in sorted(hosts.items())
            if isinstance(entry, dict) and isinstance(entry.get("password"), str)}


def invite(env: Mapping[str, str], host: str, url: str) -> Creds:
    """Add ``host`` (a fresh password; an existing host's old one stops working)."""
    names.check_host(host)
    doc = load_hosts(env)
    password = _secret()
    doc["hosts"][host] = {"password": password, "created_at": int(time.time())}
    _write_private(layout.hosts_file(env), doc)
    return Creds(host, password, url)


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
            or not isinstance(doc.get("password"), str)):
        msg = f"{path} is not a credential file from `aipager hub invite` (user, password)"
        raise ConfigError(msg)
    return Creds(doc["user"], doc["password"], str(doc.get("url") or ""))
