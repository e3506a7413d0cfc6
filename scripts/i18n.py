"""The chat's catalogs: extract the template from the code, merge it into each language.

    python scripts/i18n.py extract   # aipager/locales/aipager.pot from the code
    python scripts/i18n.py update    # the template's msgids into every .po (new ones empty)
    python scripts/i18n.py check     # exit 1 when the template is stale or a .po lacks one

Texts are marked with ``_``, ``ngettext`` and ``N_`` (``aipager.bot.i18n``).  The build
compiles the .po files (``setup.py``); tests/i18n checks them.
"""

from __future__ import annotations

import io
import os
import sys

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCALES = os.path.join(HERE, "aipager", "locales")
TEMPLATE = os.path.join(LOCALES, "aipager.pot")
#: where the words are: the chat, the clients' shared rules, the menu, the daemon's card
#: lines (which the chat renders again in its language), and the page's (its own words, and
#: what its server says)
SOURCES = ("aipager/bot", "aipager/clients", "aipager/chatcommands.py", "aipager/texts/render.py",
           "aipager/web/strings.py", "aipager/web/actions.py", "aipager/web/views.py",
           "aipager/web/routes.py", "aipager/daemon/service.py", "aipager/labels.py")
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2)}


def extract() -> Catalog:
    """The template as the code has it now."""
    catalog = Catalog(project="aipager", domain="aipager", charset="utf-8")
    for source in SOURCES:
        path = os.path.join(HERE, source)
        if os.path.isfile(path):
            from babel.messages.extract import extract_from_file

            found = ((os.path.basename(path), *m) for m in extract_from_file(
                "python", path, keywords=KEYWORDS, comment_tags=("TRANSLATORS:",)))
            prefix = os.path.dirname(source)
        else:
            found = extract_from_dir(path, [("**.py", "python")], keywords=KEYWORDS,
                                     comment_tags=("TRANSLATORS:",))
            prefix = source
        for filename, lineno, message, comments, context in found:
            catalog.add(message, None, [(f"{prefix}/{filename}", lineno)],
                        auto_comments=comments, context=context)
    return catalog


def catalogs() -> dict[str, str]:
    """locale → its .po path."""
    return {name: os.path.join(LOCALES, name, "LC_MESSAGES", "aipager.po")
            for name in sorted(os.listdir(LOCALES))
            if os.path.isfile(os.path.join(LOCALES, name, "LC_MESSAGES", "aipager.po"))}


def _dump(catalog: Catalog) -> bytes:
    buf = io.BytesIO()
    # file names without line numbers: an edit elsewhere in a file changes no catalog
    write_po(buf, catalog, width=100, include_lineno=False)
    return buf.getvalue()


def write_template() -> None:
    with open(TEMPLATE, "wb") as fh:
        fh.write(_dump(extract()))


def update() -> None:
    """Merge the template into every catalog (Babel's update: a changed msgid turns fuzzy)."""
    with open(TEMPLATE, "rb") as fh:
        template = read_po(fh)
    for locale, path in catalogs().items():
        with open(path, "rb") as fh:
            catalog = read_po(fh, locale=locale)
        catalog.update(template, update_header_comment=False)
        with open(path, "wb") as fh:
            fh.write(_dump(catalog))


def msgids(catalog: Catalog) -> set:
    return {m.id for m in catalog if m.id}


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else "check"
    if command == "extract":
        write_template()
    elif command == "update":
        update()
    elif command == "check":
        with open(TEMPLATE, "rb") as fh:
            stale = msgids(extract()) ^ msgids(read_po(fh))
        if stale:
            print("the template is stale; run: python scripts/i18n.py extract update")
            return 1
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
