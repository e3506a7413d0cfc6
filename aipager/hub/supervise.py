"""A link that fails is started again, later each time, and says so once.

A link service (the hub's ``HubLink``, a host's ``HostLink``) raising used to end
it for the daemon's whole life: no host's outputs reached the chat until a restart.
``keep_running`` runs its body again after a failure, waiting ``Backoff`` (doubling
from one second up to a minute); the owner is told once per streak of failures
(``Lost``), and once when the link has stayed up ``stable`` seconds again
(``Back``), so a link that comes up and fails at once does not fill the chat.

``Backoff`` is pure; ``keep_running`` is the only part with a clock.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Coroutine

from aipager.aio import cancel_and_wait

log = logging.getLogger("aipager.hub")

#: seconds before the first retry, and the most between two
FIRST_RETRY = 1.0
MAX_RETRY = 60.0
#: seconds a link stays up before it counts as back (the wait starts over, the owner is told)
STABLE_SECONDS = 10.0


@dataclass(frozen=True)
class Lost:
    """The link failed (``reason``); it is tried again, first in ``retry_in`` seconds."""

    kind: ClassVar[str] = "lost"
    reason: str
    retry_in: float


@dataclass(frozen=True)
class Back:
    """The link that was lost is up again (and stayed up ``STABLE_SECONDS``)."""

    kind: ClassVar[str] = "back"


LinkEvent = Lost | Back


class Backoff:
    """Seconds to wait before each retry: ``first``, doubled each time, at most ``cap``."""

    def __init__(self, first: float = FIRST_RETRY, cap: float = MAX_RETRY) -> None:
        self.first, self.cap = first, cap
        self.failures = 0

    def next(self) -> float:
        delay = min(self.cap, self.first * 2 ** min(self.failures, 30))
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0


async def keep_running(name: str,
                       body: Callable[[Callable[[], None]], Coroutine[Any, Any, None]],
                       tell: Callable[[LinkEvent], Any], *, backoff: Backoff | None = None,
                       stable: float = STABLE_SECONDS) -> None:
    """Run ``body(up)`` until it returns (done for good) or this is cancelled; when it
    raises, run it again after the backoff.  ``body`` calls ``up()`` once it is connected
    and set up; ``tell`` hears ``Lost`` at the first failure of a streak and ``Back``
    when the link then stayed up ``stable`` seconds."""
    backoff = backoff or Backoff()
    said_lost = False
    while True:
        came_up = asyncio.Event()
        task: asyncio.Task[None] = asyncio.create_task(body(came_up.set))
        try:
            if await _stays_up(task, came_up, stable):
                backoff.reset()
                if said_lost:
                    said_lost = False
                    _tell(tell, Back())
                    log.info("%s is back", name)
                await asyncio.wait({task})
        finally:
            await cancel_and_wait({task})
        if not task.cancelled() and task.exception() is None:
            return
        exc = task.exception() if not task.cancelled() else None
        reason = f"{type(exc).__name__}: {exc}" if exc is not None else "stopped"
        delay = backoff.next()
        log.warning("%s failed (%s); starting it again in %.0f s", name, reason, delay,
                    exc_info=exc)
        if not said_lost:
            said_lost = True
            _tell(tell, Lost(reason[:160], delay))
        await asyncio.sleep(delay)


async def _stays_up(task: asyncio.Task, came_up: asyncio.Event, stable: float) -> bool:
    """Whether ``task`` said it is up and then ran ``stable`` seconds more."""
    waiter = asyncio.ensure_future(came_up.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait({waiter})
    if task.done():
        return False
    done, _ = await asyncio.wait({task}, timeout=stable)
    return not done


def _tell(tell: Callable[[LinkEvent], Any], event: LinkEvent) -> None:
    try:
        tell(event)
    except Exception:  # noqa: BLE001 - telling the owner must not stop the link
        log.exception("telling the owner that the link is %s failed", event.kind)
