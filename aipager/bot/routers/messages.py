"""Plain messages and files: typed into the right session; anything else gets a hint.

Where a message goes: the session of the message it replies to, else the chat's
current session, else the only running one, else a picker.  Photos and
documents are downloaded into the chat's private folder first and the prompt
names their paths; an album waits ``ALBUM_SETTLE`` seconds after its last part
and goes in as one prompt.
"""

from __future__ import annotations

import asyncio
import io
import logging

from aiogram import F, Router
from aiogram.types import Message

from aipager.bot import files, view
from aipager.bot.actions import Actions, Sender, refusal
from aipager.bot.callbacks import SessionTap, packed
from aipager.bot.routers.commands import name_and_first, start_session
from aipager.daemon.port import Already, ByHook, ByKeys, Gone, InTerminal, KeysFailed, Refused

log = logging.getLogger("aipager.bot")

#: picker choices waiting for a tap: number → (chat, message id, text, sender, quoted)
PICKS_KEPT = 50
#: seconds an album waits for more parts
ALBUM_SETTLE = 1.5
NO_PROMPT = "🔒 Your role may not send messages to Claude here."


def _addressed(message: Message, bot_id: int, bot_username: str | None) -> bool:
    """In a group only replies to the bot and mentions count; private chats always do."""
    if message.chat.type == "private":
        return True
    reply = message.reply_to_message
    if reply is not None and reply.from_user is not None and reply.from_user.id == bot_id:
        return True
    text = message.text or message.caption or ""
    return bool(bot_username) and f"@{bot_username}".lower() in text.lower()


def _quoted(message: Message) -> tuple[str, float] | None:
    reply = message.reply_to_message
    if reply is not None and (reply.text or reply.caption):
        return (reply.text or reply.caption or ""), float(reply.date.timestamp())
    return None


async def send_text(actions: Actions, message: Message, sender: Sender, text: str,
                    picks: dict) -> None:
    """Route ``text`` (for the message ``message``) and hand it to its session."""
    chat_id = message.chat.id
    head, _, rest = text.partition(" ")
    if head.startswith("/") and rest.strip():
        named = actions.find(head[1:].split("@", 1)[0])
        if named is not None and view.is_live(named):  # a caption "/jim look at this"
            await actions.deliver(named, chat_id, message.message_id, rest.strip(), sender,
                                  _quoted(message))
            return
    reply = message.reply_to_message
    sess = actions.target(chat_id, reply.message_id if reply is not None else None)
    if sess is not None:
        await actions.deliver(sess, chat_id, message.message_id, text, sender, _quoted(message))
        return
    live = actions.live_sessions()
    if not live:
        actions.say(chat_id, "No session is running. Start one with /new NAME.",
                    reply_to=message.message_id)
        return
    number = max(picks, default=0) + 1
    picks[number] = (chat_id, message.message_id, text, sender, _quoted(message))
    while len(picks) > PICKS_KEPT:
        picks.pop(next(iter(picks)))
    rows = []
    for s in live:
        handle = actions.state.handle("session", s.name)
        rows.append([(s.label, packed(SessionTap(h=handle, act=f"m{number}")))])
    actions.say(chat_id, view.picker_text("send"), markup=view.keyboard(rows),
                reply_to=message.message_id)


async def deny_with_reason(actions: Actions, message: Message, sender: Sender,
                           text: str) -> bool:
    """A reply to an open permission request denies it with the reply as the reason, which
    Claude reads (a plain ❌ Deny stays one tap).  False: not such a reply."""
    reply = message.reply_to_message
    if reply is None:
        return False
    chat_id = message.chat.id
    found = next((k for k, (c, m) in actions.state.live.items()
                  if k.startswith("req:") and c == chat_id and m == reply.message_id), None)
    if found is None:
        return False
    _, session, key = found.split(":", 2)
    sess = actions.registry.get(session)
    req = next((r for r in sess.requests if r.key == key), None) if sess is not None else None
    if req is not None and req.kind == "question":
        return False  # a question's message: the reply answers it
    why = refusal(sender, "approve", sess)
    if why:
        actions.say(chat_id, f"🔒 {why}", reply_to=message.message_id)
        return True
    outcome = await actions.port.answer_request(session, key, "deny", sender.who, reason=text)
    reply_to = message.message_id
    match outcome:
        case ByHook():
            actions.react(chat_id, message.message_id, "👌")
        case ByKeys():
            actions.say(chat_id, "❌ Denied in Claude Code's own dialog, which takes no reason: "
                        "Claude was not told why.", reply_to=reply_to)
        case Already():
            actions.say(chat_id, "This request was already answered.", reply_to=reply_to)
        case Gone():
            actions.say(chat_id, "This request is no longer open.", reply_to=reply_to)
        case InTerminal():
            actions.say(chat_id, "The plan waits in the terminal now: answer it there.",
                        reply_to=reply_to)
        case KeysFailed(reason=reason) | Refused(reason=reason):
            actions.say(chat_id, f"🤷 Could not answer: {reason}", reply_to=reply_to, buzz=True)
    return True


