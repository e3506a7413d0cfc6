"""The web page in a real browser (Debian's chromium, driven by Playwright) on the real
Claude Code: ``aipager start`` with no Telegram at all prints a one-time link; the page
shows the session, sends a prompt Claude Code runs, approves its permission request,
shows the card change live, and answers Claude's question."""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from aipager.daemon.app import TICK_SECONDS
from aipager.proto import paths
from e2e.kit.browser import chromium, shot, sign_in_link, what_pages_show
from e2e.kit.daemon import BOT_TOKEN, USER_ID, Daemon
from e2e.kit.questions import COLOUR
from fakes import anthropic as fa

pytestmark = pytest.mark.e2e

SESSION = "claude-e2e"
DIALOG = "Do you want to proceed?"
ASKING = ("--permission-mode", "default")  # nothing pre-allowed: Claude Code asks
PHONE = {"width": 390, "height": 844}
WAIT_MS = 40_000


@pytest.fixture
def web_daemon(claude_home, fake_anthropic):
    """``aipager start`` on a machine where Telegram was never set up (no config)."""
    proc = Daemon.for_chat(claude_home, "", fake_anthropic.base_url)
    proc.start()  # its page on a free port: the printed link names it
    yield proc
    proc.stop()


@pytest.fixture
def browser(request):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chrome = p.chromium.launch(executable_path=chromium(), headless=True)
        yield chrome
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(what_pages_show(chrome))
        chrome.close()


def test_the_page_without_telegram_runs_a_prompt_approves_and_answers(
        web_daemon, browser, dtach_session, fake_anthropic, claude_home):
    from playwright.sync_api import expect

    target = os.path.join(claude_home.project, "from-the-page")
    fake_anthropic.script("E2E-WEB1", fa.bash(f"touch {target}"), fa.text("Made **it**."))
    fake_anthropic.script("E2E-WEB2", fa.tool("AskUserQuestion", {"questions": [COLOUR]}),
                          fa.text("Blue it is."))
    assert not os.path.exists(paths.config_file(claude_home.aipager_env()))
    tui = dtach_session(*ASKING)
    web_daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                            "the session ready")

    link = sign_in_link(web_daemon)
    page = browser.new_page(viewport=PHONE)
    page.goto(link)
    # the token became a cookie and left the address bar
    assert "token" not in page.url and page.url.endswith("/")
    card = page.locator(f"article.session[data-session='{SESSION}']")
    expect(card).to_be_visible(timeout=WAIT_MS)
    expect(card.locator("h3")).to_contain_text("e2e · ready")
    page.evaluate("window.notReloaded = true")
    shot(page, "sessions")

    # a prompt from the page, typed into the real Claude Code
    card.get_by_role("link", name="💬 Open").click()
    expect(page).to_have_url(re.compile(r"#/s/"))
    page.get_by_label("prompt").fill("E2E-WEB1 make the file")
    page.get_by_role("button", name="➤ Send").click()
    expect(page.locator("#flash")).to_contain_text("Typed into e2e")

    # its permission request, answered from the page while Claude Code waits
    page.get_by_role("link", name="Now").click()
    request = page.locator("article.request", has_text=f"touch {target}")
    expect(request).to_be_visible(timeout=WAIT_MS)
    running = page.locator(f"article.session[data-session='{SESSION}'] pre.card")
    expect(running).to_contain_text(f"Bash: touch {target}")
    before = running.inner_text()
    shot(page, "needs-you")
    tui.wait_shown(DIALOG)
    assert not os.path.exists(target)
    request.get_by_role("button", name="✅ Allow").click()
    expect(page.locator("#flash")).to_contain_text("Allowed")

    # the card changes live (the stream, no reload), the command ran, Claude answered
    expect(running).to_contain_text(f"✓ Bash: touch {target}", timeout=WAIT_MS)
    assert running.inner_text() != before
    assert page.evaluate("window.notReloaded") is True
    tui.wait_shown("Made it.", 30)
    assert os.path.exists(target)
    expect(page.locator("article.request")).to_have_count(0)
    (record,) = [r for r in claude_home.audit() if r["action"] == "permission_answer"]
    assert (record["answer"], record["via"], record["who"]) == ("allow", "hook_decision", "@web")

    # the conversation: the prompt and the answer, its Markdown rendered
    page.locator(f"article.session[data-session='{SESSION}']").get_by_role(
        "link", name="💬 Open").click()
    expect(page).to_have_url(re.compile(r"#/s/"))
    talk = page.locator("ol.talk")
    expect(talk.locator("li.sent")).to_contain_text("E2E-WEB1 make the file")
    expect(talk.locator("li.answer strong")).to_have_text("it", timeout=WAIT_MS)
    # who allowed the request stays in the conversation, as the chat's verdict line
    expect(talk.locator("li.verdict")).to_contain_text("✅ Allowed by @web")
    shot(page, "conversation")

    # Claude asks a question: answered from the page
    web_daemon.wait_session(lambda s: s["state"] == "ready", 30, "the first task done")
    page.get_by_label("prompt").fill("E2E-WEB2 style the button")
    page.get_by_role("button", name="➤ Send").click()
    page.get_by_role("link", name="← all sessions").click()
    question = page.locator("form.question")
    expect(question).to_contain_text("Which colour should the button be?", timeout=WAIT_MS)
    shot(page, "question")
    question.get_by_label("Blue").check()
    question.get_by_role("button", name="✅ Answer").click()
    tui.wait_shown("Blue it is.", 40)
    results = [b for r in fake_anthropic.requests_with("E2E-WEB2") for b in r.tool_results()]
    assert results and 'Which colour should the button be?"="Blue"' in str(results[0]["content"])
    expect(page.locator("form.question")).to_have_count(0, timeout=WAIT_MS)

    # the audit log names the page for each thing done from it
    page.get_by_role("link", name="Audit log").click()
    expect(page.locator("#audit tbody")).to_contain_text("chat_prompt")
    shot(page, "audit")
    page.close()


