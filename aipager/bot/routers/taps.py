"""Button taps: permission answers, session buttons (stop, use, kill, compact, resume,
picker), settings.  Every tap is answered (a toast or nothing), and a tap whose
handle is unknown (an old button, forged data) acts on nothing."""

from __future__ import annotations

import logging

from aiogram import F, Router
from aiogram.types import CallbackQuery

from aipager.bot import view
from aipager.bot.actions import Actions, Sender, refusal
from aipager.bot.callbacks import QuestionTap, RequestTap, SessionTap, SettingTap
from aipager.bot.chatstate import STYLES
from aipager.bot.outbox import Op
from aipager.bot.routers.commands import (KILL_ASK, ask_kill, compact, kill_key, settings_view,
                                          stop_session)
from aipager.daemon.model import State
from aipager.daemon.port import Already, ByHook, ByKeys, Gone, InTerminal, KeysFailed, Refused
from aipager.errors import AipagerError

log = logging.getLogger("aipager.bot")

EXPIRED = "This button has expired."
_KINDS = {"allow": "allow", "always": "allow_always", "deny": "deny", "stop": "stop"}


async def _toast(query: CallbackQuery, text: str = "") -> None:
    try:
        await query.answer(text or None)
    except Exception as exc:  # noqa: BLE001 - the query may be too old: nothing to undo
        log.debug("toast failed: %s", exc)


async def on_request_tap(query: CallbackQuery, callback_data: RequestTap, actions: Actions,
                         sender: Sender) -> None:
    value = actions.state.resolve("request", callback_data.h)
    if value is None or "\0" not in value:
        await _toast(query, EXPIRED)
        return
    session, key = value.split("\0", 1)
    act = callback_data.act
    scoped = act[1:].isdigit() and act.startswith("s")
    if not scoped and act not in _KINDS:
        await _toast(query, EXPIRED)  # forged or from another version
        return
    kind = "allow_always" if scoped else _KINDS[act]
    sess = actions.registry.get(session)
    why = refusal(sender, "approve", sess)
    if why:
        await _toast(query, why)
        return
    try:
        outcome = await actions.port.answer_request(
            session, key, kind, sender.who, suggestion=int(act[1:]) if scoped else None)
    except ValueError:
        await _toast(query, EXPIRED)
        return
    match outcome:
        case Already():
            await _toast(query, "Already answered.")
        case Gone():
            await _toast(query, "This request is no longer open.")
        case InTerminal():
            await _toast(query, "The plan waits in the terminal now: answer it there.")
        case KeysFailed(reason=reason) | Refused(reason=reason):
            await _toast(query, f"Could not answer: {reason}")
        case ByHook() | ByKeys():
            await _toast(query, {"allow": "Allowed", "always": "Always allowed",
                                 "deny": "Denied", "stop": "Denied and stopped"}
                         .get(act, "Always allowed"))


async def on_question_tap(query: CallbackQuery, callback_data: QuestionTap, actions: Actions,
                          sender: Sender, pending_other: dict) -> None:
    value = actions.state.resolve("ask", callback_data.h)
    if value is None or "\0" not in value:
        await _toast(query, EXPIRED)
        return
    session, key = value.split("\0", 1)
    rkey = f"req:{session}:{key}"
    ask = actions.state.asks.get(rkey)
    if ask is None:
        await _toast(query, "This question is no longer open.")
        return
    why = refusal(sender, "approve", actions.registry.get(session))
    if why:
        await _toast(query, why)
        return
    q = ask["questions"][ask["step"]]
    act, i = callback_data.act, callback_data.i
    if act in ("p", "t") and not 0 <= i < len(q["options"]):
        await _toast(query, EXPIRED)
        return
    if act == "x":
        outcome = await actions.decline_questions(ask, sender)
        await _toast(query, "Declined." if isinstance(outcome, ByKeys) else _unanswered(outcome))
        return
    if act == "o":
        pending_other[(ask["chat"], sender.user_id)] = rkey
        await _toast(query)
        actions.say(ask["chat"], f"✍️ Send your answer to “{q['question'][:80]}” as your next "
                    "message.", session=session)
        return
    if act == "t":
        toggled = set(ask.get("toggled") or [])
        toggled ^= {i}
        ask["toggled"] = sorted(toggled)
        await _toast(query)
        show_question(actions, rkey, ask)
        return
    picks = [i] if act == "p" else list(ask.get("toggled") or [])
    await record_answer(actions, rkey, ask, sender, {"picks": picks, "text": ""})
    await _toast(query, "Answered.")


async def record_answer(actions: Actions, rkey: str, ask: dict, sender: Sender,
                        answer: dict) -> None:
    """One question answered: the next one is shown, or after the last the keys go in."""
    ask["answers"].append(answer)
    ask["step"] += 1
    ask["toggled"] = []
    if ask["step"] < len(ask["questions"]):
        show_question(actions, rkey, ask)
        return
    outcome = await actions.answer_questions(ask, sender)
    if not isinstance(outcome, ByKeys):
        actions.say(ask["chat"], f"{_unanswered(outcome)} Nothing was typed.")


def _unanswered(outcome: object) -> str:
    """Why a question's answer typed nothing."""
    match outcome:
        case KeysFailed(reason=reason) | Refused(reason=reason):
            return f"Could not answer: {reason}."
        case Gone():
            return "This question is no longer open."
        case _:
            return "That question was already answered."


def show_question(actions: Actions, rkey: str, ask: dict) -> None:
    session = ask["session"]
    handle = actions.state.handle("ask", f"{session}\0{ask['key']}")
    text, markup = view.question_view(session.removeprefix("claude-"), ask, handle)
    actions.state.show(rkey, text)
    actions.outbox.put(Op("live", ask["chat"], text, markup=markup, key=rkey, session=session))


