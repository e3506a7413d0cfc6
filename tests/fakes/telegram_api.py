"""A small fake Telegram Bot API (aiohttp) for driving the real aiogram client.

Serves ``/bot{token}/{method}`` like the real API: form or JSON parameters in,
``{"ok": true, "result": ...}`` or ``{"ok": false, "error_code", "description"}``
out, 404 for methods it does not know (so a new call fails loudly).

What it knows:
- ``tokens``: valid token → bot user; any other token gets 401 Unauthorized.
- ``chats``: chats that have talked to the bot; ``sendMessage``/``getChat`` to
  any other chat get 400 "chat not found"; chats in ``blocked`` get 403.
- ``getUpdates`` is a real long poll with offset confirmation.
- ``calls`` records every request as ``(method, params)``.

Two ways to run it:
- in the test's loop: ``async with fake.running() as base: ...``
- in a thread, for sync code that calls ``asyncio.run`` itself (the CLI):
  ``with fake.in_thread() as base: ...``; use ``fake.say(...)`` from the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from typing import Any, AsyncIterator, Iterator

from aiohttp import web

TOKEN = "123456:AAtestTOKENtestTOKENtestTOKEN00"
BOT_USER = {"id": 123456, "is_bot": True, "first_name": "aipager test",
            "username": "aipager_test_bot"}
OWNER = {"id": 4242, "is_bot": False, "first_name": "Owner", "username": "owner"}

# Nested objects arrive as JSON strings in form posts (observed with aiogram 3.31).
_JSON_FIELDS = {"reply_markup", "entities", "allowed_updates", "link_preview_options",
                "reply_parameters", "commands", "scope", "reaction"}


class FakeBotAPI:
    """State and handlers of one fake Bot API server."""

    def __init__(self) -> None:
        self.tokens: dict[str, dict[str, Any]] = {TOKEN: dict(BOT_USER)}
        self.chats: dict[int, dict[str, Any]] = {}
        self.blocked: set[int] = set()
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.sent: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []
        self._next_update = 1
        self._next_message: dict[int, int] = {}
        self._cond: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.app = web.Application()
        self.app.router.add_route("*", "/bot{token}/{method}", self._handle)

    # ------------------------------------------------------------ test side

    def add_private_chat(self, user: dict[str, Any] = OWNER) -> int:
        """Make ``user`` a person who has talked to the bot; returns the chat id."""
        self.chats[user["id"]] = {"id": user["id"], "type": "private",
                                  "first_name": user.get("first_name", ""),
                                  "username": user.get("username")}
        return user["id"]

    async def user_says(self, text: str, user: dict[str, Any] = OWNER) -> dict[str, Any]:
        """A private message from ``user`` (who thereby knows the bot) as an update."""
        chat_id = self.add_private_chat(user)
        message = self._message(chat_id, text, sender=user)
        await self._push({"message": message})
        return message

    def say(self, text: str, user: dict[str, Any] = OWNER) -> dict[str, Any]:
        """``user_says`` from another thread while the fake runs ``in_thread``."""
        assert self._loop is not None, "start the fake with in_thread() first"
        fut = asyncio.run_coroutine_threadsafe(self.user_says(text, user), self._loop)
        return fut.result(5)

    def methods(self) -> list[str]:
        return [m for m, _ in self.calls]

    # ------------------------------------------------------------ running

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve on 127.0.0.1 (free port) in the current loop; yields the base URL."""
        self._loop = asyncio.get_running_loop()
        self._cond = asyncio.Condition()
        runner = web.AppRunner(self.app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            async with self._cond:
                self._cond.notify_all()
            await runner.cleanup()

    @contextlib.contextmanager
    def in_thread(self) -> Iterator[str]:
        """Serve from a background thread with its own loop; yields the base URL."""
        ready: dict[str, Any] = {}
        started = threading.Event()
        stop: asyncio.Event | None = None

        async def main() -> None:
            nonlocal stop
            stop = asyncio.Event()
            try:
                async with self.running() as base:
                    ready["base"] = base
                    started.set()
                    await stop.wait()
            except BaseException as exc:  # surface startup errors in the test
                ready["error"] = exc
                started.set()

        thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
        thread.start()
        started.wait(10)
        if "error" in ready:
            raise ready["error"]
        try:
            yield ready["base"]
        finally:
            assert self._loop is not None and stop is not None
            self._loop.call_soon_threadsafe(stop.set)
            thread.join(10)

    # ------------------------------------------------------------ server side

    async def _handle(self, request: web.Request) -> web.Response:
        token, method = request.match_info["token"], request.match_info["method"]
        params = await _params(request)
        self.calls.append((method, params))
        bot = self.tokens.get(token)
        if bot is None:
            return _error(401, "Unauthorized")
        handler = getattr(self, f"m_{method}", None)
        if handler is None:
            return _error(404, "Not Found")
        try:
            result = await handler(bot, params)
        except _ApiError as exc:
            return _error(exc.code, exc.description)
        return web.json_response({"ok": True, "result": result})

    async def m_getMe(self, bot: dict, p: dict) -> dict:
        return bot

    async def m_deleteWebhook(self, bot: dict, p: dict) -> bool:
        return True

    async def m_getChat(self, bot: dict, p: dict) -> dict:
        gifts = dict.fromkeys(("unlimited_gifts", "limited_gifts", "unique_gifts",
                               "premium_subscription", "gifts_from_channels"), False)
        return {**self._chat(p), "accent_color_id": 0, "max_reaction_count": 11,
                "accepted_gift_types": gifts}

    async def m_sendMessage(self, bot: dict, p: dict) -> dict:
        chat = self._chat(p)
        message = self._message(chat["id"], str(p.get("text", "")), sender=bot)
        if "reply_markup" in p:
            message["reply_markup"] = p["reply_markup"]
        self.sent.append(message)
        return message

    async def m_getUpdates(self, bot: dict, p: dict) -> list:
        assert self._cond is not None
        offset = int(p.get("offset", 0) or 0)
        timeout = float(p.get("timeout", 0) or 0)
        limit = int(p.get("limit", 100) or 100)
        async with self._cond:
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
            if not self.updates and timeout:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._cond.wait(), timeout)
                self.updates = [u for u in self.updates if u["update_id"] >= offset]
            return list(self.updates[:limit])

    # ------------------------------------------------------------ helpers

    def _chat(self, p: dict) -> dict:
        try:
            chat_id = int(p.get("chat_id"))
        except (TypeError, ValueError):
            raise _ApiError(400, "Bad Request: chat_id is empty") from None
        if chat_id in self.blocked:
            raise _ApiError(403, "Forbidden: bot was blocked by the user")
        chat = self.chats.get(chat_id)
        if chat is None:
            raise _ApiError(400, "Bad Request: chat not found")
        return {k: v for k, v in chat.items() if v is not None}

    def _message(self, chat_id: int, text: str, sender: dict) -> dict:
        n = self._next_message.get(chat_id, 0) + 1
        self._next_message[chat_id] = n
        chat = {k: v for k, v in self.chats[chat_id].items() if v is not None}
        return {"message_id": n, "date": int(time.time()), "chat": chat,
                "from": sender, "text": text}

    async def _push(self, update: dict) -> None:
        assert self._cond is not None
        async with self._cond:
            update = {"update_id": self._next_update, **update}
            self._next_update += 1
            self.updates.append(update)
            self._cond.notify_all()


class _ApiError(Exception):
    def __init__(self, code: int, description: str) -> None:
        super().__init__(description)
        self.code = code
        self.description = description


def _error(code: int, description: str) -> web.Response:
    body = {"ok": False, "error_code": code, "description": description}
    return web.json_response(body, status=code)


async def _params(request: web.Request) -> dict[str, Any]:
    if request.content_type == "application/json":
        return dict(await request.json())
    params: dict[str, Any] = dict(request.query)
    if request.content_type.startswith("multipart/"):
        async for part in await request.multipart():
            params[part.name] = await part.text()
    else:
        params.update(await request.post())
    for key in _JSON_FIELDS & params.keys():
        with contextlib.suppress(TypeError, ValueError):
            params[key] = json.loads(params[key])
    return params
