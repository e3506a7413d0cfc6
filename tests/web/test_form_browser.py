"""An MCP server's form answered on the page in Debian's chromium (Playwright) at phone size,
on the real daemon: the recorded Elicitation (tests/fixtures/elicitation.json) opens it with
its hook waiting on a real datagram socket, and what the person types and taps is what that
socket receives, as the hook reads it."""

from __future__ import annotations

import asyncio
import json
import os

import orjson
import pytest
from aiohttp.test_utils import TestServer
from daemon.test_replies import RID, S, HookSocket
from playwright.async_api import async_playwright

from aipager.daemon.app import Daemon
from aipager.web.actions import WebActions
from aipager.web.auth import Logins
from aipager.web.live import WebNotifier
from aipager.web.routes import make_app
from aipager.web.service import Settings
from aipager.web.who import People

from .test_page_browser import PHONE, _free_port, _shot, _until
from tests.support.door import door

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "elicitation.json")
FORM = "form.request.form"


class FormPage:
    def __init__(self, daemon: Daemon, hook: HookSocket, logins: Logins, base: str, browser):
        self.daemon, self.hook, self.logins, self.base, self.browser = (
            daemon, hook, logins, base, browser)

    def ask(self) -> str:
        """Claude calls the releaser's tool, whose server asks with its form: the form's key."""
        with open(FIXTURE, encoding="utf-8") as fh:
            ev = json.load(fh)
        ev.update(session=S, aipager_request_id=RID, aipager_reply_addr=self.hook.path)
        core = self.daemon.core
        core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "release it"})
        core.feed({"hook_event_name": "PreToolUse", "session": S,
                   "tool_name": "mcp__releaser__ask", "tool_use_id": "toolu_mcp",
                   "tool_input": {}})
        core.feed(ev)
        return core.registry.get(S).requests[0].key

    async def open(self):
        context = await self.browser.new_context(viewport=PHONE)
        page = await context.new_page()
        await page.goto(f"{self.base}/?token={self.logins.issue()}")
        await page.wait_for_selector("#needs")
        return page

    async def received(self) -> list[bytes]:
        """What reached the hook's socket (waiting a moment for it)."""
        for _ in range(100):
            got = self.hook.received()
            if got:
                return got
            await asyncio.sleep(0.05)
        return []


@pytest.fixture
async def form_page():
    chromium = os.environ.get("AIPAGER_TEST_CHROMIUM") or "/usr/bin/chromium"
    env = dict(os.environ)
    found: list[Daemon] = []
    live = WebNotifier(lambda: found[0].sessions if found else None)
    daemon = Daemon(env, notifier=live)
    found.append(daemon)
    spawned: list = []
    actions = WebActions(door(daemon), live, spawned.append)
    logins = Logins()
    number = _free_port()
    people = People(env, None)
    people.attach(actions.port)  # as WebPage.attach does
    app = make_app(actions, live, logins, people,
                   allowed_hosts=Settings().hosts(number),
                   allowed_origins=Settings().origins(number))
    server = TestServer(app, host="127.0.0.1", port=number)
    await server.start_server()
    hook = HookSocket()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            yield FormPage(daemon, hook, logins, f"http://127.0.0.1:{number}", browser)
        finally:
            await browser.close()
            await server.close()
            hook.close()
            for coro in spawned:
                coro.close()


