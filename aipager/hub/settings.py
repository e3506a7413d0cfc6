"""The hub's settings: the ``hub`` object of aipager's config file, all optional::

    "hub": {"name": "laptop",                 # this machine's host name in the chat
            "listen": "127.0.0.1:4222",       # the embedded server's address
            "advertise": "laptop.lan:4222",   # what `hub invite` tells hosts to dial
            "url": "nats://broker:4222",      # use this server instead of embedding one
            "creds": "/path/hub-creds.json",  # and connect to it with this credential
            "timeout": 15}                    # seconds a command waits for its host

The embedded server listens on loopback unless ``listen`` says otherwise; hosts
on other machines need a ``listen`` they can reach, and then the server uses
TLS with the hub's own certificate authority (``tls``), whose certificate
names the listen address, ``advertise`` and this machine's name.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from typing import Any, Mapping

from aipager.proto.errors import ConfigError
from aipager.hub import names
from aipager.hub.tls import is_loopback

DEFAULT_LISTEN = "127.0.0.1:4222"
#: seconds a command for a host waits for its answer
DEFAULT_TIMEOUT = 15.0


@dataclass(frozen=True)
class HubSettings:
    name: str
    listen: str = DEFAULT_LISTEN
    advertise: str = ""
    url: str = ""
    creds: str = ""
    timeout: float = DEFAULT_TIMEOUT

    @property
    def uses_tls(self) -> bool:
        """Whether the embedded server requires TLS: it listens beyond loopback."""
        return self.embedded and not is_loopback(split_listen(self.listen)[0])

    def tls_names(self) -> list[str]:
        """The names and addresses the server's certificate is good for: every one a host
        or the hub's own client may dial."""
        found = {"127.0.0.1", "::1", "localhost", socket.gethostname(), socket.getfqdn()}
        host = split_listen(self.listen)[0]
        if host not in ("0.0.0.0", "::", ""):
            found.add(host)
        found.add(_url_host(self.invite_url()))
        return sorted(n for n in found if n)

    @property
    def embedded(self) -> bool:
        """Whether the hub runs its own ``nats-server`` (no ``url`` configured)."""
        return not self.url

    def client_url(self) -> str:
        """Where the hub's own client connects."""
        if self.url:
            return self.url
        host, port = split_listen(self.listen)
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"nats://{host}:{port}"

    def invite_url(self) -> str:
        """The address ``aipager hub invite`` prints for hosts."""
        if self.advertise:
            return self.advertise if "://" in self.advertise else f"nats://{self.advertise}"
        if self.url:
            return self.url
        host, port = split_listen(self.listen)
        if host in ("0.0.0.0", "::", ""):
            host = socket.gethostname()
        return f"nats://{host}:{port}"


def _url_host(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url if "://" in url else f"nats://{url}").hostname or ""


def split_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        msg = f"hub listen address {listen!r} is not HOST:PORT"
        raise ConfigError(msg)
    return host.strip("[]"), int(port)


def default_name() -> str:
    """This machine's short host name, shaped as a host name may be."""
    raw = socket.gethostname().split(".")[0].lower()
    name = re.sub(r"[^a-z0-9_-]", "-", raw).strip("-_")[:32] or "hub"
    return "hub-host" if name == names.HUB_USER else name


def from_config(extra: Mapping[str, Any] | None) -> HubSettings:
    """The settings from the config's ``hub`` object (missing keys take defaults).

    Raises:
        ConfigError: a key of the wrong type or an unusable value.
    """
    doc = (extra or {}).get("hub") or {}
    if not isinstance(doc, dict):
        msg = "config: hub must be an object"
        raise ConfigError(msg)
    for key in ("name", "listen", "advertise", "url", "creds"):
        if key in doc and not isinstance(doc[key], str):
            msg = f"config: hub.{key} must be a string"
            raise ConfigError(msg)
    timeout = doc.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        msg = "config: hub.timeout must be a positive number of seconds"
        raise ConfigError(msg)
    name = names.check_host(doc.get("name") or default_name())
    settings = HubSettings(name=name, listen=doc.get("listen") or DEFAULT_LISTEN,
                           advertise=doc.get("advertise") or "", url=doc.get("url") or "",
                           creds=doc.get("creds") or "", timeout=float(timeout))
    split_listen(settings.listen)
    return settings
