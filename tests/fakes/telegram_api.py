"""A fake Telegram Bot API server (aiohttp) for driving the real aiogram client.

Serves ``/bot{token}/{method}`` like the real API: form, multipart or JSON
parameters in (nested objects as JSON strings, files as ``attach://<key>``),
``{"ok": true, "result": <full Bot API object>}`` or ``{"ok": false,
"error_code", "description"[, "parameters"]}`` out, and 404 for methods it
does not know, so a bot that starts using a new one fails loudly.  Method
names are case-insensitive, as in Telegram.

What it knows:

- ``tokens``: valid token → bot user (anything else gets 401); ``chats``:
  private chats of users who wrote to the bot and groups the test added
  (others get 400 "chat not found"); ``blocked`` chats get 403.
- ``messages[(chat_id, message_id)]``: the current state of every user and bot
  message (text, entities, inline reply_markup, nested reply_to_message,
  message_thread_id, edit_date, document/photo), one message_id counter per
  chat.  ``sent`` keeps each bot message as first sent.
- ``getUpdates``: a real long poll with offset confirmation, ``limit`` and
  ``allowed_updates`` (kept like Telegram keeps it; updates of other types are
  dropped into ``dropped_updates``).  Updates built by the helpers are checked
  with aiogram's own ``Update`` model, so aiogram never rejects a batch.
- Sending, editing ("message is not modified" when text, entities and inline
  markup are unchanged), deleting, reactions (``reactions``,
  ``reaction_history``), pins (``pinned``), commands (``my_commands`` per
  scope key), callback answers (``answers``), uploads (``uploads`` with
  sha256), ``getFile`` plus ``/file/bot{token}/{path}`` downloads, ``getChat``,
  ``getChatMember`` (the bot is an administrator of groups while
  ``bot_is_admin``).
- ``calls`` records every request as ``(method, params)`` in arrival order;
  ``failed_calls`` the ones that were refused, as ``(method, params, code,
  description)``.
- Failure injection: ``fail(method, code, ...)`` for the next calls,
  ``outage`` (every request answers 502), ``conflict`` (getUpdates answers 409).

Not simulated: service messages (pins, joins), group privacy mode (the test
decides what the bot sees), inline mode, webhooks, photo dimensions (0x0).

Two ways to run it:

- in the test's loop: ``async with fake.running() as base: ...``; use the
  ``user_*`` coroutines and ``wait_for``;
- in a thread, when the bot's code runs its own loop or another process:
  ``with fake.in_thread() as base: ...``; use the blocking twins ``say``,
  ``tap``, ``send_document``, ``send_photo``, ``wait_call`` and ``snapshot``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import re
import threading
import time
from collections import deque
from typing import Any, AsyncIterator, Callable, Iterator

from aiogram.types import Update
from aiohttp import web

TOKEN = "123456:AAtestTOKENtestTOKENtestTOKEN00"
BOT_USER = {"id": 123456, "is_bot": True, "first_name": "aipager test",
            "username": "aipager_test_bot"}
OWNER = {"id": 4242, "is_bot": False, "first_name": "Owner", "username": "owner"}

NOT_MODIFIED = ("Bad Request: message is not modified: specified new message content and "
                "reply markup are exactly the same as a current content and reply markup "
                "of the message")
QUERY_TOO_OLD = ("Bad Request: query is too old and response timeout expired or query ID "
                 "is invalid")
CONFLICT = ("Conflict: terminated by other getUpdates request; make sure that only one bot "
            "instance is running")

# Nested objects arrive as JSON strings in form posts (observed with aiogram 3.31).
_JSON_FIELDS = {"reply_markup", "entities", "caption_entities", "reaction", "commands", "scope",
                "link_preview_options", "reply_parameters", "media", "allowed_updates"}
_DEFAULT_DESCRIPTIONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
                         404: "Not Found", 409: "Conflict", 500: "Internal Server Error",
                         502: "Bad Gateway"}
# Update types Telegram leaves out unless allowed_updates names them.
_OPT_IN_UPDATES = {"chat_member", "message_reaction", "message_reaction_count"}
_COMMAND = re.compile(r"[a-z0-9_]{1,32}")
_TEXT_MAX, _CAPTION_MAX, _GETFILE_MAX = 4096, 1024, 20 * 1024 * 1024


class FakeBotAPI:
    """State and handlers of one fake Bot API server."""

    def __init__(self) -> None:
        self.tokens: dict[str, dict[str, Any]] = {TOKEN: dict(BOT_USER)}
        self.chats: dict[int, dict[str, Any]] = {}
        self.users: dict[int, dict[str, Any]] = {}
        self.blocked: set[int] = set()
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.failed_calls: list[tuple[str, dict[str, Any], int, str]] = []
        self.updates: list[dict[str, Any]] = []
        self.dropped_updates: list[dict[str, Any]] = []
        self.allowed_updates: list[str] | None = None
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        self.sent: list[dict[str, Any]] = []
        self.reactions: dict[tuple[int, int], list[str]] = {}
        self.reaction_history: list[tuple[int, int, list[str]]] = []
        self.pinned: dict[int, int] = {}
        self.my_commands: dict[str, list[dict[str, Any]]] = {}
        self.answers: dict[str, dict[str, Any]] = {}
        self.uploads: list[dict[str, Any]] = []
        self.files: dict[str, dict[str, Any]] = {}
        self.outage = False
        self.conflict = False
        self.bot_is_admin = True
        self.base = ""
        self._queries: dict[str, dict[str, Any]] = {}
        self._failures: dict[str, deque[tuple[int, str, int | None]]] = {}
        self._lock = threading.Lock()
        self._pending: set[int] = set()
        self._counter = 0
        self._next_update = 1
        self._next_message: dict[int, int] = {}
        self._cond: asyncio.Condition | None = None  # updates changed
        self._seen: asyncio.Condition | None = None  # a call finished
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handlers = {name[2:].lower(): getattr(self, name)
                          for name in dir(self) if name.startswith("m_")}
        self.app = web.Application()
        self.app.router.add_route("*", "/bot{token}/{method}", self._handle)
        self.app.router.add_get("/file/bot{token}/{path:.+}", self._download)

    # ------------------------------------------------------------ chats

    def add_private_chat(self, user: dict[str, Any] = OWNER) -> int:
        """Make ``user`` a person who has talked to the bot; returns the chat id."""
        self.users[user["id"]] = user
        self.chats[user["id"]] = {"id": user["id"], "type": "private",
                                  "first_name": user.get("first_name", ""),
                                  "username": user.get("username")}
        return user["id"]

    def add_group_chat(self, chat_id: int, title: str, forum: bool = False) -> int:
        """A supergroup with the bot in it (``chat_id`` is made negative); returns its id."""
        chat_id = -abs(chat_id)
        self.chats[chat_id] = {"id": chat_id, "type": "supergroup", "title": title,
                               "is_forum": True if forum else None}
        return chat_id

    # ------------------------------------------------------------ user input

    async def user_says(self, text: str, user: dict[str, Any] = OWNER, chat_id: int | None = None,
                        reply_to: int | None = None, thread_id: int | None = None) -> dict:
        """A text message from ``user`` (in their private chat unless ``chat_id``)."""
        chat_id = self._user_chat(user, chat_id)
        entities = None
        if text.startswith("/"):
            entities = [{"type": "bot_command", "offset": 0, "length": _u16(text.split()[0])}]
        message = self._store(chat_id, user, text=text, entities=entities,
                              reply_to_message=self._reply_target(chat_id, reply_to),
                              **self._thread(chat_id, thread_id))
        await self._push({"message": message})
        return message

    async def user_taps(self, message_id: int, data: str, user: dict[str, Any] = OWNER,
                        chat_id: int | None = None) -> str:
        """``user`` taps a button (callback ``data``) of a message; returns the query id."""
        chat_id = self._user_chat(user, chat_id)
        message = self.messages.get((chat_id, message_id))
        assert message is not None, f"no message {message_id} in chat {chat_id}"
        self._counter += 1
        query = {"id": str(4_000_000 + self._counter), "from": user, "message": message,
                 "chat_instance": str(abs(chat_id) * 7919 + 1), "data": data}
        self._queries[query["id"]] = query
        await self._push({"callback_query": query})
        return query["id"]

    async def user_sends_document(self, data: bytes, filename: str, caption: str | None = None,
                                  user: dict[str, Any] = OWNER, chat_id: int | None = None,
                                  media_group_id: str | None = None) -> dict:
        """A document from ``user``; its file can be fetched with getFile and downloaded."""
        chat_id = self._user_chat(user, chat_id)
        media = self._media("document", self._register(data, filename, "document"))
        message = self._store(chat_id, user, caption=caption, media_group_id=media_group_id,
                              **media)
        await self._push({"message": message})
        return message

    async def user_sends_photo(self, data: bytes, caption: str | None = None,
                               user: dict[str, Any] = OWNER, chat_id: int | None = None,
                               media_group_id: str | None = None) -> dict:
        """A photo from ``user`` (one size); fetchable like a document."""
        chat_id = self._user_chat(user, chat_id)
        media = self._media("photo", self._register(data, "photo.jpg", "photo"))
        message = self._store(chat_id, user, caption=caption, media_group_id=media_group_id,
                              **media)
        await self._push({"message": message})
        return message

    async def push_raw_update(self, update: dict[str, Any]) -> dict:
        """Queue ``update`` as it is (not checked); ``update_id`` is added if missing."""
        return await self._push(update, check=False)

    # ------------------------------------------------------------ reading

    def methods(self) -> list[str]:
        return [m for m, _ in self.calls]

    def calls_of(self, method: str, ok: bool | None = None) -> list[dict[str, Any]]:
        """Params of the calls of ``method``: all, or only succeeded (True) / failed (False)."""
        return [p for m, p in self.calls if m.lower() == method.lower()
                and (ok is None or self._ok(p) == ok)]

    async def wait_for(self, method: str, pred: Callable[[dict], bool] | None = None,
                       timeout: float = 5.0, *, ok: bool | None = True) -> dict[str, Any]:
        """Params of the first finished call of ``method`` matching ``pred`` (past ones too).

        Only succeeded calls by default (``ok=False``: failed ones, ``None``: any).
        Must run in the fake's loop; from another thread use ``wait_call``.
        """
        assert self._seen is not None, "start the fake with running() first"

        def find() -> tuple[dict] | None:
            for m, p in list(self.calls):
                if (m.lower() == method.lower() and id(p) not in self._pending
                        and (ok is None or self._ok(p) == ok) and (pred is None or pred(p))):
                    return (p,)
            return None

        async with self._seen:
            try:
                found = await asyncio.wait_for(self._seen.wait_for(find), timeout)
            except asyncio.TimeoutError:
                raise AssertionError(f"no {'matching ' if pred else ''}{method} call within "
                                     f"{timeout}s; recent calls:\n{self.call_log()}") from None
        return found[0]

    def call_log(self, last: int = 20) -> str:
        """The last calls, one a line, with refusals marked (for failure messages)."""
        failed = {id(p): (code, desc) for _, p, code, desc in self.failed_calls}
        lines = []
        for method, p in self.calls[-last:]:
            shown = {k: f"<{len(v['data'])} bytes>" if isinstance(v, dict) and "data" in v else v
                     for k, v in p.items()}
            line = f"  {method} {json.dumps(shown, ensure_ascii=False, default=str)[:200]}"
            if id(p) in failed:
                line += " -> %s %s" % failed[id(p)]
            lines.append(line)
        if self.dropped_updates:
            lines.append(f"  ({len(self.dropped_updates)} updates dropped by allowed_updates="
                         f"{self.allowed_updates})")
        return "\n".join(lines) or "  (none)"

    def bot_messages(self, chat_id: int) -> list[dict[str, Any]]:
        """The bot's messages in ``chat_id`` as they are now (edited, minus deleted), in order."""
        bot_ids = {b["id"] for b in self.tokens.values()}
        return [copy.deepcopy(m) for (c, _), m in sorted(self.messages.items())
                if c == chat_id and m.get("from", {}).get("id") in bot_ids]

    def message(self, chat_id: int, message_id: int) -> dict[str, Any] | None:
        found = self.messages.get((chat_id, message_id))
        return copy.deepcopy(found) if found is not None else None

    def commands_for(self, scope: dict | None = None, language_code: str = "") -> list[dict]:
        return self.my_commands.get(_scope_key(scope, language_code), [])

    # ------------------------------------------------------------ failure injection

    def fail(self, method: str, code: int, description: str | None = None, *,
             retry_after: int | None = None, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` answer ``code`` (thread-safe).

        429 gets ``parameters.retry_after`` (1 unless given) and the description
        "Too Many Requests: retry after N" unless one is given.
        """
        if code == 429:
            retry_after = 1 if retry_after is None else retry_after
            description = description or f"Too Many Requests: retry after {retry_after}"
        description = description or _DEFAULT_DESCRIPTIONS.get(code, "Error")
        with self._lock:
            queue = self._failures.setdefault(method.lower(), deque())
            queue.extend([(code, description, retry_after)] * times)

    def set_outage(self, on: bool) -> None:
        """While on, every request answers 502 Bad Gateway (thread-safe)."""
        self.outage = bool(on)

    # ------------------------------------------------------------ blocking twins

    def say(self, text: str, user: dict[str, Any] = OWNER, **kw: Any) -> dict[str, Any]:
        """``user_says`` from another thread while the fake runs ``in_thread``."""
        return self._sync(self.user_says(text, user, **kw))

    def tap(self, message_id: int, data: str, user: dict[str, Any] = OWNER, **kw: Any) -> str:
        return self._sync(self.user_taps(message_id, data, user, **kw))

    def send_document(self, data: bytes, filename: str, **kw: Any) -> dict[str, Any]:
        return self._sync(self.user_sends_document(data, filename, **kw))

    def send_photo(self, data: bytes, **kw: Any) -> dict[str, Any]:
        return self._sync(self.user_sends_photo(data, **kw))

    def wait_call(self, method: str, pred: Callable[[dict], bool] | None = None,
                  timeout: float = 10.0, *, ok: bool | None = True) -> dict[str, Any]:
        """``wait_for`` from another thread (blocks); returns a copy of the params."""
        return self._sync(self._copied(self.wait_for(method, pred, timeout, ok=ok)),
                          timeout + 5)

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of the state, taken on the fake's loop (safe from any thread)."""
        async def take() -> dict[str, Any]:
            return self._state()
        if self._loop is None or _in_loop(self._loop):
            return self._state()
        return self._sync(take())

    # ------------------------------------------------------------ running

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve on 127.0.0.1 (free port) in the current loop; yields the base URL."""
        self._loop = asyncio.get_running_loop()
        self._cond, self._seen, self._closing = asyncio.Condition(), asyncio.Condition(), False
        runner = web.AppRunner(self.app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            yield self.base
        finally:
            async with self._cond:
                self._closing = True
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
        self._pending.add(id(params))
        try:
            result = await self._answer(token, method, params)
        except _ApiError as exc:
            self.failed_calls.append((method, params, exc.code, exc.description))
            body: dict[str, Any] = {"ok": False, "error_code": exc.code,
                                    "description": exc.description}
            if exc.retry_after is not None:
                body["parameters"] = {"retry_after": exc.retry_after}
            response = web.json_response(body, status=exc.code)
        else:
            response = web.json_response({"ok": True, "result": result})
        finally:
            self._pending.discard(id(params))
            if self._seen is not None:
                async with self._seen:
                    self._seen.notify_all()
        return response

    async def _answer(self, token: str, method: str, params: dict) -> Any:
        if self.outage:
            raise _ApiError(502, "Bad Gateway")
        bot = self.tokens.get(token)
        if bot is None:
            raise _ApiError(401, "Unauthorized")
        with self._lock:
            queue = self._failures.get(method.lower())
            injected = queue.popleft() if queue else None
        if injected is not None:
            raise _ApiError(*injected)
        handler = self._handlers.get(method.lower())
        if handler is None:
            raise _ApiError(404, "Not Found")
        return await handler(bot, params)

    async def _download(self, request: web.Request) -> web.Response:
        if self.outage:
            return web.Response(status=502, text="Bad Gateway")
        found = next((f for f in self.files.values()
                      if f["file_path"] == request.match_info["path"]), None)
        if request.match_info["token"] not in self.tokens or found is None:
            return web.Response(status=404, text="Not Found")
        return web.Response(body=found["data"])

    async def m_getMe(self, bot: dict, p: dict) -> dict:
        return {**bot, "can_join_groups": True, "can_read_all_group_messages": False,
                "supports_inline_queries": False}

    async def m_deleteWebhook(self, bot: dict, p: dict) -> bool:
        return True

    async def m_getUpdates(self, bot: dict, p: dict) -> list:
        assert self._cond is not None
        if self.conflict:
            raise _ApiError(409, CONFLICT)
        offset = int(p.get("offset", 0) or 0)
        timeout = float(p.get("timeout", 0) or 0)
        limit = int(p.get("limit", 100) or 100)
        if "allowed_updates" in p:
            self.allowed_updates = p["allowed_updates"] or None

        def ready() -> bool:
            kept = []
            for u in self.updates:
                if u["update_id"] >= offset:
                    (kept if self._allowed(u) else self.dropped_updates).append(u)
            self.updates = kept
            return bool(kept) or self._closing

        async with self._cond:
            if not ready() and timeout > 0:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._cond.wait_for(ready), timeout)
            return list(self.updates[:limit])

    async def m_getChat(self, bot: dict, p: dict) -> dict:
        gifts = dict.fromkeys(("unlimited_gifts", "limited_gifts", "unique_gifts",
                               "premium_subscription", "gifts_from_channels"), False)
        return {**self._chat(p), "accent_color_id": 0, "max_reaction_count": 11,
                "accepted_gift_types": gifts}

    async def m_getChatMember(self, bot: dict, p: dict) -> dict:
        chat = self._chat(p)
        user_id = _int(p.get("user_id"))
        if user_id == bot["id"] and chat["type"] != "private" and self.bot_is_admin:
            rights = dict.fromkeys(
                ("can_manage_chat", "can_delete_messages", "can_manage_video_chats",
                 "can_restrict_members", "can_change_info", "can_invite_users",
                 "can_pin_messages", "can_manage_topics"), True)
            rights.update(dict.fromkeys(
                ("can_be_edited", "is_anonymous", "can_promote_members", "can_post_stories",
                 "can_edit_stories", "can_delete_stories", "can_send_welcome_messages"), False))
            return {"status": "administrator", "user": bot, **rights}
        user = bot if user_id == bot["id"] else self.users.get(user_id)  # type: ignore[arg-type]
        if user is None:
            raise _ApiError(400, "Bad Request: user not found")
        return {"status": "member", "user": user}

    async def m_sendMessage(self, bot: dict, p: dict) -> dict:
        chat = self._chat(p)
        text = str(p.get("text", ""))
        if not text.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        if _u16(text) > _TEXT_MAX:
            raise _ApiError(400, "Bad Request: message is too long")
        return self._bot_message(bot, chat["id"], p, text=text, entities=p.get("entities"),
                                 link_preview_options=p.get("link_preview_options"))

    async def m_sendDocument(self, bot: dict, p: dict) -> dict:
        return self._send_file(bot, p, "sendDocument", "document")

    async def m_sendPhoto(self, bot: dict, p: dict) -> dict:
        return self._send_file(bot, p, "sendPhoto", "photo")

    async def m_editMessageText(self, bot: dict, p: dict) -> dict:
        old = self._editable(bot, p)
        text = str(p.get("text", ""))
        if "text" not in old:
            raise _ApiError(400, "Bad Request: there is no text in the message to edit")
        if not text.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        if _u16(text) > _TEXT_MAX:
            raise _ApiError(400, "Bad Request: MESSAGE_TOO_LONG")
        return self._edit(old, text=text, entities=p.get("entities") or None,
                          reply_markup=_inline(p.get("reply_markup")))

    async def m_editMessageReplyMarkup(self, bot: dict, p: dict) -> dict:
        old = self._editable(bot, p)
        return self._edit(old, reply_markup=_inline(p.get("reply_markup")))

    async def m_deleteMessage(self, bot: dict, p: dict) -> bool:
        chat_id = self._chat(p)["id"]
        key = (chat_id, _int(p.get("message_id")))
        if self.messages.pop(key, None) is None:
            raise _ApiError(400, "Bad Request: message to delete not found")
        self.reactions.pop(key, None)
        if self.pinned.get(chat_id) == key[1]:
            del self.pinned[chat_id]
        return True

    async def m_answerCallbackQuery(self, bot: dict, p: dict) -> bool:
        query_id = str(p.get("callback_query_id", ""))
        if self._queries.pop(query_id, None) is None:
            raise _ApiError(400, QUERY_TOO_OLD)
        self.answers[query_id] = {**p, "text": p.get("text"),
                                  "show_alert": _bool(p.get("show_alert"))}
        return True

    async def m_setMessageReaction(self, bot: dict, p: dict) -> bool:
        key = (self._chat(p)["id"], _int(p.get("message_id")))
        if key not in self.messages:
            raise _ApiError(400, "Bad Request: message to react not found")
        emoji = [r.get("emoji") or r.get("custom_emoji_id") for r in p.get("reaction") or []]
        self.reactions[key] = emoji
        self.reaction_history.append((key[0], key[1], list(emoji)))
        return True

    async def m_pinChatMessage(self, bot: dict, p: dict) -> bool:
        chat = self._chat(p)
        message_id = _int(p.get("message_id"))
        if (chat["id"], message_id) not in self.messages:
            raise _ApiError(400, "Bad Request: message to pin not found")
        if chat["type"] != "private" and not self.bot_is_admin:
            raise _ApiError(400, "Bad Request: not enough rights to manage pinned messages "
                                 "in the chat")
        self.pinned[chat["id"]] = message_id
        return True

    async def m_unpinChatMessage(self, bot: dict, p: dict) -> bool:
        chat_id = self._chat(p)["id"]
        message_id = _int(p.get("message_id"))
        if message_id is None or self.pinned.get(chat_id) == message_id:
            self.pinned.pop(chat_id, None)
        return True

    async def m_setMyCommands(self, bot: dict, p: dict) -> bool:
        commands = p.get("commands") or []
        if not all(_COMMAND.fullmatch(str(c.get("command", ""))) and c.get("description")
                   for c in commands):
            raise _ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
        self.my_commands[_scope_key(p.get("scope"), p.get("language_code", ""))] = commands
        return True

    async def m_deleteMyCommands(self, bot: dict, p: dict) -> bool:
        self.my_commands.pop(_scope_key(p.get("scope"), p.get("language_code", "")), None)
        return True

    async def m_getMyCommands(self, bot: dict, p: dict) -> list:
        return self.my_commands.get(_scope_key(p.get("scope"), p.get("language_code", "")), [])

    async def m_sendChatAction(self, bot: dict, p: dict) -> bool:
        self._chat(p)
        return True

    async def m_getFile(self, bot: dict, p: dict) -> dict:
        found = self.files.get(str(p.get("file_id", "")))
        if found is None:
            raise _ApiError(400, "Bad Request: invalid file_id")
        if found["file_size"] > _GETFILE_MAX:
            raise _ApiError(400, "Bad Request: file is too big")
        return {k: found[k] for k in ("file_id", "file_unique_id", "file_size", "file_path")}

    # ------------------------------------------------------------ helpers

    def _chat(self, p: dict) -> dict:
        chat_id = _int(p.get("chat_id"))
        if chat_id is None:
            raise _ApiError(400, "Bad Request: chat_id is empty")
        if chat_id in self.blocked:
            raise _ApiError(403, "Forbidden: bot was kicked from the supergroup chat"
                            if chat_id < 0 else "Forbidden: bot was blocked by the user")
        chat = self.chats.get(chat_id)
        if chat is None:
            raise _ApiError(400, "Bad Request: chat not found")
        return {k: v for k, v in chat.items() if v is not None}

    def _user_chat(self, user: dict, chat_id: int | None) -> int:
        if chat_id is None:
            return self.add_private_chat(user)
        assert chat_id in self.chats, f"unknown chat {chat_id}: add it first"
        self.users[user["id"]] = user
        return chat_id

    def _thread(self, chat_id: int, thread_id: Any) -> dict:
        if thread_id is None:
            return {}
        forum = bool(self.chats[chat_id].get("is_forum"))
        return {"message_thread_id": int(thread_id), "is_topic_message": forum or None}

    def _store(self, chat_id: int, sender: dict, **fields: Any) -> dict:
        """A new message in ``chat_id`` (empty fields left out), kept in ``messages``."""
        n = self._next_message.get(chat_id, 0) + 1
        self._next_message[chat_id] = n
        chat = {k: v for k, v in self.chats[chat_id].items() if v is not None}
        message = {"message_id": n, "from": sender, "chat": chat, "date": int(time.time())}
        message.update({k: v for k, v in fields.items() if v is not None and v != []})
        self.messages[(chat_id, n)] = message
        return message

    def _reply_target(self, chat_id: int, message_id: Any) -> dict | None:
        if message_id is None:
            return None
        target = self.messages.get((chat_id, int(message_id)))
        if target is None:
            return None
        return {k: v for k, v in target.items() if k != "reply_to_message"}

    def _bot_message(self, bot: dict, chat_id: int, p: dict, **content: Any) -> dict:
        """Store and return what the bot sends, with reply, thread and inline markup."""
        reply = p.get("reply_parameters") or {}
        reply_id = reply.get("message_id", p.get("reply_to_message_id"))
        reply_chat = _int(reply.get("chat_id")) or chat_id
        target = self._reply_target(reply_chat, reply_id)
        if reply_id is not None and target is None and not _bool(
                reply.get("allow_sending_without_reply", p.get("allow_sending_without_reply"))):
            raise _ApiError(400, "Bad Request: message to be replied not found")
        message = self._store(chat_id, bot, **content, reply_to_message=target,
                              reply_markup=_inline(p.get("reply_markup")),
                              **self._thread(chat_id, p.get("message_thread_id")))
        self.sent.append(copy.deepcopy(message))
        return message

    def _send_file(self, bot: dict, p: dict, method: str, kind: str) -> dict:
        chat = self._chat(p)
        given = p.get(kind)
        if isinstance(given, dict) and "data" in given:
            if not given["data"]:
                raise _ApiError(400, "Bad Request: file must be non-empty")
            info = self._register(given["data"], given["filename"], kind)
            self.uploads.append({"method": method, "chat_id": chat["id"],
                                 "filename": given["filename"], "data": given["data"],
                                 "sha256": info["sha256"], "caption": p.get("caption")})
        elif isinstance(given, str) and given in self.files:
            info = self.files[given]
        else:
            raise _ApiError(400, "Bad Request: wrong file identifier/HTTP URL specified")
        if _u16(str(p.get("caption", ""))) > _CAPTION_MAX:
            raise _ApiError(400, "Bad Request: message caption is too long")
        return self._bot_message(bot, chat["id"], p, caption=p.get("caption"),
                                 caption_entities=p.get("caption_entities"),
                                 **self._media(kind, info))

    def _register(self, data: bytes, filename: str, kind: str) -> dict:
        self._counter += 1
        n = self._counter
        suffix = filename.rsplit(".", 1)[1] if "." in filename else "bin"
        info = {"file_id": f"{'AgAC' if kind == 'photo' else 'BQAC'}fake{n}",
                "file_unique_id": f"AQADfake{n}", "file_size": len(data),
                "file_path": f"{kind}s/file_{n}.{suffix}", "file_name": filename,
                "data": bytes(data), "sha256": hashlib.sha256(data).hexdigest()}
        self.files[info["file_id"]] = info
        return info

    @staticmethod
    def _media(kind: str, info: dict) -> dict:
        ids = {"file_id": info["file_id"], "file_unique_id": info["file_unique_id"]}
        if kind == "photo":
            return {"photo": [{**ids, "width": 0, "height": 0, "file_size": info["file_size"]}]}
        return {"document": {**ids, "file_name": info["file_name"],
                             "file_size": info["file_size"]}}

    def _editable(self, bot: dict, p: dict) -> dict:
        chat_id = self._chat(p)["id"]
        old = self.messages.get((chat_id, _int(p.get("message_id"))))
        if old is None:
            raise _ApiError(400, "Bad Request: message to edit not found")
        if old["from"]["id"] != bot["id"]:
            raise _ApiError(400, "Bad Request: message can't be edited")
        return old

    def _edit(self, old: dict, **changes: Any) -> dict:
        if all(old.get(k) == v for k, v in changes.items()):
            raise _ApiError(400, NOT_MODIFIED)
        new = {k: v for k, v in old.items() if k not in changes}
        new.update({k: v for k, v in changes.items() if v is not None})
        new["edit_date"] = int(time.time())
        self.messages[(old["chat"]["id"], old["message_id"])] = new
        return new

    def _allowed(self, update: dict) -> bool:
        kinds = set(update) - {"update_id"}
        if self.allowed_updates:
            return bool(kinds & set(self.allowed_updates))
        return not kinds & _OPT_IN_UPDATES

    async def _push(self, update: dict, check: bool = True) -> dict:
        assert self._cond is not None, "start the fake with running() first"
        async with self._cond:
            if "update_id" not in update:
                update = {"update_id": self._next_update, **update}
            self._next_update = max(self._next_update, update["update_id"]) + 1
            if check:
                Update.model_validate(update)  # what aiogram would refuse fails here, loudly
            self.updates.append(update)
            self._cond.notify_all()
        return update

    def _ok(self, params: dict) -> bool:
        return all(p is not params for _, p, _, _ in self.failed_calls)

    def _state(self) -> dict[str, Any]:
        names = ("calls", "failed_calls", "messages", "sent", "updates", "reactions",
                 "reaction_history", "pinned", "my_commands", "answers", "uploads", "chats")
        return copy.deepcopy({name: getattr(self, name) for name in names})

    async def _copied(self, coro: Any) -> Any:
        return copy.deepcopy(await coro)

    def _sync(self, coro: Any, timeout: float = 10.0) -> Any:
        assert self._loop is not None, "start the fake with in_thread() first"
        if _in_loop(self._loop):
            coro.close()
            raise AssertionError("blocking helper called on the fake's own loop: await the "
                                 "async one instead")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)


class _ApiError(Exception):
    def __init__(self, code: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.code, self.description, self.retry_after = code, description, retry_after


def _in_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _bool(value: Any) -> bool:
    return value in (True, 1, "true", "True", "1")


def _u16(text: str) -> int:
    """Length in UTF-16 code units, as Telegram counts offsets and limits."""
    return len(text.encode("utf-16-le")) // 2


def _inline(markup: Any) -> dict | None:
    """Messages carry only inline keyboards (reply keyboards are not part of them)."""
    return markup if isinstance(markup, dict) and "inline_keyboard" in markup else None


def _scope_key(scope: dict | None, language_code: str | None = "") -> str:
    key = json.dumps(scope or {"type": "default"}, sort_keys=True)
    return f"{key}|{language_code}" if language_code else key


async def _params(request: web.Request) -> dict[str, Any]:
    """Parameters of a call; uploaded files become ``{"filename", "data"}`` dicts."""
    params: dict[str, Any] = dict(request.query)
    files: dict[str, dict[str, Any]] = {}
    if request.content_type == "application/json":
        params.update(await request.json())
    elif request.content_type.startswith("multipart/"):
        async for part in await request.multipart():
            if part.filename is not None:  # type: ignore[union-attr]
                files[part.name] = {"filename": part.filename,  # type: ignore[union-attr]
                                    "data": bytes(await part.read())}  # type: ignore[union-attr]
            else:
                params[part.name] = await part.text()  # type: ignore[union-attr]
    else:
        params.update(await request.post())
    for key, value in list(params.items()):
        if isinstance(value, str) and value.startswith("attach://") and value[9:] in files:
            params[key] = files.pop(value[9:])
    params.update(files)  # a file part sent under the field's own name
    for key in _JSON_FIELDS & params.keys():
        if isinstance(params[key], str):
            with contextlib.suppress(ValueError):
                params[key] = json.loads(params[key])
    return params
