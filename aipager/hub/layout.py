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
from typing import Mapping

from aipager.proto import paths


def hub_dir(env: Mapping[str, str]) -> str:
    return os.path.join(paths.state_dir(env), "hub")


def hosts_file(env: Mapping[str, str]) -> str:
    return os.path.join(hub_dir(env), "hub.json")


def server_config(env: Mapping[str, str]) -> str:
    return os.path.join(hub_dir(env), "nats.conf")


def store_dir(env: Mapping[str, str]) -> str:
    return os.path.join(hub_dir(env), "store")


def server_pid(env: Mapping[str, str]) -> str:
    return os.path.join(hub_dir(env), "nats-server.pid")


def server_log(env: Mapping[str, str]) -> str:
    return os.path.join(hub_dir(env), "nats-server.log")


def taken_file(env: Mapping[str, str]) -> str:
    return os.path.join(hub_dir(env), "taken.json")


def invites_dir(env: Mapping[str, str]) -> str:
    """Where ``aipager hub invite`` writes a host's credential file by default."""
    return os.path.join(hub_dir(env), "invites")


def link_dir(env: Mapping[str, str]) -> str:
    return os.path.join(paths.state_dir(env), "hub-link")


def link_meta(env: Mapping[str, str]) -> str:
    return os.path.join(link_dir(env), "link.json")


def link_outbox(env: Mapping[str, str]) -> str:
    return os.path.join(link_dir(env), "outbox.jsonl")


def make_private(folder: str) -> str:
    """Create ``folder`` (and its parents) 0700; returns it."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder
