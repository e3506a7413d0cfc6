"""Plain messages and files: typed into the right session; anything else gets a hint.

In a group only messages to the bot count (replies to it, mentions: the router's
filter).  A text is, in this order: a reply to an open permission request (a denial
with its reason), the answer in words someone was asked for (a question's "Other…",
aiogram's FSM: ``NextMessage.answer``), a reply to a question's message (its answer),
the name a bare /new asked for (``NextMessage.session_name``), else a prompt.

Where a prompt goes: the session of the message it replies to, else the chat's
current session, else the only running one, else a picker.  Photos and
documents are downloaded into the chat's private folder first and the prompt
names their paths; an album waits ``ALBUM_SETTLE`` seconds after its last part
and goes in as one prompt.  What a role may send is each handler's ``rights`` flag.
"""

from __future__ import annotations

import asyncio
import io
import logging

from aiogram import F, Router
from aiogram.dispatcher.event.bases import SkipHandler
from aiogram.fsm.context import FSMContext
from aiogram.types import Document, Message, PhotoSize

from aipager.bot.kept import Ask, FormAsk
from aipager import files
from aipager.bot.actions import Actions, Sender, refusal
from aipager.bot.i18n import _, number
from aipager.bot import voice
from aipager.bot.flows import NextMessage, form_typed, record_answer, said, send_text
from aipager.bot.starting import name_and_first, start_session
from aipager.chatcommands import RESERVED
from aipager.bot.rights import APPROVE, PROMPT, need
from aipager.clients.words import reason as words_reason
from aipager.port.commands import AnswerRequest, KeepFiles
from aipager.port.results import (Already, ByHook, ByKeys, Declined, Gone, InTerminal,
                                  FilesKept, KeysFailed, Refused)

log = logging.getLogger("aipager.bot")

#: seconds an album waits for more parts
ALBUM_SETTLE = 1.5


def _addressed(message: Message, bot_id: int, bot_username: str | None) -> bool:
    """In a group only replies to the bot and mentions count; private chats always do."""
    if message.chat.type == "private":
        return True
    reply = message.reply_to_message
    if reply is not None and reply.from_user is not None and reply.from_user.id == bot_id:
        return True
    text = message.text or message.caption or ""
    return bool(bot_username) and f"@{bot_username}".lower() in text.lower()


def addressed(message: Message, bot_identity: tuple[int, str | None]) -> bool | dict[str, str]:
    """The router's filter: in a group only replies to the bot and mentions count; private
    chats always do.  Gives ``text``: the text (or caption) without the bot's @name."""
    bot_id, bot_username = bot_identity
    if not _addressed(message, bot_id, bot_username):
        return False
    text = message.text or message.caption or ""
    if bot_username:
        text = text.replace(f"@{bot_username}", "").strip()
    return {"text": text}


def empty(message: Message, text: str) -> bool:
    """A text message with nothing left to send (an @-mention of the bot alone)."""
    return message.text is not None and not text.strip()


async def on_empty(message: Message, actions: Actions) -> None:
    actions.say(message.chat.id, _("An empty message: nothing to send."),
                reply_to=message.message_id)


def replied_request(message: Message, actions: Actions) -> bool | dict[str, str]:
    """The filter of a reply to an open permission request (not a question): gives its
    ``session`` and ``key``."""
    reply = message.reply_to_message
    if reply is None:
        return False
    chat_id = message.chat.id
    found = next((k for k, (c, m) in actions.state.live.items()
                  if k.startswith("req:") and c == chat_id and m == reply.message_id), None)
    if found is None:
        return False
    session, key = found.split(":", 2)[1:]
    sess = actions.registry.get(session)
    req = next((r for r in sess.requests if r.key == key), None) if sess is not None else None
    if req is not None and req.kind in ("question", "form"):
        return False  # a question's or a form's message: the reply answers it
    return {"session": session, "key": key}


async def deny_with_reason(message: Message, actions: Actions, sender: Sender, text: str,
                           session: str, key: str) -> None:
    """A reply to an open permission request denies it with the reply as the reason, which
    Claude reads (a plain ❌ Deny stays one tap)."""
    chat_id = message.chat.id
    outcome = await actions.port.ask(AnswerRequest(sender, session, key, "deny",
                                                      reason=text.strip()))
    reply_to = message.message_id
    match outcome:
        case ByHook():
            actions.react(chat_id, message.message_id, "👌")
        case ByKeys():
            actions.say(chat_id, _("❌ Denied in Claude Code's own dialog, which takes no reason: "
                                   "Claude was not told why."), reply_to=reply_to)
        case Already():
            actions.say(chat_id, _("This request was already answered."), reply_to=reply_to)
        case Gone():
            actions.say(chat_id, _("This request is no longer open."), reply_to=reply_to)
        case InTerminal():
            actions.say(chat_id, _("This one waits in the terminal now: answer it there."),
                        reply_to=reply_to)
        case KeysFailed(reason=reason) | Refused(reason=reason):
            actions.say(chat_id, _("🤷 Could not answer: {reason}").format(reason=reason),
                        reply_to=reply_to, buzz=True)
        case Declined():
            actions.say(chat_id, f"🔒 {words_reason(outcome, _)}", reply_to=reply_to)


