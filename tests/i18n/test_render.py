"""The daemon's card lines: English where the daemon renders them (the page, the hub, the
logs), the caller's language inside ``locales.rendering``."""

from __future__ import annotations

from aipager import locales
from aipager.daemon import render
from aipager.daemon.model import Session, State, Task


def _working() -> Session:
    sess = Session(name="claude-jim", label="jim", registered_at=90.0)
    sess.state = State.WORKING
    sess.task = Task(seq=1, started_at=100.0)
    return sess


def test_a_card_is_english_without_a_catalog_and_spanish_with_one():
    sess = _working()
    assert render.card(sess, 112.0).startswith("⏳ jim · working · 12s")
    with locales.rendering(locales.translations("es")):
        assert render.card(sess, 112.0).startswith("⏳ jim · trabajando · 12s")
        sess.state = State.GONE
        sess.end_reason = "clear"
        assert render.card(sess, 112.0).startswith("🔴 jim · Sesión borrada")
    # the context ended: English again
    assert render.card(sess, 112.0).startswith("🔴 jim · Session cleared")


def test_plurals_follow_each_languages_rule():
    with locales.rendering(locales.translations("pt_BR")):
        assert locales.ntr("{n} background command", "{n} background commands", 1) \
            == "{n} comando em segundo plano"
        assert locales.ntr("{n} background command", "{n} background commands", 2) \
            == "{n} comandos em segundo plano"
    with locales.rendering(locales.translations("vi")):
        assert locales.ntr("{n} background command", "{n} background commands", 5) \
            == "{n} lệnh chạy nền"
