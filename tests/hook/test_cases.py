"""The shared case table (tests/cases/hook_cases.json) against both twins.

Each case runs through the installed native executable and the pure-Python
twin: each must meet the case's expectation, and the two must agree exactly
on datagrams, stdout, exit code and the status file they leave.
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import shutil
import tempfile

import pytest
from support import hookrun, replyrun
from support.policy_state import collect_policy_files, prepare_policy_files, write_private

from aipager.proto import paths, wire

HERE = pathlib.Path(__file__).resolve().parent
TABLE = json.loads((HERE.parent / "cases" / "hook_cases.json").read_text(encoding="utf-8"))
CASES = {case["id"]: case for case in TABLE["cases"]}
EVENTS = HERE.parent / "fixtures" / "events"
SESSION = "claude-jim"
#: hookpy/axcode.py TOOL_NAMES for the tools the table uses (spelled out: a change there shows)
AX_TOOL_NAMES = {"bash": "Bash", "write": "Write"}
# events whose stdout belongs to the safety policy, not to forwarding
POLICY_EVENTS = {"PreToolUse", "PermissionRequest", "UserPromptSubmit", "Stop", "PreModelSwitch"}
SL_TOKENS = {
    "context_pct": ("context_window", "used_percentage"),
    "total_output": ("context_window", "total_output_tokens"),
    "total_input": ("context_window", "total_input_tokens"),
    "current_output": ("context_window", "current_usage", "output_tokens"),
    "lines_added": ("cost", "total_lines_added"),
    "lines_removed": ("cost", "total_lines_removed"),
}
STATUSLINE_FIELDS = {
    "session_id": ("session_id",),
    "model_name": ("model", "display_name"),
    "model_id": ("model", "id"),
    "context_pct": ("context_window", "used_percentage"),
    "cost_usd": ("cost", "total_cost_usd"),
    "total_input": ("context_window", "total_input_tokens"),
    "total_output": ("context_window", "total_output_tokens"),
    "current_output": ("context_window", "current_usage", "output_tokens"),
    "lines_added": ("cost", "total_lines_added"),
    "lines_removed": ("cost", "total_lines_removed"),
}


def _fixture_bytes(name: str) -> bytes:
    # compact, as Claude Code sends it
    return json.dumps(json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))).encode()


def case_stdin(case: dict) -> bytes:
    if "fixture" in case:
        return _fixture_bytes(case["fixture"])
    if "stdin_hex" in case:
        return bytes.fromhex(case["stdin_hex"])
    return case["stdin"].encode()


def case_status(case: dict) -> bytes | None:
    if "status_fixture" in case:
        return _fixture_bytes(case["status_fixture"])
    if "status" in case:
        return json.dumps(case["status"]).encode()
    if "status_raw" in case:
        return case["status_raw"].encode()
    return None


def _get(node, path):
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _loads_or_none(data: bytes | None):
    try:
        return json.loads(data) if data is not None else None
    except ValueError:
        return None


def expected_sent(case: dict, env: dict) -> list:
    want = case["expect"]["sent"]
    if isinstance(want, list):
        return want
    session = env.get("CLAUDE_DTACH_SESSION")
    source = json.loads(case_stdin(case))
    if want == "statusline":
        msg = {"type": "statusline", "session": session}
        msg.update({key: _get(source, path) for key, path in STATUSLINE_FIELDS.items()})
        if case.get("status_blocked"):
            msg["status_file_errno"] = errno.EISDIR  # last, as both twins add it
        return [msg]
    if want == "ax-args":
        # AX Code's arguments-only stdin as the hook reshapes it (hookpy/axcode.py),
        # the tool under Claude Code's name
        tool = AX_TOOL_NAMES.get(env["HOOK_TOOL"], env["HOOK_TOOL"])
        source = {"hook_event_name": env["HOOK_EVENT"], "tool_name": tool,
                  "tool_input": source, "cwd": os.getcwd()}
        if env.get("HOOK_SESSION_ID"):
            source["session_id"] = env["HOOK_SESSION_ID"]
    if want == "ax-event":
        # AX Code's own object for any other event, named, placed and with its session
        source = dict(source, hook_event_name=env["HOOK_EVENT"], cwd=os.getcwd())
        if env.get("HOOK_SESSION_ID"):
            source["session_id"] = env["HOOK_SESSION_ID"]
    event = dict(source)
    event["session"] = session
    name = source.get("hook_event_name") or env.get("HOOK_EVENT")
    status = _loads_or_none(case_status(case))
    if isinstance(status, dict) and name != "MessageDisplay":
        event["sl_tokens"] = {key: _get(status, path) for key, path in SL_TOKENS.items()}
    if want == "event+env-name":
        event["hook_event_name"] = env["HOOK_EVENT"]
    if "replies" in case:
        # masked by _answered: the id is random and the path holds it
        event["aipager_reply_addr"] = "<reply socket>"
        event["aipager_request_id"] = "<id>"
    return [event]


def canonical(value) -> str:
    # NaN != NaN: compare the canonical text instead of the objects
    return json.dumps(value, sort_keys=True)


def _answered(cmd: list[str], case: dict, env: dict, receiver: hookrun.Receiver) -> hookrun.Result:
    """Run a case whose daemon stand-in answers the reply wait with ``case["replies"]``.

    The forwarded event's random request id reads ``<id>`` and its reply socket's path
    ``<reply socket>`` in what was sent, so the two twins' runs compare byte for byte."""
    def answer(event: dict) -> list[bytes]:
        rid = event.get("aipager_request_id")
        return [] if rid is None else [text.replace("@RID@", rid).encode() for text in case["replies"]]

    done = replyrun.run_hook("", env, answer, receiver, stdin=case_stdin(case), cmd=cmd)
    raw = [done.forwarded_raw, *done.after_raw]
    rid = (done.forwarded or {}).get("aipager_request_id")
    if rid is not None:
        where = paths.reply_socket(env, rid).encode()
        raw = [d.replace(where, b"<reply socket>").replace(rid.encode(), b"<id>") for d in raw]
    return hookrun.Result(done.exit, done.stdout, done.stderr, [json.loads(d) for d in raw], raw)


