"""An Elicitation (an MCP server's form) answered from the chat: the hook's reply wait, both twins.

The installed ``aipager-hook`` and the Python twin each get the Elicitation the
real Claude Code 2.1.328 sent on stdin; a fake daemon (``support.replyrun``)
reads the forwarded event and answers on its ``aipager_reply_addr`` with an
``{"v":1,"request_id":..,"elicitation":{..}}`` datagram.  Every run checks that
the reply socket file is gone afterwards; the two must print the same bytes.
Waits are kept short with ``AIPAGER_ELICITATION_REPLY_DEADLINE``; no assertion
reads a clock.  tests/cases/hook_cases.json holds more of these as table cases.
"""

from __future__ import annotations

import json
import os
import stat
import time

import pytest
from support import hookrun
from support.replyrun import (ELICIT_OUT, SESSION, Run, answered, elicit, elicitation_bytes, env_with,
                              no_reply_sockets, reply, run_hook, short_instance_dir)

from aipager.hookpy import reply as hook_reply
from aipager.proto import paths

__all__ = ["short_instance_dir"]  # the autouse fixture, imported to apply here

VAR = hook_reply.ELICITATION_VAR
FORM = {"channel": "beta", "replicas": 3}


def form_answered(kind: str, answer, deadline: str | None = "5", **extra_env: str | None) -> Run:
    return answered(kind, answer, deadline, stdin=elicitation_bytes(), var=VAR, **extra_env)


# -- what the daemon's answers turn into ---------------------------------------------------

ANSWERS = {
    # the form Claude Code 2.1.328 was verified to take, byte for byte
    "accept-content": ({"action": "accept", "content": FORM},
                       b'"accept","content":{"channel":"beta","replicas":3}}}'),
    "accept-content-first": ({"content": {"note": "ship it", "notify": False, "replicas": 9}, "action": "accept"},
                             b'"accept","content":{"note":"ship it","notify":false,"replicas":9}}}'),
    "accept-empty": ({"action": "accept", "content": {}}, b'"accept","content":{}}}'),
    "accept-alone": ({"action": "accept"}, b'"accept"}}'),
    "decline": ({"action": "decline"}, b'"decline"}}'),
    "cancel": ({"action": "cancel"}, b'"cancel"}}'),
}


@pytest.mark.parametrize("name", list(ANSWERS))
def test_reply_becomes_the_forms_answer(kind: str, name: str) -> None:
    answer, printed = ANSWERS[name]
    done = form_answered(kind, lambda ev: [elicit(ev["aipager_request_id"], answer)])
    assert (done.exit, done.stdout) == (0, ELICIT_OUT + printed)
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "Elicitation" and out["action"] == answer["action"]
    assert out.get("content") == answer.get("content")
    ev = done.forwarded
    assert ev["session"] == SESSION and ev["mcp_server_name"] == "releaser" and ev["mode"] == "form"
    assert ev["requested_schema"] == json.loads(elicitation_bytes())["requested_schema"]
    assert len(ev["aipager_request_id"]) == 32 and int(ev["aipager_request_id"], 16) >= 0
    assert ev["aipager_reply_addr"] == paths.reply_socket(hookrun.hook_env(), ev["aipager_request_id"])
    assert done.after == []  # answered: no permission_reply_timeout


def test_reply_socket_is_private_while_waiting(kind: str) -> None:
    seen = {}

    def answer(ev):
        seen["mode"] = os.stat(ev["aipager_reply_addr"]).st_mode
        return [elicit(ev["aipager_request_id"], {"action": "cancel"})]

    form_answered(kind, answer)
    assert stat.S_ISSOCK(seen["mode"]) and stat.S_IMODE(seen["mode"]) == 0o600


def test_content_copied_compactly_with_its_escapes(kind: str) -> None:
    """The content's raw text is copied, whitespace outside strings removed; strings,
    numbers and key order as sent; duplicate keys: the last one counts."""
    def answer(ev):
        rid = ev["aipager_request_id"]
        return [(
            '{ "elicitation" : { "action" : "decline",\n "con\\u0074ent" : {\n'
            '  "note" : "a  \\"b\\" \\u00e9 é" , "replicas" : 3.0e0 , "x" : [ 1 , null ] } ,\n'
            ' "\\u0061ction" : "accept" } ,\n "request_id" : "' + rid + '", "v" : 1 , "extra" : null }\n'
        ).encode()]

    done = form_answered(kind, answer)
    assert done.stdout == ELICIT_OUT + (
        b'"accept","content":{"note":"a  \\"b\\" \\u00e9 \xc3\xa9","replicas":3.0e0,"x":[1,null]}}}')
    assert json.loads(done.stdout)["hookSpecificOutput"]["content"]["note"] == 'a  "b" é é'


