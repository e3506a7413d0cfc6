"""A fake Telegram Bot API server (aiohttp) for driving the real aiogram client.

Serves ``/bot{token}/{method}`` like the real API: form, multipart or JSON
parameters in (nested objects as JSON strings, files as ``attach://<key>``),
``{"ok": true, "result": <full Bot API object>}`` or ``{"ok": false, "error_code",
"description"[, "parameters"]}`` out.  Method names are case-insensitive;
unknown ones get 404, so a bot that starts using a new method fails loudly.

What it knows:

- ``tokens`` (others get 401); ``chats``: private chats of users who wrote and
  groups the test added (others: "chat not found"; ``blocked`` ones: 403).
- ``messages[(chat_id, message_id)]``: every user and bot message as it is now
  (text, entities, inline markup, nested reply_to_message, thread, edit_date,
  document/photo); ``sent``: the bot's messages as first sent.
- ``getUpdates``: a real long poll with offset confirmation and limit
  (``allowed_updates`` is not applied).  Updates made by the helpers are
  checked with aiogram's ``Update`` model, so aiogram never rejects a batch.
- ``reactions``/``reaction_history``, ``pinned``, ``my_commands`` (per scope),
  callback ``answers``, ``uploads`` (with sha256), getFile and the
  ``/file/bot{token}/{path}`` download, getChat, getChatMember (the bot
  administers groups while ``bot_is_admin``).
- ``calls``: every request as ``(method, params)``, in the order answered;
  ``failed_calls``: the refused ones as ``(method, params, code, description)``.
- Failures on demand: ``fail(...)``, ``drop_after_accepting(...)`` (done, answer lost),
  ``outage`` (every request answers 502),
  ``conflict`` (getUpdates answers 409).

Not simulated: service messages, privacy mode (the test decides what the bot
sees), inline mode, webhooks, photo sizes (one, 0x0).

Run it in the test's loop (``async with fake.running() as base``; the ``user_*``
coroutines, ``wait_for``) or in a thread for a bot with its own loop or process
(``with fake.in_thread() as base``; the blocking ``say``, ``tap``,
``send_document``, ``send_photo``, ``wait_call``, ``snapshot``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
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
_DESCRIPTIONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
                 409: "Conflict", 500: "Internal Server Error", 502: "Bad Gateway"}
_TEXT_MAX, _CAPTION_MAX = 4096, 1024
_ADMIN_RIGHTS = ("can_manage_chat", "can_delete_messages", "can_manage_video_chats",
                 "can_restrict_members", "can_promote_members", "can_change_info",
                 "can_invite_users", "can_post_stories", "can_edit_stories", "can_delete_stories",
                 "can_send_welcome_messages", "can_pin_messages", "can_manage_topics")
_ADMIN = {"status": "administrator", "can_be_edited": False, "is_anonymous": False,
          **dict.fromkeys(_ADMIN_RIGHTS, True)}

Params = dict[str, Any]


class FakeBotAPI:
    """State and handlers of one fake Bot API server."""

    def __init__(self) -> None:
        self.tokens: dict[str, dict] = {TOKEN: dict(BOT_USER)}
        self.chats: dict[int, dict] = {}
        self.blocked: set[int] = set()
        self.calls: list[tuple[str, Params]] = []
        self.failed_calls: list[tuple[str, Params, int, str]] = []
        self.updates: list[dict] = []
        self.messages: dict[tuple[int, int], dict] = {}
        self.sent: list[dict] = []
        self.reactions: dict[tuple[int, int], list[str]] = {}
        self.reaction_history: list[tuple[int, int, list[str]]] = []
        self.pinned: dict[int, int] = {}
        self.my_commands: dict[str, list[dict]] = {}
        self.answers: dict[str, Params] = {}
        self.uploads: list[dict] = []
        self.files: dict[str, dict] = {}  # file_id → info, data and sha256
        self.outage = self.conflict = False
        self.bot_is_admin = True
        self.base = ""
        self._queries: dict[str, dict] = {}  # unanswered callback queries
        self._failures: dict[str, deque[tuple[int, str, int | None]]] = {}
        self._drops: dict[str, int] = {}
        self._next_message: dict[int, int] = {}
        self._counter, self._next_update, self._closing, self._lock = 0, 1, False, threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        # set by running(): updates changed / a call was answered
        self._cond: asyncio.Condition | None = None
        self._seen: asyncio.Condition | None = None
        self._handlers = {n[2:].lower(): getattr(self, n) for n in dir(self) if n[:2] == "m_"}
        self.app = web.Application()
        self.app.router.add_route("*", "/bot{token}/{method}", self._handle)
        self.app.router.add_get("/file/bot{token}/{path:.+}", self._download)

    # ------------------------------------------------------------ chats
    def add_private_chat(self, user: dict = OWNER) -> int:
        """Make ``user`` a person who has talked to the bot; returns the chat id."""
        self.chats[user["id"]] = {"id": user["id"], "type": "private",
                                  "first_name": user.get("first_name", ""),
                                  "username": user.get("username")}
        return user["id"]

    def add_group_chat(self, chat_id: int, title: str, forum: bool = False) -> int:
        """A supergroup with the bot in it (``chat_id`` made negative); returns its id."""
        chat_id = -abs(chat_id)
        self.chats[chat_id] = {"id": chat_id, "type": "supergroup", "title": title,
                               "is_forum": True if forum else None}
        return chat_id

    # ------------------------------------------------------------ user input
    async def user_says(self, text: str, user: dict = OWNER, chat_id: int | None = None,
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

    async def user_taps(self, message_id: int, data: str, user: dict = OWNER,
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
                                  user: dict = OWNER, chat_id: int | None = None,
                                  media_group_id: str | None = None,
                                  reply_to: int | None = None) -> dict:
        """A document from ``user``; getFile and the download route serve it."""
        return await self._user_file("document", data, filename, caption, user, chat_id,
                                     media_group_id, reply_to)

    async def user_sends_photo(self, data: bytes, caption: str | None = None, user: dict = OWNER,
                               chat_id: int | None = None,
                               media_group_id: str | None = None) -> dict:
        """A photo from ``user`` (one size); served like a document."""
        return await self._user_file("photo", data, "photo.jpg", caption, user, chat_id,
                                     media_group_id)

    async def push_raw_update(self, update: dict) -> dict:
        """Queue ``update`` as it is (not checked); ``update_id`` is added if missing."""
        return await self._push(update, check=False)

    # ------------------------------------------------------------ reading
    def methods(self) -> list[str]:
        return [m for m, _ in self.calls]

    def everything_received(self) -> str:
        """Every call's method and every parameter, uploaded files' names and bytes
        included, as one text: what Telegram's servers would have been handed (refused
        calls too). A canary that is not in it never reached the Bot API."""
        def plain(value: Any) -> Any:
            if isinstance(value, (bytes, bytearray)):
                return bytes(value).decode("utf-8", "replace")
            if isinstance(value, dict):
                return {str(k): plain(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [plain(v) for v in value]
            return value
        return "\n".join(f"{method} " + json.dumps(plain(params), ensure_ascii=False, default=str)
                         for method, params in list(self.calls))

    def calls_of(self, method: str, ok: bool | None = None) -> list[Params]:
        """Params of the calls of ``method``: all, or only succeeded (True) / failed (False)."""
        return [p for m, p in self.calls if m.lower() == method.lower()
                and (ok is None or self._ok(p) == ok)]

    async def wait_for(self, method: str, pred: Callable[[Params], bool] | None = None,
                       timeout: float = 5.0, *, ok: bool | None = True) -> Params:
        """Params of the first answered call of ``method`` matching ``pred`` (past ones too).

        Succeeded calls only by default (``ok=False``: refused ones, ``None``: any).
        Runs in the fake's loop; from another thread use ``wait_call``.
        """
        assert self._seen is not None, "start the fake with running() first"

        def find() -> tuple[Params] | None:
            for m, p in list(self.calls):
                if (m.lower() == method.lower() and (ok is None or self._ok(p) == ok)
                        and (pred is None or pred(p))):
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
        """The last calls, one a line, refusals marked (for assertion messages)."""
        failed = {id(p): f" -> {code} {desc}" for _, p, code, desc in self.failed_calls}
        lines = []
        for method, p in self.calls[-last:]:
            text = json.dumps(p, ensure_ascii=False, default=str)[:200]
            lines.append(f"  {method} {text}{failed.get(id(p), '')}")
        return "\n".join(lines) or "  (none)"

    def bot_messages(self, chat_id: int) -> list[dict]:
        """The bot's messages in ``chat_id`` as they are now (edited, minus deleted), in order."""
        bot_ids = {b["id"] for b in self.tokens.values()}
        return [copy.deepcopy(m) for (c, _), m in sorted(self.messages.items())
                if c == chat_id and m.get("from", {}).get("id") in bot_ids]

    def message(self, chat_id: int, message_id: int) -> dict | None:
        return copy.deepcopy(self.messages.get((chat_id, message_id)))

    def commands_for(self, scope: dict | None = None, language_code: str = "") -> list[dict]:
        return self.my_commands.get(_scope_key(scope, language_code), [])

    # ------------------------------------------------------------ failures on demand
    def fail(self, method: str, code: int, description: str | None = None, *,
             retry_after: int | None = None, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` answer ``code`` (thread-safe); a 429
        carries ``parameters.retry_after`` (1 unless given), "retry after N" in its text."""
        if code == 429:
            retry_after = 1 if retry_after is None else retry_after
            description = description or f"Too Many Requests: retry after {retry_after}"
        description = description or _DESCRIPTIONS.get(code, "Error")
        with self._lock:
            queue = self._failures.setdefault(method.lower(), deque())
            queue.extend([(code, description, retry_after)] * times)

    def drop_after_accepting(self, method: str, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` are carried out (a message is stored and
        shown) but the connection is closed before the answer: what a dropped mobile or
        proxy connection does; the client cannot know the message arrived."""
        with self._lock:
            self._drops[method.lower()] = self._drops.get(method.lower(), 0) + times

    def set_outage(self, on: bool) -> None:
        """While on, every request answers 502 Bad Gateway (thread-safe)."""
        self.outage = bool(on)

    # ------------------------------------------------------------ blocking twins (other threads)
    def say(self, text: str, user: dict = OWNER, **kw: Any) -> dict:
        return self._sync(self.user_says(text, user, **kw))

    def tap(self, message_id: int, data: str, user: dict = OWNER, **kw: Any) -> str:
        return self._sync(self.user_taps(message_id, data, user, **kw))

    def send_document(self, data: bytes, filename: str, **kw: Any) -> dict:
        return self._sync(self.user_sends_document(data, filename, **kw))

    def send_photo(self, data: bytes, **kw: Any) -> dict:
        return self._sync(self.user_sends_photo(data, **kw))

    def wait_call(self, method: str, pred: Callable[[Params], bool] | None = None,
                  timeout: float = 10.0, *, ok: bool | None = True) -> Params:
        """``wait_for`` from another thread (blocks); returns a copy of the params."""
        return copy.deepcopy(self._sync(self.wait_for(method, pred, timeout, ok=ok), timeout + 5))

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of the state, taken on the fake's loop (safe from any thread)."""
        if self._loop is None or asyncio._get_running_loop() is self._loop:
            return self._state()
        return self._sync(self._astate())

    # ------------------------------------------------------------ running
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Serve on 127.0.0.1 (free port) in the current loop; yields the base URL."""
        self._loop = asyncio.get_running_loop()
        self._cond, self._seen, self._closing = asyncio.Condition(), asyncio.Condition(), False
        runner = web.AppRunner(self.app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self.base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            yield self.base
        finally:
            async with self._cond:  # release pending long polls
                self._closing = True
                self._cond.notify_all()
            await runner.cleanup()

    @contextlib.contextmanager
    def in_thread(self) -> Iterator[str]:
        """Serve from a background thread with its own loop; yields the base URL."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        run = lambda coro: asyncio.run_coroutine_threadsafe(coro, loop).result(10)  # noqa: E731
        serving = self.running()
        try:
            base = run(serving.__aenter__())
            try:
                yield base
            finally:
                run(serving.__aexit__(None, None, None))
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()

    # ------------------------------------------------------------ server side
    async def _handle(self, request: web.Request) -> web.Response:
        token, method = request.match_info["token"], request.match_info["method"]
        params = await _params(request)
        try:
            response = web.json_response({"ok": True,
                                          "result": await self._answer(token, method, params)})
        except _ApiError as exc:
            self.failed_calls.append((method, params, exc.code, exc.description))
            body = {"ok": False, "error_code": exc.code, "description": exc.description}
            if exc.retry_after is not None:
                body["parameters"] = {"retry_after": exc.retry_after}
            response = web.json_response(body, status=exc.code)
        finally:  # recorded once answered, so wait_for sees how it went
            self.calls.append((method, params))
            if self._seen is not None:
                async with self._seen:
                    self._seen.notify_all()
        with self._lock:
            drop = self._drops.get(method.lower(), 0)
            if drop:
                self._drops[method.lower()] = drop - 1
        if drop and request.transport is not None:
            request.transport.abort()  # done, but the answer never reaches the client
        return response

    async def _answer(self, token: str, method: str, params: Params) -> Any:
        _need(not self.outage, "Bad Gateway", 502)
        bot = self.tokens.get(token)
        _need(bot, "Unauthorized", 401)
        with self._lock:
            queue = self._failures.get(method.lower())
            injected = queue.popleft() if queue else None
        if injected is not None:
            raise _ApiError(*injected)
        handler = self._handlers.get(method.lower())
        _need(handler, "Not Found", 404)
        return await handler(bot, params)

    async def _download(self, request: web.Request) -> web.Response:
        path, token = request.match_info["path"], request.match_info["token"]
        found = next((f for f in self.files.values() if f["file_path"] == path), None)
        if self.outage or token not in self.tokens or found is None:
            return web.Response(status=502 if self.outage else 404)
        return web.Response(body=found["data"])

    async def m_getMe(self, bot: dict, p: Params) -> dict:
        return {**bot, "can_join_groups": True, "can_read_all_group_messages": False,
                "supports_inline_queries": False}

    async def m_deleteWebhook(self, bot: dict, p: Params) -> bool:
        return True

    async def m_getUpdates(self, bot: dict, p: Params) -> list:
        assert self._cond is not None
        _need(not self.conflict, CONFLICT, 409)
        offset, timeout = int(p.get("offset") or 0), float(p.get("timeout") or 0)

        def ready() -> bool:
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
            return bool(self.updates) or self._closing

        async with self._cond:
            if not ready() and timeout > 0:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._cond.wait_for(ready), timeout)
            return self.updates[:int(p.get("limit") or 100)]

    async def m_getChat(self, bot: dict, p: Params) -> dict:
        gifts = dict.fromkeys(("unlimited_gifts", "limited_gifts", "unique_gifts",
                               "premium_subscription", "gifts_from_channels"), False)
        return {**self._chat(p), "accent_color_id": 0, "max_reaction_count": 11,
                "accepted_gift_types": gifts}

    async def m_getChatMember(self, bot: dict, p: Params) -> dict:
        chat, user_id = self._chat(p), _int(p.get("user_id"))
        if user_id == bot["id"] and chat["type"] != "private" and self.bot_is_admin:
            return {**_ADMIN, "user": bot}
        known = self.chats.get(user_id, {})  # a private chat tells the user's name
        user = bot if user_id == bot["id"] else {"id": user_id, "is_bot": False,
                                                 "first_name": known.get("first_name", "?")}
        return {"status": "member", "user": user}

    async def m_sendMessage(self, bot: dict, p: Params) -> dict:
        chat, text = self._chat(p), str(p.get("text", ""))
        _check_text(text, "Bad Request: message is too long")
        return self._bot_message(bot, chat["id"], p, text=text, entities=p.get("entities"),
                                 link_preview_options=p.get("link_preview_options"))

    async def m_sendDocument(self, bot: dict, p: Params) -> dict:
        return self._send_file(bot, p, "sendDocument", "document")

    async def m_sendPhoto(self, bot: dict, p: Params) -> dict:
        return self._send_file(bot, p, "sendPhoto", "photo")

    async def m_editMessageText(self, bot: dict, p: Params) -> dict:
        old, text = self._editable(bot, p), str(p.get("text", ""))
        _need("text" in old, "Bad Request: there is no text in the message to edit")
        _check_text(text, "Bad Request: MESSAGE_TOO_LONG")
        return self._edit(old, text=text, entities=p.get("entities") or None,
                          reply_markup=_inline(p.get("reply_markup")))

    async def m_editMessageReplyMarkup(self, bot: dict, p: Params) -> dict:
        return self._edit(self._editable(bot, p), reply_markup=_inline(p.get("reply_markup")))

    async def m_deleteMessage(self, bot: dict, p: Params) -> bool:
        key = (self._chat(p)["id"], _int(p.get("message_id")))
        _need(self.messages.pop(key, None), "Bad Request: message to delete not found")
        self.reactions.pop(key, None)
        if self.pinned.get(key[0]) == key[1]:
            del self.pinned[key[0]]
        return True

    async def m_answerCallbackQuery(self, bot: dict, p: Params) -> bool:
        query_id = str(p.get("callback_query_id", ""))
        _need(self._queries.pop(query_id, None), QUERY_TOO_OLD)
        self.answers[query_id] = {**p, "text": p.get("text"),
                                  "show_alert": _bool(p.get("show_alert"))}
        return True

    async def m_setMessageReaction(self, bot: dict, p: Params) -> bool:
        key = (self._chat(p)["id"], _int(p.get("message_id")))
        _need(key in self.messages, "Bad Request: message to react not found")
        emoji = [r.get("emoji") or r.get("custom_emoji_id") for r in p.get("reaction") or []]
        self.reactions[key] = emoji
        self.reaction_history.append((key[0], key[1], list(emoji)))
        return True

    async def m_pinChatMessage(self, bot: dict, p: Params) -> bool:
        chat, message_id = self._chat(p), _int(p.get("message_id"))
        _need((chat["id"], message_id) in self.messages, "Bad Request: message to pin not found")
        _need(chat["type"] == "private" or self.bot_is_admin,
              "Bad Request: not enough rights to manage pinned messages in the chat")
        self.pinned[chat["id"]] = message_id
        return True

    async def m_unpinChatMessage(self, bot: dict, p: Params) -> bool:
        chat_id, message_id = self._chat(p)["id"], _int(p.get("message_id"))
        if message_id is None or self.pinned.get(chat_id) == message_id:
            self.pinned.pop(chat_id, None)
        return True

    async def m_setMyCommands(self, bot: dict, p: Params) -> bool:
        self.my_commands[_scope_key(p.get("scope"), p.get("language_code"))] = p["commands"]
        return True

    async def m_deleteMyCommands(self, bot: dict, p: Params) -> bool:
        self.my_commands.pop(_scope_key(p.get("scope"), p.get("language_code")), None)
        return True

    async def m_getMyCommands(self, bot: dict, p: Params) -> list:
        return self.my_commands.get(_scope_key(p.get("scope"), p.get("language_code")), [])

    async def m_sendChatAction(self, bot: dict, p: Params) -> bool:
        self._chat(p)
        return True

    async def m_getFile(self, bot: dict, p: Params) -> dict:
        found = self.files.get(str(p.get("file_id", "")))
        _need(found, "Bad Request: invalid file_id")
        return {k: found[k] for k in ("file_id", "file_unique_id", "file_size", "file_path")}

    # ------------------------------------------------------------ helpers
    def _chat(self, p: Params) -> dict:
        chat_id = _int(p.get("chat_id"))
        _need(chat_id is not None, "Bad Request: chat_id is empty")
        _need(chat_id not in self.blocked, "Forbidden: bot was blocked by the user", 403)
        _need(chat_id in self.chats, "Bad Request: chat not found")
        return {k: v for k, v in self.chats[chat_id].items() if v is not None}

    def _user_chat(self, user: dict, chat_id: int | None) -> int:
        if chat_id is None:
            return self.add_private_chat(user)
        assert chat_id in self.chats, f"unknown chat {chat_id}: add it first"
        return chat_id

    def _thread(self, chat_id: int, thread_id: Any) -> dict:
        if thread_id is None:
            return {}
        return {"message_thread_id": int(thread_id),
                "is_topic_message": True if self.chats[chat_id].get("is_forum") else None}

    def _store(self, chat_id: int, sender: dict, **fields: Any) -> dict:
        """A new message in ``chat_id`` (empty fields left out), kept in ``messages``."""
        n = self._next_message[chat_id] = self._next_message.get(chat_id, 0) + 1
        chat = {k: v for k, v in self.chats[chat_id].items() if v is not None}
        message = {"message_id": n, "from": sender, "chat": chat, "date": int(time.time())}
        message.update({k: v for k, v in fields.items() if v is not None and v != []})
        self.messages[(chat_id, n)] = message
        return message

    def _reply_target(self, chat_id: int, message_id: Any) -> dict | None:
        target = self.messages.get((chat_id, _int(message_id)))
        if target is None:
            return None
        return {k: v for k, v in target.items() if k != "reply_to_message"}

    def _bot_message(self, bot: dict, chat_id: int, p: Params, **content: Any) -> dict:
        """Store and return what the bot sends, with its reply, thread and inline markup."""
        reply = p.get("reply_parameters") or {}
        reply_id = reply.get("message_id", p.get("reply_to_message_id"))
        target = self._reply_target(_int(reply.get("chat_id")) or chat_id, reply_id)
        without = reply.get("allow_sending_without_reply", p.get("allow_sending_without_reply"))
        _need(reply_id is None or target or _bool(without),
              "Bad Request: message to be replied not found")
        message = self._store(chat_id, bot, **content, reply_to_message=target,
                              reply_markup=_inline(p.get("reply_markup")),
                              **self._thread(chat_id, p.get("message_thread_id")))
        self.sent.append(copy.deepcopy(message))
        return message

    def _send_file(self, bot: dict, p: Params, method: str, kind: str) -> dict:
        chat, given = self._chat(p), p.get(kind)
        _need(_u16(str(p.get("caption", ""))) <= _CAPTION_MAX,
              "Bad Request: message caption is too long")
        if isinstance(given, dict) and "data" in given:
            _need(given["data"], "Bad Request: file must be non-empty")
            info = self._register(given["data"], given["filename"], kind)
            self.uploads.append({"method": method, "chat_id": chat["id"],
                                 "filename": given["filename"], "data": given["data"],
                                 "sha256": info["sha256"], "caption": p.get("caption")})
        elif isinstance(given, str) and given in self.files:
            info = self.files[given]
        else:
            raise _ApiError(400, "Bad Request: wrong file identifier/HTTP URL specified")
        return self._bot_message(bot, chat["id"], p, caption=p.get("caption"),
                                 caption_entities=p.get("caption_entities"),
                                 **_media(kind, info))

    async def _user_file(self, kind: str, data: bytes, filename: str, caption: str | None,
                         user: dict, chat_id: int | None, media_group_id: str | None,
                         reply_to: int | None = None) -> dict:
        chat_id = self._user_chat(user, chat_id)
        message = self._store(chat_id, user, caption=caption, media_group_id=media_group_id,
                              reply_to_message=self._reply_target(chat_id, reply_to),
                              **_media(kind, self._register(data, filename, kind)))
        await self._push({"message": message})
        return message

    def _register(self, data: bytes, filename: str, kind: str) -> dict:
        self._counter += 1
        n, suffix = self._counter, filename.rsplit(".", 1)[-1] if "." in filename else "bin"
        info = {"file_id": f"{'AgAC' if kind == 'photo' else 'BQAC'}fake{n}",
                "file_unique_id": f"AQADfake{n}", "file_size": len(data),
                "file_path": f"{kind}s/file_{n}.{suffix}", "file_name": filename,
                "data": bytes(data), "sha256": hashlib.sha256(data).hexdigest()}
        self.files[info["file_id"]] = info
        return info

    def _editable(self, bot: dict, p: Params) -> dict:
        old = self.messages.get((self._chat(p)["id"], _int(p.get("message_id"))))
        _need(old, "Bad Request: message to edit not found")
        _need(old["from"]["id"] == bot["id"], "Bad Request: message can't be edited")
        return old

    def _edit(self, old: dict, **changes: Any) -> dict:
        _need(any(old.get(k) != v for k, v in changes.items()), NOT_MODIFIED)
        new = {k: v for k, v in old.items() if k not in changes}
        new.update({k: v for k, v in changes.items() if v is not None})
        new["edit_date"] = int(time.time())
        self.messages[(old["chat"]["id"], old["message_id"])] = new
        return new

    async def _push(self, update: dict, check: bool = True) -> dict:
        assert self._cond is not None, "start the fake with running() first"
        async with self._cond:
            update = {"update_id": self._next_update, **update}
            self._next_update = max(self._next_update, update["update_id"] + 1)
            if check:
                Update.model_validate(update)  # what aiogram would refuse fails here, loudly
            self.updates.append(update)
            self._cond.notify_all()
        return update

    def _ok(self, params: Params) -> bool:
        return all(p is not params for _, p, _, _ in self.failed_calls)

    def _state(self) -> dict[str, Any]:
        names = ("calls", "failed_calls", "messages", "sent", "updates", "reactions",
                 "reaction_history", "pinned", "my_commands", "answers", "uploads", "chats")
        return copy.deepcopy({name: getattr(self, name) for name in names})

    async def _astate(self) -> dict[str, Any]:
        return self._state()

    def _sync(self, coro: Any, timeout: float = 10.0) -> Any:
        assert self._loop is not None, "start the fake with in_thread() first"
        if asyncio._get_running_loop() is self._loop:
            coro.close()
            raise AssertionError("a blocking helper on the fake's own loop: await the async one")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)


