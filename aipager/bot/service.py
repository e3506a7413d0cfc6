"""The Telegram bot as a daemon service: composition of the chat side, and its loops.

``ChatBot`` builds the aiogram ``Bot`` and ``Dispatcher`` (routers per concern,
the access middleware), the outbox, the chat state and the daemon-facing
``ChatNotifier``.  ``attach(port)`` binds it to the one door
(``aipager.port.door.Port``); ``run()`` is the service the composition root
(``aipager.main``) has the daemon start:
it handles first the updates the last run journaled and did not handle (``inbox``),
then polls for updates and keeps the command menu, the typing indicator and the
saved chat state current until the daemon stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from typing import Any, Coroutine, Iterable, Mapping

from aipager import config, locales
from aipager.proto import paths
from aipager import botapi
from aipager.aio import cancel_and_wait, every, spawn
from aipager.bot import chatstate, i18n, inbox, order, polling, view
from aipager.bot.access import Access, Members, TapAnswer
from aipager.bot.actions import Actions
from aipager.bot.i18n import N_, _
from aipager.bot.notify import ChatNotifier
from aipager.bot.privacywatch import PrivacyWatch
from aipager.bot.outbox import Action, Live, Outbox, Post
from aipager.bot.policywatch import PolicyWatch
from aipager.bot.settle import Settle
from aipager.bot.strangers import Strangers
from aipager.port.model import Session, State
from aipager.port.backend import SessionsView
from aipager.port.door import Port

log = logging.getLogger("aipager.bot")

#: seconds between saves of a changed chat state (an answer saves at once)
SAVE_SECONDS = 1.0
#: Telegram shows "typing…" for about 5 s
TYPING_SECONDS = 4.5
#: seconds between checks of the session shortcuts in the command menu
MENU_SECONDS = 3.0
#: the menu is set once the session list stayed the same this long (``settle``) ...
MENU_QUIET = 9.0
#: ... or, while sessions keep starting, at most this often
MENU_LONGEST = 60.0
#: seconds between looks at the policy file (a stat; the file is read when it changed)
POLICY_SECONDS = 3.0
#: seconds between removals of day-old files
FILES_SWEEP_SECONDS = 3600.0
#: how long shutdown waits for the outbox to empty (``$AIPAGER_STOP_GRACE`` seconds); what
#: is still unsent then is saved and sent by the next start
CLOSE_GRACE = 3.0
#: a Telegram command name
_COMMAND = re.compile(r"^[a-z0-9_]{1,32}$")

RESTARTED = N_("🔄 aipager is running again after an unclean stop; sessions carried on.")
#: the live key of that notice (one waits unsent at most: a crash loop queues no more)
RESTARTED_KEY = "daemon:restarted"
#: the live key of the notice of a clean stop, named by the run it ends (its ``started_at``):
#: the next start edits that very message to say it runs again
STOPPED_KEY = "daemon:stopped:{started:.3f}"


def stopped_notice(sessions: Iterable[Session]) -> str:
    """What the chat is told when the daemon stops cleanly (SIGINT/SIGTERM): that it
    stopped, and which sessions go on working or wait for an answer at the computer."""
    live = [s for s in sessions if view.is_live(s)]
    working = sorted(s.label for s in live if s.state == State.WORKING)
    waiting = sorted(s.label for s in live if s.state == State.WAITING)
    lines = [_("⏸ aipager stopped on the computer: nothing more from its sessions until it "
               "runs again, and what you send meanwhile waits for it (up to a day).")]
    if working:
        lines.append(_("⏳ Still working there: {sessions}.").format(sessions=", ".join(working)))
    if waiting:
        lines.append(_("🔐 Waiting for an answer at the computer: {sessions}.").format(
            sessions=", ".join(waiting)))
    return "\n".join(lines)


def resumed_notice(stopped_at: float, now: float) -> str:
    """What the notice of a clean stop says once the next start runs."""
    return _("⏸ aipager stopped on the computer at {stopped}; ▶️ running again since "
             "{started}.").format(stopped=time.strftime("%H:%M", time.localtime(stopped_at)),
                                  started=time.strftime("%H:%M", time.localtime(now)))


def close_grace(env: Mapping[str, str]) -> float:
    """``$AIPAGER_STOP_GRACE`` seconds (0 or more), else :data:`CLOSE_GRACE`."""
    try:
        value = float(env.get("AIPAGER_STOP_GRACE", ""))
    except ValueError:
        return CLOSE_GRACE
    return value if 0 <= value <= 60 else CLOSE_GRACE


class ChatBot:
    """The chat side of one daemon.

    Args:
        env: paths and knobs (``AIPAGER_TELEGRAM_API_BASE`` points at another Bot API).
        cfg: the loaded config (token, chat, members).
        unclean: the previous daemon did not stop cleanly (say so in the chat, first).
        last_run: what the previous daemon saved of itself (``daemon`` of its state:
            ``started_at``, ``stopped_at``): the notice of its clean stop is edited to
            say this one runs.
    """

    def __init__(self, env: Mapping[str, str], cfg: config.Config, *, unclean: bool = False,
                 last_run: Mapping[str, Any] | None = None) -> None:
        self.env = dict(env)
        self.members = Members(self.env, cfg)
        self.unclean = unclean
        self.state = chatstate.load(self.env)
        resumed = self._last_run(unclean, last_run or {})
        base = cfg.extra.get("api_base") if isinstance(cfg.extra.get("api_base"), str) else None
        self.bot = botapi.build_bot(cfg.bot_token, botapi.api_base(self.env) or base)
        self.outbox = Outbox(self.bot, self.state, on_change=self._changed,
                             locale_for=self.chat_locale)
        #: updates kept on disk from receipt until handled and saved
        self.inbox = inbox.Inbox(paths.updates_journal_file(self.env), self.state.handled,
                                 on_change=lambda: self._changed(False))
        #: what the last run journaled and left unhandled (``inbox.load``, read once)
        self._left: list[dict[str, Any]] | None = None
        #: the one door ``main`` composed (``attach``)
        self.port: Port | None = None
        #: private mode, read again when the config changes, told once when switched
        self.privacy = PrivacyWatch(self.env, self.members, self.state, self.outbox,
                                    self.chat_locale)
        self.notifier = ChatNotifier(self.outbox, self.state, self._registry, self.chats_for,
                                     self._spawn, env=self.env, locale_for=self.chat_locale,
                                     types_again=self.types_again,
                                     privacy=self.privacy.mode)
        self.username: str | None = None
        #: "ok", or what is wrong with reaching Telegram ("unreachable", "conflict", "token")
        self.telegram = "starting"
        self._dirty = False
        #: tells the chat when the policy file stops or starts being usable
        self.policy = PolicyWatch(self.members, self.outbox,
                                  self._policy_problem, self.chat_locale)
        self._closed = False
        self._tasks: set[asyncio.Task] = set()
        self._chat_locks: dict[int, asyncio.Lock] = {}
        self._clock = time.monotonic
        self._menu_settle: Settle[list[str]] = Settle(self.state.menu, MENU_QUIET, MENU_LONGEST)
        if resumed is not None:
            self.outbox.put(resumed)

    # -- wiring ---------------------------------------------------------------------

    def _last_run(self, unclean: bool, last_run: Mapping[str, Any]) -> Live | None:
        """What the chat says of the last run, before anything this one sends: after an
        unclean stop, that aipager runs again, ahead of what the last run left unsent and of
        what this one replays (put first in the saved queue the outbox starts from); after a
        clean stop the chat was told of, the edit of that notice (returned: queued once the
        outbox is made).  A stop notice the last run could not send any more is dropped: it
        runs again."""
        chat_id = self.members.current().chat_id
        pending = [op for op in self.state.pending
                   if not getattr(op, "key", "").startswith("daemon:stopped:")]
        with i18n.use(self.chat_locale(chat_id)):
            if unclean and not any(getattr(op, "key", "") == RESTARTED_KEY for op in pending):
                pending.insert(0, Post(chat_id, _(RESTARTED), key=RESTARTED_KEY, urgent=True))
            self.state.pending = pending
            started, stopped = last_run.get("started_at"), last_run.get("stopped_at")
            if unclean or not isinstance(started, (int, float)) \
                    or not isinstance(stopped, (int, float)):
                return None
            key = STOPPED_KEY.format(started=started)
            if self.state.live_id(key, chat_id) is None:
                return None  # never shown (or forgotten): nothing to edit
            return Live(chat_id, resumed_notice(stopped, time.time()), key=key)

    def _say_stopped(self) -> None:
        """The daemon stops cleanly: the chat is told once, with what goes on without it
        (a new message: the last stop's notice stays as it was)."""
        if self.port is None:
            return
        chat_id = self.members.current().chat_id
        key = STOPPED_KEY.format(started=self.port.started_at)
        with i18n.use(self.chat_locale(chat_id)):
            text = stopped_notice(self._registry())
        self.state.forget_live(key)
        self.outbox.put(Post(chat_id, text, key=key), urgent=True)

    def attach(self, port: Port) -> None:
        """Bind to the one door ``main`` composed for every surface (the use cases and the
        daemon's read-only view), before it serves."""
        self.port = port
        self.members.attach(port)
        self.notifier.started_at = port.started_at
        # Diff previews are a per-chat setting: the daemon makes them, the notifier
        # shows them only to chats that turned them on.
        port.set_previews(True)
        port.add_facts(self.facts)

    def _policy_problem(self) -> str:
        """Why the owner's policy cannot be used, as the door says ("" before it is bound)."""
        return self.port.policy_problem() if self.port is not None else ""

    def facts(self) -> dict[str, Any]:
        """The chat's health for ``aipager status``: Telegram reachable, what waits to be sent."""
        return {"chat": {"chat_id": self.members.current().chat_id,
                         "telegram": "unreachable" if self.outbox.failing() else self.telegram,
                         "unsent": len(self.outbox.pending()),
                         "bot": self.username, **self.outbox.counters}}

    def _unhandled(self) -> list[dict[str, Any]]:
        if self._left is None:
            self._left = self.inbox.load()
        return self._left

    def types_again(self, chat_id: int, msg_id: int) -> bool:
        """Whether the run handles the message again (its update was left unhandled: the
        last run was killed before its Enter), so types it; asked by the daemon's recovery
        of cut-off pastes, which runs before this service."""
        return any(inbox.message_of(raw) == (chat_id, msg_id) for raw in self._unhandled())

    def _registry(self) -> SessionsView | dict:
        return self.port.sessions if self.port is not None else {}

    def chats_for(self, session: str) -> list[int]:
        """The chats a session reports to: the configured chat."""
        return [self.members.current().chat_id]

    def chat_locale(self, chat_id: int) -> str:
        """The language of what the chat says on its own (``i18n.chat_locale``)."""
        return i18n.chat_locale(self.members, self.state, chat_id)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        spawn(self._tasks, coro, log, "a chat action")

    # -- state saving ---------------------------------------------------------------

    def _changed(self, urgent: bool) -> None:
        self._dirty = True
        if urgent or self._closed:
            self.save()

    def save(self) -> None:
        self.state.pending = self.outbox.pending()
        self.state.handled = self.inbox.handled()
        try:
            chatstate.save(self.env, self.state)
        except OSError as exc:
            log.error("cannot save the chat state: %s", exc)
            return
        self._dirty = False
        # only now: the journal keeps what the saved state does not say is handled
        self.inbox.trim(self.state.handled)

    # -- the service ----------------------------------------------------------------

    def dispatcher(self, actions: Actions) -> Any:
        from aiogram import Dispatcher
        from aiogram.fsm.storage.memory import MemoryStorage

        from aipager.bot.routers import app, commands, messages, taps, team

        # The FSM ("your next message is the answer") lives in memory, as the picks do:
        # a restart forgets what it asked for.
        dp = Dispatcher(storage=MemoryStorage())
        strangers = Strangers()
        access = Access(self.members, self.state, self.outbox, strangers,
                        policy=self.policy.check)
        # Taps are answered first of all, so that every tap (a stranger's, a refused one,
        # one a handler fails on) is answered once, after its handler, with the text the
        # handler or the refusal set.
        dp.callback_query.outer_middleware(TapAnswer())
        # Then the person's language, around everything that answers them (a stranger's
        # refusal included).
        i18n.LocaleMiddleware(self.state, self.members).setup(dp)
        # Who sends this (strangers stop here), then, once the handler is known, whether
        # their role has the right its ``rights`` flag names.
        dp.message.outer_middleware(access)
        dp.callback_query.outer_middleware(access)
        dp.message.middleware(access.rights)
        dp.callback_query.middleware(access.rights)
        # Order matters: the answer the chat asked for first (``/tmp/x`` is a path there),
        # team commands and commands (the catch-all /<session> last among them) before
        # plain text.
        dp.include_routers(messages.make_answers_router(), team.make_router(),
                           app.make_router(), commands.make_router(),
                           taps.make_router(), messages.make_router())
        dp["actions"] = actions
        dp["members"] = self.members
        dp["strangers"] = strangers
        dp["picks"] = {}
        dp["albums"] = {}
        dp["bot_identity"] = (self.bot.id, None)
        return dp

    async def run(self) -> None:
        """The daemon service: runs until cancelled at daemon shutdown."""
        if self.port is None:
            msg = "attach the chat to the daemon's port before running it"
            raise RuntimeError(msg)
        actions = Actions(self.port, self.state, self.outbox, privacy=self.privacy.mode)
        self.notifier.release = actions.release
        dp = self.dispatcher(actions)
        self.outbox.start()
        loops = [self._every(SAVE_SECONDS, self._save_if_dirty),
                 self._every(TYPING_SECONDS, self._typing),
                 self._every(MENU_SECONDS, self._menu_settled),
                 self._every(POLICY_SECONDS, self.policy.check),
                 self._every(POLICY_SECONDS, self.privacy.check),
                 self._every(FILES_SWEEP_SECONDS, self._sweep_files),
                 self._introduce(dp)]
        for coro in loops:
            self._spawn(coro)

        async def handle(update: Any) -> None:
            await self._handle(dp, update)

        def health(state: str) -> None:
            self.telegram = state

        try:
            # what the last run received and did not handle goes first, in order
            for raw in self._unhandled():
                update = polling.parse(self.bot, raw)
                if update is None:
                    self.inbox.done(raw.get("update_id"))
                else:
                    await handle(update)
            await polling.poll(self.bot, handle, on_health=health, inbox=self.inbox)
        finally:
            await cancel_and_wait(self._tasks)
            if self.port.stopping:
                self._say_stopped()
            await self.outbox.close(close_grace(self.env))
            self._closed = True
            self.save()
            self.inbox.close()
            with contextlib.suppress(Exception):
                await self.bot.session.close()

    async def _handle(self, dp: Any, update: Any) -> None:
        """One update: messages of a chat in order (a slow one delays only its chat, and
        one that steps aside, ``order.step_aside``, not even that), taps at once."""
        chat = update.message.chat.id if update.message is not None else None
        if chat is None:
            self._spawn(self._feed(dp, update))
            return
        lock = self._chat_locks.setdefault(chat, asyncio.Lock())

        async def in_order() -> None:
            await lock.acquire()
            held = True

            def release() -> None:
                nonlocal held
                if held:
                    held = False
                    lock.release()

            order.holding(release)  # a long handler (a voice note) may let the next go
            try:
                await self._feed(dp, update)
            finally:
                release()

        self._spawn(in_order())

    async def _feed(self, dp: Any, update: Any) -> None:
        """Run the update's handler; then (whatever the outcome) it is handled.  Its prompt
        marks it handled earlier, right before typing (``inbox.acting``).  Cancelled (a
        stop) it is not: the next start handles it."""
        uid = update.update_id
        inbox.handling(lambda: self.inbox.done(uid))
        try:
            await dp.feed_update(self.bot, update)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one failed action must not stop the bot
            log.exception("a chat action failed")
        self.inbox.done(uid)

    async def _every(self, seconds: float, fn: Any) -> None:
        await every(seconds, fn, log)

    def _save_if_dirty(self) -> None:
        if self._dirty:
            self.save()

    async def _sweep_files(self) -> None:
        from aipager import files

        removed = await asyncio.to_thread(files.sweep, self.env)
        if removed:
            log.info("removed %d file(s) older than a day", removed)

    def _typing(self) -> None:
        if any(s.state == State.WORKING for s in self._registry()):
            for chat_id in {self.members.current().chat_id}:
                self.outbox.put(Action(chat_id, "typing"))

    async def _introduce(self, dp: Any) -> None:
        """getMe and the command menu (retried until Telegram answers); with a damaged chat
        state, one line in the chat first."""
        from aiogram.types import BotCommand

        chat_id = self.members.current().chat_id
        with i18n.use(self.chat_locale(chat_id)):
            # (after an unclean stop the chat heard so first of all: ``_last_run``)
            if self.state.damaged:
                # once: the next save writes a sound file
                self.outbox.put(Post(chat_id, _("⚠️ aipager: {problem}. Old cards and buttons no "
                                                "longer answer.").format(problem=self.state.damaged),
                                     buzz=True))
                self.state.damaged = ""
        delay = 1.0
        while True:
            try:
                me = await self.bot.get_me()
                self.username = me.username
                if self.telegram == "starting":
                    self.telegram = "ok"
                dp["bot_identity"] = (me.id, me.username)
                for code, menu in i18n.commands_menu(view.COMMANDS).items():
                    await self.bot.set_my_commands([BotCommand(command=c, description=d)
                                                    for c, d in menu], language_code=code or None)
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - Telegram down: try again later
                log.debug("bot introduction failed: %s", exc)
                await asyncio.sleep(delay)
                delay = min(30.0, delay * 2)

    def _menu_names(self) -> list[str]:
        return sorted(s.label for s in self._registry()
                      if view.is_live(s) and _COMMAND.match(s.label)
                      and s.label not in view.RESERVED)[:50]

    async def _menu_settled(self) -> None:
        """The menu set once the session list has settled (``settle``): four calls per
        settled change, not per session started."""
        # what Telegram shows is the state's (a failed call is offered again, after ``quiet``)
        self._menu_settle.published = self.state.menu
        names = self._menu_settle.offer(self._menu_names(), self._clock())
        if names is not None:
            await self._set_menu(names)

    async def _menu(self) -> None:
        """One ``/<session>`` per live session in the chat's command menu, now."""
        names = self._menu_names()
        if names != self.state.menu:
            await self._set_menu(names)

    async def _set_menu(self, names: list[str]) -> None:
        from aiogram.types import BotCommand, BotCommandScopeChat

        scope = BotCommandScopeChat(chat_id=self.members.current().chat_id)
        for code, menu in i18n.commands_menu(view.COMMANDS).items():
            with i18n.use(locales.from_telegram(code)):
                commands = [BotCommand(command=n, description=_("Talk to session {name}").format(
                    name=n)) for n in names]
            commands += [BotCommand(command=c, description=d) for c, d in menu]
            await self.bot.set_my_commands(commands[:100], scope=scope, language_code=code or None)
        self.state.menu = names
        self._dirty = True


def previous_run_unclean(state: Mapping[str, Any]) -> bool:
    """Whether the saved daemon state says the last daemon ended without a clean stop."""
    daemon = state.get("daemon") or {}
    return daemon.get("started_at") is not None and daemon.get("stopped_at") is None


def chat_bot(env: Mapping[str, str], cfg: config.Config, saved: Mapping[str, Any]) -> ChatBot:
    """The chat side, as the composition root (``aipager.main``) builds it."""
    return ChatBot(env, cfg, unclean=previous_run_unclean(saved),
                   last_run=saved.get("daemon") or {})


__all__ = ["ChatBot", "chat_bot", "previous_run_unclean", "resumed_notice", "stopped_notice"]
