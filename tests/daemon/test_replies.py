"""A tap sent back to the waiting hook: decision_for, send_reply, answer / Daemon.answer_request.

The hook's side is a real datagram socket bound where a PermissionRequest's
``aipager_reply_addr`` points; what arrives there must be a reply the hook
twin accepts (``aipager.hookpy.reply.decision_output``).
"""

from __future__ import annotations

import json
import os
import tempfile

import orjson
import pytest
from support import hookrun

from aipager.daemon import replies
from aipager.daemon.app import Daemon
from aipager.port.model import Request, Session, State
from aipager.port.backend import ByHook, Gone, Who
from aipager.hookpy import reply as hook_reply

S = "claude-jim"
RID = "0123456789abcdef0123456789abcdef"
RULES = {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
         "behavior": "allow", "destination": "localSettings"}
DIRS = {"type": "addDirectories", "directories": ["/home/dev/project"], "destination": "session"}
MODE = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}


class HookSocket(hookrun.Receiver):
    """Stands in for the waiting hook: a bound datagram socket in a short folder of ours."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="aprd", dir="/tmp")
        super().__init__(os.path.join(self.folder, f"aipager-reply-{RID}.sock"))

    def received(self) -> list[bytes]:
        return self.drain_raw()

    def close(self) -> None:
        super().close()
        os.rmdir(self.folder)


@pytest.fixture
def hook():
    sock = HookSocket()
    yield sock
    sock.close()


def request(suggestions: list | None = None) -> Request:
    return Request(key="p:toolu_1:", kind="permission", tool="Bash", opened_at=0.0,
                   request_id=RID, suggestions=suggestions or [])


# -- decision_for -------------------------------------------------------------------------


def test_allow() -> None:
    assert replies.decision_for("allow", request([RULES]), "@alice") == {"behavior": "allow"}


def test_allow_always_passes_rules_and_folders_but_never_a_mode_switch() -> None:
    got = replies.decision_for("allow_always", request([RULES, MODE, DIRS]), "@alice")
    assert got == {"behavior": "allow", "updatedPermissions": [RULES, DIRS]}


@pytest.mark.parametrize("suggestions", [[], [MODE], ["junk", 3]])
def test_allow_always_without_a_rule_is_plain_allow(suggestions: list) -> None:
    assert replies.decision_for("allow_always", request(suggestions), "@alice") == {"behavior": "allow"}


def test_allow_always_too_big_for_the_hook_is_plain_allow() -> None:
    huge = {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "x" * 40000}]}
    assert replies.decision_for("allow_always", request([huge]), "@alice") == {"behavior": "allow"}


def test_deny_names_who() -> None:
    assert replies.decision_for("deny", request(), "@alice") == {
        "behavior": "deny", "message": "Denied via aipager by @alice", "interrupt": False}


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown answer 'halt'"):
        replies.decision_for("halt", request(), "@alice")


def test_stop_denies_and_ends_the_task() -> None:
    """⏹ on a request: Claude Code ends the turn with no further model call."""
    assert replies.decision_for("stop", request(), "@alice") == {
        "behavior": "deny", "message": "Stopped via aipager by @alice", "interrupt": True}


@pytest.mark.parametrize("kind", replies.KINDS)
def test_every_decision_is_a_reply_the_hook_accepts(kind: str) -> None:
    decision = replies.decision_for(kind, request([RULES, DIRS]), "Ana “η” @alice")
    out = hook_reply.decision_output(replies.reply_datagram(RID, decision), RID)
    assert out is not None
    assert json.loads(out) == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


# -- send_reply ---------------------------------------------------------------------------


def test_send_reply_reaches_the_hook(hook: HookSocket) -> None:
    decision = {"behavior": "allow"}
    assert replies.send_reply(hook.path, RID, decision) is True
    assert [orjson.loads(d) for d in hook.received()] == [{"v": 1, "request_id": RID, "decision": decision}]


def test_send_reply_to_a_gone_hook_is_false(hook: HookSocket) -> None:
    path = hook.path
    hook.sock.close()
    os.unlink(path)
    assert replies.send_reply(path, RID, {"behavior": "allow"}) is False


def test_send_reply_to_a_socket_nobody_reads_is_false(hook: HookSocket) -> None:
    hook.sock.close()  # the file stays, nobody listens
    assert replies.send_reply(hook.path, RID, {"behavior": "allow"}) is False


def test_send_reply_without_an_address_is_false() -> None:
    assert replies.send_reply("", RID, {"behavior": "allow"}) is False


# -- answer: the registry side --------------------------------------------------------------


def _ask(core, reply_addr: str, request_id: str = RID, suggestions: list | None = None) -> str:
    core.feed({"hook_event_name": "UserPromptSubmit", "session": S, "prompt": "go"})
    core.feed({"hook_event_name": "PermissionRequest", "session": S, "tool_name": "Bash",
               "tool_use_id": "toolu_1", "tool_input": {"command": "npm test"},
               "permission_suggestions": suggestions or [RULES],
               "aipager_request_id": request_id, "aipager_reply_addr": reply_addr})
    return core.registry.get(S).requests[0].key


def test_tap_goes_to_the_waiting_hook_and_closes_the_request(core, notifier, hook: HookSocket) -> None:
    key = _ask(core, hook.path)
    assert core.registry.get(S).state == State.WAITING

    assert replies.answer(core.ctx, S, key, "deny", "@alice") == replies.VIA_HOOK

    got = [orjson.loads(d) for d in hook.received()]
    assert got == [{"v": 1, "request_id": RID, "decision": {
        "behavior": "deny", "message": "Denied via aipager by @alice", "interrupt": False}}]
    sess = core.registry.get(S)
    assert sess.requests == [] and sess.state == State.WORKING
    closed = notifier.of("request_closed", S)[-1].data
    assert closed == {"key": key, "request_id": RID, "via": "hook_decision", "answer": "deny", "who": "@alice",
                      "scope": {}, "edited": ""}
    record = core.ctx.audit.records[-1]
    assert {k: record[k] for k in ("action", "session", "tool", "answer", "via", "who")} == {
        "action": "permission_answer", "session": S, "tool": "Bash", "answer": "deny",
        "via": "hook_decision", "who": "@alice"}

    # a late second tap types nothing and sends nothing
    assert replies.answer(core.ctx, S, key, "allow", "@bob") == replies.GONE
    assert hook.received() == []


def test_allow_always_sends_the_rule(core, hook: HookSocket) -> None:
    key = _ask(core, hook.path, suggestions=[MODE, RULES])
    assert replies.answer(core.ctx, S, key, "allow_always", "@alice") == replies.VIA_HOOK
    assert orjson.loads(hook.received()[0])["decision"] == {"behavior": "allow", "updatedPermissions": [RULES]}


def test_after_the_hook_timed_out_the_caller_types_keys_once(core, notifier, hook: HookSocket) -> None:
    key = _ask(core, hook.path)
    core.feed({"hook_event_name": "permission_reply_timeout", "session": S, "aipager_request_id": RID})

    assert replies.answer(core.ctx, S, key, "allow", "@alice") == replies.VIA_KEYS
    assert hook.received() == []  # the address was cleared: nothing sent
    req = core.registry.get(S).requests[0]
    assert req.answered == "allow"  # still open until its PostToolUse
    assert core.ctx.audit.records[-1]["via"] == "keystroke_fallback"

    assert replies.answer(core.ctx, S, key, "deny", "@bob") == replies.ALREADY


def test_hook_gone_without_timeout_falls_back_to_keys(core, hook: HookSocket) -> None:
    key = _ask(core, hook.path)
    hook.sock.close()
    os.unlink(hook.path)
    assert replies.answer(core.ctx, S, key, "allow", "@alice") == replies.VIA_KEYS
    req = core.registry.get(S).requests[0]
    assert (req.answered, req.reply_addr) == ("allow", "")


def test_unknown_request_or_session_is_gone(core, hook: HookSocket) -> None:
    _ask(core, hook.path)
    assert replies.answer(core.ctx, S, "p:nope:", "allow", "@alice") == replies.GONE
    assert replies.answer(core.ctx, "claude-other", "p:toolu_1:", "allow", "@alice") == replies.GONE
    assert hook.received() == []


def test_answer_rejects_an_unknown_kind(core, hook: HookSocket) -> None:
    key = _ask(core, hook.path)
    with pytest.raises(ValueError, match="unknown answer"):
        replies.answer(core.ctx, S, key, "maybe", "@alice")
    assert core.registry.get(S).requests[0].answered == ""


async def test_daemon_answer_request(hook: HookSocket) -> None:
    """The port's entry point: the real Daemon object, its core and audit file."""
    daemon = Daemon(dict(os.environ))
    _ask(daemon.core, hook.path)
    key = daemon.core.registry.get(S).requests[0].key
    assert await daemon.answer_request(S, key, "allow", Who("@alice", 1, "owner")) == ByHook()
    assert orjson.loads(hook.received()[0])["decision"] == {"behavior": "allow"}
    assert await daemon.answer_request(S, key, "allow", Who("@alice", 1, "owner")) == Gone()
    with open(daemon.audit.path, "rb") as fh:
        lines = [orjson.loads(line) for line in fh]
    assert [(r["action"], r["via"]) for r in lines] == [("permission_answer", "hook_decision")]


