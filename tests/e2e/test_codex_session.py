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
from typing import Iterator

import pytest

from e2e.kit import claude as kit
from e2e.kit.chat import Phone, buttons, text_of
from e2e.kit.codex import API_KEY, KEY_VAR, codex_binary
from e2e.kit.daemon import Daemon, write_config
from fakes import openai_responses as fr

pytestmark = pytest.mark.e2e


@pytest.fixture
def codex_api() -> Iterator[fr.FakeResponses]:
    fake = fr.FakeResponses()
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def codex_daemon(claude_home: kit.ClaudeHome, fake_telegram, fake_anthropic,
                 codex_api: fr.FakeResponses) -> Iterator[Daemon]:
    """The daemon for a home whose Codex (``CODEX_HOME``) talks to the fake Responses API,
    with aipager's hook installed and trusted by ``aipager codex install``."""
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
    write_config(claude_home)
    proc = Daemon.for_chat(claude_home, fake_telegram.base, fake_anthropic.base_url)
    proc.start()
    yield proc
    subprocess.run([kit.installed_program("aipager"), "session", "kill", "cx", "--yes"],
                   env=claude_home.aipager_env(), capture_output=True, timeout=30, check=False)
    proc.stop()


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
    sess = _start(claude_home, codex_daemon)
    assert sess["state"] == "unknown"  # Codex fires no hook before its first prompt
    phone.say("/cx E2E-CXHELLO say hi, costs $5")
    _answer(phone, "Hello from Codex via the fake.")
    (req,) = codex_api.requests_with("E2E-CXHELLO")[:1]
    said = req.text()
    # typed encoded for Codex's input line: the sender named first, its $ inert
    assert "Via aipager, from" in said and "＄5" in said and "$5" not in said


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
