"""Outputs in the order they were made, when one of them needs work done off the loop.

An edit's permission request carries the diff against the file on disk
(``diffs.unified``): up to 512 KB read and diffed, too slow for the event
loop, which also serves the chat, the page and the hooks' datagrams.  The
handler still runs in order and changes the registry at once; only its output
waits for the diff, made in a worker thread, and every output made after it
waits behind it, so a chat never sees a request's closing before the request.

Without a runner (unit tests, the core alone) the work runs inline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import deque
from typing import Any, Callable

from aipager.port.outputs import Notifier, Output

log = logging.getLogger("aipager.daemon")

#: the fields ``complete`` gives an output
Fields = dict[str, Any]
#: runs ``work`` somewhere and calls ``done`` with its result on the loop
Runner = Callable[[Callable[[], Fields], Callable[[Fields], None]], None]


class _Slot:
    """A place in the order for an output whose fields are still being made."""

    __slots__ = ("out", "ready")

    def __init__(self, out: Output) -> None:
        self.out = out
        self.ready = False


class OrderedOutputs:
    """A notifier that hands outputs on in the order they were emitted.

    Args:
        inner: where outputs go.
        runner: where ``emit_completed``'s work runs (None: inline).
        after: called with each output once ``inner`` has it (the daemon removes the
            copies of files Claude sent, which every surface has named its own by then).
    """

    def __init__(self, inner: Notifier, runner: Runner | None = None,
                 after: Callable[[Output], None] | None = None) -> None:
        self.inner = inner
        self.runner = runner
        self.after = after
        self._held: deque[_Slot] = deque()

    @property
    def waiting(self) -> int:
        """Outputs held back (behind work that has not finished)."""
        return len(self._held)

    def emit(self, out: Output) -> None:
        if not self._held:
            self._hand_on(out)
            return
        slot = _Slot(out)
        slot.ready = True
        self._held.append(slot)

    def emit_completed(self, out: Output, complete: Callable[[], Fields]) -> None:
        """Emit ``out`` with the fields ``complete()`` returns (run by the runner; on
        failure ``out`` goes as it is); outputs emitted later wait for it."""
        if self.runner is None:
            self.emit(_with(out, _safely(complete)))
            return
        slot = _Slot(out)
        self._held.append(slot)

        def done(fields: Fields) -> None:
            slot.out = _with(slot.out, fields)
            slot.ready = True
            self._release()

        self.runner(complete, done)

    def _release(self) -> None:
        held = self._held
        while held and held[0].ready:
            self._hand_on(held.popleft().out)

    def _hand_on(self, out: Output) -> None:
        self.inner.emit(out)
        if self.after is not None:
            try:
                self.after(out)
            except Exception:  # noqa: BLE001 - clearing up must not stop the outputs
                log.exception("after a %s output", out.kind)


def _safely(complete: Callable[[], Fields]) -> Fields:
    try:
        return complete()
    except Exception:  # noqa: BLE001 - a diff that fails must not lose the request
        log.exception("completing an output failed; it goes without")
        return {}


def _with(out: Output, fields: Fields) -> Output:
    return dataclasses.replace(out, **fields) if fields else out


def thread_runner(loop: asyncio.AbstractEventLoop, tasks: set[asyncio.Task[Any]]) -> Runner:
    """A runner for the daemon: the work in a thread (``asyncio.to_thread``), ``done`` on
    ``loop``; call it on the loop.

    ``tasks`` keeps the tasks alive (and lets shutdown see them).  A failed or
    cancelled work gives ``{}``: the output still goes, in its place.
    """

    def run(work: Callable[[], Fields], done: Callable[[Fields], None]) -> None:
        task = loop.create_task(asyncio.to_thread(_safely, work))
        tasks.add(task)

        def finished(fut: asyncio.Task[Fields]) -> None:
            tasks.discard(fut)
            done({} if fut.cancelled() or fut.exception() is not None else fut.result())

        task.add_done_callback(finished)

    return run