def test_the_link_works_once_and_other_names_are_refused(web_daemon, browser):
    link = sign_in_link(web_daemon)
    first = browser.new_page()
    assert first.goto(link).status == 200
    second = browser.new_context().new_page()  # another browser, the same link
    response = second.goto(link)
    assert response.status == 403
    base = link.split("?")[0]
    assert second.request.get(base + "api/state").status == 401  # no cookie
    port = base.rsplit(":", 1)[1].rstrip("/")
    rebound = second.request.get(f"http://localhost:{port}/api/state")
    assert rebound.status == 421  # another name for this machine: refused
    token = link.split("token=", 1)[1]
    log = web_daemon.log()
    assert "web page on http://127.0.0.1:" in log and token not in log

    # `aipager page` makes another link (one use) for the browser the first one missed
    web_daemon.wait_state(lambda st: (st["state"].get("daemon") or {}).get("web", {}).get("url"),
                          20, "the page's address in the saved state")
    shown = _cli(web_daemon, "status")
    assert f"page: {base}" in shown.stdout
    made = _cli(web_daemon, "page")
    assert made.returncode == 0, made.stderr
    fresh = made.stdout.strip().removeprefix("Open ")
    assert fresh.startswith(base + "?token=") and fresh != link
    assert second.goto(fresh).status == 200
    assert second.request.get(base + "api/state").status == 200  # signed in
    # used up; the refusal in the browser's language, saying what to run
    third = browser.new_context(locale="pt-BR").new_page()
    refused = third.goto(fresh)
    assert refused.status == 403
    assert "aipager page" in third.content() and "Este link" in third.content()
    web_daemon.stop()
    down = _cli(web_daemon, "page")
    assert down.returncode != 0 and "not running" in down.stderr


def _cli(daemon: Daemon, *args: str):
    import subprocess

    from e2e.kit.claude import installed_program

    return subprocess.run([installed_program("aipager"), *args], env=daemon.env,
                          capture_output=True, text=True, timeout=30)


def _init_data(user: dict) -> str:
    """initData as Telegram signs it for the bot (the rule of ``web.auth``, spelled out)."""
    import hashlib
    import hmac
    import time
    from urllib.parse import urlencode

    fields = {"auth_date": str(int(time.time())), "query_id": "AAE",
              "user": json.dumps(user, separators=(",", ":"))}
    secret = hmac.new(b"WebAppData", BOT_TOKEN.encode(), hashlib.sha256).digest()
    check = "\n".join(f"{k}={v}" for k, v in sorted(fields.items()))
    fields["hash"] = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    return urlencode(fields)


