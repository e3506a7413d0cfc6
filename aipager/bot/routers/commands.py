"""Slash commands: /start, /help, /status, /new, /resume, /stop, /kill, /compact, /model,
/settings, and ``/<session> [text]`` for each session."""

from __future__ import annotations

import logging
import re
from typing import Any, Awaitable

from aiogram import F, Router
from aiogram.filters import Command, CommandObject, CommandStart
from aiogram.types import Message

from aipager.bot import view
from aipager.bot.actions import Actions, Sender, refusal
from aipager.bot.callbacks import SessionTap, SettingTap, packed
from aipager.bot.chatstate import STYLES
from aipager.bot.outbox import Op
from aipager.daemon.model import Session, State
from aipager.errors import AipagerError

log = logging.getLogger("aipager.bot")

#: a Telegram command name (what ``/<session>`` needs to be)
COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")


def refused(actions: Actions, message: Message, sender: Sender, what: str,
            sess: Session | None = None) -> bool:
    """Say why ``sender`` may not do this, if so (True: stop here)."""
    why = refusal(sender, what, sess)
    if why:
        actions.say(message.chat.id, f"🔒 {why}", reply_to=message.message_id)
    return bool(why)


def session_buttons(actions: Actions, sessions: list[Session], act: str) -> dict | None:
    rows = []
    for sess in sessions:
        handle = actions.state.handle("session", sess.name)
        rows.append([(sess.label, packed(SessionTap(h=handle, act=act)))])
    return view.keyboard(rows)


def pick_or_run(actions: Actions, message: Message, name: str | None, act: str,
                candidates: list[Session]) -> Session | None:
    """The session a command names, or the one candidate; otherwise a picker is shown
    (or a word that there is none) and None returned."""
    chat_id = message.chat.id
    if name:
        sess = actions.find(name)
        if sess is None or not view.is_live(sess):
            actions.say(chat_id, f"No running session called {name}. /status lists them.",
                        reply_to=message.message_id)
            return None
        return sess
    current = actions.target(chat_id, None)
    if current is not None and current in candidates:
        return current
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        actions.say(chat_id, "No session to do that to.", reply_to=message.message_id)
        return None
    actions.say(chat_id, view.picker_text(act), markup=session_buttons(actions, candidates, act),
                reply_to=message.message_id)
    return None


async def on_help(message: Message, actions: Actions) -> None:
    current = actions.state.current.get(str(message.chat.id))
    actions.say(message.chat.id, view.help_text(actions.sessions(), current))


async def on_status(message: Message, actions: Actions) -> None:
    import time

    chat_id = message.chat.id
    current = actions.state.current.get(str(chat_id))
    live = actions.live_sessions()
    markup = session_buttons(actions, [s for s in live if s.name != current], "use")
    text = view.status_screen(actions.sessions(), current, time.time())
    if markup:
        text += "\n\nTap a session to send your messages there."
    actions.say(chat_id, text, markup=markup)


async def on_new(message: Message, command: CommandObject, actions: Actions, sender: Sender,
                 pending_names: dict) -> None:
    if refused(actions, message, sender, "manage"):
        return
    args = (command.args or "").strip()
    if not args:
        pending_names[(message.chat.id, sender.user_id)] = True
        actions.say(message.chat.id, "Name for the new session? (letters, digits, - and _; "
                    "not starting with -)", reply_to=message.message_id)
        return
    await start_session(actions, message, sender, *name_and_first(args))


def name_and_first(text: str) -> tuple[str, str]:
    """``NAME [first message]``: the name ends at the first space, newline or tab.

    Any whitespace ends it: a newline kept in a name once started a session
    that could be neither listed nor ended.
    """
    parts = text.split(maxsplit=1) + ["", ""]
    return parts[0], parts[1].strip()


