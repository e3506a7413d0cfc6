"""The page in Debian's chromium (Playwright), on the real application over ``FakePort``:
what a person sees at phone size (390x844) and at a desk."""

from __future__ import annotations

import asyncio
import os
import socket

import pytest
from aiohttp.test_utils import TestServer
from fakes.port import FakePort
from playwright.async_api import async_playwright
from support.screens import rows

from aipager.daemon import screen
from aipager.port.model import Request, State
from aipager.port.outputs import Answer, Card, Permission
from aipager.web.actions import WebActions
from aipager.web.auth import Logins
from aipager.web.live import WebNotifier
from aipager.web.routes import make_app
from aipager.web.service import Settings
from aipager.web.who import People
from tests.support.door import door

S = "claude-jim"
PHONE = {"width": 390, "height": 844}
DESK = {"width": 1280, "height": 900}
ARTIFACTS = os.path.join(os.path.dirname(__file__), "..", "artifacts", "web")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Page:
    def __init__(self, port: FakePort, live: WebNotifier, logins: Logins, base: str, browser):
        self.port, self.live, self.logins, self.base, self.browser = port, live, logins, base, browser

    async def open(self, path: str = "/", size: dict = PHONE):
        context = await self.browser.new_context(viewport=size)
        page = await context.new_page()
        await page.goto(f"{self.base}/?token={self.logins.issue()}")
        await page.wait_for_selector("#needs, #sessions")
        if path != "/":
            await page.goto(f"{self.base}/{path}")
            await page.wait_for_selector("#conversation")
        return page


@pytest.fixture
async def browser_page():
    chromium = os.environ.get("AIPAGER_TEST_CHROMIUM") or "/usr/bin/chromium"
    env = dict(os.environ)
    port = FakePort(env)
    live = WebNotifier(lambda: port.sessions)
    spawned: list = []
    actions = WebActions(door(port), live, spawned.append)
    logins = Logins()
    number = _free_port()
    people = People(env, None)
    people.attach(actions.port)  # as WebPage.attach does
    app = make_app(actions, live, logins, people,
                   allowed_hosts=Settings().hosts(number), allowed_origins=Settings().origins(number))
    server = TestServer(app, host="127.0.0.1", port=number)
    await server.start_server()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            yield Page(port, live, logins, f"http://127.0.0.1:{number}", browser)
        finally:
            await browser.close()
            await server.close()
            for coro in spawned:
                coro.close()


async def _shot(page, name: str) -> None:
    os.makedirs(ARTIFACTS, exist_ok=True)
    await page.screenshot(path=os.path.join(ARTIFACTS, f"{name}.png"), full_page=True)


async def test_one_long_word_does_not_widen_the_phone_page(browser_page):
    word = "x" * 3000
    browser_page.port.add_session(S, State.READY)
    browser_page.live.emit(Card(session=S, text=f"✅ jim · {word}", task=1))
    table = f"| a | b |\n|---|---|\n| {word} | 1 |"
    browser_page.live.emit(Answer(session=S, text=f"Here: {word} and `{word}`\n\n{table}", task=1))
    for path in ("/", "#/s/jim"):
        page = await browser_page.open(path)
        await page.wait_for_selector(".md" if "s/" in path else "pre.card")
        wide = await page.evaluate("document.documentElement.scrollWidth")
        await _shot(page, f"long-word-{'session' if 's/' in path else 'home'}")
        assert wide <= PHONE["width"], f"{path} is {wide} px wide"


async def test_a_long_scoped_answer_wraps_on_a_phone_and_the_name_field_is_valid(browser_page):
    """A request's "📁 Allow FOLDER · this session" button with a real, long folder wraps
    inside a 390 px phone (it was 417 px wide); the new session form's name pattern
    compiles under the browser's v-flag rules (a console error at every load)."""
    folder = "/home/someone/projects/a-rather-long-project-name/services/api-gateway"
    browser_page.port.add_session(S, State.WAITING)
    browser_page.port.sessions.get(S).requests.append(
        Request(key="p:t1:", kind="permission", tool="Bash", opened_at=1.0, detail="ls"))
    browser_page.live.emit(Permission(
        session=S, text="🔐 jim · Bash\nls", key="p:t1:", tool="Bash",
        buttons=["allow", "deny", "s0", "stop"],
        scopes=[f"📁 Allow {folder} · this session"]))
    errors: list[str] = []
    page = await browser_page.open("/")
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    await page.reload()
    await page.wait_for_selector("article button[data-act=s0]")
    await _shot(page, "long-scope-phone")
    assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert not [e for e in errors if "pattern" in e], errors
    valid = await page.evaluate(
        "(() => { const i = document.querySelector('form.new input[name=name]');"
        " i.value = 'api-fix_2'; return i.checkValidity(); })()")
    assert valid


