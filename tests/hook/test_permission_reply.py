"""A PermissionRequest answered from the chat: the hook's reply wait, both twins.

A fake daemon (the ``Receiver`` socket) reads the forwarded event and answers
on its ``aipager_reply_addr``.  Every run also checks that the reply socket
file is gone afterwards; the native binary and the twin must print the same
bytes.  Waits are kept short with ``AIPAGER_PERMISSION_REPLY_DEADLINE``; no
assertion reads a clock.
"""

from __future__ import annotations

import json
import os
import stat

import pytest
from support import hookrun
from support.replyrun import (OUT, SESSION, Run, answered, env_with, event_bytes, no_reply_sockets, reply,
                              run_hook, short_instance_dir)

from aipager.proto import paths
from aipager.hookpy import reply as hook_reply

__all__ = ["short_instance_dir"]  # the autouse fixture, imported to apply here


# -- what the daemon's answers turn into ---------------------------------------------------

PERMS = [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
          "behavior": "allow", "destination": "localSettings"}]

ANSWERS = {
    "allow": ({"behavior": "allow"}, b'{"behavior":"allow"}'),
    "deny-message": (
        {"behavior": "deny", "message": "Denied via aipager by @alice", "interrupt": False},
        b'{"behavior":"deny","message":"Denied via aipager by @alice","interrupt":false}'),
    "allow-always": (
        {"updatedPermissions": PERMS, "behavior": "allow"},
        b'{"behavior":"allow","updatedPermissions":' + json.dumps(PERMS, separators=(",", ":")).encode() + b"}"),
    "deny-interrupt": ({"interrupt": True, "behavior": "deny"}, b'{"behavior":"deny","interrupt":true}'),
    "allow-edited": (
        {"updatedPermissions": PERMS, "updatedInput": {"command": "npm test -- --ci", "n": 1.5},
         "behavior": "allow"},
        b'{"behavior":"allow","updatedInput":{"command":"npm test -- --ci","n":1.5},'
        b'"updatedPermissions":' + json.dumps(PERMS, separators=(",", ":")).encode() + b"}"),
}


@pytest.mark.parametrize("name", list(ANSWERS))
def test_reply_becomes_the_decision(kind: str, name: str) -> None:
    decision, printed = ANSWERS[name]
    done = answered(kind, lambda ev: [reply(ev["aipager_request_id"], decision)])
    assert done.exit == 0
    assert done.stdout == OUT + printed + b"}}"
    ev = done.forwarded
    assert ev["session"] == SESSION and ev["tool_name"] == "Bash"
    assert len(ev["aipager_request_id"]) == 32 and int(ev["aipager_request_id"], 16) >= 0
    assert ev["aipager_reply_addr"] == paths.reply_socket(hookrun.hook_env(), ev["aipager_request_id"])
    assert done.after == []  # answered: no permission_reply_timeout


def test_reply_socket_is_private_while_waiting(kind: str) -> None:
    seen = {}

    def answer(ev):
        seen["mode"] = os.stat(ev["aipager_reply_addr"]).st_mode
        return [reply(ev["aipager_request_id"], {"behavior": "allow"})]

    answered(kind, answer)
    assert stat.S_ISSOCK(seen["mode"]) and stat.S_IMODE(seen["mode"]) == 0o600


def test_whitespace_and_escapes_copied_compactly(kind: str) -> None:
    """The decision's raw text is copied, whitespace outside strings removed; strings as sent."""
    def answer(ev):
        rid = ev["aipager_request_id"]
        return [(
            '{ "decision" : {\n "message" : "no \\u00e9  \\"x\\" é",\n'
            ' "updatedPermissions" : [ { "rules" : [ "a b" , 1.50e3 , -0 ] } ],\n'
            ' "beh\\u0061vior" : "deny" } ,\n "request_id" : "' + rid + '", "v" : 1 , "extra" : null }\n'
        ).encode()]

    done = answered(kind, answer)
    assert done.stdout == OUT + (
        b'{"behavior":"deny","updatedPermissions":[{"rules":["a b",1.50e3,-0]}],'
        b'"message":"no \\u00e9  \\"x\\" \xc3\xa9"}}}')
    assert json.loads(done.stdout)["hookSpecificOutput"]["decision"]["message"] == 'no é  "x" é'