def test_wrong_request_id_is_ignored_then_the_right_one_counts(kind: str) -> None:
    done = form_answered(kind, lambda ev: [
        elicit("0" * 32, {"action": "decline"}),
        elicit(ev["aipager_request_id"].upper(), {"action": "decline"}),
        elicit(ev["aipager_request_id"], {"action": "accept", "content": FORM}),
    ])
    assert done.stdout == ELICIT_OUT + b'"accept","content":{"channel":"beta","replicas":3}}}'


BAD = {
    # the other event's form: a PermissionRequest's decision is no answer to a form
    "decision-reply": lambda rid: reply(rid, {"behavior": "allow"}),
    "decision-alongside": lambda rid: reply(rid, {"behavior": "allow"}, elicitation=None),
    "content-with-decline": lambda rid: elicit(rid, {"action": "decline", "content": FORM}),
    "content-with-cancel": lambda rid: elicit(rid, {"action": "cancel", "content": {}}),
    "content-then-decline": lambda rid: b'{"v":1,"request_id":"' + rid.encode()
    + b'","elicitation":{"action":"accept","content":{},"action":"decline"}}',
    "unknown-key": lambda rid: elicit(rid, {"action": "accept", "content": FORM, "extra": 1}),
    "hook-key": lambda rid: elicit(rid, {"action": "accept", "hookEventName": "Elicitation"}),
    "wrong-action": lambda rid: elicit(rid, {"action": "Accept"}),
    "action-allow": lambda rid: elicit(rid, {"action": "allow"}),
    "action-number": lambda rid: elicit(rid, {"action": 1}),
    "action-list": lambda rid: elicit(rid, {"action": ["accept"]}),
    "no-action": lambda rid: elicit(rid, {"content": FORM}),
    "content-list": lambda rid: elicit(rid, {"action": "accept", "content": ["beta"]}),
    "content-string": lambda rid: elicit(rid, {"action": "accept", "content": "beta"}),
    "content-null": lambda rid: elicit(rid, {"action": "accept", "content": None}),
    "elicitation-list": lambda rid: elicit(rid, ["accept"]),
    "elicitation-string": lambda rid: elicit(rid, "accept"),
    "elicitation-null": lambda rid: elicit(rid, None),
    "v-2": lambda rid: json.dumps({"v": 2, "request_id": rid, "elicitation": {"action": "cancel"}}).encode(),
    "no-v": lambda rid: json.dumps({"request_id": rid, "elicitation": {"action": "cancel"}}).encode(),
    "no-request-id": lambda rid: json.dumps({"v": 1, "elicitation": {"action": "cancel"}}).encode(),
    "nan": lambda rid: elicit(rid, {"action": "accept", "content": {"n": float("nan")}}),
    "deep": lambda rid: elicit(rid, {"action": "accept", "content": {"x": [[[[[]]]]] * 70}}),
    "huge": lambda rid: elicit(rid, {"action": "accept", "content": {"note": "x" * 40000}}),
    "latin1": lambda rid: elicit(rid, {"action": "accept", "content": {"note": "é"}}).replace(b"\\u00e9", b"\xe9"),
    "truncated": lambda rid: elicit(rid, {"action": "cancel"})[:-2],
    "trailing": lambda rid: elicit(rid, {"action": "cancel"}) + b" x",
}


@pytest.mark.parametrize("bad", list(BAD))
def test_malformed_reply_is_ignored(kind: str, bad: str) -> None:
    done = form_answered(kind, lambda ev: [BAD[bad](ev["aipager_request_id"]),
                                           elicit(ev["aipager_request_id"], {"action": "cancel"})])
    assert done.stdout == ELICIT_OUT + b'"cancel"}}'


def test_a_permission_wait_ignores_a_forms_answer(kind: str) -> None:
    """The other way round: a PermissionRequest takes only a decision."""
    done = answered(kind, lambda ev: [elicit(ev["aipager_request_id"], {"action": "accept", "content": FORM}),
                                      elicit(ev["aipager_request_id"], {"action": "decline"}),
                                      reply(ev["aipager_request_id"], {"behavior": "deny"})])
    assert done.stdout == b'{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny"}}}'