async def test_the_form_is_filled_in_on_the_phone_and_its_values_reach_the_hook(form_page):
    key = form_page.ask()
    page = await form_page.open()
    await page.wait_for_selector(f"{FORM} select[name=channel]")
    shown = await page.inner_text(FORM)
    assert "📋 jim · releaser asks: Where should the release go?" in shown
    # each field drawn as the form asks for it: the labels shown, the values sent
    labels = await page.eval_on_selector_all(f"{FORM} select[name=channel] option",
                                             "o => o.map(x => [x.value, x.textContent])")
    assert labels == [["", "—"], ["stable", "Stable"], ["beta", "Beta"], ["nightly", "Nightly"]]
    replicas = f"{FORM} input[name=replicas]"
    assert [await page.get_attribute(replicas, a) for a in ("type", "min", "max", "step")] == [
        "number", "1", "9", "1"]
    assert await page.eval_on_selector(f"{FORM} select[name=channel]", "s => s.required")
    assert await page.eval_on_selector(replicas, "i => i.required")
    assert not await page.eval_on_selector(f"{FORM} input[name=note]", "i => i.required")
    assert "Channel *" in shown and "Replicas *" in shown and "Release note *" not in shown
    assert "one line" in shown  # the note's description, as its hint
    assert "null" not in shown and "undefined" not in shown
    assert await page.is_checked(f"{FORM} input[name=notify]")  # its default: true
    await _shot(page, "form-phone")
    assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    # a required field left empty: the browser asks for it, nothing is sent
    await page.click(f"{FORM} button[data-act=accept]")
    await asyncio.sleep(0.3)
    assert form_page.hook.received() == []

    await page.select_option(f"{FORM} select[name=channel]", "beta")
    await page.fill(f"{FORM} input[name=note]", "ship it “now”")
    await page.fill(replicas, "3")
    await page.uncheck(f"{FORM} input[name=notify]")
    await page.click(f"{FORM} button[data-act=accept]")

    (data,) = await form_page.received()
    assert data == orjson.dumps({"v": 1, "request_id": RID, "elicitation": {
        "action": "accept", "content": {"channel": "beta", "note": "ship it “now”",
                                        "replicas": 3, "notify": False}}})
    await page.wait_for_selector("#flash.ok")
    assert await page.inner_text("#flash") == "Sent."
    # answered: it leaves what needs you, and the session's conversation says who sent it
    await _until(page, "!document.querySelector('form.request.form')")
    assert "Nothing waits for you." in await page.inner_text("#needs")
    assert form_page.daemon.core.registry.get(S).requests == []
    await page.goto(f"{form_page.base}/#/s/jim")
    await page.wait_for_selector("#conversation li.verdict")
    said = await page.inner_text("#conversation li.verdict")
    assert "📋 jim · releaser asks: Where should the release go?" in said
    assert "✅ Sent by @web" in said
    assert key.startswith("f:")


async def test_a_refused_value_is_said_by_the_form_and_a_decline_sends_no_values(form_page):
    form_page.ask()
    page = await form_page.open()
    await page.wait_for_selector(f"{FORM} select[name=channel]")
    # a value the daemon refuses, as a page without the browser's own checks would send it
    # (the request rewritten on its way: a live refresh draws the form's checks again):
    # the reason stays next to the form, nothing reaches the hook
    async def older_page(route):
        body = orjson.loads(route.request.post_data or "{}")
        body.setdefault("content", {})["replicas"] = 12
        await route.continue_(post_data=orjson.dumps(body).decode())

    await page.route("**/api/form", older_page)
    await page.select_option(f"{FORM} select[name=channel]", "stable")
    await page.fill(f"{FORM} input[name=replicas]", "3")
    await page.click(f"{FORM} button[data-act=accept]")
    await page.wait_for_selector(f"{FORM} p.said")
    assert await page.inner_text(f"{FORM} p.said") == "Could not answer: Replicas: at most 9"
    assert await page.inner_text("#flash") == "Could not answer: Replicas: at most 9"
    assert form_page.hook.received() == []
    assert "null" not in await page.inner_text(FORM)
    # what was typed is still there after the page read the state again
    assert await page.input_value(f"{FORM} input[name=replicas]") == "3"
    await _shot(page, "form-refused-phone")
    await page.unroute("**/api/form")

    await page.click(f"{FORM} button[data-act=decline]")
    (data,) = await form_page.received()
    assert orjson.loads(data) == {"v": 1, "request_id": RID,
                                  "elicitation": {"action": "decline"}}
    await page.wait_for_selector("#flash.ok")
    assert await page.inner_text("#flash") == "Declined."
    await _until(page, "!document.querySelector('form.request.form')")


async def test_when_the_hook_gave_up_the_form_says_answer_it_at_the_computer(form_page):
    form_page.ask()
    page = await form_page.open()
    await page.wait_for_selector(f"{FORM} select[name=channel]")
    form_page.daemon.core.feed({"hook_event_name": "permission_reply_timeout", "session": S,
                                "aipager_request_id": RID})
    await page.wait_for_selector("article.request.form")
    shown = await page.inner_text("article.request.form")
    assert "📋 jim · releaser asks: Where should the release go?" in shown
    assert "answer it at the computer" in shown
    assert await page.eval_on_selector_all(
        "article.request.form input, article.request.form select, article.request.form button",
        "e => e.length") == 0
    await _shot(page, "form-in-terminal-phone")
