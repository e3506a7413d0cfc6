"""The languages the chat speaks, and where their catalogs are (standard library only).

The catalogs are GNU gettext ``.po`` files kept in the source tree
(``<locale>/LC_MESSAGES/aipager.po``, their template ``aipager.pot``); ``setup.py``
compiles them into the ``.mo`` files the installed package ships, so a compiled
catalog is never committed.  The msgids are the English texts: English needs no
catalog and is what a missing translation falls back to.

The config, the chat and the page all read this module (the chat through aiogram's i18n,
the page through ``translations``): which locales exist, what they
are called in their own language, and how a Telegram ``language_code`` or a config value
maps to one of them.
"""

from __future__ import annotations

import gettext
import io
import os
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

#: the gettext domain (``<locale>/LC_MESSAGES/aipager.mo``)
DOMAIN = "aipager"
#: the language of the msgids, and of anyone whose language is not one of ``LOCALES``
DEFAULT = "en"
#: every locale, in the order /settings offers them
LOCALES = ("en", "pt_BR", "es", "vi")
#: each locale in its own words (never translated: a person looks for their own language)
NAMES = {"en": "English", "pt_BR": "Português", "es": "Español", "vi": "Tiếng Việt"}
#: the Bot API's ``language_code`` for a locale (setMyCommands takes two letters)
TELEGRAM_CODES = {"en": "en", "pt_BR": "pt", "es": "es", "vi": "vi"}


def N_(msgid: str) -> str:
    """Marks a constant for the extractor; the chat translates it where it is shown."""
    return msgid


#: the catalog texts below the chat are rendered with (the daemon's card lines): English
#: unless the caller set one (``rendering``)
_CATALOG: ContextVar[gettext.NullTranslations | None] = ContextVar("aipager_catalog",
                                                                    default=None)
_ENGLISH = gettext.NullTranslations()


def tr(msgid: str) -> str:
    """``msgid`` in the catalog the caller set (``rendering``), English without one."""
    return (_CATALOG.get() or _ENGLISH).gettext(msgid)


def ntr(singular: str, plural: str, n: int) -> str:
    """The form for ``n``, as ``tr``."""
    return (_CATALOG.get() or _ENGLISH).ngettext(singular, plural, n)


def english() -> bool:
    """Texts render in English here (no catalog set, or English's, which translates nothing):
    a text the daemon rendered already is right as it is."""
    return not isinstance(_CATALOG.get(), gettext.GNUTranslations)


@contextmanager
def rendering(catalog: gettext.NullTranslations) -> Iterator[None]:
    """Texts rendered in this context (``tr``, ``ntr``) come from ``catalog``: how a pure
    renderer below the chat (``daemon.render``) speaks the chat's language without knowing
    of it."""
    token = _CATALOG.set(catalog)
    try:
        yield
    finally:
        _CATALOG.reset(token)


def folder() -> str:
    """Where the catalogs are (this package's folder)."""
    return os.path.dirname(os.path.abspath(__file__))


def from_telegram(code: str | None) -> str:
    """The locale for a Telegram ``language_code`` (an IETF tag: ``pt-br``, ``es-419``,
    ``vi``): Portuguese of any country is Brazilian, Spanish of any country is ``es``;
    anything else, or none, is English."""
    lang = (code or "").strip().replace("_", "-").lower().partition("-")[0]
    return {"pt": "pt_BR", "es": "es", "vi": "vi"}.get(lang, DEFAULT)


def exact(value: str) -> str | None:
    """The locale ``value`` names exactly (``pt_BR``, ``pt-br``, ``pt``, ``es``, ``vi``,
    ``en``; any case), or None: a config must not guess."""
    tag = value.strip().replace("-", "_").lower()
    aliases = {loc.lower(): loc for loc in LOCALES} | {"pt": "pt_BR"}
    return aliases.get(tag)


def translations(locale: str) -> gettext.NullTranslations:
    """The catalog of ``locale``: its compiled ``.mo``; from a source checkout (no build ran)
    its ``.po``, compiled in memory with Babel; English (and an unknown locale) translates
    nothing."""
    base = os.path.join(folder(), locale, "LC_MESSAGES", DOMAIN)
    if locale == DEFAULT or locale not in LOCALES:
        return gettext.NullTranslations()
    if os.path.isfile(base + ".mo"):
        with open(base + ".mo", "rb") as fh:
            return gettext.GNUTranslations(fh)
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with open(base + ".po", "rb") as fh:
        catalog = read_po(fh, locale=locale)
    buf = io.BytesIO()
    write_mo(buf, catalog)
    buf.seek(0)
    return gettext.GNUTranslations(buf)


__all__ = ["DEFAULT", "DOMAIN", "LOCALES", "NAMES", "N_", "TELEGRAM_CODES", "english", "exact",
           "folder", "from_telegram", "ntr", "rendering", "tr", "translations"]
