"""Who is this sender, and may they do this: the middleware in front of every message and tap.

``Access`` runs twice per update.  As an outer middleware it resolves *who*: only the
configured chat is served, and there the sender is resolved against the config
(``clients.members.Members``, which the web page shares): in a private chat its person
is the owner; in a group each member has the role the config gives them.  Anybody else is
never acted on: they get at most one "this bot is private" (or "not a member") reply per
person per day, within the chat's budget for strangers (``strangers.Strangers``) and
after everything the team waits for (``Post.low``); a tap gets a toast.  Only what is
answered is logged as a warning (a flood must not fill the log).  The config is read
again when its file changes, so a member added with ``aipager config member add`` counts
from the next message on.

As an inner middleware (``Access.rights``, once aiogram has picked the handler)
it checks *what*: a handler declares the right its role needs as a flag
(``rights.need``: ``{"rights": "prompt" | "approve" | "manage" | ""}``; a button the
same as the command it repeats, ``rights.like``), and a sender whose role lacks it is
refused before the handler runs, in ``actions.refusal``'s words (a message gets a reply,
a tap a toast).  A tap handler that declares nothing is held to the strictest right
(``rights.UNDECLARED``): a forgotten flag must not open a button to every member.  What
depends on the session ("only the task's author or an admin") is checked by the handler,
which knows the session.

``TapAnswer`` is aiogram's ``CallbackAnswerMiddleware``: handlers (and the
refusals here) set ``callback_answer.text``, and every tap is answered once,
after its handler.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Awaitable, Callable

from aiogram import BaseMiddleware
from aiogram.dispatcher.flags import get_flag
from aiogram.types import CallbackQuery, Message, TelegramObject
from aiogram.utils.callback_answer import CallbackAnswer, CallbackAnswerMiddleware

from aipager.bot import i18n, rights
from aipager.bot.chatstate import ChatState
from aipager.bot.outbox import Outbox, Post
from aipager.bot.strangers import Strangers
from aipager.clients.members import Members
from aipager.bot.i18n import N_, _
from aipager.clients.people import Sender, refusal

log = logging.getLogger("aipager.bot")

#: a stranger hears "this bot is private" at most this often
STRANGER_REPLY_EVERY = 24 * 3600.0
PRIVATE_TEXT = N_("🔒 This bot is private: it drives somebody's Claude Code sessions.")
NOT_MEMBER_TEXT = N_("🔒 You are not a member here: ask an admin for access.")


class TapAnswer(CallbackAnswerMiddleware):
    """aiogram's ``CallbackAnswerMiddleware``; an answer Telegram refuses (the tap is too
    old) changes nothing and is only logged."""

    async def answer(  # type: ignore[override]  # awaited by aiogram either way
            self, event: CallbackQuery, callback_answer: CallbackAnswer) -> None:
        try:
            await super().answer(event, callback_answer)
        except Exception as exc:  # noqa: BLE001 - the query may be too old: nothing to undo
            log.debug("toast failed: %s", exc)


class Access(BaseMiddleware):
    """Puts ``sender`` (a ``Sender``) into the handler data, or stops the update (outer);
    ``rights`` refuses a handler the sender's role may not use (inner)."""

    def __init__(self, members: Members, state: ChatState, outbox: Outbox,
                 strangers: Strangers, clock: Callable[[], float] = time.time,
                 policy: Callable[[], None] | None = None) -> None:
        self.members = members
        self.state = state
        self.outbox = outbox
        self.strangers = strangers
        self.clock = clock
        #: looks at the policy file first (``policywatch.PolicyWatch.check``): a member
        #: refused because it is damaged and the owner's notice of it arrive together
        self.policy = policy

    async def __call__(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                       event: TelegramObject, data: dict[str, Any]) -> Any:
        if isinstance(event, CallbackQuery):
            chat = event.message.chat if event.message is not None else None
        elif isinstance(event, Message):
            chat = event.chat
        else:
            return None
        user = event.from_user
        if chat is None or user is None or user.is_bot:
            return None
        if self.policy is not None:
            self.policy()
        sender = self.members.sender(chat.id, user)
        if sender is None and self._joining(event, chat.id):
            # An invitation code: the /join handler checks it; nothing else is reachable.
            data["sender"] = Sender(user.id, user.username or user.first_name or str(user.id),
                                    "guest", False, False, False)
            return await handler(event, data)
        if sender is None:
            await self._refuse(event, data, chat, user)
            return None
        data["sender"] = sender
        return await handler(event, data)

    async def rights(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                     event: TelegramObject, data: dict[str, Any]) -> Any:
        """The inner middleware: the handler's ``rights`` flag against the sender's role."""
        need = get_flag(data, "rights")
        if need is None and isinstance(event, CallbackQuery):
            need = rights.UNDECLARED
        why = refusal(data["sender"], need, tr=_) if need else None
        if not why:
            return await handler(event, data)
        if isinstance(event, CallbackQuery):
            data["callback_answer"].text = why
        elif isinstance(event, Message):
            self.outbox.put(Post(event.chat.id, f"🔒 {why}", reply_to=event.message_id))
        return None

    def _joining(self, event: TelegramObject, chat_id: int) -> bool:
        if not isinstance(event, Message) or chat_id != self.members.current().chat_id:
            return False
        head = (event.text or "").split(" ", 1)[0].split("@", 1)[0]
        return head == "/join"

    async def _refuse(self, event: TelegramObject, data: dict[str, Any], chat: Any,
                      user: Any) -> None:
        configured = chat.id == self.members.current().chat_id
        why = "not a member" if configured else "not this bot's chat"
        kind = type(event).__name__.lower()
        text = _(NOT_MEMBER_TEXT if configured else PRIVATE_TEXT)
        if isinstance(event, CallbackQuery):
            # A toast is seen by the tapper only and uses none of the chat's posts.
            log.warning("ignored %s from user %s in chat %s (%s)", kind, user.id, chat.id, why)
            data["callback_answer"].text = text
            return
        now = self.clock()
        last = self.state.strangers.get(str(user.id), 0.0)
        if ((chat.type != "private" and not configured)  # never talk in other people's groups
                or now - last < STRANGER_REPLY_EVERY or not self.strangers.may_reply(chat.id)):
            log.debug("ignored %s from user %s in chat %s (%s)", kind, user.id, chat.id, why)
            return
        log.warning("ignored %s from user %s in chat %s (%s)", kind, user.id, chat.id, why)
        # Day-old entries go: a stream of new accounts must not grow the saved state.
        self.state.strangers = {k: t for k, t in self.state.strangers.items()
                                if now - t < STRANGER_REPLY_EVERY}
        self.state.strangers[str(user.id)] = now
        self.outbox.put(Post(chat.id, text, low=True))
        self._report(data, chat, user, why)

    def _report(self, data: dict[str, Any], chat: Any, user: Any, why: str) -> None:
        """A stranger who was answered is audited and, when they wrote to the bot
        elsewhere than the team's chat, shown there, silently: the owner learns that
        somebody found the bot (at most once per person per day, as the answer)."""
        label = f"@{user.username}" if user.username else (user.first_name or "")[:64]
        actions = data.get("actions")
        if actions is not None:
            actions.audit("stranger_refused", {"user_id": user.id, "label": label, "role": ""},
                          chat_id=chat.id, reason=why)
        team = self.members.current()
        if chat.id == team.chat_id:
            return  # the team saw the refusal itself
        with i18n.use(i18n.chat_locale(self.members, self.state, team.chat_id)):
            line = _("👤 {name} (id {id}), who is not in the team, wrote to the bot and was "
                     "told it is private.").format(name=label or "?", id=user.id)
        self.outbox.put(Post(team.chat_id, line, low=True))
