"""The page's words in the person's language (``GET /strings``), and every word the page's
script asks for is one the catalogs have."""

from __future__ import annotations

import json
import os
import re

import pytest

from aipager.web import strings

STATIC = os.path.join(os.path.dirname(strings.__file__), "static")


async def test_a_brazilian_mini_app_user_gets_portuguese_words_before_signing_in(web):
    # not signed in: the words are not secret, and "Not signed in" itself is translated
    response = await web.get("/strings?lang=pt-br")
    assert response.status == 200
    found = await response.json()
    assert found["locale"] == "pt_BR"
    assert found["strings"]["Needs you"] == "Precisa de você"
    assert found["strings"]["Not signed in. Open the link `aipager start` printed on this "
                            "computer, or open aipager from its Telegram bot."].startswith(
        "Você não entrou.")
    assert set(found["strings"]) == set(strings.PAGE)


@pytest.mark.parametrize("headers, query, locale, needs", [
    ({"Accept-Language": "es-ES,es;q=0.9,en;q=0.8"}, "", "es", "Te necesita"),
    ({"Accept-Language": "vi-VN"}, "", "vi", "Cần bạn"),
    ({"Accept-Language": "vi-VN"}, "?lang=en", "en", "Needs you"),  # Telegram's word first
    ({"Accept-Language": "de-DE"}, "", "en", "Needs you"),
    ({}, "", "en", "Needs you"),
])
async def test_the_browsers_language_else_english(web, headers, query, locale, needs):
    found = await (await web.get(f"/strings{query}", **headers)).json()
    assert (found["locale"], found["strings"]["Needs you"]) == (locale, needs)


def test_every_word_the_page_asks_for_is_in_the_catalogs():
    with open(os.path.join(STATIC, "app.js"), encoding="utf-8") as fh:
        script = fh.read()
    asked = {json.loads(m) for m in re.findall(r'\bt\(("(?:[^"\\]|\\.)*")', script)}
    for table in ("WORDS", "STATUS"):
        words = re.search(rf"const {table} = (\{{.*?\}});", script).group(1)
        asked |= set(re.findall(r':\s*"([^"]+)"', words))
    with open(os.path.join(STATIC, "index.html"), encoding="utf-8") as fh:
        asked |= set(re.findall(r'data-t="([^"]+)"', fh.read()))
    assert asked and asked <= set(strings.PAGE), asked - set(strings.PAGE)
