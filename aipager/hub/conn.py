"""Connecting to the broker: retried until it answers, reconnecting for ever after."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Coroutine, Iterable

from aipager.aio import cancel_and_wait

from aipager.hub.creds import Creds

log = logging.getLogger("aipager.hub")

#: seconds between connection attempts while the broker does not answer
RETRY_SECONDS = 1.0


async def connect(url: str, creds: Creds, *, inbox_prefix: str = "_INBOX",
                  name: str = "aipager") -> Any:
    """A connected ``nats.aio.client.Client``; waits (retrying) until the broker answers.

    The client reconnects by itself after that (no limit), and publishes made while
    it reconnects wait in its buffer.  An authorization failure is logged once per
    attempt streak, never with the password.
    """
    import nats

    told = False
    client: list[Any] = []

    async def on_error(exc: Exception) -> None:
        log.warning("broker %s: %s", url, exc)

    async def on_disconnect() -> None:
        if client and client[0].is_closed:
            return  # our own close, at shutdown
        log.warning("lost the broker at %s; reconnecting", url)

    async def on_reconnect() -> None:
        log.info("reconnected to the broker at %s", url)

    while True:
        try:
            nc = await nats.connect(
                servers=[url], user=creds.user, password=creds.password, name=name,
                inbox_prefix=inbox_prefix, allow_reconnect=True, max_reconnect_attempts=-1,
                reconnect_time_wait=RETRY_SECONDS, connect_timeout=2,
                error_cb=on_error, disconnected_cb=on_disconnect, reconnected_cb=on_reconnect)
            client.append(nc)
            return nc
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure: try again
            if not told:
                log.warning("cannot reach the broker at %s (%s); trying again", url, exc)
                told = True
            await asyncio.sleep(RETRY_SECONDS)


async def serve(nc: Any, tasks: set[asyncio.Task], loops: Iterable[Coroutine[Any, Any, Any]]) -> None:
    """Run a link's ``loops`` (kept in ``tasks``) until one fails or they are cancelled; then
    the others are cancelled and the connection ``nc`` closed."""
    try:
        for coro in loops:
            tasks.add(asyncio.create_task(coro))
        await asyncio.gather(*tasks)
    finally:
        await cancel_and_wait(tasks)
        with contextlib.suppress(Exception):
            await nc.close()