async def start_session(actions: Actions, message: Message, sender: Sender, name: str,
                        first: str) -> None:
    chat_id = message.chat.id
    existing = actions.find(name)
    if existing is not None and view.is_live(existing) and existing.socket_seen:
        actions.say(chat_id, f"{existing.label} is already running; your messages go there now.",
                    reply_to=message.message_id)
        actions.state.current[str(chat_id)] = existing.name
        return
    try:
        session = await actions.new_session(name)
    except AipagerError as exc:
        # the error names the session; a refused name shows escaped there, on one line
        actions.say(chat_id, f"Cannot start the session: {exc}", reply_to=message.message_id)
        return
    actions.state.current[str(chat_id)] = session
    actions.audit("session_new", sender, session=session)
    label = session.removeprefix("claude-")
    actions.say(chat_id, f"🆕 {label} started in {actions.default_folder}. "
                f"Your messages go there now.", reply_to=message.message_id, session=session)
    if first:
        if not await actions.wait_ready(session):
            log.warning("session %s sent no SessionStart yet; typing the first message anyway",
                        session)
        sess = actions.registry.get(session)
        if sess is not None:
            await actions.deliver(sess, chat_id, message.message_id, first, sender)


async def on_resume(message: Message, actions: Actions, sender: Sender) -> None:
    if refused(actions, message, sender, "manage"):
        return
    ended = [s for s in actions.sessions() if s.state == State.GONE and s.claude_session_id]
    if not ended:
        actions.say(message.chat.id, "No ended session to resume.")
        return
    actions.say(message.chat.id, view.picker_text("resume"),
                markup=session_buttons(actions, ended[-10:], "resume"))


async def on_stop(message: Message, command: CommandObject, actions: Actions,
                  sender: Sender) -> None:
    busy = [s for s in actions.live_sessions() if s.state in (State.WORKING, State.WAITING)]
    sess = pick_or_run(actions, message, command.args, "stop", busy)
    if sess is not None and not refused(actions, message, sender, "stop", sess):
        await stop_session(actions, message.chat.id, sess)


async def _tell(actions: Actions, chat_id: int, sess: Session, work: Awaitable[Any],
                done: str, failed: str) -> None:
    """Run ``work`` on a session and say how it went."""
    try:
        await work
    except AipagerError as exc:
        actions.say(chat_id, f"{failed} {sess.label}: {exc}")
        return
    actions.say(chat_id, done, session=sess.name)


async def stop_session(actions: Actions, chat_id: int, sess: Session) -> None:
    try:
        pressed = await actions.stop(sess)
    except AipagerError as exc:
        actions.say(chat_id, f"Cannot stop {sess.label}: {exc}")
        return
    if pressed:  # a repeated stop said nothing new
        actions.say(chat_id, f"⏹ Stop sent to {sess.label}.", session=sess.name)


async def _chosen(actions: Actions, message: Message, command: CommandObject, sender: Sender,
                  need: str, act: str) -> Session | None:
    """The live session a command is about, if the sender may do ``need``."""
    if refused(actions, message, sender, need):
        return None
    return pick_or_run(actions, message, command.args, act, actions.live_sessions())


async def on_kill(message: Message, command: CommandObject, actions: Actions,
                  sender: Sender) -> None:
    sess = await _chosen(actions, message, command, sender, "manage", "kill")
    if sess is not None:
        ask_kill(actions, message.chat.id, sess)


def kill_key(session: str) -> str:
    """The live message asking whether to end ``session``: its outcome replaces it."""
    return f"kill:{session}"


#: how the open question starts (``shown``); once answered it shows the outcome instead
KILL_ASK = "End session "


def ask_kill(actions: Actions, chat_id: int, sess: Session) -> None:
    handle = actions.state.handle("session", sess.name)
    markup = view.keyboard([[("🗑 Yes, end it", packed(SessionTap(h=handle, act="kill_yes"))),
                             ("Cancel", packed(SessionTap(h=handle, act="kill_no")))]])
    text = f"{KILL_ASK}{sess.label}? Claude Code and what it started stop."
    key = kill_key(sess.name)
    actions.state.forget_live(key)  # an older question's buttons no longer answer
    actions.state.show(key, text)
    actions.outbox.put(Op("post", chat_id, text, markup=markup, key=key))


