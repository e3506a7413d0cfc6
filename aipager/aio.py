"""Small asyncio helpers shared by the daemon and the bot."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Callable, Coroutine, Iterable


async def cancel_and_wait(tasks: Iterable[asyncio.Task]) -> None:
    """Cancel ``tasks`` and wait for each to finish; their errors are not re-raised
    (they were logged where they happened)."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    for task in tasks:
        # a library that swallowed the cancel (a wait_for finishing as it came) leaves the
        # task running: it is asked again until it ends
        while not task.done():
            await asyncio.wait({task}, timeout=1.0)
            if not task.done():
                task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


def stop_if_cancelled() -> None:
    """Raise CancelledError when this task was asked to stop: a library that turns the
    cancellation into its own error (nats-py's fetch makes it a TimeoutError) would
    otherwise leave a retry loop running for ever, and whoever waits for it stuck."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def every(seconds: float, fn: Callable[[], Any], log: logging.Logger) -> None:
    """Call ``fn`` (sync, or returning a coroutine) every ``seconds`` until cancelled; a
    failing call is logged and the loop goes on."""
    while True:
        await asyncio.sleep(seconds)
        try:
            result = fn()
            if asyncio.iscoroutine(result):
                await result
        except Exception:  # noqa: BLE001 - a failing step must not stop the loop
            log.exception("periodic %s failed", getattr(fn, "__name__", fn))


def spawn(tasks: set[asyncio.Task], coro: Coroutine[Any, Any, Any], log: logging.Logger,
          what: str) -> None:
    """Run ``coro`` as a task kept in ``tasks`` until it is done; its failure is logged (``what``
    failed), never raised: one failed action must not stop a service.  Without a running
    loop the coroutine is closed unrun."""
    async def guarded() -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - logged; the service goes on
            log.exception("%s failed", what)

    try:
        task = asyncio.get_running_loop().create_task(guarded())
    except RuntimeError:
        coro.close()
        return
    tasks.add(task)
    task.add_done_callback(tasks.discard)

