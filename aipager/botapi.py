"""The aiogram ``Bot`` the daemon's chat and ``aipager setup``'s checks both talk through,
at the Bot API base the environment names (``AIPAGER_TELEGRAM_API_BASE``: the tests' fake),
else Telegram's.  aiogram is imported inside ``build_bot``: ``aipager --help`` and a daemon
without a bot never load it."""

from __future__ import annotations

from typing import Any, Mapping

DEFAULT_TIMEOUT = 15.0


def api_base(env: Mapping[str, str]) -> str | None:
    """The Bot API base URL from the environment; None means Telegram's."""
    return env.get("AIPAGER_TELEGRAM_API_BASE") or None


def build_bot(token: str, base: str | None, timeout: float = DEFAULT_TIMEOUT) -> Any:
    """An aiogram ``Bot`` talking to ``base`` (Telegram's when None)."""
    from aipager import lazyaiogram

    lazyaiogram.import_aiogram()  # its models built on use
    from aiogram import Bot
    from aiogram.client.session.aiohttp import AiohttpSession
    from aiogram.client.telegram import PRODUCTION, TelegramAPIServer

    server = TelegramAPIServer.from_base(base) if base else PRODUCTION
    return Bot(token=token, session=AiohttpSession(api=server, timeout=timeout))
