"""The sessions grouped by host, for ``/status`` on a hub (the router calls ``by_host``).

    🖥 laptop (this machine)
      • jim · working
    🖥 box
      • api · ready
    🖥 vm · offline since 12:03
      • web · waiting
"""

from __future__ import annotations

import time
from typing import Callable, Iterable

from aipager.daemon.model import Session, State
from aipager.hub import names
from aipager.hub.link import HubLink


def by_host(sessions: Iterable[Session], link: HubLink,
            line: Callable[[Session], str] | None = None) -> str:
    """One block per host (the hub machine first, then hosts by name), each session one
    ``line`` (default: label and state); a host offline says since when.  Ended sessions
    are left out."""
    line = line or (lambda s: f"• {s.label} · {s.state}")
    groups: dict[str, list[Session]] = {}
    for sess in sessions:
        if sess.state == State.GONE:
            continue
        _, host = names.split(sess.name)
        groups.setdefault(host or "", []).append(sess)
    for host in link.view.hosts:
        groups.setdefault(host, [])
    out = []
    local = link.local_name or "this machine"
    for host in ["", *sorted(h for h in groups if h)]:
        members = groups.get(host, [])
        if not host:
            if not members:
                continue
            head = f"🖥 {local} (this machine)"
        else:
            h = link.view.hosts.get(host)
            head = f"🖥 {host}"
            if h is None or not h.last_seen:
                head += " · not joined yet"
            elif not h.online():
                head += f" · offline since {time.strftime('%H:%M', time.localtime(h.last_seen))}"
        out.append(head)
        out += [f"  {line(s)}" for s in sorted(members, key=lambda s: s.label)] or ["  (no sessions)"]
    return "\n".join(out)