async def on_compact(message: Message, command: CommandObject, actions: Actions,
                     sender: Sender) -> None:
    sess = await _chosen(actions, message, command, sender, "prompt", "compact")
    if sess is not None:
        await compact(actions, message.chat.id, sess)


async def compact(actions: Actions, chat_id: int, sess: Session) -> None:
    await _tell(actions, chat_id, sess, actions.type_command(sess, "/compact"),
                f"📦 /compact sent to {sess.label}.", "Cannot compact")


async def on_model(message: Message, command: CommandObject, actions: Actions,
                   sender: Sender) -> None:
    if refused(actions, message, sender, "manage"):
        return
    model = (command.args or "").strip()
    if not model or not re.fullmatch(r"[A-Za-z0-9._\[\]-]{1,64}", model):
        actions.say(message.chat.id, "Which model? For example: /model opus, /model sonnet.",
                    reply_to=message.message_id)
        return
    sess = pick_or_run(actions, message, None, "use", actions.live_sessions())
    if sess is None:
        return
    try:
        await actions.switch_model(sess, model)
    except (AipagerError, ValueError, OSError) as exc:
        actions.say(message.chat.id, f"Cannot switch {sess.label} to {model}: {exc}")
        return
    actions.say(message.chat.id, f"🧠 {sess.label}: switching to {model}.", session=sess.name)


def settings_view(actions: Actions, chat_id: int) -> tuple[str, dict | None]:
    prefs = actions.state.prefs_of(chat_id)
    styles = list(STYLES)
    style = prefs.get("style") or ""
    next_style = styles[(styles.index(style) + 1) % len(styles)] if style in styles else ""
    diffs = bool(prefs.get("diffs"))
    detail = prefs.get("detail", "full")
    text = "\n".join([
        "⚙️ Settings for this chat",
        f"Reply style: {STYLES.get(style, style) if style else 'Claude’s own'}",
        f"Diff previews: {'on' if diffs else 'off'}",
        f"Card detail: {detail}",
    ])
    markup = view.keyboard([
        [("💬 Reply style ›", packed(SettingTap(name="style", value=next_style or "own")))],
        [(f"📝 Diff previews: turn {'off' if diffs else 'on'}",
          packed(SettingTap(name="diffs", value="off" if diffs else "on")))],
        [(f"🗂 Card detail: {'compact' if detail == 'full' else 'full'}",
          packed(SettingTap(name="detail", value="compact" if detail == "full" else "full")))],
    ])
    return text, markup


async def on_settings(message: Message, actions: Actions) -> None:
    text, markup = settings_view(actions, message.chat.id)
    actions.say(message.chat.id, text, markup=markup)


async def on_session_command(message: Message, actions: Actions, sender: Sender) -> None:
    """``/<session>`` makes it current; ``/<session> text`` sends text to it; anything
    else starting with / is an unknown command."""
    head, _, rest = (message.text or "").partition(" ")
    name = head[1:].split("@", 1)[0]
    sess = actions.find(name) if name else None
    if sess is None or not view.is_live(sess):
        actions.say(message.chat.id, f"Unknown command {head[:40]}. /help lists what I "
                    "understand.", reply_to=message.message_id)
        return
    rest = rest.strip()
    if refused(actions, message, sender, "prompt"):
        return
    if not rest:
        actions.state.current[str(message.chat.id)] = sess.name
        actions.say(message.chat.id, f"Your messages go to {sess.label} now.", session=sess.name)
        return
    await actions.deliver(sess, message.chat.id, message.message_id, rest, sender)


def make_router() -> Router:
    """The commands handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="commands")
    router.message.register(on_help, CommandStart())
    router.message.register(on_help, Command("help"))
    router.message.register(on_status, Command("status"))
    router.message.register(on_new, Command("new"))
    router.message.register(on_resume, Command("resume"))
    router.message.register(on_stop, Command("stop"))
    router.message.register(on_kill, Command("kill"))
    router.message.register(on_compact, Command("compact"))
    router.message.register(on_model, Command("model"))
    router.message.register(on_settings, Command("settings"))
    router.message.register(on_session_command, F.text.startswith("/"))
    return router