def test_the_mini_app_acts_with_the_members_role(daemon, browser, dtach_session):
    """With Telegram set up the page is served too, and opened as a Mini App (Telegram's
    initData in the address's fragment) it acts as that member: a ``user`` sees the
    sessions, may send prompts, and may neither end sessions nor read the audit log."""
    from urllib.parse import quote

    from playwright.sync_api import expect

    dtach_session("--permission-mode", "default")
    daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                        "the session ready")
    base = sign_in_link(daemon).split("?")[0]
    page = browser.new_page(viewport=PHONE)  # no cookie: only Telegram's word
    user = {"id": USER_ID, "first_name": "Guest", "username": "guest"}
    page.goto(f"{base}#tgWebAppData={quote(_init_data(user))}&tgWebAppVersion=8.0")
    expect(page.locator("#me")).to_have_text("@guest · user", timeout=WAIT_MS)
    assert "tgWebAppData" not in page.url  # taken off the address
    card = page.locator(f"article.session[data-session='{SESSION}']")
    expect(card).to_be_visible(timeout=WAIT_MS)
    expect(card.get_by_role("button", name="🗑 End")).to_have_count(0)
    expect(page.get_by_role("link", name="Audit log")).to_be_hidden()
    shot(page, "mini-app")
    # the same member whose Telegram speaks Portuguese: the page's words in Portuguese
    brazilian = browser.new_page(viewport=PHONE)
    speaker = {**user, "language_code": "pt-br"}
    brazilian.goto(f"{base}#tgWebAppData={quote(_init_data(speaker))}&tgWebAppVersion=8.0")
    expect(brazilian.locator("#needs h2")).to_have_text("Precisa de você", timeout=WAIT_MS)
    expect(brazilian.locator("#sessions h2")).to_have_text("Sessões")
    expect(brazilian.locator(f"article.session[data-session='{SESSION}']").get_by_role(
        "link", name="💬 Abrir")).to_be_visible()
    expect(brazilian.get_by_role("link", name="Agora")).to_be_visible()
    shot(brazilian, "mini-app-pt-br")
    forged = browser.new_page()
    forged.goto(f"{base}#tgWebAppData={quote(_init_data(user).replace('Guest', 'Admin'))}")
    # a forged signature reads as a sign-in Telegram no longer vouches for
    expect(forged.locator("#view")).to_contain_text("sign-in for this page has run out",
                                                    timeout=WAIT_MS)


def test_a_restart_keeps_the_page_signed_in_with_its_conversation_and_draft(
        web_daemon, browser, dtach_session, fake_anthropic):
    """The daemon restarted (an update, a crash): the phone's page reloads signed in, with the
    conversation it showed and the words it had not sent yet."""
    import socket

    from playwright.sync_api import expect

    fake_anthropic.script("E2E-KEEP", fa.text("Kept **answer**."))
    fake_anthropic.script("E2E-TYPED", fa.text("Typed **here**."))
    with socket.socket() as s:  # the same address after the restart, as a real page has
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    web_daemon.stop()
    web_daemon.extra_env["AIPAGER_WEB_PORT"] = str(port)
    web_daemon.start()
    tui = dtach_session()
    web_daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                            "the session ready")
    page = browser.new_page(viewport=PHONE)
    page.goto(sign_in_link(web_daemon))
    page.locator(f"article.session[data-session='{SESSION}']").get_by_role(
        "link", name="💬 Open").click()
    page.get_by_label("prompt").fill("E2E-KEEP say it")
    page.get_by_role("button", name="➤ Send").click()
    talk = page.locator("ol.talk")
    expect(talk.locator("li.answer strong")).to_have_text("answer", timeout=WAIT_MS)
    # the last prompt typed at the computer: a restarted daemon shows its card again
    tui.type("E2E-TYPED at the keyboard")
    expect(talk.locator("li.answer strong").nth(1)).to_have_text("here", timeout=WAIT_MS)
    web_daemon.wait_session(lambda s: s["state"] == "ready", 20, "the task done")
    page.get_by_label("prompt").fill("a draft not sent yet")

    for _restart in range(2):  # each restart once added the last prompt again (issue 43)
        web_daemon.stop()
        web_daemon.start()
        web_daemon.wait_session(lambda s: s["state"] == "ready", 30, "the session back")
        # its first ticks show the restored cards again (what once said the prompt again)
        time.sleep(3 * TICK_SECONDS)
        page.reload()
        expect(talk.locator("li.sent")).to_contain_text("E2E-KEEP say it", timeout=WAIT_MS)
        expect(talk.locator("li.answer strong")).to_have_text(["answer", "here"])
        expect(talk.locator("li.prompt")).to_have_count(1)
        expect(talk.locator("li.prompt")).to_contain_text("E2E-TYPED at the keyboard")
    expect(page.get_by_label("prompt")).to_have_value("a draft not sent yet")
    assert "Not signed in" not in page.inner_text("body")
    shot(page, "after-restart")
    saved = paths.page_state_file(web_daemon.env)
    assert os.stat(saved).st_mode & 0o777 == 0o600
    assert "token" not in open(saved, encoding="utf-8").read()


