"""Invitations to the team, kept by the daemon: ``/invite`` makes one (``InviteAs``),
``/join CODE`` uses it up (``JoinTeam``).  A code is good once, for a day.

The file (``paths.invites_file``, 0600) keeps each code's hash, never the code: what it
holds lets nobody in.  A damaged file is read as no invitations (whoever was invited asks
again); expired ones are dropped whenever one is made or used.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from typing import Mapping

import orjson

from aipager.proto import fsio, fsnames, paths

log = logging.getLogger("aipager.daemon")

#: how long an invitation stays good
VALID_SECONDS = 24 * 3600.0
#: invitations kept at once (a stuck admin script cannot grow the file without end)
MOST = 200


@dataclass(frozen=True)
class Invite:
    """One invitation: the role it gives, who made it (their Telegram id), until when."""

    role: str
    by: int
    expires: float


def _key(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def _read(env: Mapping[str, str]) -> dict[str, Invite]:
    doc = fsio.read_json_own(paths.invites_file(env))
    kept: dict[str, Invite] = {}
    for key, v in (doc or {}).items():
        if isinstance(v, dict) and isinstance(v.get("role"), str) \
                and isinstance(v.get("by"), int) and isinstance(v.get("expires"), (int, float)):
            kept[key] = Invite(v["role"], v["by"], float(v["expires"]))
    return kept


def _write(env: Mapping[str, str], invites: dict[str, Invite]) -> None:
    doc = {key: {"role": i.role, "by": i.by, "expires": i.expires} for key, i in invites.items()}
    fsnames.write_private(paths.invites_file(env), orjson.dumps(doc))


def make(env: Mapping[str, str], role: str, by: int, now: float) -> tuple[str, float]:
    """A new code for one person as ``role``, and when it expires.

    Raises:
        OSError: the file cannot be written (no code is handed out then).
    """
    invites = {k: i for k, i in _read(env).items() if i.expires > now}
    code = secrets.token_hex(4)
    expires = now + VALID_SECONDS
    invites[_key(code)] = Invite(role, by, expires)
    while len(invites) > MOST:  # the oldest first
        del invites[min(invites, key=lambda k: invites[k].expires)]
    _write(env, invites)
    return code, expires


def take(env: Mapping[str, str], code: str, now: float) -> Invite | str:
    """The invitation ``code`` opens, used up; or why there is none (``no code``,
    ``unknown code``, ``expired``).

    Raises:
        OSError: the file cannot be written (the code stays good: nothing was used up).
    """
    if not code:
        return "no code"
    invites = _read(env)
    found = invites.pop(_key(code), None)
    live = {k: i for k, i in invites.items() if i.expires > now}
    if found is None:
        return "unknown code"
    _write(env, live)
    return found if found.expires > now else "expired"


def put_back(env: Mapping[str, str], code: str, invite: Invite) -> None:
    """Make a code taken by ``take`` good again (the join it was for could not be saved)."""
    invites = _read(env)
    invites[_key(code)] = invite
    _write(env, invites)


__all__ = ["MOST", "VALID_SECONDS", "Invite", "make", "put_back", "take"]
