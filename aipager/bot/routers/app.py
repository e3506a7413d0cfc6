"""/app: the web page as a Telegram Mini App, a button that opens it inside Telegram.

Telegram opens Mini Apps over HTTPS only, so the button needs the address the person put
in front of the page (``config.web_public_url``; README, "The web page").  Telegram
allows such a button in private chats only: in a group /app says where to find it.
"""

from __future__ import annotations

from aiogram import Router
from aiogram.filters import Command
from aiogram.types import Message

from aipager import config
from aipager.bot.actions import Actions
from aipager.bot.i18n import N_, _
from aipager.clients.members import Members
from aipager.proto.errors import ConfigError

NOT_SET = N_("📟 The web page is not reachable from Telegram yet: Telegram opens it over HTTPS "
           "only. Put HTTPS in front of it (for example `tailscale serve --bg 7180`), set "
           "web_public_url in aipager's config to that address, restart aipager, then /app "
           "again.")
IN_GROUP = N_("📟 Telegram opens the page from a private chat only: send /app to me there, or "
              "use the bot's menu button.")
OPEN = N_("📟 aipager as a page: what needs you, every session and its conversation.")


async def on_app(message: Message, actions: Actions, members: Members) -> None:
    chat_id, reply_to = message.chat.id, message.message_id
    try:
        url = config.web_public_url(actions.env, members.current())
    except ConfigError as exc:
        actions.say(chat_id, f"📟 {exc}", reply_to=reply_to)
        return
    if not url:
        actions.say(chat_id, _(NOT_SET), reply_to=reply_to)
    elif message.chat.type != "private":
        actions.say(chat_id, _(IN_GROUP), reply_to=reply_to)
    else:
        button = {"text": _("📟 Open aipager"), "web_app": {"url": f"{url}/"}}
        actions.say(chat_id, _(OPEN), markup={"inline_keyboard": [[button]]}, reply_to=reply_to)


def make_router() -> Router:
    """/app on a fresh router (before the commands' catch-all for unknown commands)."""
    router = Router(name="app")
    router.message.register(on_app, Command("app"))
    return router
