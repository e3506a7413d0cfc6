"""Plain messages: typed into the right session; anything else gets a one-line hint."""

from __future__ import annotations

from aiogram import F, Router
from aiogram.types import Message

from aipager.bot import view
from aipager.bot.actions import Actions, Sender
from aipager.bot.callbacks import SessionTap, packed
from aipager.bot.routers.commands import start_session


#: picker choices waiting for a tap: handle → (chat, message id, text, sender, quoted)
PICKS_KEPT = 50


def _addressed(message: Message, bot_id: int, bot_username: str | None) -> bool:
    """In a group only replies to the bot and mentions count; private chats always do."""
    if message.chat.type == "private":
        return True
    reply = message.reply_to_message
    if reply is not None and reply.from_user is not None and reply.from_user.id == bot_id:
        return True
    return bool(bot_username) and f"@{bot_username}".lower() in (message.text or "").lower()


async def on_text(message: Message, actions: Actions, sender: Sender, pending_names: dict,
                  picks: dict, bot_identity: tuple[int, str | None]) -> None:
    chat_id = message.chat.id
    text = message.text or ""
    if not _addressed(message, *bot_identity):
        return
    if bot_identity[1]:
        text = text.replace(f"@{bot_identity[1]}", "").strip()
    if not text.strip():
        actions.say(chat_id, "An empty message: nothing to send.", reply_to=message.message_id)
        return
    if pending_names.pop((chat_id, sender.user_id), None):
        name, _, first = text.strip().partition(" ")
        await start_session(actions, message, sender, name, first.strip())
        return
    reply = message.reply_to_message
    quoted = None
    if reply is not None and (reply.text or reply.caption):
        quoted = ((reply.text or reply.caption or ""), float(reply.date.timestamp()))
    sess = actions.target(chat_id, reply.message_id if reply is not None else None)
    if sess is None:
        live = actions.live_sessions()
        if not live:
            actions.say(chat_id, "No session is running. Start one with /new NAME.",
                        reply_to=message.message_id)
            return
        number = max(picks, default=0) + 1
        picks[number] = (chat_id, message.message_id, text, sender, quoted)
        while len(picks) > PICKS_KEPT:
            picks.pop(next(iter(picks)))
        rows = []
        for s in live:
            handle = actions.state.handle("session", s.name)
            rows.append([(s.label, packed(SessionTap(h=handle, act=f"m{number}")))])
        actions.say(chat_id, view.picker_text("send"), markup=view.keyboard(rows),
                    reply_to=message.message_id)
        return
    await actions.deliver(sess, chat_id, message.message_id, text, sender, quoted)


async def on_other(message: Message, actions: Actions, bot_identity: tuple[int, str | None]) -> None:
    if not _addressed(message, *bot_identity):
        return
    actions.say(message.chat.id, "I pass on text messages to Claude. /help says more.",
                reply_to=message.message_id)


def make_router() -> Router:
    """The messages handlers on a fresh router (a router joins one dispatcher only)."""
    router = Router(name="messages")
    router.message.register(on_text, F.text)
    router.message.register(on_other)
    return router
