"""The daemon's card lines: English where the daemon renders them (the page, the hub, the
logs), the caller's language inside ``locales.rendering``."""

from __future__ import annotations

from aipager import locales
from aipager.texts import render
from aipager.port.model import Session, State, Task


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
        assert render.card(sess, 112.0).startswith("🔴 jim · Conversación borrada (/clear)")
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


def test_a_request_without_claude_codes_words_is_said_in_the_chats_language():
    """A Notification with no message gets aipager's own sentence, which is translated;
    Claude Code's own words pass as they came."""
    from aipager.port.model import Request

    bare = Request(key="n:1", kind="permission", tool="", opened_at=1.0,
                   description=render.NEEDS_PERMISSION)
    asked = Request(key="n:2", kind="permission", tool="", opened_at=1.0,
                    description="Claude needs your approval to run make")
    auto = Request(key="n:3", kind="permission", tool="", opened_at=1.0,
                   description=render.NEEDS_INPUT, terminal_only=True)
    assert "Claude needs your permission" in render.request("jim", bare)
    with locales.rendering(locales.translations("es")):
        assert "Claude necesita tu permiso" in render.request("jim", bare)
        assert "Claude needs your approval to run make" in render.request("jim", asked)
    with locales.rendering(locales.translations("pt_BR")):
        assert "Claude precisa da sua resposta" in render.request("jim", auto)
