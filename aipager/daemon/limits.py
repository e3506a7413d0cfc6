"""Bounds on what junk datagrams can make the daemon keep.

Anyone who can write to the control socket can name any session and any
error place.  Real sessions are seen with a dtach socket (``terminal``
discovery); sessions only ever named by datagrams ("orphans") are kept at
most ``Knobs.orphan_cap`` at a time, and forgotten after ``Knobs.orphan_idle``
without an event (ended ones follow the registry's own two-week rule).
Counter keys made from datagram text are capped per family.  Each cap says so
in the log the first time it bites.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aipager.port.model import Session, State

if TYPE_CHECKING:
    from aipager.daemon.registry import Registry

log = logging.getLogger("aipager.daemon")

#: new sessions registered between two orphan counts (keeps ``ensure`` O(1) amortised)
SHED_SLACK = 50
#: distinct counter keys kept per family (``report_error:<where>``); the rest count as ``<family>:other``
FAMILY_KEYS_CAP = 100
#: the longest datagram text used in a counter key
KEY_TEXT_MAX = 80


def _last_seen(sess: Session) -> float:
    return max(sess.last_event_at, sess.registered_at)


def _busy(sess: Session) -> bool:
    task = sess.task
    return bool(sess.requests or sess.queue or sess.work_open()
                or (task is not None and task.ended_at is None))


def _rank(sess: Session) -> tuple[int, int, float]:
    # dropped first: ended, then never active, then idle, then busy; oldest first within each
    order = 0 if sess.state == State.GONE else 1 if sess.state == State.UNKNOWN else 2
    return (int(_busy(sess)), order, _last_seen(sess))


def shed_orphans(registry: Registry, now: float, keep: str = "") -> list[str]:
    """Forget orphan sessions idle too long, then the least worth keeping past the cap.

    Args:
        registry: the sessions (changed in place).
        now: wall-clock seconds.
        keep: a session never dropped (the one an event is registering now).

    Returns:
        The names of the sessions forgotten.
    """
    knobs = registry.knobs
    drop: list[Session] = []
    rest: list[Session] = []
    for sess in registry.sessions.values():
        if sess.socket_seen or sess.name == keep:
            continue
        idle = sess.state != State.GONE and now - _last_seen(sess) > knobs.orphan_idle
        (drop if idle else rest).append(sess)
    new = registry.sessions.get(keep)
    excess = len(rest) + (new is not None and not new.socket_seen) - knobs.orphan_cap
    if excess > 0:
        rest.sort(key=_rank)
        drop += rest[:excess]
        if not registry.orphan_cap_hit:
            registry.orphan_cap_hit = True
            log.warning("more than %d sessions never seen with a dtach socket: forgetting the "
                        "oldest (junk session names on the control socket?); logged once, "
                        "counted as sessions_forgotten", knobs.orphan_cap)
    for sess in drop:
        del registry.sessions[sess.name]
        registry.dirty.discard(sess.name)
    if drop:
        registry.forgotten += len(drop)
        registry.version += 1
    return [s.name for s in drop]


def family_key(counters: dict[str, int], family: str, text: object) -> str:
    """The counter key for ``text`` in ``family``: ``family:text``, or ``family:other``
    once ``FAMILY_KEYS_CAP`` distinct ones exist (logged the first time)."""
    name = text[:KEY_TEXT_MAX] if isinstance(text, str) and text else "unknown"
    key = f"{family}:{name}"
    if key in counters:
        return key
    prefix = family + ":"
    other = prefix + "other"
    if sum(1 for k in counters if k.startswith(prefix) and k != other) < FAMILY_KEYS_CAP:
        return key
    if other not in counters:
        log.warning("more than %d distinct %s keys: the rest are counted as %s (logged once)",
                    FAMILY_KEYS_CAP, family, other)
    return other