def test_wrong_request_id_is_ignored_then_the_right_one_counts(kind: str) -> None:
    done = answered(kind, lambda ev: [
        reply("0" * 32, {"behavior": "deny"}),
        reply(ev["aipager_request_id"].upper(), {"behavior": "deny"}),
        reply(ev["aipager_request_id"], {"behavior": "allow"}),
    ])
    assert done.stdout == OUT + b'{"behavior":"allow"}}}'


BAD = {
    "not-json": lambda rid: b"allow",
    "truncated": lambda rid: reply(rid, {"behavior": "deny"})[:-3],
    "array": lambda rid: b"[" + reply(rid, {"behavior": "deny"}) + b"]",
    "v-2": lambda rid: json.dumps({"v": 2, "request_id": rid, "decision": {"behavior": "deny"}}).encode(),
    "v-float": lambda rid: b'{"v":1.0,"request_id":"' + rid.encode() + b'","decision":{"behavior":"deny"}}',
    "v-true": lambda rid: json.dumps({"v": True, "request_id": rid, "decision": {"behavior": "deny"}}).encode(),
    "no-v": lambda rid: json.dumps({"request_id": rid, "decision": {"behavior": "deny"}}).encode(),
    "maybe": lambda rid: reply(rid, {"behavior": "maybe"}),
    "no-behavior": lambda rid: reply(rid, {"message": "x"}),
    "unknown-key": lambda rid: reply(rid, {"behavior": "deny", "updatedMode": {}}),
    "input-list": lambda rid: reply(rid, {"behavior": "allow", "updatedInput": ["ls"]}),
    "input-string": lambda rid: reply(rid, {"behavior": "allow", "updatedInput": "ls"}),
    "perms-object": lambda rid: reply(rid, {"behavior": "allow", "updatedPermissions": {}}),
    "message-number": lambda rid: reply(rid, {"behavior": "deny", "message": 3}),
    "interrupt-string": lambda rid: reply(rid, {"behavior": "deny", "interrupt": "yes"}),
    "decision-list": lambda rid: reply(rid, ["allow"]),
    "nan": lambda rid: reply(rid, {"behavior": "deny", "updatedPermissions": [float("nan")]}),
    "deep": lambda rid: reply(rid, {"behavior": "deny", "updatedPermissions": [[[[[]]]]] * 70}),
    "huge": lambda rid: reply(rid, {"behavior": "deny", "message": "x" * 40000}),
    "latin1": lambda rid: reply(rid, {"behavior": "deny", "message": "é"}).replace(b"\\u00e9", b"\xe9"),
    "trailing": lambda rid: reply(rid, {"behavior": "deny"}) + b" x",
    "behavior-dup": lambda rid: b'{"v":1,"request_id":"' + rid.encode()
    + b'","decision":{"behavior":"allow","behavior":"ask"}}',
}


@pytest.mark.parametrize("bad", list(BAD))
def test_malformed_reply_is_ignored(kind: str, bad: str) -> None:
    done = answered(kind, lambda ev: [BAD[bad](ev["aipager_request_id"]),
                                      reply(ev["aipager_request_id"], {"behavior": "allow"})])
    assert done.stdout == OUT + b'{"behavior":"allow"}}}'


def test_no_reply_times_out_quietly_and_tells_the_daemon(kind: str) -> None:
    done = answered(kind, lambda ev: [reply("f" * 32, {"behavior": "allow"})], deadline="0.3")
    assert (done.exit, done.stdout) == (0, b"")
    rid = done.forwarded["aipager_request_id"]
    assert done.after == [{"hook_event_name": "permission_reply_timeout", "session": SESSION,
                           "aipager_request_id": rid}]


def test_daemon_down_means_no_wait(kind: str) -> None:
    """Nobody listens: the event is spooled, and the hook returns at once although
    the deadline is a minute (the subprocess timeout is far shorter)."""
    env = env_with("60")
    spool = paths.spool_dir(env)
    os.makedirs(spool, mode=0o700)
    done = run_hook(kind, env, None, None, timeout=10)
    assert (done.exit, done.stdout) == (0, b"")
    assert no_reply_sockets(env)
    files = os.listdir(spool)
    assert len(files) == 1  # the event; no permission_reply_timeout
    with open(os.path.join(spool, files[0]), "rb") as fh:
        spooled = json.loads(fh.read())
    assert spooled["hook_event_name"] == "PermissionRequest" and len(spooled["aipager_request_id"]) == 32


