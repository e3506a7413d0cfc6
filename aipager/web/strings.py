"""The page's words, translated from the chat's catalogs (``GET /strings``).

The page (``static/strings.js``) asks for them once, with the Mini App user's Telegram
language or the browser's; ``t("…")`` in ``static/app.js`` names a msgid of ``PAGE`` (a
test holds the two to each other).  The words are not secret: the route is outside the
signed-in API, so even "Not signed in" is said in the person's language.
"""

from __future__ import annotations

import functools
import gettext

from aipager import locales
from aipager.locales import N_

#: the header the page names its user's language in (``static/api.js``), on every API call
LANG_HEADER = "X-Aipager-Lang"

#: every msgid the page shows (``t()`` calls, the WORDS of a session's state, the STATUS of
#: a sent message, index.html)
PAGE = (
    N_("Answered by {who}…"),
    N_("Audit log"),
    N_("Claude asks"),
    N_("Conversation"),
    N_("Could not load: {error}"),
    N_("Ended ({n})"),
    N_("Message {session}"),
    N_("Needs you"),
    N_("No session called {name}."),
    N_("No session runs. Start one here or with `aipager session NAME`."),
    N_("Not signed in. Open the link `aipager start` printed on this computer, or open aipager from its Telegram bot."),
    N_("Nothing recorded yet."),
    N_("Telegram's sign-in for this page has run out. Close aipager and open it again from the bot."),
    N_("Nothing said here since the daemon started."),
    N_("Nothing waits for you."),
    N_("Or answer in words"),
    N_("Reason (sent with ❌ Deny)"),
    N_("Sessions"),
    N_("unreachable"),
    N_("action"),
    N_("details"),
    N_("name"),
    N_("session"),
    N_("time"),
    N_("waiting for your answer"),
    N_("waiting for your approval"),
    N_("who"),
    N_("you"),
    N_("{n} message(s) waiting to go in"),
    N_("{n} more line(s): the whole diff"),
    N_("← all sessions"),
    N_("⏹ Decline"),
    N_("⏹ Stop"),
    N_("✅ Answer"),
    N_("➤ Send"),
    N_("🆕 Start a session"),
    N_("💬 Open"),
    N_("🗑 End"),
    N_("🗑 Really end it?"),
    N_("Now"),
    N_("Folder"),
    N_("folder"),
    N_("another folder"),
    N_("or another folder (a full path)"),
    N_("Claude Code will ask to trust it"),
    N_("Loading…"),
    N_("working"),
    N_("waiting for you"),
    N_("ready"),
    N_("starting"),
    N_("ended"),
    N_("the terminal"),
    N_("sending"),
    N_("held"),
    N_("typed"),
    N_("taken"),
    N_("not taken"),
    N_("not delivered"),
    N_("a file from Claude"),
    N_("🔒 private"),
    N_("Mode"),
    N_("permission mode"),
    N_("Agent"),
    N_("coding agent"),
    N_("📝 Changes"),
    N_("Changes"),
    N_("← {session}"),
    N_("↻ Read again"),
    N_("🌐 Auto"),
    N_("language"),
    N_("attach files"),
    # an MCP server's form (the chat's buttons' words)
    N_("✅ Send"),
    N_("❌ Decline"),
    N_("✖️ Cancel"),
)


def pick(lang: str | None, accept_language: str = "") -> str:
    """The locale for the page's ``lang`` (Telegram's ``language_code`` or the browser's
    tag), else the first language of ``Accept-Language``."""
    if lang:
        return locales.from_telegram(lang)
    first = accept_language.split(",", 1)[0].split(";", 1)[0].strip()
    return locales.from_telegram(first)


@functools.cache
def catalog(locale: str) -> gettext.NullTranslations:
    """``locale``'s catalog, read once (the page asks in its language on every call)."""
    return locales.translations(locale)


def strings(locale: str) -> dict[str, str]:
    """``PAGE`` in ``locale`` (English: the msgids themselves)."""
    found = catalog(locale)
    return {msgid: found.gettext(msgid) for msgid in PAGE}


__all__ = ["LANG_HEADER", "PAGE", "catalog", "pick", "strings"]