async def test_the_empty_page_shows_its_command_as_code_not_backticks(browser_page):
    page = await browser_page.open("/")
    await page.wait_for_selector("p.muted code")
    assert await page.inner_text("p.muted code") == "aipager session NAME"
    assert "`" not in await page.inner_text("main")


async def test_an_ended_session_shows_no_stray_null(browser_page):
    browser_page.port.add_session(S, State.GONE)
    page = await browser_page.open("#/s/jim")
    body = await page.inner_text("main")
    assert "null" not in body and "Nothing said here" in body


async def test_markdown_tables_strikethrough_ordered_and_nested_lists(browser_page):
    browser_page.port.add_session(S, State.READY)
    browser_page.live.emit(Answer(session=S, task=1, text=(
        "Done:\n\n| file | lines |\n|:---|---:|\n| a.py | 12 |\n| b.py | 3 |\n\n"
        "~~old plan~~ new plan\n\n3. third\n4. fourth\n   - under fourth\n     - deeper\n5. fifth")))
    page = await browser_page.open("#/s/jim", DESK)
    await page.wait_for_selector(".md table")
    cells = await page.eval_on_selector_all(".md table td", "tds => tds.map(t => t.textContent)")
    assert cells == ["a.py", "12", "b.py", "3"]
    assert await page.inner_text(".md del") == "old plan"
    assert await page.get_attribute(".md > ol", "start") == "3"
    assert await page.eval_on_selector_all(".md > ol > li", "l => l.length") == 3
    assert await page.inner_text(".md > ol > li ul > li ul > li") == "deeper"
    await _shot(page, "markdown-desk")


async def test_two_sends_on_a_slow_network_type_once_and_the_draft_survives(browser_page):
    browser_page.port.add_session(S, State.READY)
    page = await browser_page.open("#/s/jim")
    # a draft survives a reload (and a daemon restart: it lives in the browser)
    await page.fill("form.prompt textarea", "run the tests")
    await page.reload()
    await page.wait_for_selector("form.prompt textarea")
    assert await page.input_value("form.prompt textarea") == "run the tests"

    async def slow(route):
        await asyncio.sleep(0.8)  # a slow network: the first Send is still on its way
        await route.continue_()
    await page.route("**/prompt", slow)
    await page.click("form.prompt button[type=submit]")
    await page.click("form.prompt button[type=submit]", force=True)
    await page.keyboard.press("Control+Enter")
    while await page.input_value("form.prompt textarea"):  # cleared when it was typed
        await asyncio.sleep(0.1)
    assert len(browser_page.port.calls("type_prompt")) == 1
    await page.reload()
    await page.wait_for_selector("form.prompt textarea")
    assert await page.input_value("form.prompt textarea") == ""  # sent: no draft left


async def test_a_live_update_leaves_the_keyboard_focus_where_it_was(browser_page):
    browser_page.port.add_session(S, State.WORKING)
    page = await browser_page.open("/", DESK)
    await page.focus("article.session button")  # ⏹ Stop, reached with Tab
    before = await page.evaluate("document.activeElement.textContent")
    browser_page.live.emit(Card(session=S, text="⏳ jim · working on it", task=1))
    await page.wait_for_selector("text=working on it")
    assert await page.evaluate("document.activeElement.tagName") == "BUTTON"
    assert await page.evaluate("document.activeElement.textContent") == before


