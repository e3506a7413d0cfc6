"""A Codex session driven from the phone, on the real Codex CLI 0.169.0 (its TUI in dtach,
offline against the fake Responses API), through the real daemon and the fake Bot API.

`aipager codex install` wires and trusts the hook; `aipager session cx --agent codex`
starts the TUI (``--no-daemon``: its hooks run under this session's own TUI); a phone
message is typed encoded for Codex's input line; the answer comes from Stop's
``last_assistant_message``; a command that needs approval reaches the chat and is answered
through the PermissionRequest hook.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Iterator

import pytest

from e2e.kit import claude as kit
from e2e.kit.chat import Phone, buttons, text_of
from e2e.kit.codex import API_KEY, KEY_VAR, codex_binary
from e2e.kit.daemon import OWNER_ID, USER_ID, Daemon, write_config
from e2e.test_team import GROUP, GUEST
from fakes import openai_responses as fr
from fakes.telegram_api import TOKEN

pytestmark = pytest.mark.e2e


@pytest.fixture
def codex_api() -> Iterator[fr.FakeResponses]:
    fake = fr.FakeResponses()
    fake.start()
    yield fake
    fake.stop()


def _codex_home(claude_home: kit.ClaudeHome, codex_api: fr.FakeResponses) -> None:
    """Codex (``CODEX_HOME``) talking to the fake Responses API, with aipager's hook installed
    and trusted by ``aipager codex install``."""
    codex_home = os.path.join(claude_home.home, ".codex")
    os.makedirs(codex_home, exist_ok=True)
    with open(os.path.join(codex_home, "config.toml"), "w", encoding="utf-8") as fh:
        fh.write(codex_api.provider_config())
        # the upgrade offer 0.169.0 shows a first start ("Meet GPT-6 Sol"), answered as a
        # person who keeps their model does (what the TUI then writes)
        fh.write('\n[notice.model_migrations]\n"%s" = "gpt-6-sol"\n' % codex_api.model)
    claude_home.extra_env.update({"CODEX_HOME": codex_home, KEY_VAR: API_KEY,
                                  "AIPAGER_CODEX_BIN": codex_binary(),
                                  "TERM": "xterm-256color"})
    done = subprocess.run([kit.installed_program("aipager"), "codex", "install"],
                          env=claude_home.aipager_env(), capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _running(claude_home: kit.ClaudeHome, daemon: Daemon) -> Iterator[Daemon]:
    daemon.start()
    yield daemon
    subprocess.run([kit.installed_program("aipager"), "session", "kill", "cx", "--yes"],
                   env=claude_home.aipager_env(), capture_output=True, timeout=30, check=False)
    daemon.stop()


@pytest.fixture
def codex_daemon(claude_home: kit.ClaudeHome, fake_telegram, fake_anthropic,
                 codex_api: fr.FakeResponses) -> Iterator[Daemon]:
    """The daemon for the owner's private chat, its sessions' Codex against the fake."""
    _codex_home(claude_home, codex_api)
    write_config(claude_home)
    yield from _running(claude_home, Daemon.for_chat(claude_home, fake_telegram.base,
                                                     fake_anthropic.base_url))


@pytest.fixture
def codex_team(claude_home: kit.ClaudeHome, fake_telegram, fake_anthropic,
               codex_api: fr.FakeResponses) -> Iterator[Daemon]:
    """The daemon reporting to a group with the owner and a `user` member."""
    from aipager import config

    _codex_home(claude_home, codex_api)
    fake_telegram.add_group_chat(GROUP, "team")
    config.save(claude_home.aipager_env(), config.Config(
        bot_token=TOKEN, chat_id=GROUP, members=(config.Member(OWNER_ID, "owner", "owner"),
                                                 config.Member(USER_ID, "user", "guest"))))
    yield from _running(claude_home, Daemon.for_chat(claude_home, fake_telegram.base,
                                                     fake_anthropic.base_url))


def _start(claude_home: kit.ClaudeHome, daemon: Daemon, *codex_args: str) -> dict:
    """``aipager session cx --agent codex`` in the project; the daemon's view of it once
    it knows the session (from its socket: Codex fires no hook before its first prompt)."""
    done = subprocess.run([kit.installed_program("aipager"), "session", "cx", "--agent",
                           "codex", "--detached", "--", *codex_args],
                          env=claude_home.aipager_env(), cwd=claude_home.project,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return daemon.wait_session(lambda s: s["coding_agent"] == "codex", 20,
                               "the session known as Codex's", name="claude-cx")


def _answer(phone: Phone, words: str, timeout: float = 60.0) -> dict:
    return phone.wait_message(lambda m: words in text_of(m), timeout, f"the answer {words!r}")


def test_a_phone_prompt_to_codex_is_answered(codex_daemon, codex_api, fake_telegram,
                                             claude_home):
    phone = Phone(fake_telegram)
    codex_api.script("E2E-CXHELLO", fr.text("Hello from Codex via the fake."))
    _start(claude_home, codex_daemon)
    # Codex fires no hook before its first prompt: its screen's input line says it is ready
    codex_daemon.wait_session(lambda s: s["state"] == "ready", 30, "Codex ready by its screen",
                              name="claude-cx")
    assert not codex_api.requests_with("E2E-CXHELLO")
    phone.say("/cx E2E-CXHELLO say hi, costs $5")
    _answer(phone, "Hello from Codex via the fake.")
    (req,) = codex_api.requests_with("E2E-CXHELLO")[:1]
    said = req.text()
    # typed encoded for Codex's input line: the sender named first, its $ inert
    assert "Via aipager, from" in said and "＄5" in said and "$5" not in said


def test_codex_started_from_the_phone_takes_its_first_message(codex_daemon, codex_api,
                                                              fake_telegram, claude_home):
    """/settings › 🧩 Agent › Codex, then ``/new cx`` with a first message: the real Codex
    starts in dtach, its first message waits for its input line (no hook says it started)
    and is answered."""
    phone = Phone(fake_telegram)
    codex_api.script("E2E-CXNEW", fr.text("Codex took the first message."))
    _choose_codex(phone)

    first = phone.say("/new cx E2E-CXNEW say hello")
    phone.wait_message(lambda m: "🆕 cx started in" in text_of(m)
                       and "🧩 It runs Codex." in text_of(m), 60, "the start")
    _answer(phone, "Codex took the first message.", timeout=90)
    assert "👀" in phone.reactions(first["message_id"])
    sess = codex_daemon.wait_session(lambda s: s["coding_agent"] == "codex", 10,
                                     "the session known as Codex's", name="claude-cx")
    assert sess["cwd"] == claude_home.project


def test_stop_from_the_phone_interrupts_a_codex_task(codex_daemon, codex_api, fake_telegram,
                                                     claude_home):
    """⏹ on a Codex task: the key goes to the real TUI, the running command ends, the task
    ends marked interrupted, and the session takes the next message."""
    phone = Phone(fake_telegram)
    mark = os.path.join(claude_home.project, "slept")
    codex_api.script("E2E-CXSTOP", fr.shell(f"sleep 120 && touch {mark}"), fr.text("Never."))
    codex_api.script("E2E-CXAFTER", fr.text("Back after the stop."))
    _start(claude_home, codex_daemon, "--ask-for-approval", "on-request", "--sandbox",
           "workspace-write")
    codex_daemon.wait_session(lambda s: s["state"] == "ready", 30, "Codex ready",
                              name="claude-cx")
    phone.say("/cx E2E-CXSTOP wait a while")
    codex_daemon.wait_session(lambda s: s["state"] == "working", 60, "the task running",
                              name="claude-cx")
    phone.wait(lambda snap: codex_api.requests_with("E2E-CXSTOP"), 30, "the model asked")
    phone.say("/stop cx")
    phone.wait_message(lambda m: "⏹ Stop sent to cx." in text_of(m), 30, "the stop said")
    sess = codex_daemon.wait_session(lambda s: s["state"] == "ready", 60,
                                     "the task ended by the stop", name="claude-cx")
    assert not os.path.exists(mark)
    assert not any("Never." in text_of(m) for m in phone.messages())
    # Codex's own Interrupt event ended it: its card says so
    phone.wait_message(lambda m: "⏹ cx · interrupted" in text_of(m), 30, "the card")
    phone.say("/cx E2E-CXAFTER again")
    _answer(phone, "Back after the stop.", timeout=90)
    assert sess["coding_agent"] == "codex"


def _choose_codex(phone: Phone) -> None:
    """/settings › 🧩 Agent › Codex."""
    phone.say("/settings")
    settings = phone.wait_message(lambda m: "Settings for this chat" in text_of(m), 30,
                                  "the settings")
    phone.tap(settings, "🧩 Agent of new sessions ›")
    choices = phone.wait(lambda snap: (m := snap["messages"].get(
        (phone.chat_id, settings["message_id"]))) and "Codex" in buttons(m) and m, 30,
        "the agents offered")
    phone.tap(choices, "Codex")
    phone.wait(lambda snap: "/new starts: Codex" in text_of(
        snap["messages"][(phone.chat_id, settings["message_id"])]), 30, "Codex chosen")


def test_codex_asks_to_trust_a_git_project_and_the_phone_answers(
        codex_daemon, codex_api, fake_telegram, claude_home):
    """In a git project it never trusted, Codex 0.169.0 opens on "Trust this folder?" with
    "Trust and continue" selected: read off its screen, it becomes the chat's trust
    question, and /new's first message is never typed into it (its Enter would trust the
    folder).  ✅ trusts it; the message goes in after; /diff shows what Codex wrote."""
    phone = Phone(fake_telegram)
    subprocess.run(["git", "init", "-q", claude_home.project], check=True, timeout=30)
    codex_api.script("E2E-CXDIFF", fr.patch(fr.add_file_patch(
        os.path.join(claude_home.project, "notes.txt"), "written by codex")), fr.text("Wrote it."))
    _choose_codex(phone)
    phone.say("/new cx E2E-CXDIFF write the notes")
    question = phone.wait_message(lambda m: "📁 Codex asks before cx starts" in text_of(m), 60,
                                  "the trust question")
    assert claude_home.project in text_of(question)
    time.sleep(20)  # longer than a message waits for a start's screen: nothing is typed
    config = open(os.path.join(claude_home.home, ".codex", "config.toml"),
                  encoding="utf-8").read()
    assert claude_home.project not in config  # not trusted behind the person's back
    assert not codex_api.requests_with("E2E-CXDIFF")
    query = phone.tap(question, "✅ Yes, I trust this folder")
    assert phone.toast(query)["text"]
    _answer(phone, "Wrote it.", timeout=90)
    assert os.path.exists(os.path.join(claude_home.project, "notes.txt"))
    config = open(os.path.join(claude_home.home, ".codex", "config.toml"),
                  encoding="utf-8").read()
    assert claude_home.project in config  # Codex's own record of the trust
    phone.say("/diff cx")
    shown = phone.wait_message(lambda m: "+written by codex" in text_of(m), 30, "the diff")
    assert "notes.txt" in text_of(shown)


def test_an_ended_codex_session_is_resumed_from_the_phone(codex_daemon, codex_api,
                                                          fake_telegram, claude_home):
    """/resume on a Codex session that ended: `codex resume <its session id>` in dtach, and
    the next message goes on in the same conversation (the model is sent what came before)."""
    phone = Phone(fake_telegram)
    codex_api.script("E2E-CXR1", fr.text("First answer."))
    codex_api.script("E2E-CXR2", fr.text("Second answer."))
    _start(claude_home, codex_daemon)
    phone.say("/cx E2E-CXR1 remember the word kiwi")
    _answer(phone, "First answer.")
    done = subprocess.run([kit.installed_program("aipager"), "session", "kill", "cx", "--yes"],
                          env=claude_home.aipager_env(), capture_output=True, timeout=30,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    codex_daemon.wait_session(lambda s: s["state"] == "gone", 30, "the session ended",
                              name="claude-cx")
    phone.say("/resume")
    picker = phone.wait_message(lambda m: "cx" in json.dumps(buttons(m)), 30, "the picker")
    label = next(b for b in buttons(picker) if "cx" in b)
    phone.tap(picker, label)
    phone.wait_message(lambda m: "↩️ cx resumed in" in text_of(m), 60, "the resume said")
    sess = codex_daemon.wait_session(lambda s: s["coding_agent"] == "codex"
                                     and s["state"] != "gone", 30, "resumed as Codex",
                                     name="claude-cx")
    phone.say("/cx E2E-CXR2 which word?")
    _answer(phone, "Second answer.", timeout=90)
    (second,) = codex_api.requests_with("E2E-CXR2")[:1]
    assert "E2E-CXR1 remember the word kiwi" in second.text()  # the same conversation
    assert sess["cwd"] == claude_home.project


def _escalated(command: str) -> fr.Reply:
    """Codex's shell call asking to run outside its sandbox: what makes it ask (approval
    policy on-request)."""
    return fr.call("exec_command", {"cmd": command, "sandbox_permissions": "require_escalated",
                                    "justification": "make the file"})


def _request(phone: Phone, detail: str) -> dict:
    return phone.wait_message(lambda m: detail in text_of(m) and "✅ Allow" in buttons(m), 60,
                              f"the permission request for {detail!r}")


def test_a_codex_command_allowed_from_the_phone_runs(codex_daemon, codex_api, fake_telegram,
                                                     claude_home):
    phone = Phone(fake_telegram)
    target = os.path.join(claude_home.project, "allowed")
    codex_api.script("E2E-CXALLOW", _escalated(f"touch {target}"), fr.text("Made it."))
    _start(claude_home, codex_daemon, "--ask-for-approval", "on-request", "--sandbox",
           "read-only")
    phone.say("/cx E2E-CXALLOW make the file")

    request = _request(phone, f"touch {target}")
    assert "cx" in text_of(request) and "Bash" in text_of(request)
    assert not os.path.exists(target)
    query = phone.tap(request, "✅ Allow")
    assert phone.toast(query)["text"] == "Allowed"
    _answer(phone, "Made it.")
    assert os.path.exists(target)
    (record,) = [r for r in claude_home.audit() if r["action"] == "permission_answer"]
    assert (record["answer"], record["via"]) == ("allow", "hook_decision")


def test_a_codex_command_denied_with_a_reason_tells_the_model(codex_daemon, codex_api,
                                                              fake_telegram, claude_home):
    phone = Phone(fake_telegram)
    target = os.path.join(claude_home.project, "denied")
    codex_api.script("E2E-CXDENY", _escalated(f"touch {target}"), fr.text("Left it alone."))
    _start(claude_home, codex_daemon, "--ask-for-approval", "on-request", "--sandbox",
           "read-only")
    phone.say("/cx E2E-CXDENY make the file")

    request = _request(phone, f"touch {target}")
    phone.say("not in this folder", reply_to=request["message_id"])
    _answer(phone, "Left it alone.")
    assert not os.path.exists(target)
    outputs = [o for r in codex_api.requests_with("E2E-CXDENY") for o in r.tool_outputs()]
    assert "not in this folder" in json.dumps(outputs), outputs


SECRET = "E2E-CANARY-OWNERS-SSH-KEY"


def test_a_member_can_neither_read_the_owners_key_nor_run_a_bang_command(
        codex_team, codex_api, fake_telegram, claude_home):
    """A `user` member's task on Codex: the floor refuses its read of ~/.ssh at PreToolUse
    (the model is told, the key never leaves), and ``!cmd`` (Codex runs it unsandboxed, no
    approval, no hook) reaches the model as words, never run."""
    phone = Phone(fake_telegram, GROUP)
    ssh = os.path.join(claude_home.home, ".ssh")
    os.makedirs(ssh, exist_ok=True)
    with open(os.path.join(ssh, "id_rsa"), "w", encoding="utf-8") as fh:
        fh.write(SECRET + "\n")
    bang = os.path.join(claude_home.project, "bang")
    codex_api.script("E2E-CXSSH", fr.shell(f"cat {ssh}/id_rsa"), fr.text("Could not read it."))
    codex_api.script("E2E-CXBANG", fr.text("That was text to me."))
    _start(claude_home, codex_team, "--ask-for-approval", "on-request", "--sandbox",
           "workspace-write")

    fake_telegram.say("/cx E2E-CXSSH read the key", user=GUEST, chat_id=GROUP)
    phone.wait_message(lambda m: "Could not read it." in text_of(m), 60, "the member's answer")
    outputs = json.dumps([o for r in codex_api.requests_with("E2E-CXSSH")
                          for o in r.tool_outputs()])
    assert SECRET not in outputs and "safety" in outputs.lower(), outputs
    assert not any(SECRET in r.text() for r in codex_api.requests)

    fake_telegram.say(f"/cx !touch {bang} E2E-CXBANG", user=GUEST, chat_id=GROUP)
    phone.wait_message(lambda m: "That was text to me." in text_of(m), 60, "the bang answer")
    assert not os.path.exists(bang)
    said = codex_api.requests_with("E2E-CXBANG")[0].text()
    assert "Via aipager, from" in said and f"!touch {bang}" in said


@pytest.fixture
def codex_page(claude_home: kit.ClaudeHome, fake_anthropic,
               codex_api: fr.FakeResponses) -> Iterator[Daemon]:
    """``aipager start`` with its page and no Telegram, its sessions' Codex against the fake."""
    _codex_home(claude_home, codex_api)
    yield from _running(claude_home, Daemon.for_chat(claude_home, "", fake_anthropic.base_url))