def test_a_session_started_from_the_page_becomes_ready_there_without_a_reload(
        web_daemon, browser, claude_home):
    """Issue 43: a session the page started stayed "• NAME · starting" until a reload: it has
    no task, so no card said it became ready, and the page reads again only when the
    daemon shows something."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport=PHONE)
    page.goto(sign_in_link(web_daemon))
    expect(page.locator("#sessions")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#live")).to_have_class("dot on", timeout=WAIT_MS)
    page.evaluate("window.notReloaded = true")
    # started as the page's own form starts one (its POST), in a folder Claude Code trusts
    started = page.evaluate("""async (folder) => {
        const r = await fetch("/api/sessions", {method: "POST",
            headers: {"Content-Type": "application/json"},
            body: JSON.stringify({name: "pg", folder})});
        return await r.json(); }""", claude_home.project)
    assert started["ok"], started
    try:
        card = page.locator("article.session[data-session='claude-pg']")
        expect(card.locator("h3")).to_contain_text("pg", timeout=WAIT_MS)
        web_daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 60,
                                "pg ready", name="claude-pg")
        expect(card.locator("h3")).to_contain_text("pg · ready", timeout=10_000)
        assert page.evaluate("window.notReloaded") is True
        shot(page, "started-ready-live")
    finally:  # the daemon started it: nothing else ends it
        _cli(web_daemon, "session", "kill", "pg", "--yes")


def test_a_prompt_from_the_page_shows_in_the_chat_and_its_answer_replies_to_it(
        daemon, browser, dtach_session, fake_anthropic, fake_telegram):
    """Issue 43: a prompt sent from the page reached Claude Code, and its answer buzzed the
    phone with no question above it.  The chat now shows it as it shows a prompt typed at
    the computer (who sent it from the page, and its words), and the answer replies to it."""
    from playwright.sync_api import expect

    from e2e.kit.chat import Phone, text_of

    fake_anthropic.script("E2E-MIRROR", fa.text("Mirrored **answer**."))
    dtach_session()
    daemon.wait_session(lambda s: s["claude_session_id"] and s["state"] == "ready", 30,
                        "the session ready")
    phone = Phone(fake_telegram)
    page = browser.new_page(viewport=PHONE)
    page.goto(sign_in_link(daemon))
    page.locator(f"article.session[data-session='{SESSION}']").get_by_role(
        "link", name="💬 Open").click()
    page.get_by_label("prompt").fill("E2E-MIRROR asked on the page")
    page.get_by_role("button", name="➤ Send").click()
    expect(page.locator("ol.talk li.answer strong")).to_have_text("answer", timeout=WAIT_MS)

    asked = phone.wait_message(lambda m: text_of(m).startswith("🌐 e2e · @web on the page:"),
                               20, "the page's prompt")
    assert text_of(asked).endswith("\nE2E-MIRROR asked on the page")
    # (the task's card replies to it too, and may quote Claude's words when first sent late)
    (answer,) = phone.wait(lambda snap: [p for p in phone.replies_to(asked["message_id"], snap)
                                         if str(p.get("text")).startswith("e2e\nMirrored")],
                           20, "the answer")
    assert answer.get("disable_notification") in (None, False, "false")  # it rings
    assert sum("E2E-MIRROR asked on the page" in t for t in phone.sent_texts()) == 1
