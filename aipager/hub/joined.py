"""Which hub this machine joined, with which credential file: the record ``aipager start
--join`` (and ``service install --join``) keeps (``creds.record_join``,
``paths.joined_hub_file``), read without the hub's extra packages, so that ``aipager
doctor`` can tell a host (no bot, no chat) and check its file and address.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from aipager.proto import fsio, paths


@dataclass(frozen=True)
class Joined:
    url: str
    creds: str  # absolute path of the credential file


def load(env: Mapping[str, str]) -> Joined | None:
    """The join this machine recorded last, or None (never joined, or the record unusable)."""
    doc = fsio.read_json_own(paths.joined_hub_file(env))
    if not isinstance(doc, dict):
        return None
    url, creds = doc.get("url"), doc.get("creds")
    if not (isinstance(url, str) and isinstance(creds, str) and creds):
        return None
    return Joined(url, creds)