def test_codex_started_on_the_page_answers_there(codex_page, codex_api, claude_home):
    """The page in Debian's chromium at phone size: the start form's agent is Codex, the
    session shows ready once Codex draws its input line, a prompt sent there is answered
    there."""
    from playwright.sync_api import expect, sync_playwright

    from e2e.kit.browser import chromium, sign_in_link

    codex_api.script("E2E-CXPAGE", fr.text("Codex answered the page."))
    with sync_playwright() as p:
        chrome = p.chromium.launch(executable_path=chromium(), headless=True)
        try:
            page = chrome.new_page(viewport={"width": 390, "height": 844})
            page.goto(sign_in_link(codex_page))
            form = page.locator("form.new")
            form.get_by_label("coding agent").select_option("codex")
            # the folders' trust is Claude Code's: not said of Codex's
            expect(form.locator("select[name=folder]")).not_to_contain_text("will ask to trust")
            form.get_by_label("session name").fill("cx")
            form.get_by_role("button", name="🆕 Start a session").click()
            card = page.locator("article.session[data-session='claude-cx']")
            expect(card.locator("h3")).to_contain_text("cx · ready", timeout=60_000)
            card.get_by_role("link", name="💬 Open").click()
            page.get_by_label("prompt").fill("E2E-CXPAGE say hi")
            page.get_by_role("button", name="➤ Send").click()
            talk = page.locator("ol.talk")
            expect(talk.locator("li.answer")).to_contain_text("Codex answered the page.",
                                                              timeout=90_000)
        finally:
            chrome.close()
    sess = codex_page.wait_session(lambda s: s["coding_agent"] == "codex", 10,
                                   "the session known as Codex's", name="claude-cx")
    assert sess["cwd"] == claude_home.project


