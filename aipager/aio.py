"""Small asyncio helpers shared by the daemon and the bot."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Callable, Iterable


async def cancel_and_wait(tasks: Iterable[asyncio.Task]) -> None:
    """Cancel ``tasks`` and wait for each to finish; their errors are not re-raised
    (they were logged where they happened)."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


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
