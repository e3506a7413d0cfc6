"""/diff from the phone: what a session changed in its folder, rendered for the chat.

The service decides who may see what (``ShowChanges``: the right to prompt, then only the
files the asker's own task could read); this module only renders the ``Changes`` it gets:
the head line, the diff in a ``diff`` code block, and the whole as a ``.diff`` file when
it is too long for a message.  In private mode the diff is content: the chat gets the
counts and a button to the page, which shows it.
"""

from __future__ import annotations

from aiogram.types import WebAppInfo
from aiogram.utils.keyboard import InlineKeyboardBuilder

from aipager.bot import private, view
from aipager.bot.actions import Actions, Sender
from aipager.bot.i18n import _, ngettext
from aipager.bot.markdown import u16_len
from aipager.bot.outbox import Post, Upload
from aipager.clients import asking
from aipager.clients.words import changes_head, words
from aipager.port.model import Session
from aipager.port.commands import ShowChanges
from aipager.port.results import Changes
from aipager.port.rights import RIGHTS

#: the diff's characters shown in the message (the rest comes as a file)
SHOWN = 3000


async def show(actions: Actions, chat_id: int, reply_to: int | None, sender: Sender,
               sess: Session) -> None:
    result = await actions.port.ask(ShowChanges(sender, sess.name))
    if not isinstance(result, Changes):
        lock = "🔒 " if getattr(result, "reason", None) in RIGHTS else ""
        actions.say(chat_id, lock + words(result, _), reply_to=reply_to)
        return
    text = changes_head(result, _)
    mode = actions.privacy()
    if mode.on:
        _to_the_page(actions, chat_id, reply_to, result, text, mode)
        return
    if not result.diff:
        actions.say(chat_id, text, reply_to=reply_to, session=sess.name)
        return
    body, more = asking.head(result.diff.rstrip("\n"), SHOWN)
    if more:
        body += "\n" + ngettext("… {n} more line in the .diff file",
                                "… {n} more lines in the .diff file", more).format(n=more)
    start = u16_len(text) + 1
    entity = {"type": "pre", "offset": start, "length": u16_len(body), "language": "diff"}
    actions.outbox.put(Post(chat_id, text + "\n" + body, entities=(entity,),
                            reply_to=reply_to, session=sess.name))
    if more:
        actions.outbox.put(Upload(chat_id, f"{sess.label}.diff", caption=_("The whole diff"),
                                  data=result.diff.encode("utf-8"), session=sess.name))


def _to_the_page(actions: Actions, chat_id: int, reply_to: int | None, result: Changes,
                 text: str, mode: private.Mode) -> None:
    """Private mode: the counts here, the diff on the page (at the session's view)."""
    kb = InlineKeyboardBuilder()
    if result.files and mode.public_url:
        url = private.Door(result.session).url(mode.public_url)
        # Telegram opens a Mini App from a private chat only: a group gets the address
        if chat_id > 0:
            kb.button(text=_("📟 Open on the page"), web_app=WebAppInfo(url=url))
        else:
            kb.button(text=_("📟 Open on the page"), url=url)
    elif result.files:
        text += "\n" + private.page_note("")
    actions.outbox.put(Post(chat_id, text, markup=view.markup(kb), reply_to=reply_to,
                            session=result.session))


__all__ = ["SHOWN", "show"]
