"""Checking a bot token and a chat against the Bot API (setup, config, doctor).

Uses aiogram's own ``Bot`` so the checks exercise exactly the client the
daemon runs.  The API base is ``AIPAGER_TELEGRAM_API_BASE`` when set (tests
point it at a local fake), Telegram's otherwise.  Every aiogram/aiohttp error
is translated here into ``TokenRejected``, ``TelegramUnreachable`` or
``ChatUnreachable``; the token never appears in a message.

aiogram is imported inside the functions: ``aipager --help`` must stay fast.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from aipager.proto.errors import ChatUnreachable, TelegramError, TelegramUnreachable, TokenRejected

from aipager.botapi import DEFAULT_TIMEOUT, build_bot
from aipager.botapi import api_base as api_base  # (the CLI reads the base here too)

TEST_MESSAGE = "✅ aipager is connected. Claude Code sessions will report here."


@dataclass(frozen=True)
class BotInfo:
    id: int
    username: str
    name: str


@dataclass(frozen=True)
class ChatInfo:
    id: int
    title: str  # a person's name or a group's title
    kind: str  # private, group, supergroup, channel


async def check_token(token: str, base: str | None, timeout: float = DEFAULT_TIMEOUT) -> BotInfo:
    """``getMe``: whom the token belongs to.

    Raises:
        TokenRejected: Telegram does not know this token (or it is malformed).
        TelegramUnreachable: no usable answer from the Bot API.
    """
    try:
        bot = build_bot(token, base, timeout)
    except Exception as exc:  # aiogram's TokenValidationError on a malformed token
        msg = "the bot token is malformed; copy it again from @BotFather"
        raise TokenRejected(msg) from exc
    async with bot.session:
        try:
            me = await bot.get_me()
        except Exception as exc:
            raise _translate(exc, base, chat=None) from exc
    return BotInfo(id=me.id, username=me.username or "", name=me.full_name)


async def check_chat(
    token: str, chat_id: int, base: str | None, send_test: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> ChatInfo:
    """``getChat`` and (by default) a test message to ``chat_id``.

    Raises:
        ChatUnreachable: the chat is unknown to the bot (never talked to it,
            wrong id) or the bot may not write there.
        TokenRejected / TelegramUnreachable: as for ``check_token``.
    """
    bot = build_bot(token, base, timeout)
    async with bot.session:
        try:
            chat = await bot.get_chat(chat_id)
            if send_test:
                await bot.send_message(chat_id, TEST_MESSAGE)
        except Exception as exc:
            raise _translate(exc, base, chat=chat_id) from exc
    title = chat.title or chat.full_name or str(chat.id)
    return ChatInfo(id=chat.id, title=title, kind=str(chat.type))


GROUP_FIX = ("make the bot an admin of the group, or turn its privacy mode off "
             "(@BotFather: /setprivacy → Disable), then remove and re-add it to the group")


async def group_access(token: str, chat_id: int, base: str | None,
                       timeout: float = DEFAULT_TIMEOUT) -> tuple[bool, str]:
    """Whether the bot reads a group's messages (privacy mode off, or an admin).

    With privacy mode on, Telegram hands a bot only commands addressed to it and
    replies to its own messages: mentions and replies to other members'
    messages (``/role``) never arrive.

    Returns:
        (reads everything, how: "admin" | "privacy off" | "" when it does not).

    Raises:
        TokenRejected / TelegramUnreachable / ChatUnreachable: as ``check_chat``.
    """
    bot = build_bot(token, base, timeout)
    async with bot.session:
        try:
            me = await bot.get_me()
            member = await bot.get_chat_member(chat_id, me.id)
        except Exception as exc:
            raise _translate(exc, base, chat=chat_id) from exc
    if str(member.status).endswith("administrator") or str(member.status).endswith("creator"):
        return True, "admin"
    if me.can_read_all_group_messages:
        return True, "privacy off"
    return False, ""


#: the pause after a poll that came back early with nothing new, doubled up to the cap
DETECT_BACKOFF = (0.5, 4.0)


async def _confirm(bot: Any, update_id: int, base: str | None) -> None:
    """Confirm updates up to ``update_id`` (Telegram drops them: no later poll gets them)."""
    try:
        await bot.get_updates(offset=update_id + 1, timeout=0, allowed_updates=["message"])
    except Exception as exc:
        raise _translate(exc, base, chat=None) from exc


async def detect_chat(
    token: str, base: str | None, wait: float = 120.0, timeout: float = DEFAULT_TIMEOUT
) -> ChatInfo | None:
    """Wait up to ``wait`` seconds for a private message to the bot; its chat.

    Used by interactive setup ("send any message to your bot").  The private
    message found is confirmed (with what came before it): it was written for setup, and
    a daemon whose chat starts later (or runs already and picks the config up) would type
    it into a session as a prompt, one Claude Code would bill.  Updates of anything else
    (a group message, an edit, a tap on an old button) are skipped by passing ``offset``
    past them, which confirms them too.  Without the offset, getUpdates would
    answer the same batch at once, over and over, instead of waiting.  A poll
    that still comes back early with nothing new is followed by a pause (0.5 s,
    doubling to 4 s).
    """
    bot = build_bot(token, base, timeout + 30)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    offset: int | None = None
    pause = DETECT_BACKOFF[0]
    async with bot.session:
        while (left := deadline - loop.time()) > 0:
            poll = int(min(left, 25)) or 1
            asked = loop.time()
            try:
                updates = await bot.get_updates(offset=offset, timeout=poll,
                                                allowed_updates=["message"])
            except Exception as exc:
                raise _translate(exc, base, chat=None) from exc
            fresh = [u for u in updates if offset is None or u.update_id >= offset]
            for update in reversed(fresh):
                msg = update.message
                if msg is not None and msg.chat.type == "private":
                    name = msg.chat.full_name or str(msg.chat.id)
                    await _confirm(bot, update.update_id, base)
                    return ChatInfo(id=msg.chat.id, title=name, kind="private")
            if fresh:
                offset = max(u.update_id for u in fresh) + 1
                pause = DETECT_BACKOFF[0]
            elif loop.time() - asked < poll / 2:
                # back early with nothing new: a server (or proxy) that does
                # not hold the poll must not make this a busy loop
                await asyncio.sleep(min(pause, max(0.0, deadline - loop.time())))
                pause = min(pause * 2, DETECT_BACKOFF[1])
    return None


def run(coro: Any) -> Any:
    """Run one check from synchronous code (the CLI)."""
    return asyncio.run(coro)


def _translate(exc: Exception, base: str | None, chat: int | None) -> TelegramError:
    from aiogram import exceptions as tg

    where = base or "api.telegram.org"
    if isinstance(exc, tg.TelegramUnauthorizedError) or (
        chat is None and isinstance(exc, tg.TelegramNotFound)
    ):
        msg = "Telegram rejected the bot token; copy it again from @BotFather"
        return TokenRejected(msg)
    if chat is not None and isinstance(exc, (tg.TelegramBadRequest, tg.TelegramForbiddenError,
                                             tg.TelegramNotFound)):
        msg = (
            f"the bot cannot write to chat {chat} ({exc.message}). Open Telegram, "
            "send any message to your bot (or add it to the group), then try again"
        )
        return ChatUnreachable(msg)
    if isinstance(exc, (tg.TelegramNetworkError, tg.TelegramServerError, OSError,
                        asyncio.TimeoutError, tg.ClientDecodeError)):
        msg = f"no usable answer from the Telegram Bot API at {where}; check the network"
        return TelegramUnreachable(msg)
    msg = f"unexpected answer from the Telegram Bot API at {where}: {type(exc).__name__}"
    return TelegramUnreachable(msg)