def run_case(case: dict, kind: str, debug: bool = False,
             cmd: list[str] | None = None) -> tuple[hookrun.Result, bytes | None, dict, dict]:
    """(result, status file left, env, policy files left); ``cmd`` overrides the contender."""
    env = hookrun.hook_env(**case.get("env", {}))
    short = None
    if "replies" in case:
        # <folder>/aipager-reply-<32 hex>.sock must fit sun_path's 107 bytes (replyrun.short_instance_dir)
        short = tempfile.mkdtemp(prefix="apc", dir="/tmp")
        env["AIPAGER_INSTANCE_DIR"] = short
    try:
        return _run_case(case, kind, env, debug, cmd)
    finally:
        if short is not None:
            shutil.rmtree(short, ignore_errors=True)


def _run_case(case: dict, kind: str, env: dict, debug: bool,
              cmd: list[str] | None) -> tuple[hookrun.Result, bytes | None, dict, dict]:
    if debug:
        env["AIPAGER_DEBUG"] = "1"
    session = env.get("CLAUDE_DTACH_SESSION", "")
    status_path = paths.status_file(env, session or "none")
    status = case_status(case)
    if status is not None:
        write_private(status_path, status)
    if case.get("status_blocked"):
        os.mkdir(status_path, 0o700)  # a folder where the status file goes: it cannot be written
    if session:
        prepare_policy_files(case, env, session)
    receiver = hookrun.receiver_for(env)
    try:
        cmd = cmd or hookrun.contender_cmd(kind, case["tool"])
        if "replies" in case:
            result = _answered(cmd, case, env, receiver)
        else:
            result = hookrun.run(cmd, case_stdin(case), env, receiver)
    finally:
        receiver.close()
    left = None
    if os.path.isdir(status_path):
        os.rmdir(status_path)  # still the folder (both twins must leave it as it was)
        left = b"<folder>"
    elif os.path.exists(status_path):
        with open(status_path, "rb") as fh:
            left = fh.read()
        os.unlink(status_path)
    return result, left, env, (collect_policy_files(env, session) if session else {})


