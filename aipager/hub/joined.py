"""This machine is a host of a hub: which hub, with which credential file.

``aipager start --join URL --creds FILE`` (and ``service install --join``) keep the
two in ``<state>/hub-link/join.json`` so that ``aipager doctor`` knows the machine is
a host (no bot, no chat: nothing to set up with ``aipager setup``) and which file and
address to check.  A start without ``--join`` forgets it: the machine is no longer a
host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from aipager.hub import layout
from aipager.proto import fsio


@dataclass(frozen=True)
class Joined:
    url: str
    creds: str  # absolute path of the credential file


def remember(env: Mapping[str, str], url: str, creds: str) -> None:
    layout.make_private(layout.link_dir(env))
    fsio.write_json_atomic(layout.join_file(env), {"url": url, "creds": os.path.abspath(creds)})


def forget(env: Mapping[str, str]) -> None:
    fsio.unlink_quiet(layout.join_file(env))


def load(env: Mapping[str, str]) -> Joined | None:
    """The join this machine made last, or None (never joined, or a plain start since)."""
    doc = fsio.read_json_own(layout.join_file(env))
    if not isinstance(doc, dict):
        return None
    url, creds = doc.get("url"), doc.get("creds")
    if not (isinstance(url, str) and isinstance(creds, str) and creds):
        return None
    return Joined(url, creds)