async def on_edit_text(message: Message, actions: Actions, sender: Sender, text: str,
                       state: FSMContext) -> None:
    """The message after a request's ✏️ is its corrected command or path: the daemon allows
    the call as edited once the safety policy allows it (the tap checked the right)."""
    data = await state.get_data()
    await state.clear()
    session, key = data.get("session"), data.get("key")
    if not isinstance(session, str) or not isinstance(key, str):
        raise SkipHandler
    chat_id, reply_to = message.chat.id, message.message_id
    outcome = await actions.port.ask(AnswerRequest(sender, session, key, "allow", edit=text))
    match outcome:
        case ByHook() | ByKeys():
            actions.react(chat_id, reply_to, "👌")
        case Refused(reason=reason):
            actions.say(chat_id, _("🔒 Not allowed: {reason}. The request is still open.").format(
                reason=reason), reply_to=reply_to)
        case Already():
            actions.say(chat_id, _("This request was already answered."), reply_to=reply_to)
        case Gone() | InTerminal() | KeysFailed():
            actions.say(chat_id, _("This request is no longer open; nothing was run."),
                        reply_to=reply_to)
        case Declined():
            actions.say(chat_id, f"🔒 {words_reason(outcome, _)}", reply_to=reply_to)


async def _answer_in_words(actions: Actions, rkey: str, ask: Ask, sender: Sender,
                           text: str, reply_to: int = 0) -> None:
    if isinstance(ask, FormAsk):  # an MCP server's form: the value of the field asked now
        form_typed(actions, rkey, ask, text, reply_to)
        return
    multi = ask.questions[ask.step].get("multi")
    picks = list(ask.toggled) if multi else []
    await record_answer(actions, rkey, ask, sender, {"picks": picks, "text": text.strip()})


async def on_answer_in_words(message: Message, actions: Actions, sender: Sender, text: str,
                             state: FSMContext) -> None:
    """The message after a question's "Other…" (``NextMessage.answer``) is its answer; when
    the question closed meanwhile the message goes on as any other.  (The tap checked
    that the sender may answer.)"""
    rkey = (await state.get_data()).get("rkey")
    await state.clear()
    ask = actions.state.asks.get(rkey) if isinstance(rkey, str) else None
    if ask is None or not isinstance(rkey, str):
        raise SkipHandler
    await _answer_in_words(actions, rkey, ask, sender, text, message.message_id)


def replied_question(message: Message, actions: Actions) -> bool | dict[str, object]:
    """The filter of a reply to an open question's message: gives its ``rkey`` (request
    key) and ``ask``."""
    reply = message.reply_to_message
    if reply is None:
        return False
    shown = [message.chat.id, reply.message_id]
    for rkey, ask in actions.state.asks.items():
        if ask.chat == message.chat.id and actions.state.live.get(rkey) == shown:
            return {"rkey": rkey, "ask": ask}
    return False


async def on_question_reply(message: Message, actions: Actions, sender: Sender, text: str,
                            rkey: str, ask: Ask) -> None:
    """A reply to a question's message answers it in words, as "Other…" then a message."""
    # the task's author or an admin (the role's right: the handler's flag)
    why = refusal(sender, "approve", actions.registry.get(ask.session))
    if why:
        actions.say(message.chat.id, f"🔒 {why}", reply_to=message.message_id)
        return
    await _answer_in_words(actions, rkey, ask, sender, text, message.message_id)


async def on_session_name(message: Message, actions: Actions, sender: Sender, text: str,
                          state: FSMContext) -> None:
    """The message after a bare /new (``NextMessage.session_name``) names the session (and
    may carry its first message).  (/new checked that the sender may start sessions.)"""
    await state.clear()
    await start_session(actions, message, sender, name_and_first(text))


async def on_text(message: Message, actions: Actions, sender: Sender, text: str,
                  picks: dict) -> None:
    await send_text(actions, message, sender, text, picks)


def _prompt(caption: str, paths: list[str]) -> str:
    named = " ".join(paths)
    if caption.strip():
        return f"{caption.strip()} {named}"
    return f"check {'this' if len(paths) == 1 else 'these'}: {named}"