@pytest.mark.parametrize("case_id", list(CASES))
def test_case_meets_expectation(case_id: str, kind: str) -> None:
    case = CASES[case_id]
    result, status_left, env, left = run_case(case, kind)
    expect = case["expect"]
    assert b"Traceback" not in result.stderr
    sent = result.sent
    if case["tool"] == "hook":
        # aipager's own datagrams (safety_blocked, queue_pickup...) belong to
        # the policy steps; native and twin must still agree on them below
        sent = [m for m in sent if "type" not in m and m.get("hook_event_name") not in wire.OWN_DATAGRAMS]
    assert canonical(sent) == canonical(expected_sent(case, env))
    if "replies" in case:
        timeouts = [m for m in result.sent if m.get("hook_event_name") == wire.PERMISSION_REPLY_TIMEOUT]
        gave_up = {"hook_event_name": wire.PERMISSION_REPLY_TIMEOUT, "session": env["CLAUDE_DTACH_SESSION"],
                   "aipager_request_id": "<id>"}
        assert timeouts == ([gave_up] if expect.get("reply_timeout") else [])
    assert result.exit == expect.get("exit", result.exit)
    if "stdout" in expect:
        assert result.stdout.decode("utf-8") == expect["stdout"]
    elif case["tool"] == "hook" and json.loads(case_stdin(case)).get("hook_event_name") not in POLICY_EVENTS:
        assert result.stdout == b""
    if "stderr" in expect:
        assert result.stderr.decode("utf-8") == expect["stderr"]
    if case.get("status_blocked"):
        assert status_left == b"<folder>"
    elif case["tool"] == "statusline" and expect["sent"]:
        # the raw status JSON, verbatim, for the hook's sl_tokens
        assert status_left == case_stdin(case)
    if "mark" in expect:
        assert left["mark"] == expect["mark"]
    if "snapshot" in expect:
        if expect["snapshot"] is None:
            assert left["snapshot"] is None
        else:
            got = left["snapshot"]
            assert isinstance(got, dict), got
            assert {k: got.get(k) for k in expect["snapshot"]} == expect["snapshot"]
            assert left["snapshot_mode"] == 0o600


@pytest.mark.parametrize("case_id", list(CASES))
def test_native_and_twin_agree(case_id: str, native_bins: dict) -> None:
    case = CASES[case_id]
    native, native_status, _, native_left = run_case(case, "native")
    twin, twin_status, _, twin_left = run_case(case, "twin")
    assert canonical(native.sent) == canonical(twin.sent)
    if case.get("same_bytes"):
        assert native.raw == twin.raw  # byte for byte, not just the same objects
    assert (native.exit, native.stdout) == (twin.exit, twin.stdout)
    if "stderr" in case["expect"]:
        assert native.stderr == twin.stderr
    assert native_status == twin_status
    assert native_left == twin_left


@pytest.mark.parametrize("case_id", list(CASES))
def test_bundle_alone_runs_every_case(case_id: str, bundle_only_site: str, sources_only_site: str) -> None:
    """The twin loading only from the install-time bundle (aipager.hookpy.hot)
    behaves exactly as the twin importing the sources: the bundle is complete."""
    case = CASES[case_id]
    cmd = hookrun.twin_cmd(case["tool"])
    cmd[5] = bundle_only_site
    bundled, bundled_status, _, bundled_left = run_case(case, "twin", cmd=cmd)
    cmd = hookrun.twin_cmd(case["tool"])
    cmd[5] = sources_only_site
    plain, plain_status, _, plain_left = run_case(case, "twin", cmd=cmd)
    assert b"ModuleNotFoundError" not in bundled.stderr, bundled.stderr
    assert bundled.raw == plain.raw
    assert (bundled.exit, bundled.stdout, bundled_status, bundled_left) == (
        plain.exit, plain.stdout, plain_status, plain_left)


NATIVE = [case_id for case_id, case in CASES.items() if "native" in case]


@pytest.mark.parametrize("case_id", NATIVE)
def test_native_decides_or_declines(case_id: str, native_bins: dict) -> None:
    """'native': 'decides' | 'declines' -- where the compiled stage settles
    the case itself (the agreement test above proves it decides as the twin)."""
    case = CASES[case_id]
    result, _, _, _ = run_case(case, "native", debug=True)
    declined = b"declined to stage 2" in result.stderr
    assert declined == (case["native"] == "declines"), result.stderr


def test_status_file_is_private(kind: str) -> None:
    env = hookrun.hook_env()
    receiver = hookrun.receiver_for(env)
    try:
        hookrun.run(hookrun.contender_cmd(kind, "statusline"), _fixture_bytes("statusline"), env, receiver)
    finally:
        receiver.close()
    st = os.stat(paths.status_file(env, SESSION))
    assert st.st_mode & 0o777 == 0o600
    # nothing but the status file and the socket's absence: no temp leftovers
    assert sorted(os.listdir(paths.session_dir(env))) == [os.path.basename(paths.status_file(env, SESSION))]