async def test_starting_asks_for_a_folder_and_the_trust_dialog_is_answered_on_the_phone(
        browser_page, tmp_path):
    import json

    app, fresh = tmp_path / "app", tmp_path / "fresh"
    app.mkdir()
    fresh.mkdir()
    (tmp_path / ".claude.json").write_text(json.dumps(
        {"projects": {str(app): {"hasTrustDialogAccepted": True}}}))
    browser_page.port.env["CLAUDE_CONFIG_DIR"] = str(tmp_path)
    page = await browser_page.open("/")
    options = await page.eval_on_selector_all("form.new select[name=folder] option",
                                              "o => o.map(x => x.value)")
    assert options[0] == str(app)  # the trusted folder first
    await page.fill("form.new input[name=name]", "fresh")
    await page.fill("form.new input[name=other]", str(fresh))
    await page.click("form.new button[type=submit]")
    await page.wait_for_selector("#flash.ok")
    ((name,), kw), = browser_page.port.calls("start_session")
    assert (name, kw["cwd"]) == ("fresh", str(fresh))

    browser_page.port.add_session("claude-fresh", State.UNKNOWN)  # at its trust dialog
    browser_page.port.sessions.get("claude-fresh").cwd = str(fresh)
    browser_page.live.emit(Card(session="claude-fresh", text="• fresh", task=0))
    await page.wait_for_selector("article.trust button[data-act=yes]")
    await _shot(page, "trust-dialog-phone")
    assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    browser_page.port.handler = lambda call, args, kw: (
        screen.read(rows("trust")) if call == "screen" else
        True if call == "answer_dialog" else None)
    await page.click("article.trust button[data-act=yes]")
    # the start's own "ok" flash may still show: wait for the answer itself
    for _ in range(100):
        if browser_page.port.calls("answer_dialog"):
            break
        await asyncio.sleep(0.05)
    await page.wait_for_selector("#flash.ok")
    ((session, kind, _pick), _), = browser_page.port.calls("answer_dialog")
    assert (session, kind) == ("claude-fresh", screen.Kind.TRUST)


async def test_the_agent_picked_keeps_its_folder_notes_through_a_live_update(browser_page):
    """The start form's folders say "Claude Code will ask to trust it" only while Claude Code
    is the agent picked.  A live update redraws the page and puts the picked agent back:
    the notes followed the default agent again (seen in the Codex e2e on a loaded run)."""
    page = await browser_page.open("/")
    folder = "form.new select[name=folder]"
    assert "will ask to trust" in await page.inner_text(folder)  # HOME: not trusted
    await page.select_option("form.new select[name=agent]", "codex")
    assert "will ask to trust" not in await page.inner_text(folder)
    browser_page.port.add_session(S, State.READY)
    browser_page.live.emit(Card(session=S, text="✅ jim · ready", task=0))
    await page.wait_for_selector(f"article.session[data-session='{S}']")
    assert await page.eval_on_selector("form.new select[name=agent]", "s => s.value") == "codex"
    assert "will ask to trust" not in await page.inner_text(folder)


async def test_a_session_starts_in_the_mode_picked_and_its_changes_read_on_the_phone(
        browser_page):
    from aipager.port.results import Diff

    page = await browser_page.open("/")
    await page.fill("form.new input[name=name]", "planner")
    await page.select_option("form.new select[name=mode]", "plan")
    await page.click("form.new button[type=submit]")
    await page.wait_for_selector("#flash.ok")
    ((name,), kw), = browser_page.port.calls("start_session")
    assert (name, kw["mode"]) == ("planner", "plan")

    diff = "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-print('one')\n+print('two')\n"
    browser_page.port.handler = lambda call, args, kw: (
        Diff(diff, ("app.py",), hidden=1) if call == "session_changes" else None)
    browser_page.port.add_session(S, State.READY)
    browser_page.port.sessions.get(S).cwd = "/srv/app"
    browser_page.live.emit(Card(session=S, text="✅ jim", task=1))
    await page.click(f"article[data-session='{S}'] a.button[href$='/changes']")
    await page.wait_for_selector("#changes pre.diff")
    text = await page.inner_text("#changes")
    assert "📝 jim: changed since the last commit (files: 1)" in text
    assert "Not shown, as your role may not read them (files: 1)" in text
    assert await page.inner_text("#changes pre.diff span.add") == "+print('two')\n"
    assert await page.inner_text("#changes pre.diff span.del") == "-print('one')\n"
    asked = len(browser_page.port.calls("session_changes"))
    # a live event does not run git again; ↻ does
    browser_page.live.emit(Card(session=S, text="⏳ jim", task=2))
    await asyncio.sleep(0.5)
    assert len(browser_page.port.calls("session_changes")) == asked
    await page.click("#changes button")
    for _ in range(50):
        if len(browser_page.port.calls("session_changes")) > asked:
            break
        await asyncio.sleep(0.05)
    assert len(browser_page.port.calls("session_changes")) == asked + 1
    await _shot(page, "changes-phone")
    assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