def _need(ok: Any, description: str, code: int = 400) -> None:
    if not ok:
        raise _ApiError(code, description)


class _ApiError(Exception):
    def __init__(self, code: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.code, self.description, self.retry_after = code, description, retry_after


def _check_text(text: str, too_long: str) -> None:
    _need(text.strip(), "Bad Request: message text is empty")
    _need(_u16(text) <= _TEXT_MAX, too_long)


def _media(kind: str, info: dict) -> dict:
    ids = {"file_id": info["file_id"], "file_unique_id": info["file_unique_id"]}
    if kind == "photo":
        return {"photo": [{**ids, "width": 0, "height": 0, "file_size": info["file_size"]}]}
    return {"document": {**ids, "file_name": info["file_name"], "file_size": info["file_size"]}}


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
    """Messages carry inline keyboards only (reply keyboards are not part of them)."""
    return markup if isinstance(markup, dict) and "inline_keyboard" in markup else None


def _scope_key(scope: dict | None, language_code: str | None = "") -> str:
    key = json.dumps(scope or {"type": "default"}, sort_keys=True)
    return f"{key}|{language_code}" if language_code else key


async def _params(request: web.Request) -> Params:
    """Parameters of a call; uploaded files become ``{"filename", "data"}`` dicts."""
    params: Params = dict(request.query)
    files: dict[str, dict] = {}
    if request.content_type == "application/json":
        params.update(await request.json())
    elif request.content_type.startswith("multipart/"):
        async for part in await request.multipart():
            if part.filename is not None:
                files[part.name] = {"filename": part.filename,
                                    "data": bytes(await part.read())}
            else:
                params[part.name] = await part.text()
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
