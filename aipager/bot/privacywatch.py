"""Private mode as the chat reads it, and the one time it says it was switched.

``aipager config private on|off`` writes the config; the running chat reads it again
when the file changes (``Members.current``), so ``mode`` is asked before each output
(``ChatNotifier``) and on a timer.  When the mode differs from what the chat last said
(kept in the chat's settings, so a restart says nothing again) it says so once:

- on: what the chat carries from now on, that what the person types here is theirs to
  send (Telegram carries it), with a button to the page's prompt box for words they would
  rather keep off Telegram, and that nothing already sent is edited away;
- off: that the content comes to the chat again.

The note goes out before the output that asked, so it is the first thing private mode
shows.
"""

from __future__ import annotations

import logging
from typing import Callable, Mapping

from aiogram.types import WebAppInfo
from aiogram.utils.keyboard import InlineKeyboardBuilder

from aipager import config
from aipager.bot import i18n, view
from aipager.bot.chatstate import ChatState
from aipager.bot.i18n import _
from aipager.bot.outbox import Outbox, Post
from aipager.bot.private import Mode
from aipager.clients.members import Members
from aipager.proto.errors import ConfigError

log = logging.getLogger("aipager.bot")

#: the chat setting holding the mode the chat was last told of
TOLD = "private"


def read_mode(env: Mapping[str, str], cfg: config.Config) -> Mode:
    """Private mode and the page's public address from the config (an address that is not
    HTTPS counts as none: the messages then point at the computer)."""
    try:
        url = config.web_public_url(env, cfg)
    except ConfigError:
        url = ""
    return Mode(config.private(cfg), url)


class PrivacyWatch:
    """Reads private mode and tells the chat when it changed.

    Args:
        env: the daemon's environment (``AIPAGER_WEB_PUBLIC_URL``).
        members: the config, read again when its file changes.
        state, outbox: the chat's memory and where the note goes.
        locale: the chat's language (``i18n.chat_locale``).
    """

    def __init__(self, env: Mapping[str, str], members: Members, state: ChatState,
                 outbox: Outbox, locale: Callable[[int], str]) -> None:
        self._env = env
        self._members = members
        self._state = state
        self._outbox = outbox
        self._locale = locale

    def mode(self) -> Mode:
        cfg = self._members.current()
        mode = read_mode(self._env, cfg)
        chat_id = cfg.chat_id
        told = self._state.prefs_of(chat_id).private
        if mode.on != told:
            self._state.set_pref(chat_id, TOLD, mode.on)
            self._tell(chat_id, mode)
        return mode

    def check(self) -> None:
        """For the timer: the note need not wait for Claude to do something."""
        self.mode()

    def _tell(self, chat_id: int, mode: Mode) -> None:
        log.info("private mode %s: told the chat", "on" if mode.on else "off")
        with i18n.use(self._locale(chat_id)):
            if not mode.on:
                self._outbox.put(Post(chat_id, _(
                    "🔓 Private mode is off: answers, commands, diffs and files come to this "
                    "chat again.")), urgent=True)
                return
            lines = [
                _("🔒 Private mode is on. This chat now gets session names, states, counts "
                  "and buttons; what Claude writes, runs, reads, changes and asks stays on "
                  "your machines and opens on the page."),
                _("What you type or say here is yours to send: Telegram carries it. For "
                  "words you would rather keep off Telegram, use the page's prompt box."),
                _("Messages already in this chat stay as they are: nothing sent is edited "
                  "away."),
            ]
            kb = InlineKeyboardBuilder()
            if mode.public_url and chat_id > 0:
                kb.button(text=_("✍️ Write on the page"),
                          web_app=WebAppInfo(url=f"{mode.public_url}/"))
            elif mode.public_url:
                kb.button(text=_("✍️ Write on the page"), url=f"{mode.public_url}/")
            else:
                lines.append(_("The page is on your computer: `aipager page` prints a link "
                               "to it."))
            # urgent as the bells are: it keeps its place before them
            self._outbox.put(Post(chat_id, "\n\n".join(lines), markup=view.markup(kb)),
                             urgent=True)


__all__ = ["TOLD", "PrivacyWatch", "read_mode"]