def test_only_the_member_of_the_waiting_form_is_read(kind: str) -> None:
    """Other top-level members are ignored, as for a decision: a reply holding both a
    decision and an answer to the form is read by each wait for its own member."""
    def both(ev):
        return [json.dumps({"v": 1, "request_id": ev["aipager_request_id"], "decision": {"behavior": "allow"},
                            "elicitation": {"action": "decline"}}).encode()]

    assert form_answered(kind, both).stdout == ELICIT_OUT + b'"decline"}}'
    assert answered(kind, both).stdout.endswith(b'{"behavior":"allow"}}}')


def test_no_reply_times_out_quietly_and_tells_the_daemon(kind: str) -> None:
    """Nothing printed (Claude Code shows its own form) and the same permission_reply_timeout
    a PermissionRequest sends: the daemon knows the request by its id."""
    done = form_answered(kind, lambda ev: [reply(ev["aipager_request_id"], {"behavior": "allow"})],
                         deadline="0.3")
    assert (done.exit, done.stdout) == (0, b"")
    rid = done.forwarded["aipager_request_id"]
    assert done.after == [{"hook_event_name": "permission_reply_timeout", "session": SESSION,
                           "aipager_request_id": rid}]


def test_daemon_down_means_no_wait(kind: str) -> None:
    """Nobody listens: the event is spooled, and the hook returns at once although
    the deadline is the longest there is (the subprocess timeout is far shorter)."""
    env = env_with("600", VAR)
    spool = paths.spool_dir(env)
    os.makedirs(spool, mode=0o700)
    done = run_hook(kind, env, None, None, timeout=10, stdin=elicitation_bytes())
    assert (done.exit, done.stdout) == (0, b"")
    assert no_reply_sockets(env)
    files = os.listdir(spool)
    assert len(files) == 1  # the event; no permission_reply_timeout
    with open(os.path.join(spool, files[0]), "rb") as fh:
        spooled = json.loads(fh.read())
    assert spooled["hook_event_name"] == "Elicitation" and len(spooled["aipager_request_id"]) == 32


def _forward_only(kind: str, env: dict, stdin: bytes) -> Run:
    receiver = hookrun.receiver_for(env)
    try:
        done = run_hook(kind, env, None, receiver, timeout=10, stdin=stdin)
    finally:
        receiver.close()
    assert (done.exit, done.stdout, done.after) == (0, b"", [])
    assert "aipager_reply_addr" not in done.forwarded and "aipager_request_id" not in done.forwarded
    return done


@pytest.mark.parametrize("text", ["0", "0.0", "0.0004", "000"])
def test_deadline_zero_turns_the_wait_off(kind: str, text: str) -> None:
    done = _forward_only(kind, env_with(text, VAR), elicitation_bytes())
    assert done.forwarded_raw.startswith(elicitation_bytes()[:-1])


def test_each_event_reads_its_own_variable(kind: str) -> None:
    """$AIPAGER_PERMISSION_REPLY_DEADLINE=0 leaves the form's wait on, and
    $AIPAGER_ELICITATION_REPLY_DEADLINE=0 the permission's."""
    done = form_answered(kind, lambda ev: [elicit(ev["aipager_request_id"], {"action": "cancel"})],
                         deadline="5", AIPAGER_PERMISSION_REPLY_DEADLINE="0")
    assert done.stdout == ELICIT_OUT + b'"cancel"}}'
    done = answered(kind, lambda ev: [reply(ev["aipager_request_id"], {"behavior": "allow"})],
                    deadline="5", AIPAGER_ELICITATION_REPLY_DEADLINE="0")
    assert done.stdout.endswith(b'{"behavior":"allow"}}}')
    _forward_only(kind, env_with("0", VAR, AIPAGER_PERMISSION_REPLY_DEADLINE="5"), elicitation_bytes())


@pytest.mark.parametrize("text", [None, "", "5.", " 5", "1e3", "-1", "0x10", "٣", "1234567890"])
def test_unreadable_deadline_means_the_default(kind: str, text: str | None) -> None:
    """Unset or not DIGITS[.DIGITS]: the 90 s default, in the compiled twin as in Python
    (tests/hook/test_permission_reply.py test_deadline_ms has the exact values).  The
    answer comes after a second: far inside 90 s, after any deadline misread as a few ms."""
    def answer(ev):
        time.sleep(1)
        return [elicit(ev["aipager_request_id"], {"action": "decline"})]

    done = form_answered(kind, answer, deadline=text)
    assert done.stdout == ELICIT_OUT + b'"decline"}}'


def test_short_deadline_is_kept(kind: str) -> None:
    """"0.05" is 50 ms (not the default): nothing answers, so the hook gives up."""
    done = form_answered(kind, lambda ev: [], deadline="0.05")
    assert (done.exit, done.stdout) == (0, b"")
    assert [m["hook_event_name"] for m in done.after] == ["permission_reply_timeout"]