def test_a_codex_session_started_at_the_computer_is_driven_from_the_page(
        codex_page, codex_api, claude_home):
    """`aipager session cx --agent codex -- -a on-request`: the page shows it, a prompt sent
    there asks for a command, ✅ Allow on the page runs it, and the answer is shown there."""
    from playwright.sync_api import expect, sync_playwright

    from e2e.kit.browser import chromium, sign_in_link

    target = os.path.join(claude_home.project, "from-the-page")
    codex_api.script("E2E-CXPAGEOK", _escalated(f"touch {target}"), fr.text("Made it here."))
    _start(claude_home, codex_page, "--ask-for-approval", "on-request", "--sandbox",
           "read-only")
    with sync_playwright() as p:
        chrome = p.chromium.launch(executable_path=chromium(), headless=True)
        try:
            page = chrome.new_page(viewport={"width": 390, "height": 844})
            page.goto(sign_in_link(codex_page))
            card = page.locator("article.session[data-session='claude-cx']")
            expect(card.locator("h3")).to_contain_text("cx · ready", timeout=60_000)
            card.get_by_role("link", name="💬 Open").click()
            page.get_by_label("prompt").fill("E2E-CXPAGEOK make the file")
            page.get_by_role("button", name="➤ Send").click()
            request = page.locator("article.request", has_text=f"touch {target}")
            expect(request).to_be_visible(timeout=60_000)
            assert not os.path.exists(target)
            request.get_by_role("button", name="✅ Allow").click()
            expect(page.locator("#flash")).to_contain_text("Allowed", timeout=20_000)
            expect(page.locator("ol.talk li.answer")).to_contain_text("Made it here.",
                                                                      timeout=90_000)
        finally:
            chrome.close()
    assert os.path.exists(target)
