"""The chat's language: aiogram's i18n over the catalogs of ``aipager.locales``.

Every text the chat shows is an English msgid marked for Babel's extractor: ``_`` (translated
now), ``ngettext`` (a count), ``N_`` (a module constant, translated where it is shown).
Placeholders are ``{name}``, filled with ``str.format`` after the translation, so a
translator may move them.  Claude's words, tool names, commands, paths and session names
only ever fill placeholders: they are never looked up.

Which language a text is in is the locale of the context it is rendered in, never a
global:

- a handler's texts (replies, toasts, FSM prompts) are in the language of the person it
  answers: ``LocaleMiddleware`` picks it (their /settings choice, else their Telegram
  ``language_code``) and sets it around the handler;
- what the chat says on its own (cards, answers' headers, requests, the pinned line) is
  in the chat's language, set by the notifier around each output (``use``):
  ``chat_locale``.

Rendering outside any context (a test calling ``view`` directly) is English.
"""

from __future__ import annotations

import gettext
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Awaitable, Callable, Iterator, Mapping

from aiogram.types import TelegramObject
from aiogram.utils.i18n import I18n, I18nMiddleware

from aipager import locales
from aipager.locales import N_
from aipager.bot.chatstate import ChatState
from aipager.clients.members import Members



class Catalogs(I18n):
    """aiogram's ``I18n`` over ``locales.translations``: a catalog the build did not compile
    (running from a source checkout) is compiled from its ``.po`` instead of refused."""

    def find_locales(self) -> dict[str, gettext.GNUTranslations]:
        found = {}
        for locale in locales.LOCALES:
            catalog = locales.translations(locale)
            if isinstance(catalog, gettext.GNUTranslations):
                found[locale] = catalog
        return found


I18N = Catalogs(path=locales.folder(), default_locale=locales.DEFAULT, domain=locales.DOMAIN)


def _(msgid: str) -> str:
    """``msgid`` in the current locale."""
    return I18N.gettext(msgid)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of ``singular``/``plural`` for ``n`` in the current locale (its plural rule)."""
    return I18N.gettext(singular, plural, n)


def current() -> str:
    """The locale texts are rendered in now."""
    return I18N.current_locale


@contextmanager
def use(locale: str) -> Iterator[None]:
    """Render in ``locale``: the chat's texts, aiogram's own ``gettext``, and the daemon's card
    lines re-rendered for the chat (``locales.rendering``)."""
    catalog = I18N.locales.get(locale) or gettext.NullTranslations()
    with I18N.context(), I18N.use_locale(locale), locales.rendering(catalog):
        yield


def number(value: float, digits: int = 0) -> str:
    """``value`` as the current locale writes numbers (``1,234.5`` / ``1.234,5``)."""
    from babel.numbers import format_decimal  # Babel's locale data: only when a number shows

    pattern = "#,##0" + ("." + "0" * digits if digits else "")
    return format_decimal(value, format=pattern, locale=current())


def duration(seconds: float) -> str:
    """A duration in the current locale's words, rounded to its largest unit (``3 minutes``)."""
    from babel.dates import format_timedelta

    return format_timedelta(timedelta(seconds=seconds), threshold=1.0, locale=current())


def language_name(code: str) -> str:
    """The language ``code`` (ISO 639-1: ``es``) named in the current locale's words."""
    from babel import Locale

    return str(Locale.parse(current().replace("-", "_")).languages.get(code, code))


def chat_locale(members: Members, state: ChatState, chat_id: int) -> str:
    """The language of what the chat says on its own: the config's ``language`` (checked when
    the config loads), else that of the person who last spoke in the chat, else English."""
    configured = members.current().extra.get("language")
    if isinstance(configured, str) and (locale := locales.exact(configured)):
        return locale
    return state.chat_langs.get(str(chat_id)) or locales.DEFAULT


def person_locale(state: ChatState, user: Any) -> str:
    """A person's language: their /settings choice, else their Telegram app's."""
    if user is None:
        return locales.DEFAULT
    return state.langs.get(str(user.id)) or locales.from_telegram(user.language_code)


class LocaleMiddleware(I18nMiddleware):
    """aiogram's ``I18nMiddleware``: a handler runs in its person's language.  A member's
    language also becomes the chat's, for what the chat later says on its own."""

    def __init__(self, state: ChatState, members: Members) -> None:
        super().__init__(I18N)
        self.state = state
        self.members = members

    async def get_locale(self, event: TelegramObject, data: dict[str, Any]) -> str:
        return person_locale(self.state, data.get("event_from_user"))

    async def __call__(self, handler: Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]],
                       event: TelegramObject, data: dict[str, Any]) -> Any:
        user, chat = data.get("event_from_user"), data.get("event_chat")
        if (user is not None and chat is not None and chat.id == self.members.current().chat_id
                and self.members.sender(chat.id, user) is not None):
            self.state.chat_langs[str(chat.id)] = person_locale(self.state, user)
        return await super().__call__(handler, event, data)


def commands_menu(commands: tuple[tuple[str, str], ...]) -> Mapping[str, list[tuple[str, str]]]:
    """The command menu per Telegram ``language_code`` ("" for everyone else: English)."""
    menus: dict[str, list[tuple[str, str]]] = {}
    for locale in locales.LOCALES:
        code = "" if locale == locales.DEFAULT else locales.TELEGRAM_CODES[locale]
        with use(locale):
            menus[code] = [(name, _(words)) for name, words in commands]
    return menus


__all__ = ["I18N", "LocaleMiddleware", "N_", "_", "chat_locale", "commands_menu", "current",
           "duration", "language_name", "ngettext", "number", "person_locale", "use"]
