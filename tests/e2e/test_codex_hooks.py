"""The real Codex CLI fires aipager's hook once ``aipager codex install`` wired and trusted it.

``codex exec`` runs offline against the fake Responses API (``fakes.openai_responses``) in a
throwaway CODEX_HOME; ``HookSocket`` stands where the daemon's control socket would be and
receives every datagram exactly as the installed ``aipager-hook`` delivered it.  Without
its trust entries in config.toml Codex runs none of the hooks, and says nothing.

``AIPAGER_E2E_RECORD=1`` rewrites tests/fixtures/codex/<Event>.json from the run (one real
datagram per event); otherwise the run is checked against their fields.
"""

from __future__ import annotations

import json
import os
from typing import Iterator

import pytest

from aipager.install import codex
from e2e.kit import codex as kit
from e2e.kit.claude import installed_program
from e2e.kit.hooksock import HookSocket
from fakes import openai_responses as fr

pytestmark = pytest.mark.e2e

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "codex")
_RECORDING = os.environ.get("AIPAGER_E2E_RECORD") == "1"
#: the fields every Codex hook payload carries (measured on 0.169.0)
COMMON = ("session_id", "transcript_path", "cwd", "hook_event_name", "model", "permission_mode")


@pytest.fixture
def fake_responses() -> Iterator[fr.FakeResponses]:
    fake = fr.FakeResponses()
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def codex_home(fake_responses: fr.FakeResponses) -> Iterator[kit.CodexHome]:
    kit.codex_binary()  # fail early and clearly when Codex is missing
    installed_program("aipager-hook")
    home = kit.make_home(fake_responses.provider_config(kit.KEY_VAR))
    yield home
    home.cleanup()


@pytest.fixture
def hook_socket(codex_home: kit.CodexHome) -> Iterator[HookSocket]:
    sock = HookSocket(codex_home.socket_path())
    yield sock
    sock.close()


def _install(home: kit.CodexHome) -> None:
    run = home.aipager("codex", "install")
    assert run.returncode == 0, run.stdout + run.stderr
    check = home.aipager("codex", "check")
    assert check.returncode == 0, check.stdout + check.stderr


def _describe(run) -> str:
    return f"exit {run.returncode}\n--- stdout\n{run.stdout}\n--- stderr\n{run.stderr}"


def _record_or_compare(events: list[dict]) -> None:
    """One fixture per event name (``<Event>.json``; a tool event of apply_patch also
    ``<Event>.apply_patch.json``): written when recording, else its fields are required."""
    first: dict[str, dict] = {}
    for event in events:
        tool = event.get("tool_name")
        name = event["hook_event_name"] + ("" if tool in (None, "Bash") else f".{tool}")
        first.setdefault(name, event)
    for name, event in first.items():
        path = os.path.join(FIXTURES, f"{name}.json")
        if _RECORDING:
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(event, fh, indent=2, ensure_ascii=False)
                fh.write("\n")
            continue
        with open(path, encoding="utf-8") as fh:
            want = json.load(fh)
        missing = sorted(set(want) - set(event))
        assert not missing, f"{name}: Codex no longer sends {missing}"


def test_install_keeps_the_users_settings_and_is_idempotent(codex_home):
    with open(codex_home.config_path, encoding="utf-8") as fh:
        before = fh.read()

    _install(codex_home)
    with open(codex_home.config_path, encoding="utf-8") as fh:
        after = fh.read()
    with open(codex_home.hooks_path, encoding="utf-8") as fh:
        hooks = json.load(fh)
    again = codex_home.aipager("codex", "install")

    assert after.startswith(before), "install must only append its trust tables"
    assert set(hooks["hooks"]) == set(codex.CODEX_EVENTS)
    assert again.returncode == 0 and "nothing written" in again.stdout, again.stdout
    uninstall = codex_home.aipager("codex", "uninstall")
    assert uninstall.returncode == 0, uninstall.stdout + uninstall.stderr
    with open(codex_home.config_path, encoding="utf-8") as fh:
        assert fh.read() == before
    with open(codex_home.hooks_path, encoding="utf-8") as fh:
        assert json.load(fh) == {}


def test_exec_fires_the_trusted_hook_for_each_event(codex_home, fake_responses, hook_socket):
    target = os.path.join(codex_home.project, "codex-notes.txt")
    fake_responses.script(
        "E2E-CODEX",
        fr.shell("echo codex-e2e-out"),
        fr.patch(fr.add_file_patch(target, "alpha")),
        fr.text("Both steps ran."),
    )
    _install(codex_home)

    run = codex_home.exec("E2E-CODEX run the steps", "-s", "workspace-write")

    assert run.returncode == 0, _describe(run)
    assert "Both steps ran." in run.stdout
    stop = hook_socket.wait_event("Stop")
    hook_socket.wait_event("SessionEnd")  # fired as exec ends (its hook trusted as Codex hashes it)
    events = hook_socket.hook_events()
    names = hook_socket.names()
    assert names[:2] == ["SessionStart", "UserPromptSubmit"], names
    assert names[-2:] == ["Stop", "SessionEnd"], names
    # tagged with the session aipager started Codex in; one Codex session throughout
    assert {e["session"] for e in events} == {codex_home.session}
    assert len({e["session_id"] for e in events}) == 1
    for event in events:
        # SessionEnd (as exec ends) names no model or permission mode
        want = [k for k in COMMON if event["hook_event_name"] != "SessionEnd"
                or k not in ("model", "permission_mode")]
        missing = [k for k in want if k not in event]
        assert not missing, f"{event['hook_event_name']} lacks {missing}"
        assert event["transcript_path"].startswith(os.path.join(codex_home.codex_home, "sessions"))
        assert event["cwd"] == codex_home.project
    assert hook_socket.wait_event("SessionStart")["source"] == "startup"
    assert hook_socket.wait_event("UserPromptSubmit")["prompt"] == "E2E-CODEX run the steps"
    pre = [e for e in events if e["hook_event_name"] == "PreToolUse"]
    post = [e for e in events if e["hook_event_name"] == "PostToolUse"]
    assert [e["tool_name"] for e in pre] == ["Bash", "apply_patch"], pre
    assert [e["tool_name"] for e in post] == ["Bash", "apply_patch"], post
    assert pre[0]["tool_input"] == {"command": "echo codex-e2e-out"}
    assert "codex-e2e-out" in json.dumps(post[0]["tool_response"])
    assert pre[0]["tool_use_id"] == post[0]["tool_use_id"]
    assert "*** Add File: " + target in json.dumps(pre[1]["tool_input"])
    with open(target, encoding="utf-8") as fh:
        assert fh.read() == "alpha\n"
    assert stop["last_assistant_message"] == "Both steps ran."
    assert {e.get("turn_id") for e in events if e["hook_event_name"] != "SessionStart"} != {None}
    _record_or_compare(events)


def test_without_trust_codex_runs_no_hook(codex_home, fake_responses, hook_socket):
    fake_responses.script("E2E-DISTRUST", fr.shell("echo untrusted"), fr.text("Ran it."))
    with open(codex_home.config_path, encoding="utf-8") as fh:
        before = fh.read()
    _install(codex_home)
    with open(codex_home.config_path, "w", encoding="utf-8") as fh:
        fh.write(before)  # aipager's trust entries gone, its hooks.json untouched

    check = codex_home.aipager("codex", "check")
    run = codex_home.exec("E2E-DISTRUST go")

    assert check.returncode == 1 and "not trusted" in check.stdout, check.stdout
    assert run.returncode == 0, _describe(run)
    assert "Ran it." in run.stdout  # the command ran: Codex itself went on
    assert fake_responses.requests_with("E2E-DISTRUST"), "Codex never asked the fake model"
    with open(codex_home.hooks_path, encoding="utf-8") as fh:
        assert set(json.load(fh)["hooks"]) == set(codex.CODEX_EVENTS)
    assert hook_socket.raw == [], hook_socket.names()
