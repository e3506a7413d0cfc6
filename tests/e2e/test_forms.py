"""An MCP server's form (an elicitation) answered from the phone, on the real Claude Code TUI.

The session runs a small MCP server (``tests/support/mcp_elicit.py``) whose one tool asks
Claude Code for a form; Claude Code's ``Elicitation`` hook (the installed ``aipager-hook``)
forwards it and waits for the answer; the chat fills it in field by field and sends it; the
server writes down exactly what it received.  Decline likewise.  The payload the hook
forwarded is kept as the daemon's journal has it and checked against the recorded fixture's
shape (tests/fixtures/elicitation.json).
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from e2e.kit.chat import Phone, buttons, text_of
from fakes import anthropic as fa

pytestmark = pytest.mark.e2e

SERVER = os.path.join(os.path.dirname(__file__), "..", "support", "mcp_elicit.py")
TOOL = "mcp__releaser__ask"


def _session(claude_home, dtach_session, daemon):
    answers = os.path.join(claude_home.root, "answers.jsonl")
    config = os.path.join(claude_home.root, "mcp.json")
    with open(config, "w", encoding="utf-8") as fh:
        json.dump({"mcpServers": {"releaser": {
            "command": sys.executable, "args": ["-I", os.path.abspath(SERVER), answers]}}}, fh)
    tui = dtach_session("--mcp-config", config, "--allowedTools", TOOL)
    daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                        "the session ready")
    return tui, answers


def _received(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError:
        return []


def _form(phone: Phone, step: str) -> dict:
    return phone.wait_message(lambda m: "releaser asks" in text_of(m) and step in text_of(m),
                              30, f"the form at {step!r}")


def _step(phone: Phone, message: dict, step: str) -> dict:
    return phone.wait(lambda snap: next(
        (m for m in phone.messages(snap) if m["message_id"] == message["message_id"]
         and step in text_of(m)), None), 20, f"the form at {step!r}")


def test_a_form_filled_in_on_the_phone_reaches_the_mcp_server_exactly(
        daemon, dtach_session, fake_anthropic, fake_telegram, claude_home):
    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-FORM", fa.tool(TOOL, {}), fa.text("Released as asked."))
    tui, answers = _session(claude_home, dtach_session, daemon)
    phone.say("E2E-FORM release it")

    form = _form(phone, "1/4 · Channel *")
    assert "Where should the release go?" in text_of(form)
    assert ["Stable", "Beta", "Nightly"] == list(buttons(form))[:3], buttons(form)
    phone.tap(form, "Nightly")
    form = _step(phone, form, "2/4 · Release note")
    phone.say("ship “it” ✓", reply_to=form["message_id"])
    form = _step(phone, form, "3/4 · Replicas")
    phone.say("4", reply_to=form["message_id"])
    form = _step(phone, form, "4/4 · Tell the team")
    phone.tap(form, "Yes")
    form = _step(phone, form, "Send this to releaser?")
    assert _received(answers) == []  # the server still waits: nothing went before Send
    phone.tap(form, "✅ Send")

    tui.wait_shown("Released as asked.", 40)
    (got,) = _received(answers)
    assert got["result"] == {"action": "accept", "content": {
        "channel": "nightly", "note": "ship “it” ✓", "replicas": 4, "notify": True}}
    phone.wait(lambda snap: next((m for m in phone.messages(snap)
                                  if m["message_id"] == form["message_id"]
                                  and "✅ Sent by @owner" in text_of(m) and not buttons(m)), None),
               20, "the form's verdict")
    # Claude Code's own form never showed: the hook answered it
    assert not tui.shows("Where should the release go?")
    (record,) = [r for r in claude_home.audit() if r["action"] == "form_answer"]
    assert (record["answer"], record["server"], record["who"]) == ("accept", "releaser", "@owner")
    assert "nightly" not in json.dumps(record)


def test_a_declined_form_is_declined(daemon, dtach_session, fake_anthropic, fake_telegram,
                                     claude_home):
    phone = Phone(fake_telegram)
    fake_anthropic.script("E2E-FORMNO", fa.tool(TOOL, {}), fa.text("Not released."))
    tui, answers = _session(claude_home, dtach_session, daemon)
    phone.say("E2E-FORMNO release it")

    form = _form(phone, "1/4 · Channel *")
    phone.tap(form, "❌ Decline")
    tui.wait_shown("Not released.", 40)
    (got,) = _received(answers)
    assert got["result"] == {"action": "decline"}
    results = [b for r in fake_anthropic.requests_with("E2E-FORMNO") for b in r.tool_results()]
    assert "action=decline" in json.dumps(results), results


@pytest.fixture
def web_daemon(claude_home, fake_anthropic):
    """``aipager start`` with its page and no Telegram."""
    from e2e.kit.daemon import Daemon

    proc = Daemon.for_chat(claude_home, "", fake_anthropic.base_url)
    proc.start()
    yield proc
    proc.stop()


def test_a_form_filled_in_on_the_page_reaches_the_mcp_server_exactly(
        web_daemon, dtach_session, fake_anthropic, claude_home):
    """The same form on the page in Debian's chromium at phone size: its inputs, Send, and
    the server gets exactly the values typed."""
    from playwright.sync_api import expect, sync_playwright

    from e2e.kit.browser import chromium, sign_in_link

    fake_anthropic.script("E2E-FORMWEB", fa.tool(TOOL, {}), fa.text("Released from the page."))
    tui, answers = _session(claude_home, dtach_session, web_daemon)
    tui.type("E2E-FORMWEB release it")  # typed at the computer; answered on the page
    with sync_playwright() as p:
        chrome = p.chromium.launch(executable_path=chromium(), headless=True)
        try:
            page = chrome.new_page(viewport={"width": 390, "height": 844})
            page.goto(sign_in_link(web_daemon))
            form = page.locator("form.request.form")
            expect(form).to_contain_text("Where should the release go?", timeout=40_000)
            assert _received(answers) == []
            form.locator("select[name=channel]").select_option("beta")
            form.locator("input[name=note]").fill("from the page ✓")
            form.locator("input[name=replicas]").fill("2")
            form.locator("input[name=notify]").uncheck()
            form.locator("button[data-act=accept]").click()
            expect(page.locator("#flash")).to_contain_text("Sent", timeout=20_000)
        finally:
            chrome.close()
    tui.wait_shown("Released from the page.", 40)
    (got,) = _received(answers)
    assert got["result"] == {"action": "accept", "content": {
        "channel": "beta", "note": "from the page ✓", "replicas": 2, "notify": False}}
