"""Long polling that survives what Telegram and networks do.

aiogram's own ``start_polling`` validates a whole ``getUpdates`` batch at
once: one update it cannot parse makes it fetch the same batch again forever.
Here each update is validated on its own (a malformed one is logged and
skipped, its id confirmed), a second poller on the token (409 Conflict) is
reported once and retried with backoff, and an unreachable Telegram backs off
(aiogram's ``Backoff``, ``RETRY_BACKOFF``: up to 30 s) without ever ending the loop.

The next ``getUpdates`` confirms what came before, while handlers may still be
running (or not yet started): so each batch goes to ``inbox.keep`` (the update
journal, ``inbox.py``) first, which also drops updates Telegram delivers again.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

from aiogram.methods import GetUpdates
from aiogram.types import Update
from aiogram.utils.backoff import Backoff, BackoffConfig
from pydantic import ValidationError

log = logging.getLogger("aipager.bot")

#: seconds Telegram holds a getUpdates open
POLL_TIMEOUT = 25
#: waits between failed polls: 1 s, doubled each time, at most 30 s
RETRY_BACKOFF = BackoffConfig(min_delay=1.0, max_delay=30.0, factor=2.0, jitter=0.0)
#: the update kinds the bot handles
ALLOWED_UPDATES = ["message", "callback_query"]

CONFLICT_TEXT = ("another program is polling this bot token (Telegram answered 409 Conflict): "
                 "stop the other aipager or bot using it; retrying with backoff")


class RawUpdates(GetUpdates):
    """``getUpdates`` whose items are left as dicts, to be validated one at a time."""

    __returning__ = list[dict[str, Any]]


def parse(bot: Any, item: Any) -> Update | None:
    """One update as aiogram's model; None (logged) when it is malformed."""
    try:
        return Update.model_validate(item, context={"bot": bot})
    except ValidationError as exc:
        update_id = item.get("update_id") if isinstance(item, dict) else None
        log.warning("skipped a malformed Telegram update %s (%d problem(s))",
                    update_id, exc.error_count())
        return None


async def poll(bot: Any, handle: Callable[[Update], Awaitable[None]], *,
               timeout: int = POLL_TIMEOUT, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
               on_health: Callable[[str], None] = lambda state: None,
               inbox: Any = None) -> None:
    """Fetch updates until cancelled and pass each valid one to ``handle`` in order.

    ``on_health`` hears "ok" after each answered poll, else "conflict", "token" or
    "unreachable".  ``inbox`` (``inbox.Inbox``): each batch is journaled there before
    the next poll confirms it, and a malformed update is marked handled there.
    """
    from aiogram import exceptions as tg

    offset: int | None = None
    backoff = Backoff(RETRY_BACKOFF)
    trouble = ""
    while True:
        try:
            raw = await bot(RawUpdates(offset=offset, timeout=timeout,
                                       allowed_updates=ALLOWED_UPDATES),
                            request_timeout=timeout + 15)
        except tg.TelegramConflictError:
            if trouble != "conflict":
                log.error(CONFLICT_TEXT)
            trouble = "conflict"
        except tg.TelegramUnauthorizedError:
            if trouble != "token":
                log.error("Telegram rejects the bot token; fix it with `aipager config token`")
            trouble = "token"
        except (tg.TelegramNetworkError, tg.TelegramServerError, tg.TelegramRetryAfter,
                tg.ClientDecodeError, tg.TelegramAPIError, asyncio.TimeoutError, OSError) as exc:
            if trouble != "network":
                log.warning("cannot fetch Telegram updates (%s); retrying with backoff",
                            str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
            trouble = "network"
        else:
            if trouble:
                log.info("receiving Telegram updates again")
            trouble = ""
            backoff.reset()
            on_health("ok")
            for item in raw:
                update_id = item.get("update_id") if isinstance(item, dict) else None
                if isinstance(update_id, int) and not isinstance(update_id, bool):
                    offset = max(offset or 0, update_id + 1)
            if inbox is not None:
                raw = inbox.keep(raw)  # durable before the next poll confirms it
            for item in raw:
                update = parse(bot, item)
                if update is None:
                    if inbox is not None:
                        inbox.done(item.get("update_id") if isinstance(item, dict) else None)
                    continue
                await handle(update)
            continue
        on_health({"network": "unreachable"}.get(trouble, trouble))
        await sleep(next(backoff))
