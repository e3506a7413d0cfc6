"""An agent team's teammates ask for permission in the lead's session (Claude Code 2.1.328,
in-process teammates: PermissionRequest fires in the lead's process with ``agent_id`` and
``agent_type`` = the teammate's name).  Each request says whose it is, and the lead's Stop
closes only the lead's own: a teammate's stays open and answerable until its tool runs."""

from __future__ import annotations

import os

import orjson
import pytest
from daemon.test_replies import RID, HookSocket
from fakes.sessionio import FakeSessions

from aipager.agents import CLAUDE
from aipager.daemon.app import Daemon
from aipager.port.model import State
from aipager.port.outputs import Permission, RecordingNotifier, RequestClosed
from aipager.port.backend import ByHook, Who

S = "claude-tm"
OWNER = Who("@owner", 1, "owner")


@pytest.fixture
def rig():
    sessions = FakeSessions()
    sessions.live.add(S)
    notifier = RecordingNotifier()
    d = Daemon(dict(os.environ), session_io=sessions, notifier=notifier)
    d.core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "make a team",
                 "cwd": "/srv/app"})
    hook = HookSocket()
    yield d, notifier, hook
    hook.close()
    d.journal.close()


def _ask(d: Daemon, hook: HookSocket, tool_use_id: str, command: str, agent: str = "",
         name: str = "") -> None:
    ev = {"hook_event_name": "PermissionRequest", "session": S, "tool_name": "Bash",
          "tool_use_id": tool_use_id, "cwd": "/srv/app",
          "tool_input": {"command": command}, "aipager_request_id": RID,
          "aipager_reply_addr": hook.path}
    if agent:
        ev.update(agent_id=agent, agent_type=name)
    d.core.feed(ev)


async def test_teammates_requests_are_labelled_and_outlive_the_leads_stop(rig):
    d, notifier, hook = rig
    _ask(d, hook, "toolu_lead", "ls")
    _ask(d, hook, "toolu_w1", "touch a", "a1@team", "worker1")
    _ask(d, hook, "toolu_w2", "touch b", "a2@team", "worker2")
    shown = [o for o in notifier.outputs if isinstance(o, Permission)]
    assert len(shown) == 3
    assert "tm · worker1" in shown[1].text and "tm · worker2" in shown[2].text
    assert "worker" not in shown[0].text  # the lead's own: no name

    # the lead's turn ends while its teammates still wait
    d.core.feed({"hook_event_name": "Stop", "session": S, "last_assistant_message": "Team made."})
    sess = d.core.registry.get(S)
    assert [r.agent_name for r in sess.requests] == ["worker1", "worker2"]
    assert sess.state == State.WAITING
    closed = [o.key for o in notifier.outputs if isinstance(o, RequestClosed)]
    assert closed == ["p:toolu_lead:"]

    # a tap on worker1's ✅ still reaches its waiting hook
    got = await d.answer_request(S, "p:toolu_w1:a1@team", "allow", OWNER)
    assert got == ByHook()
    assert orjson.loads(hook.received()[0])["decision"] == {"behavior": "allow"}


def test_sessions_aipager_starts_keep_teammates_in_process():
    assert CLAUDE.args([]) == ["--teammate-mode", "in-process"]
    assert CLAUDE.args(["--resume", "x"]) == ["--resume", "x", "--teammate-mode", "in-process"]
    # the person's own choice stands
    assert CLAUDE.args(["--teammate-mode", "tmux"]) == ["--teammate-mode", "tmux"]
    assert CLAUDE.args(["--teammate-mode=auto"]) == ["--teammate-mode=auto"]


async def test_a_tmux_teammates_prompt_says_answer_it_at_the_computer_with_no_button(rig):
    d, notifier, _hook = rig
    d.core.feed({"hook_event_name": "Notification", "session": S,
                 "notification_type": "worker_permission_prompt",
                 "message": "worker2 needs permission for Bash"})
    from aipager.port.outputs import Notice

    (said,) = [o for o in notifier.outputs if isinstance(o, Notice)]
    assert said.notice == "at_computer"
    assert "worker2 needs permission for Bash: answer it at the computer" in said.text
    assert not [o for o in notifier.outputs if isinstance(o, Permission)]
    assert d.core.registry.get(S).requests == []  # nothing waits that a tap could answer
