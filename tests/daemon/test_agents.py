"""What differs per coding agent (``aipager.agents``), and that the rest does not know: a
session's agent from its process, its arguments and modes, its prompt encoding, and no
guessed key at a dialog aipager has not read on the real program."""

from __future__ import annotations

import os

import pytest

from aipager import agents
from aipager.daemon.app import Daemon
from aipager.port.model import State
from aipager.port.backend import InTerminal, Who
from aipager.daemon.terminal import mark_discovered
from aipager.policy import chatprompt

from daemon.test_replies import RID, S, HookSocket
from fakes.sessionio import FakeSessions
from support import screens


@pytest.mark.parametrize(("argv", "name"), [
    (["/usr/local/bin/claude", "--teammate-mode", "in-process"], "claude"),
    (["node", "/x/node_modules/@openai/codex/bin/codex.js", "--no-daemon"], "codex"),
    (["/x/codex-linux-x64/codex", "--no-daemon"], "codex"),
    (["/bin/sh", "-c", "claude"], None),
    (["python3", "fake-claude.py"], None),
    ([], None),
])
def test_the_agent_is_read_from_the_command_line(argv: list[str], name: str | None) -> None:
    found = agents.of_command(argv)
    assert (found.name if found else None) == name


def test_each_agent_gets_its_own_arguments_unless_the_person_chose() -> None:
    assert agents.CODEX.args(["-a", "on-request"]) == ["-a", "on-request", "--no-daemon"]
    assert agents.CODEX.args(["--remote", "unix://"]) == ["--remote", "unix://"]
    assert agents.CLAUDE.args([]) == ["--teammate-mode", "in-process"]


def test_modes_map_onto_each_agents_flags() -> None:
    assert agents.CLAUDE.mode_args("plan") == ("--permission-mode", "plan")
    assert agents.CODEX.mode_args("default") == ("--ask-for-approval", "on-request",
                                                  "--sandbox", "read-only")
    assert agents.CODEX.mode_args("") == ()
    with pytest.raises(ValueError, match="no 'bypassPermissions' mode"):
        agents.CODEX.mode_args("bypassPermissions")
    with pytest.raises(ValueError, match="unknown agent"):
        agents.get("cursor")
    # a conversation is resumed by an option in Claude Code, by a subcommand in Codex
    assert agents.CLAUDE.resume_args("c1") == ("--resume", "c1")
    assert agents.CODEX.resume_args("019a-c2") == ("resume", "019a-c2")
    assert agents.CODEX.resume_args("") == ()


def test_a_codex_prompt_has_its_dollar_made_inert_and_no_mention() -> None:
    enc = chatprompt.encode("run $deploy with @notes.md", label="ana", role="user",
                            mention_ok=lambda p: "/x/notes.md", inert=agents.CODEX.inert)
    assert "$" not in enc.text and "＄deploy" in enc.text
    claude = chatprompt.encode("run $deploy", label="ana", role="user")
    assert "$deploy" in claude.text  # Claude Code reads a $ as text: left as written


def test_a_session_started_by_hand_is_known_by_what_runs_in_it(core) -> None:
    reg = core.registry
    live = {"claude-cx": "/run/cx.sock", "claude-jim": "/run/jim.sock"}
    mark_discovered(reg, live, lambda sess, why: None,
                    {"/run/cx.sock": agents.CODEX, "/run/jim.sock": None})
    assert all(s.socket_seen for s in reg)  # looked at once
    assert reg.get("claude-cx").coding_agent == "codex"
    assert reg.get("claude-jim").coding_agent == ""


async def test_a_late_tap_on_a_codex_request_presses_no_key(hook: HookSocket) -> None:
    daemon = Daemon(dict(os.environ))
    core = daemon.core
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "go"})
    core.feed({"hook_event_name": "PermissionRequest", "session": S, "tool_name": "Bash",
               "tool_use_id": "call_1", "tool_input": {"command": "make"},
               "aipager_request_id": RID, "aipager_reply_addr": hook.path})
    sess = core.registry.get(S)
    sess.coding_agent = "codex"
    core.feed({"hook_event_name": "permission_reply_timeout", "session": S,
               "aipager_request_id": RID})
    key = sess.requests[0].key
    pressed: list = []

    async def press(session, keys):
        pressed.append(keys)

    daemon.session_io.press = press  # type: ignore[method-assign]
    got = await daemon.answer_request(S, key, "allow", Who("@alice", 1, "owner"))
    assert got == InTerminal() and pressed == [] and hook.received() == []
    assert sess.requests[0].answered == ""  # the tap is given back


@pytest.fixture
def hook():
    sock = HookSocket()
    yield sock
    sock.close()


def test_no_claude_trust_question_for_a_codex_session(tmp_path) -> None:
    from aipager.port.model import Session, State
    from aipager.daemon.service import Service

    service = Service.__new__(Service)
    service.trusted = lambda: []
    sess = Session(name="claude-cx", label="cx", registered_at=0.0, state=State.UNKNOWN,
                   cwd=str(tmp_path))
    assert service.at_trust_dialog(sess)  # a Claude Code session there would be asked
    sess.coding_agent = "codex"
    assert not service.at_trust_dialog(sess)


async def test_a_codex_session_is_ready_when_its_screen_shows_its_input_line() -> None:
    """Codex fires SessionStart with its first prompt, not at launch: its session is known
    ready from its real screen (recorded from 0.169.0), not from a hook or a guess; a
    first-start dialog on screen keeps it starting; Claude Code waits for its hook."""
    sessions = FakeSessions()
    daemon = Daemon(dict(os.environ), session_io=sessions)
    reg = daemon.core.registry
    try:
        for name, agent in (("claude-cx", "codex"), ("claude-cc", "claude")):
            sessions.live.add(name)
            sess = reg.ensure(name)
            sess.coding_agent, sess.socket_seen = agent, True
        sessions.screens["claude-cx"] = screens.rows("codex_hooks_review")
        await daemon.discover()
        await daemon.discover()
        assert reg.get("claude-cx").state == State.UNKNOWN  # a dialog: not ready
        # its question, as the screen words it, told once
        (told,) = [n["text"] for n in reg.get("claude-cx").notices]
        assert told == ("🖥 cx · before it starts, Codex asks on its screen: “Hooks need "
                        "review” (Review hooks / Trust all and continue / Continue without "
                        "trusting (hooks won't run)). Answer it at the computer (aipager "
                        "session cx); messages sent meanwhile wait for it.")
        sessions.screens["claude-cx"] = screens.rows("codex_model_offer")
        await daemon.discover()
        assert "“Meet GPT-6 Sol” (Try new model / Use existing model)" in \
            reg.get("claude-cx").notices[-1]["text"]
        sessions.screens["claude-cx"] = screens.rows("codex_idle")
        await daemon.discover()
        assert reg.get("claude-cx").state == State.READY
        assert reg.get("claude-cc").state == State.UNKNOWN  # its SessionStart says so
    finally:
        daemon.journal.close()
