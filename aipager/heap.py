"""Handing the memory the process freed back to the system (glibc's heap).

Building the bot's models on the first updates, a burst of cards or a voice model leave much
of the heap free but still held by glibc (about 2 MB of the idle daemon's, measured by
``bench/bot.py``); ``malloc_trim(0)`` returns it.  Under a millisecond on this heap, so the
daemon runs it a while after it started and then every ten seconds.  Elsewhere (musl, macOS) a
no-op.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes

#: seconds after start before the first trim (the bot has said hello and polls)
FIRST_TRIM = 10.0
#: seconds between trims
TRIM_EVERY = 10.0


def trim() -> None:
    """Give the heap's free pages back (glibc), now."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


async def keep_trimmed(first: float = FIRST_TRIM, every: float = TRIM_EVERY) -> None:
    """A daemon service: ``trim`` after ``first`` seconds, then every ``every`` seconds."""
    await asyncio.sleep(first)
    while True:
        trim()
        await asyncio.sleep(every)


__all__ = ["keep_trimmed", "trim"]
