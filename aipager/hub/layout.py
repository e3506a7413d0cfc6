"""Where the hub's and a joined host's files live: under aipager's state folder.

Hub (``<state>/hub/``): ``hub.json`` (who may join, with their passwords: 0600),
``nats.conf`` (the embedded server's configuration, 0600), ``store/`` (the
server's JetStream file store), ``tls/`` (its CA and certificate when it listens
beyond loopback: ``tls``), ``nats-server.pid``, ``taken.json`` (per host, the last
output the chat took).

Host (``<state>/hub-link/``): ``link.json`` (its epoch and counters) and
``outbox.jsonl`` (what it has not yet had acknowledged by the broker).
"""

from __future__ import annotations

import os
from typing import Callable, Mapping

from aipager.proto import paths


def hub_dir(env: Mapping[str, str]) -> str:
    return os.path.join(paths.state_dir(env), "hub")


def link_dir(env: Mapping[str, str]) -> str:
    return os.path.join(paths.state_dir(env), "hub-link")


def _under(folder: Callable[[Mapping[str, str]], str], name: str,
           doc: str = "") -> Callable[[Mapping[str, str]], str]:
    """``folder(env)/name`` as a function of the environment, as ``paths`` has them."""

    def where(env: Mapping[str, str]) -> str:
        return os.path.join(folder(env), name)

    where.__doc__ = doc or f"``{name}`` in {folder.__name__}."
    return where


hosts_file = _under(hub_dir, "hub.json")
server_config = _under(hub_dir, "nats.conf")
store_dir = _under(hub_dir, "store")
server_pid = _under(hub_dir, "nats-server.pid")
server_log = _under(hub_dir, "nats-server.log")
taken_file = _under(hub_dir, "taken.json")
#: where ``aipager hub invite`` writes a host's credential file by default
invites_dir = _under(hub_dir, "invites")
link_meta = _under(link_dir, "link.json")
link_outbox = _under(link_dir, "outbox.jsonl")


def make_private(folder: str) -> str:
    """Create ``folder`` (and its parents) 0700; returns it."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder
