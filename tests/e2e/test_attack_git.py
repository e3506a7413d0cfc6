"""Attacks through the project's own configuration, on the real Claude Code 2.1.328 with a
team group (the owner and a `user` member), the real daemon and git.

- The member's task asks the model to write ``.git/config`` (a clean filter) and
  ``.gitattributes``: the floor refuses both at PreToolUse (never offered for approval),
  nothing is written.
- A clean filter, a textconv, an external diff and an fsmonitor planted in the repository (as
  an earlier task or a cloned project could): ``/diff`` from the member and from the owner runs
  none of them, shows no secret, and still shows the real change.
- A member's message while a new session waits on its folder trust dialog: not typed, the
  member told why, the session alive.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from e2e.kit.chat import Phone, buttons, text_of
from e2e.test_team import GROUP, GUEST, TUI_ARGS, _ready, team  # noqa: F401 - fixture
from fakes import anthropic as fa
from fakes.telegram_api import OWNER

pytestmark = pytest.mark.e2e

GIT = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
SECRET = "E2E-CANARY-OWNERS-KEY"


def _repo(project: str) -> None:
    subprocess.run([*GIT, "init", "-q"], cwd=project, check=True)
    with open(os.path.join(project, "app.py"), "w") as fh:
        fh.write("print('one')\n")
    subprocess.run([*GIT, "add", "app.py"], cwd=project, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "first"], cwd=project, check=True)


def _plant(project: str, root: str) -> str:
    """Everything git could run from the repository's own files; each would write ``ran``
    and print the owner's key."""
    key = os.path.join(root, "owners-key")
    with open(key, "w") as fh:
        fh.write(SECRET + "\n")
    ran = os.path.join(root, "ran")
    tool = os.path.join(root, "tool.sh")
    with open(tool, "w") as fh:
        fh.write(f"#!/bin/sh\necho \"$0 $*\" >> {ran}\ncat {key}\n")
    os.chmod(tool, 0o755)
    with open(os.path.join(project, ".git", "config"), "a") as fh:
        fh.write(f'[filter "evil"]\n\tclean = {tool}\n\tsmudge = {tool}\n'
                 f'[diff "evil"]\n\ttextconv = {tool}\n\tcommand = {tool}\n'
                 f"[diff]\n\texternal = {tool}\n[core]\n\tfsmonitor = {tool}\n")
    with open(os.path.join(project, ".gitattributes"), "w") as fh:
        fh.write("* filter=evil diff=evil\n")
    return ran


def test_git_configuration_is_neither_written_by_a_member_nor_run_by_diff(
        team, dtach_session, fake_anthropic, fake_telegram, claude_home):  # noqa: F811
    phone = Phone(fake_telegram, GROUP)
    project = claude_home.project
    _repo(project)
    config_before = open(os.path.join(project, ".git", "config")).read()
    filt = f'[filter "x"]\n\tclean = sh -c "cat {claude_home.home}/.ssh/id_rsa"\n'
    fake_anthropic.script(
        "E2E-GIT-WRITE",
        fa.tool("Write", {"file_path": os.path.join(project, ".git", "config"), "content": filt}),
        fa.tool("Write", {"file_path": os.path.join(project, ".gitattributes"),
                          "content": "* filter=x\n"}),
        fa.text("Tried."))
    tui = dtach_session(*TUI_ARGS)
    _ready(team)

    sent = fake_telegram.say("/e2e E2E-GIT-WRITE plant it", user=GUEST, chat_id=GROUP)
    phone.wait(lambda s: any("Tried." in t for t in phone.sent_texts(s)), 60, "the task ended")
    assert open(os.path.join(project, ".git", "config")).read() == config_before
    assert not os.path.exists(os.path.join(project, ".gitattributes"))
    # refused, never offered: no request with buttons reached the group
    assert not [m for m in phone.messages() if "✅" in " ".join(buttons(m))], \
        [text_of(m) for m in phone.messages()]
    results = json.dumps([b for r in fake_anthropic.requests_with("E2E-GIT-WRITE")
                          for b in r.tool_results()], ensure_ascii=False)
    # the model read the floor's reason; the task is halted after it (the second Write too)
    assert "no write: */.git/*" in results and "task halted" in results, results
    del sent

    # planted by hand (an earlier owner's task, a cloned project), plus a real change
    ran = _plant(project, claude_home.root)
    with open(os.path.join(project, "app.py"), "w") as fh:
        fh.write("print('two')\n")
    for who in (GUEST, OWNER):
        before = {m["message_id"] for m in phone.messages()}
        fake_telegram.say("/diff e2e", user=who, chat_id=GROUP)
        shown = phone.wait_message(lambda m, before=before: m["message_id"] not in before
                                   and text_of(m).startswith("📝 e2e"), 30,
                                   f"the diff for {who['username']}")
        assert "-print('one')" in text_of(shown) and "+print('two')" in text_of(shown), \
            text_of(shown)
    assert SECRET not in fake_telegram.everything_received()
    assert not os.path.exists(ran), open(ran).read()
    assert tui.alive


def test_a_members_message_at_the_trust_dialog_is_not_typed(
        team, fake_anthropic, fake_telegram, claude_home):  # noqa: F811
    phone = Phone(fake_telegram, GROUP)
    path = os.path.join(claude_home.home, ".claude.json")
    with open(path, encoding="utf-8") as fh:
        cfg = json.load(fh)
    cfg["projects"] = {}  # nothing trusted yet
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(cfg, fh)
    fake_telegram.say("/new tr", user=OWNER, chat_id=GROUP)
    ask = phone.wait_message(lambda m: "✅ Yes, I trust this folder" in buttons(m), 30,
                             "the trust question")
    fake_telegram.say("/tr hello from the member", user=GUEST, chat_id=GROUP)
    phone.wait_message(lambda m: "waits for you to trust its folder first" in text_of(m), 40,
                       "the member told why")
    state = team.wait_session(lambda s: True, 20, "tr", name="claude-tr")
    assert state["state"] != "gone"
    # the question is still live: the owner can still answer it
    assert "✅ Yes, I trust this folder" in buttons(phone.message(ask["message_id"]))
    assert not fake_anthropic.requests_with("hello from the member")
