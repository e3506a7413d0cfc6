"""What the hub knows of each host: its sessions (as the host last said) and when it was
last heard from.  Pure bookkeeping, no I/O.

A host says what its sessions are twice: with every output (the session the
output is about, as it was then) and in its snapshots (all of them, at least
every heartbeat).  Each statement carries the host's ``stamp`` (boot time,
counter); the newest statement about a session wins, whichever way it came.
What arrives here was read and checked already (``codec.read_out``, ``read_state``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable

from aipager.port.model import Session, State
from aipager.hub import names

#: a host is offline when no snapshot came for this many heartbeats
MISSED_HEARTBEATS = 3


@dataclass
class Host:
    name: str
    #: wall-clock time of its last snapshot (the broker's clock); 0: never heard from
    last_seen: float = 0.0
    heartbeat: float = 5.0
    #: internal name (``claude-jim``) → (stamp, session as the hub shows it)
    sessions: dict[str, tuple[tuple[int, int], Session]] = field(default_factory=dict)
    snapshot_stamp: tuple[int, int] = (0, 0)
    #: the aipager version its last snapshot named ("": one too old to name it)
    version: str = ""
    #: the commands it refused since it started, as its last snapshot said (0: none said)
    refused: int = 0

    def online(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        return bool(self.last_seen) and now - self.last_seen < self.heartbeat * MISSED_HEARTBEATS + 1


class HostsView:
    """Every host's sessions; ``sessions()`` yields them named ``claude-jim@box``."""

    def __init__(self) -> None:
        self.hosts: dict[str, Host] = {}

    def host(self, name: str) -> Host:
        return self.hosts.setdefault(name, Host(name))

    def note_session(self, host: str, sess: Session, st: tuple[int, int]) -> Session | None:
        """A session as an output described it (``sess`` becomes the hub's copy); returns
        the hub's copy (the one it had when this statement is older)."""
        name = sess.name
        entry = self.host(host).sessions.get(name)
        if entry is not None and entry[0] >= st:
            return entry[1]
        self.host(host).sessions[name] = (st, _as_hub(sess, host))
        return self.host(host).sessions[name][1]

    def note_snapshot(self, host: str, sessions: Iterable[Session], st: tuple[int, int],
                      seen_at: float, heartbeat: float | None = None,
                      version: str | None = None, refused: int | None = None) -> None:
        """All of a host's sessions (they become the hub's copies); ones it no longer has
        are forgotten.  ``version``: the aipager the host runs (None: not said here)."""
        h = self.host(host)
        h.last_seen = max(h.last_seen, seen_at)
        if version is not None:
            h.version = version
        if refused is not None:
            h.refused = refused
        if heartbeat:
            h.heartbeat = float(heartbeat)
        if st <= h.snapshot_stamp:
            return
        h.snapshot_stamp = st
        named = set()
        for sess in sessions:
            name = sess.name
            named.add(name)
            entry = h.sessions.get(name)
            if entry is None or entry[0] < st:
                h.sessions[name] = (st, _as_hub(sess, host))
        for name in [n for n, (s, _) in h.sessions.items() if n not in named and s < st]:
            del h.sessions[name]

    def get(self, name: str) -> Session | None:
        bare, host = names.split(name)
        if host is None or host not in self.hosts:
            return None
        entry = self.hosts[host].sessions.get(bare)
        return entry[1] if entry is not None else None

    def sessions(self) -> list[Session]:
        return [s for h in self.hosts.values() for _, s in h.sessions.values()]


def _as_hub(sess: Session, host: str) -> Session:
    """The host's session as the hub names it: ``claude-jim@box``; the label is set when
    shown (``port.MergedSessions``)."""
    sess.name = names.qualify(sess.name, host)
    sess.label = f"{sess.label}@{host}"
    return sess


def is_live(sess: Session) -> bool:
    return sess.state != State.GONE