async def on_session_tap(query: CallbackQuery, callback_data: SessionTap, actions: Actions,
                         sender: Sender, picks: dict) -> None:
    name = actions.state.resolve("session", callback_data.h)
    sess = actions.registry.get(name) if name else None
    chat_id = query.message.chat.id if query.message is not None else 0
    act = callback_data.act
    if sess is None or not chat_id:
        await _toast(query, EXPIRED)
        return
    need = {"stop": "stop", "kill": "manage", "kill_yes": "manage", "kill_no": "manage",
            "resume": "manage"}.get(act, "prompt")
    why = refusal(sender, need, sess)
    if why:
        await _toast(query, why)
        return
    if act == "resume":
        await _toast(query)
        await _resume(actions, chat_id, sess, sender)
        return
    if not view.is_live(sess):
        await _toast(query, f"{sess.label} is not running.")
        return
    if act == "stop":
        if sess.state not in (State.WORKING, State.WAITING):
            await _toast(query, f"{sess.label} is not working on anything.")
            return
        await _toast(query, "Stopping…")
        await stop_session(actions, chat_id, sess)
    elif act == "use":
        actions.state.current[str(chat_id)] = sess.name
        await _toast(query, f"Messages go to {sess.label} now.")
        actions.say(chat_id, f"Your messages go to {sess.label} now.", session=sess.name)
    elif act == "kill":
        await _toast(query)
        ask_kill(actions, chat_id, sess)
    elif act in ("kill_yes", "kill_no"):
        # One question, one answer: the outcome replaces it (and its buttons); a second
        # tap, even one racing the first, finds it answered.
        key = kill_key(sess.name)
        msg_id = query.message.message_id if query.message is not None else None
        if (actions.state.live_id(key, query.message.chat.id if query.message else None) != msg_id
                or not actions.state.shown.get(key, "").startswith(KILL_ASK)):
            await _toast(query, "Already answered.")
            return
        actions.state.show(key, "…")
        if act == "kill_no":
            await _toast(query, "Kept running.")
            outcome = f"{sess.label} kept running (cancelled by {sender.tag})."
        else:
            await _toast(query, f"Ending {sess.label}…")
            ended = await actions.kill(sess)
            actions.audit("session_kill", sender, session=sess.name)
            outcome = (f"🗑 {sess.label} ended by {sender.tag}." if ended
                       else f"{sess.label} was not running.")
        actions.state.show(key, outcome)
        actions.outbox.put(Op("live", chat_id, outcome, key=key))
    elif act == "compact":
        await _toast(query)
        await compact(actions, chat_id, sess)
    elif act.startswith("m") and act[1:].isdigit():
        pick = picks.pop(int(act[1:]), None)
        if pick is None:
            await _toast(query, EXPIRED)
            return
        p_chat, msg_id, text, who, quoted = pick
        actions.state.current[str(p_chat)] = sess.name  # picked once: the next ones go there too
        await _toast(query, f"Sent to {sess.label}.")
        await actions.deliver(sess, p_chat, msg_id, text, who, quoted)
    else:
        await _toast(query, EXPIRED)


async def _resume(actions: Actions, chat_id: int, sess, sender: Sender) -> None:
    if view.is_live(sess) and sess.socket_seen:
        actions.say(chat_id, f"{sess.label} is running already.")
        return
    try:
        await actions.new_session(sess.label, resume_id=sess.claude_session_id, cwd=sess.cwd)
    except AipagerError as exc:
        actions.say(chat_id, f"Cannot resume {sess.label}: {exc}")
        return
    actions.state.current[str(chat_id)] = sess.name
    actions.audit("session_resume", sender, session=sess.name)
    actions.say(chat_id, f"↩️ {sess.label} resumed in {sess.cwd or actions.default_folder}.",
                session=sess.name)


async def on_setting_tap(query: CallbackQuery, callback_data: SettingTap, actions: Actions,
                         sender: Sender) -> None:
    chat_id = query.message.chat.id if query.message is not None else 0
    if chat_id < 0 and (why := refusal(sender, "manage")):
        await _toast(query, why)  # a group's settings are the admins' to change
        return
    name, value = callback_data.name, callback_data.value
    if name == "style" and (value in STYLES or value == "own"):
        actions.state.set_pref(chat_id, "style", "" if value == "own" else value)
    elif name == "diffs" and value in ("on", "off"):
        actions.state.set_pref(chat_id, "diffs", value == "on")
    elif name == "detail" and value in ("full", "compact"):
        actions.state.set_pref(chat_id, "detail", value)
    else:
        await _toast(query, EXPIRED)
        return
    await _toast(query, "Saved.")
    text, markup = settings_view(actions, chat_id)
    key = f"settings:{chat_id}:{query.message.message_id}"
    actions.state.set_live(key, chat_id, query.message.message_id)
    actions.outbox.put(Op("live", chat_id, text, markup=markup, key=key))


async def on_unknown_tap(query: CallbackQuery) -> None:
    await _toast(query, EXPIRED)


def make_router() -> Router:
    """The taps handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="taps")
    router.callback_query.register(on_request_tap, RequestTap.filter(
        F.act.in_(set(_KINDS)) | F.act.regexp(r"^s\d$")))  # sN: one of the suggestions
    router.callback_query.register(on_question_tap, QuestionTap.filter())
    router.callback_query.register(on_session_tap, SessionTap.filter())
    router.callback_query.register(on_setting_tap, SettingTap.filter())
    router.callback_query.register(on_unknown_tap)
    return router