def test_tap_sent_as_the_hook_gave_up_opens_the_request_again(core, notifier, hook: HookSocket) -> None:
    """The hook's permission_reply_timeout for a request answer() closed: it never read the tap."""
    key = _ask(core, hook.path)
    assert replies.answer(core.ctx, S, key, "deny", "@alice") == replies.VIA_HOOK
    notifier.clear()

    core.feed({"hook_event_name": "permission_reply_timeout", "session": S, "aipager_request_id": RID})

    sess = core.registry.get(S)
    assert [r.key for r in sess.requests] == [key] and sess.state == State.WAITING
    assert (sess.requests[0].answered, sess.requests[0].reply_addr) == ("", "")
    shown = notifier.of("permission", S)
    assert len(shown) == 1 and shown[0].data["key"] == key and shown[0].data["late_answer"] == "deny"
    assert notifier.notices("late_tap")
    # the next tap answers the terminal dialog with keys
    assert replies.answer(core.ctx, S, key, "allow", "@alice") == replies.VIA_KEYS
    # the same timeout again changes nothing more
    core.feed({"hook_event_name": "permission_reply_timeout", "session": S, "aipager_request_id": RID,
               "x": 1})
    assert len(notifier.of("permission", S)) == 1


def test_timeout_for_an_unknown_request_changes_nothing(core, notifier, hook: HookSocket) -> None:
    _ask(core, hook.path)
    notifier.clear()
    core.feed({"hook_event_name": "permission_reply_timeout", "session": S, "aipager_request_id": "f" * 32})
    assert not notifier.outputs
    assert core.registry.get(S).requests[0].reply_addr == hook.path


def test_hook_answered_requests_survive_a_restart(core, hook: HookSocket) -> None:
    key = _ask(core, hook.path, suggestions=[RULES])
    replies.answer(core.ctx, S, key, "allow_always", "@alice")
    saved = orjson.loads(orjson.dumps(core.registry.get(S).to_dict()))
    back = Session.from_dict(saved)
    assert [(r.key, r.request_id, r.answered, r.suggestions) for r in back.hook_answered] == [
        (key, RID, "allow_always", [RULES])]