def _masked(done: Run) -> bytes:
    rid = done.forwarded["aipager_request_id"].encode()
    return done.forwarded_raw.replace(rid, b"<id>")


def test_native_and_twin_agree_byte_for_byte(native_bins: dict) -> None:
    """Same forwarded bytes (the random id aside), same answer bytes, same timeout datagram."""
    answer = {"content": {"channel": "nightly", "note": "ünïcode \\ \" x", "replicas": 1.5e1}, "action": "accept"}
    native = form_answered("native", lambda ev: [elicit(ev["aipager_request_id"], answer)])
    twin = form_answered("twin", lambda ev: [elicit(ev["aipager_request_id"], answer)])
    assert native.stdout == twin.stdout and native.stdout.startswith(ELICIT_OUT)
    assert json.loads(native.stdout)["hookSpecificOutput"]["content"] == answer["content"]
    assert _masked(native) == _masked(twin)
    native = form_answered("native", lambda ev: [], deadline="0.05")
    twin = form_answered("twin", lambda ev: [], deadline="0.05")
    assert len(native.after_raw) == 1
    assert [raw.replace(native.forwarded["aipager_request_id"].encode(), b"<id>") for raw in native.after_raw] == [
        raw.replace(twin.forwarded["aipager_request_id"].encode(), b"<id>") for raw in twin.after_raw]


def test_declined_to_stage_2_the_twin_waits_instead(native_bins: dict) -> None:
    """A form too large for the C stage goes to the twin, which shrinks it, keeps the reply
    keys and does the wait (the C stage bound nothing: one reply socket, one forward)."""
    event = json.loads(elicitation_bytes())
    event["message"] = "Where? " + "x" * 300_000
    done = answered("native", lambda ev: [elicit(ev["aipager_request_id"], {"action": "accept", "content": FORM})],
                    stdin=json.dumps(event).encode(), var=VAR, AIPAGER_DEBUG="1")
    assert b"declined to stage 2" in done.stderr
    assert done.stdout == ELICIT_OUT + b'"accept","content":{"channel":"beta","replicas":3}}}'
    assert len(done.forwarded_raw) <= 200_000 and len(done.forwarded["aipager_request_id"]) == 32
    assert done.after == []  # nothing else was forwarded


def _brackets(n: int, rid: str) -> bytes:
    # the document's own three '{' plus n - 3 nested lists
    depth = n - 3
    return (b'{"v":1,"request_id":"' + rid.encode() + b'","elicitation":{"action":"accept",'
            b'"content":{"x":' + b"[" * depth + b"]" * depth + b"}}}")


def test_bracket_limit_is_the_same_in_both(kind: str) -> None:
    """256 '{'/'[' bytes pass, 257 do not: both twins draw the line alike for a form too."""
    done = form_answered(kind, lambda ev: [_brackets(257, ev["aipager_request_id"]),
                                           _brackets(256, ev["aipager_request_id"])])
    assert done.stdout == ELICIT_OUT + b'"accept","content":{"x":' + b"[" * 253 + b"]" * 253 + b"}}}"


# -- the twin's pure helper (the C stage mirrors it; the runs above compare the two) -------

@pytest.mark.parametrize(("data", "out"), [
    (b'{"v":1,"request_id":"R","elicitation":{"action":"cancel"}}', '"cancel"}}'),
    (b'{"v":1,"request_id":"R","elicitation":{"action":"accept","content":{ "a" : 1 }}}',
     '"accept","content":{"a":1}}}'),
    (b'{"v":1,"request_id":"R","elicitation":{"action":"decline","content":{}}}', None),
    (b'{"v":1,"request_id":"R","decision":{"behavior":"allow"}}', None),
    (b'{"v":1,"request_id":"S","elicitation":{"action":"cancel"}}', None),
])
def test_elicitation_output(data: bytes, out: str | None) -> None:
    want = None if out is None else ELICIT_OUT.decode() + out
    assert hook_reply.elicitation_output(data, "R") == want
    # each form is read by its own wait only
    assert (hook_reply.decision_output(data, "R") is not None) == (b'"decision"' in data)


def test_wanted() -> None:
    assert hook_reply.wanted("Elicitation", {})
    assert hook_reply.wanted("PermissionRequest", {"tool_name": "Bash"})
    assert not hook_reply.wanted("PermissionRequest", {"tool_name": "AskUserQuestion"})
    assert not hook_reply.wanted("Notification", {})