async def test_in_telegram_the_page_takes_its_colours_and_its_back_button(browser_page):
    import json
    from urllib.parse import quote

    browser_page.port.add_session(S, State.READY)
    theme = {"bg_color": "#17212b", "text_color": "#f5f5f5", "hint_color": "#708499",
             "secondary_bg_color": "#232e3c", "link_color": "#6ab3f3", "button_color": "#5288c1"}
    context = await browser_page.browser.new_context(viewport=PHONE)
    page = await context.new_page()
    # Telegram's mobile apps hand events over through this object (its script's postEvent)
    await page.add_init_script("""window.posted = [];
        window.TelegramWebviewProxy = {postEvent: (type, data) => window.posted.push([type, JSON.parse(data)])};""")
    await page.goto(f"{browser_page.base}/?token={browser_page.logins.issue()}")
    await page.wait_for_selector("#sessions")
    # a fresh load, as Telegram opens a Mini App (a change of the fragment alone loads nothing)
    await page.goto(f"{browser_page.base}/?launch=1#tgWebAppThemeParams={quote(json.dumps(theme))}"
                    "&tgWebAppPlatform=android")
    await page.wait_for_selector("#sessions")
    assert await page.evaluate("location.hash") == "#/"  # the launch parameters tidied away
    colour = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert colour == "rgb(23, 33, 43)"
    assert await page.evaluate("getComputedStyle(document.body).color") == "rgb(245, 245, 245)"
    assert await page.evaluate("window.posted.at(-1)") == [
        "web_app_setup_back_button", {"is_visible": False}]
    await page.click(f"article[data-session='{S}'] a.button[href$='/changes']")
    await page.wait_for_selector("#changes")
    assert await page.evaluate("window.posted.at(-1)") == [
        "web_app_setup_back_button", {"is_visible": True}]
    await _shot(page, "telegram-theme")
    # Telegram's back button: from a session's changes to the session, then to the start
    await page.evaluate("window.Telegram.WebView.receiveEvent('back_button_pressed')")
    await page.wait_for_selector("#conversation")
    await page.evaluate("window.Telegram.WebView.receiveEvent('back_button_pressed')")
    await page.wait_for_selector("#sessions")
    assert await page.evaluate("window.posted.at(-1)") == [
        "web_app_setup_back_button", {"is_visible": False}]


async def test_the_language_menu_switches_the_page_and_stays_chosen(browser_page):
    browser_page.port.add_session(S, State.READY)
    page = await browser_page.open("/")
    assert await page.inner_text("header nav a") == "Now"
    await page.select_option("#lang", "pt_BR")
    await _until(page, "document.documentElement.lang === 'pt-BR'")
    await _until(page, "document.querySelector('#sessions h2').textContent === 'Sessões'")
    await page.reload()
    await _until(page, "document.querySelector('#sessions h2')?.textContent === 'Sessões'")
    assert await page.eval_on_selector("#lang", "m => m.value") == "pt_BR"
    await page.select_option("#lang", "")  # Auto: the browser's language again
    await _until(page, "document.documentElement.lang === 'en'")


async def _until(page, expression: str, timeout: float = 10.0) -> None:
    """``expression`` true in the page (the page's CSP forbids wait_for_function's eval)."""
    for _ in range(int(timeout / 0.05)):
        if await page.evaluate(expression):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never true: {expression}")


async def test_a_file_picked_on_the_phone_joins_the_message_as_its_path(browser_page, tmp_path):
    from aipager import files

    browser_page.port.add_session(S, State.READY)
    page = await browser_page.open("#/s/jim")
    picked = tmp_path / "screenshot.png"
    picked.write_bytes(b"\x89PNG not really")
    await page.fill("form.prompt textarea", "what is wrong here?")
    await page.set_input_files("form.prompt input[name=attach]", str(picked))
    await page.wait_for_selector("#flash.ok")
    text = await page.eval_on_selector("form.prompt textarea", "t => t.value")
    said, path = text.rsplit(" ", 1)
    assert said == "what is wrong here?"
    assert os.path.dirname(path) == files.inbox_dir(browser_page.port.env, 0)
    assert open(path, "rb").read() == b"\x89PNG not really"
    await _shot(page, "attached")


async def test_the_keyboard_reaches_the_message_box_and_leaves_it(browser_page):
    browser_page.port.add_session(S, State.READY)
    page = await browser_page.open("#/s/jim", DESK)
    await page.keyboard.press("/")
    assert await page.evaluate("document.activeElement.getAttribute('aria-label')") == "prompt"
    await page.keyboard.type("hello")
    assert await page.eval_on_selector("form.prompt textarea", "t => t.value") == "hello"
    await page.keyboard.press("Escape")
    assert await page.evaluate("document.activeElement === document.body")
    # on the first view "/" starts naming a new session
    await page.goto(f"{browser_page.base}/#/")
    await page.wait_for_selector("#sessions")
    await page.keyboard.press("/")
    assert await page.evaluate("document.activeElement.name") == "name"
