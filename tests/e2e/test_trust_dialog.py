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