async def on_file(message: Message, actions: Actions, sender: Sender, picks: dict,
                  albums: dict, text: str) -> None:
    """A photo or document: saved privately, then its path goes to Claude (``text``: the
    caption)."""
    chat_id = message.chat.id
    item: PhotoSize | Document
    if message.photo:
        item, name = message.photo[-1], f"photo-{message.message_id}.jpg"
    elif message.document is not None:
        item = message.document
        name = message.document.file_name or f"file-{message.message_id}"
    else:
        return  # the filter lets only photos and documents through
    bot = message.bot
    if bot is None:
        return  # a message not bound to a bot (never from polling)
    size = item.file_size or 0
    if size > files.DOWNLOAD_MAX:
        actions.say(chat_id, _("📎 {name} is {size} MB: bots can fetch files up to {limit} MB. "
                               "Put it on the computer another way.").format(
                                   name=name, size=number(size / 2**20, 1),
                                   limit=number(files.DOWNLOAD_MAX // 2**20)),
                    reply_to=message.message_id)
        return
    try:
        found = await bot.get_file(item.file_id)
        if not found.file_path:
            raise files.FileRefused(_("Telegram gave no download path for it"))
        buf = io.BytesIO()
        await bot.download_file(found.file_path, buf, timeout=120)
        data = buf.getvalue()
        if len(data) > files.DOWNLOAD_MAX:
            raise files.FileRefused(_("larger than {limit} MB").format(
                limit=number(files.DOWNLOAD_MAX // 2**20)))
    except files.FileRefused as exc:
        actions.say(chat_id, _("📎 {name} was not saved: {reason}").format(name=name, reason=exc),
                    reply_to=message.message_id)
        return
    except Exception as exc:  # noqa: BLE001 - Telegram or disk trouble: say so, lose nothing else
        log.warning("downloading %s failed: %s", name, exc)
        actions.say(chat_id, _("📎 Could not fetch {name} from Telegram; send it again.").format(
            name=name),
                    reply_to=message.message_id)
        return
    # kept by the service in the sender's own folder: the floor lets only their tasks (and
    # the owner's) read it
    kept = await actions.port.ask(KeepFiles(sender, ((name, data),)))
    if not isinstance(kept, FilesKept):
        said(actions, chat_id, kept, reply_to=message.message_id)
        return
    (path,) = kept.paths
    caption = text
    group = message.media_group_id
    if not group:
        await send_text(actions, message, sender, _prompt(caption, [path]), picks)
        return
    album = albums.setdefault((chat_id, group), {"paths": [], "caption": "", "first": message,
                                                 "seq": 0})
    album["paths"].append(path)
    album["caption"] = album["caption"] or caption
    album["seq"] += 1
    asyncio.get_running_loop().create_task(
        _settle(actions, sender, picks, albums, (chat_id, group), album["seq"]))


async def _settle(actions: Actions, sender: Sender, picks: dict, albums: dict,
                  key: tuple[int, str], seq: int) -> None:
    await asyncio.sleep(ALBUM_SETTLE)
    album = albums.get(key)
    if album is None or album["seq"] != seq:
        return  # a later part arrived: its own timer sends the album
    del albums[key]
    try:
        await send_text(actions, album["first"], sender, _prompt(album["caption"], album["paths"]),
                        picks)
    except Exception:  # noqa: BLE001 - a background task: log, never lose silently
        log.exception("sending an album to Claude failed")


async def on_other(message: Message, actions: Actions) -> None:
    actions.say(message.chat.id, _("I pass on text, photos and documents to Claude. "
                                   "/help says more."), reply_to=message.message_id)


def make_router() -> Router:
    """The message handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="messages")
    router.message.filter(addressed)
    # In this order: what a message is, is decided once (as a reply to a request, the
    # answer someone was asked for, a reply to a question, a session's name, a prompt).
    router.message.register(on_empty, F.text, empty)
    router.message.register(deny_with_reason, F.text, replied_request, flags=need(APPROVE))
    router.message.register(on_answer_in_words, F.text, NextMessage.answer)
    router.message.register(on_edit_text, F.text, NextMessage.edit)
    router.message.register(on_question_reply, F.text, replied_question, flags=need(APPROVE))
    router.message.register(on_session_name, F.text, NextMessage.session_name)
    router.message.register(voice.on_edited, F.text, voice.NextVoice.text, flags=need(PROMPT))
    router.message.register(on_text, F.text, flags=need(PROMPT))
    router.message.register(on_file, F.photo | F.document, flags=need(PROMPT))
    router.message.register(voice.on_voice, F.voice, flags=need(PROMPT))
    router.message.register(on_other)
    return router


def not_a_command(message: Message) -> bool:
    """A text that is not one of the chat's own commands: an absolute path (``/tmp/x``) or
    words starting with ``/`` are the answer the chat asked for, not "Unknown command"."""
    head = (message.text or "").partition(" ")[0]
    name = head[1:].partition("@")[0].lower() if head.startswith("/") else ""
    return name not in RESERVED if name else True


def make_answers_router() -> Router:
    """The answers the chat asked for (the corrected path or command of ✏️ Edit, a
    question's "Other…", a voice note's corrected text) on a router included before the
    commands: aiogram's FSM state wins over command parsing, but for the chat's own
    commands (/stop still stops)."""
    router = Router(name="answers")
    router.message.filter(addressed, F.text, not_a_command)
    router.message.register(on_answer_in_words, NextMessage.answer)
    router.message.register(on_edit_text, NextMessage.edit)
    router.message.register(voice.on_edited, voice.NextVoice.text, flags=need(PROMPT))
    return router


__all__ = ["make_answers_router", "make_router", "send_text"]
