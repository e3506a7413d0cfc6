"""A newcomer's first session, in a folder the real Claude Code 2.1.328 does not trust yet:
its trust dialog opens on "❯ No, exit".  The answer from the phone is read off the real
screen (``daemon.screen``): ✅ Yes moves onto "Yes, I trust this folder" and only then presses
Enter, so the session runs and answers; a message sent meanwhile is never typed into the
dialog; ❌ ends the session.  Also records the screens ``tests/fixtures/screens/`` holds
(``AIPAGER_E2E_RECORD=1``) and checks the recorded ones still read as the live ones do."""

from __future__ import annotations

import json
import os

import pytest

from e2e.kit.chat import Phone, buttons, text_of
from e2e.test_web import browser, web_daemon  # noqa: F401 - fixtures
from fakes import anthropic as fa
from support.screens import rows

from aipager.daemon import screen

pytestmark = pytest.mark.e2e

YES = "✅ Yes, I trust this folder"
NO = "🗑 No, end the session"


def _untrust(claude_home) -> None:
    """A newcomer's Claude Code trusts no folder yet (the kit's home trusts the project)."""
    path = os.path.join(claude_home.home, ".claude.json")
    with open(path, encoding="utf-8") as fh:
        cfg = json.load(fh)
    cfg["projects"] = {}
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(cfg, fh)


def _state(daemon, name: str) -> str:
    return daemon.wait_session(lambda s: True, 20, name, name=name)["state"]


def test_yes_on_the_phone_starts_the_session_and_its_first_message_is_answered(
        daemon, fake_anthropic, fake_telegram, claude_home):
    _untrust(claude_home)
    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-NEWCOMER", fa.text("hello"))
    first = phone.say("/new api E2E-NEWCOMER hello")
    ask = phone.wait_message(lambda m: YES in buttons(m), 30, "the trust question")
    # a message while the dialog is up: declined with why, never typed into the dialog
    phone.say("/api E2E-NEWCOMER typed into the dialog?")
    phone.wait_message(lambda m: "waits for you to trust its folder first" in text_of(m), 30,
                       "told the session waits for its folder's trust")
    assert _state(daemon, "claude-api") != "gone"

    phone.toast(phone.tap(ask, YES))
    phone.wait(lambda snap: any("hello" == p["text"].split("\n")[-1].strip()
                                for p in phone.replies_to(first["message_id"], snap)),
               90, "the first message answered")
    assert _state(daemon, "claude-api") != "gone"
    # the dialog's choice was made on the screen, and the folder is trusted now
    with open(os.path.join(claude_home.home, ".claude.json"), encoding="utf-8") as fh:
        trusted = json.load(fh)["projects"]
    assert any(v.get("hasTrustDialogAccepted") for v in trusted.values()), trusted
    # the typed-into-the-dialog message never reached the model
    assert not fake_anthropic.requests_with("typed into the dialog")


def test_no_on_the_phone_ends_the_session(daemon, fake_anthropic, fake_telegram, claude_home):
    _untrust(claude_home)
    phone = Phone(fake_telegram)
    phone.say("/new nope")
    ask = phone.wait_message(lambda m: NO in buttons(m), 30, "the trust question")
    phone.toast(phone.tap(ask, NO))
    daemon.wait_session(lambda s: s["state"] == "gone", 30, "nope gone", name="claude-nope")


def test_the_recorded_screens_read_as_the_live_ones(dtach_session, claude_home):
    """The live trust dialog, read through the daemon's own watcher, is what the fixture
    says; with AIPAGER_E2E_RECORD=1 the fixture is written from it."""
    import asyncio

    from aipager.daemon.screenwatch import ScreenWatch

    _untrust(claude_home)
    tui = dtach_session("--permission-mode", "default")

    async def read() -> list[str]:
        watch = ScreenWatch(tui.socket)
        await watch.start()
        try:
            for _ in range(100):
                seen = screen.read(watch.rows())
                if isinstance(seen, screen.Dialog):
                    return watch.rows()
                await watch.changed(0.3)
            return watch.rows()
        finally:
            await watch.close()

    live = asyncio.run(read())
    seen = screen.read(live)
    assert isinstance(seen, screen.Dialog) and seen.kind == screen.Kind.TRUST, live
    recorded = screen.read(rows("trust"))
    assert isinstance(recorded, screen.Dialog)
    assert (seen.options, seen.selected, seen.title) == (
        recorded.options, recorded.selected, recorded.title)


def test_yes_on_the_page_starts_the_session_and_it_answers(
        web_daemon, browser, fake_anthropic, claude_home):  # noqa: F811 - fixtures
    """The same on the page (chromium at phone size, the real daemon and Claude Code): a
    session started there in a folder Claude Code does not trust shows the question under
    "Needs you"; ✅ chooses "Yes, I trust this folder" on the real screen, and a prompt from
    the page is answered."""
    from playwright.sync_api import expect

    from e2e.kit.browser import shot, sign_in_link

    _untrust(claude_home)
    fake_anthropic.script("E2E-PAGE-TRUST", fa.text("hello from the page"))
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(sign_in_link(web_daemon))
    page.fill("form.new input[name=name]", "pg")
    page.fill("form.new input[name=other]", claude_home.project)
    page.click("form.new button[type=submit]")
    ask = page.locator("article.trust")
    expect(ask).to_be_visible(timeout=40_000)
    # the flash names the session as people do, not by its internal name
    expect(page.locator("#flash")).to_contain_text("🆕 pg started in")
    shot(page, "trust-real-claude")
    ask.locator("button[data-act=yes]").click()
    web_daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 60,
                            "pg started", name="claude-pg")
    page.goto(page.url.split("#")[0] + "#/s/claude-pg")
    page.get_by_label("prompt").fill("E2E-PAGE-TRUST say hello")
    page.get_by_role("button", name="➤ Send").click()
    expect(page.locator("ol.talk li.answer")).to_contain_text("hello from the page",
                                                              timeout=60_000)
    page.close()
