"""Where the hub's and a joined host's files live: under aipager's state folder.

Hub (``<state>/hub/``): ``hub.json`` (who may join, with their passwords: 0600),
``nats.conf`` (the embedded server's configuration, 0600), ``store/`` (the
server's JetStream file store), ``tls/`` (its CA and certificate when it listens
beyond loopback: ``tls``), ``nats-server.pid``, ``taken.json`` (per host, the last
output the chat took), ``dead-letters.jsonl`` (records it could not read: ``deadletter``).

Host (``<state>/hub-link/``): ``link.json`` (its epoch and counters) and
``outbox.jsonl`` (what it has not yet had acknowledged by the broker).
"""

from __future__ import annotations

import os

from aipager.proto import paths

hub_dir = paths.file_in(paths.state_dir, "hub")
link_dir = paths.file_in(paths.state_dir, "hub-link")
hosts_file = paths.file_in(hub_dir, "hub.json")
server_config = paths.file_in(hub_dir, "nats.conf")
store_dir = paths.file_in(hub_dir, "store")
server_pid = paths.file_in(hub_dir, "nats-server.pid")
server_log = paths.file_in(hub_dir, "nats-server.log")
taken_file = paths.file_in(hub_dir, "taken.json")
dead_letters = paths.file_in(hub_dir, "dead-letters.jsonl")
#: where ``aipager hub invite`` writes a host's credential file by default
invites_dir = paths.file_in(hub_dir, "invites")
link_meta = paths.file_in(link_dir, "link.json")
link_outbox = paths.file_in(link_dir, "outbox.jsonl")


def make_private(folder: str) -> str:
    """Create ``folder`` (and its parents) 0700; returns it."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return folder