def _forward_only(kind: str, env: dict) -> Run:
    receiver = hookrun.receiver_for(env)
    try:
        done = run_hook(kind, env, None, receiver, timeout=10)
    finally:
        receiver.close()
    assert (done.exit, done.stdout, done.after) == (0, b"", [])
    assert "aipager_reply_addr" not in done.forwarded and "aipager_request_id" not in done.forwarded
    return done


def test_reply_folder_not_ours_forwards_as_before(kind: str, tmp_path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir()
    try:
        os.chown(folder, 65534, 65534)  # the suite runs as root in CI: "not ours" is another uid
    except PermissionError:
        pytest.skip("giving a folder to another user needs root")
    env = env_with("60", AIPAGER_INSTANCE_DIR=None, AIPAGER_SOCKET_PATH=str(folder / "aipager.sock"))
    _forward_only(kind, env)
    assert os.listdir(folder) == []


def test_reply_folder_through_a_symlink_forwards_as_before(kind: str, tmp_path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    env = env_with("60", AIPAGER_INSTANCE_DIR=None, AIPAGER_SOCKET_PATH=str(tmp_path / "link" / "aipager.sock"))
    _forward_only(kind, env)
    assert os.listdir(real) == []


def test_deadline_zero_turns_the_wait_off(kind: str) -> None:
    _forward_only(kind, env_with("0"))


def test_socket_path_too_long_forwards_as_before(kind: str, short_instance_dir: str) -> None:
    deep = os.path.join(short_instance_dir, "d" * (107 - 51 - len(short_instance_dir)))
    os.mkdir(deep)  # <deep>/aipager-reply-<id>.sock is 108 bytes: one too many
    _forward_only(kind, env_with("60", AIPAGER_INSTANCE_DIR=deep))


def test_other_events_never_wait(kind: str, receiver) -> None:
    stop = json.dumps({"hook_event_name": "Stop", "session_id": "s"}).encode()
    done = hookrun.run(hookrun.contender_cmd(kind, "hook"), stop, env_with("60"), receiver, timeout=10)
    assert (done.exit, done.stdout) == (0, b"")
    assert "aipager_request_id" not in done.sent[0]


def _masked(done: Run) -> bytes:
    rid = done.forwarded["aipager_request_id"].encode()
    return done.forwarded_raw.replace(rid, b"<id>")


def test_native_and_twin_agree_byte_for_byte(native_bins: dict) -> None:
    """Same forwarded bytes (the random id aside), same decision bytes, same timeout datagram."""
    decision = {"behavior": "allow", "updatedPermissions": PERMS}
    native = answered("native", lambda ev: [reply(ev["aipager_request_id"], decision)])
    twin = answered("twin", lambda ev: [reply(ev["aipager_request_id"], decision)])
    assert native.stdout == twin.stdout and native.stdout.startswith(OUT)
    assert _masked(native) == _masked(twin)
    native = answered("native", lambda ev: [], deadline="0.05")
    twin = answered("twin", lambda ev: [], deadline="0.05")
    assert native.after[0]["aipager_request_id"] == native.forwarded["aipager_request_id"]
    assert [json.dumps(m).replace(native.forwarded["aipager_request_id"], "<id>") for m in native.after] == [
        json.dumps(m).replace(twin.forwarded["aipager_request_id"], "<id>") for m in twin.after]


def _brackets(n: int, rid: str) -> bytes:
    # the document's own two '{' plus n - 2 nested lists
    depth = n - 2
    return (b'{"v":1,"request_id":"' + rid.encode() + b'","decision":{"behavior":"allow",'
            b'"updatedPermissions":' + b"[" * depth + b"]" * depth + b"}}")


def test_bracket_limit_is_the_same_in_both(kind: str) -> None:
    """256 '{'/'[' bytes pass (nested 254 deep), 257 do not: both twins draw the line alike."""
    done = answered(kind, lambda ev: [_brackets(257, ev["aipager_request_id"]),
                                      _brackets(256, ev["aipager_request_id"])])
    assert done.stdout == OUT + b'{"behavior":"allow","updatedPermissions":' + b"[" * 254 + b"]" * 254 + b"}}}"


# -- the twin's pure helpers (the C stage mirrors them; the runs above compare the two) ----

#: (text, a PermissionRequest's wait, an Elicitation's wait): one grammar, each event its
#: own default (20 s / 90 s) and most (120 s / 110 s: under the hook's own 120 s timeout)
DEADLINES = [
    (None, 20000, 90000), ("", 20000, 90000), ("5", 5000, 5000), ("0.3", 300, 300), ("0.25", 250, 250),
    ("1.23456", 1234, 1234), ("0", 0, 0), ("0.0", 0, 0), ("0.0004", 0, 0), ("0.001", 10, 10),
    ("100", 100000, 100000), ("109.9999", 109999, 109999), ("110", 110000, 110000),
    ("300", 120000, 110000), ("999", 120000, 110000), ("123456789", 120000, 110000),
    ("1234567890", 20000, 90000), ("1e3", 20000, 90000), (" 5", 20000, 90000), ("5 ", 20000, 90000),
    ("5.", 20000, 90000), (".5", 20000, 90000), ("-1", 20000, 90000), ("٣", 20000, 90000),
    ("inf", 20000, 90000), ("0x10", 20000, 90000), ("5.٣", 20000, 90000),
]


@pytest.mark.parametrize(("text", "permission", "elicitation"), DEADLINES)
def test_deadline_ms(text: str | None, permission: int, elicitation: int) -> None:
    for var, event, ms in ((hook_reply.PERMISSION_VAR, "PermissionRequest", permission),
                           (hook_reply.ELICITATION_VAR, "Elicitation", elicitation)):
        env = {} if text is None else {var: text}
        assert hook_reply.wait_ms(env, event) == ms
    # each event reads its own variable only
    if text is not None:
        assert hook_reply.wait_ms({hook_reply.ELICITATION_VAR: text}, "PermissionRequest") == 20000
        assert hook_reply.wait_ms({hook_reply.PERMISSION_VAR: text}, "Elicitation") == 90000


@pytest.mark.parametrize(("text", "want"), [
    ('[ 1 , "a b" ]', '[1,"a b"]'),
    ('{"k" :\n\t"\\" x\\\\" }', '{"k":"\\" x\\\\"}'),
    ("[]", "[]"),
])
def test_compact(text: str, want: str) -> None:
    assert hook_reply.compact(text) == want


def test_declined_to_stage_2_the_twin_waits_instead(native_bins: dict) -> None:
    """An event too large for the C stage goes to the twin, which shrinks it, keeps the reply
    keys and does the wait (the C stage bound nothing: one reply socket, one forward)."""
    event = json.loads(event_bytes())
    event["tool_input"]["command"] = "echo " + "x" * 300_000
    done = answered("native", lambda ev: [reply(ev["aipager_request_id"], {"behavior": "allow"})],
                    stdin=json.dumps(event).encode(), AIPAGER_DEBUG="1")
    assert b"declined to stage 2" in done.stderr
    assert done.stdout == OUT + b'{"behavior":"allow"}}}'
    assert len(done.forwarded_raw) <= 200_000 and len(done.forwarded["aipager_request_id"]) == 32
    assert done.after == []  # nothing else was forwarded


@pytest.mark.parametrize("spelling", ['"AskUserQuestion"', '"Ask\\u0055serQuestion"'])
def test_ask_user_question_never_waits(kind: str, spelling: str) -> None:
    """Its PreToolUse already showed the question; the terminal's picker must not be held back."""
    event = json.loads(event_bytes())
    event["tool_name"] = "@TOOL@"
    event["tool_input"] = {"questions": [{"question": "Which?", "options": [{"label": "A"}]}]}
    stdin = json.dumps(event).replace('"@TOOL@"', spelling).encode()
    env = env_with("60")
    receiver = hookrun.receiver_for(env)
    try:
        done = run_hook(kind, env, None, receiver, timeout=10, stdin=stdin)
    finally:
        receiver.close()
    assert (done.exit, done.stdout, done.after) == (0, b"", [])
    assert done.forwarded["tool_name"] == "AskUserQuestion" and "aipager_request_id" not in done.forwarded