def _replied_question(actions: Actions, message: Message) -> tuple[str | None, dict | None]:
    """The open question (request key, ask) whose message ``message`` replies to."""
    reply = message.reply_to_message
    if reply is None:
        return None, None
    shown = [message.chat.id, reply.message_id]
    for rkey, ask in actions.state.asks.items():
        if ask.get("chat") == message.chat.id and actions.state.live.get(rkey) == shown:
            return rkey, ask
    return None, None


async def on_text(message: Message, actions: Actions, sender: Sender, pending_names: dict,
                  picks: dict, bot_identity: tuple[int, str | None],
                  pending_other: dict) -> None:
    chat_id = message.chat.id
    text = message.text or ""
    if not _addressed(message, *bot_identity):
        return
    if bot_identity[1]:
        text = text.replace(f"@{bot_identity[1]}", "").strip()
    if not text.strip():
        actions.say(chat_id, "An empty message: nothing to send.", reply_to=message.message_id)
        return
    if await deny_with_reason(actions, message, sender, text.strip()):
        return
    rkey = pending_other.pop((chat_id, sender.user_id), None)
    ask = actions.state.asks.get(rkey) if rkey else None
    if ask is None:
        # a reply to a question's message answers it in words, as "Other…" then a message
        rkey, ask = _replied_question(actions, message)
        why = refusal(sender, "approve", actions.registry.get(ask["session"])) if ask else None
        if why:
            actions.say(chat_id, f"🔒 {why}", reply_to=message.message_id)
            return
    if ask is not None:
        from aipager.bot.routers.taps import record_answer

        multi = ask["questions"][ask["step"]].get("multi")
        picks = list(ask.get("toggled") or []) if multi else []
        await record_answer(actions, rkey, ask, sender, {"picks": picks, "text": text.strip()})
        return
    if pending_names.pop((chat_id, sender.user_id), None):
        await start_session(actions, message, sender, *name_and_first(text))
        return
    if not sender.may_prompt:
        actions.say(chat_id, NO_PROMPT, reply_to=message.message_id)
        return
    await send_text(actions, message, sender, text, picks)


def _prompt(caption: str, paths: list[str]) -> str:
    named = " ".join(paths)
    if caption.strip():
        return f"{caption.strip()} {named}"
    return f"check {'this' if len(paths) == 1 else 'these'}: {named}"


async def on_file(message: Message, actions: Actions, sender: Sender, picks: dict,
                  albums: dict, bot_identity: tuple[int, str | None]) -> None:
    """A photo or document: saved privately, then its path goes to Claude."""
    if not _addressed(message, *bot_identity):
        return
    chat_id = message.chat.id
    if not sender.may_prompt:
        actions.say(chat_id, NO_PROMPT, reply_to=message.message_id)
        return
    if message.photo:
        item, name = message.photo[-1], f"photo-{message.message_id}.jpg"
    else:
        item = message.document
        name = item.file_name or f"file-{message.message_id}"
    size = item.file_size or 0
    if size > files.DOWNLOAD_MAX:
        actions.say(chat_id, f"📎 {name} is {size / 2**20:.1f} MB: bots can fetch files up to "
                    f"{files.DOWNLOAD_MAX // 2**20} MB. Put it on the computer another way.",
                    reply_to=message.message_id)
        return
    try:
        found = await message.bot.get_file(item.file_id)
        buf = io.BytesIO()
        await message.bot.download_file(found.file_path, buf, timeout=120)
        data = buf.getvalue()
        if len(data) > files.DOWNLOAD_MAX:
            raise files.FileRefused("larger than 20 MB")
        path = await asyncio.to_thread(files.save_download, actions.env, chat_id, name, data)
    except files.FileRefused as exc:
        actions.say(chat_id, f"📎 {name} was not saved: {exc}", reply_to=message.message_id)
        return
    except Exception as exc:  # noqa: BLE001 - Telegram or disk trouble: say so, lose nothing else
        log.warning("downloading %s failed: %s", name, exc)
        actions.say(chat_id, f"📎 Could not fetch {name} from Telegram; send it again.",
                    reply_to=message.message_id)
        return
    caption = message.caption or ""
    if bot_identity[1]:
        caption = caption.replace(f"@{bot_identity[1]}", "").strip()
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


async def on_other(message: Message, actions: Actions,
                   bot_identity: tuple[int, str | None]) -> None:
    if not _addressed(message, *bot_identity):
        return
    actions.say(message.chat.id, "I pass on text, photos and documents to Claude. "
                "/help says more.", reply_to=message.message_id)


def make_router() -> Router:
    """The message handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="messages")
    router.message.register(on_text, F.text)
    router.message.register(on_file, F.photo | F.document)
    router.message.register(on_other)
    return router


__all__ = ["make_router", "send_text"]
