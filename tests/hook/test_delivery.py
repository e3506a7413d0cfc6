"""Delivery under pressure: full queue, daemon down, huge events, memory cap,
socket resolution, and what the executables are made of."""

from __future__ import annotations

import json
import os
import re
import socket
import uuid

import pytest
from support import hookrun

from aipager.proto import paths, wire

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "events")


def fixture(name: str) -> dict:
    with open(os.path.join(FIXTURES, f"{name}.json"), encoding="utf-8") as fh:
        return json.load(fh)


def event_bytes(name: str, **changes) -> bytes:
    event = fixture(name)
    event.update(changes)
    return json.dumps(event).encode()


def test_binaries_are_elf_without_libpython(native_bins: dict) -> None:
    for path in native_bins.values():
        assert hookrun.is_elf(path), f"{path} is not an ELF executable"
        needed = hookrun.needed_libraries(path)
        assert needed, "no dynamic dependencies found at all"
        assert not [lib for lib in needed if "python" in lib], needed


def test_queue_full_spools_and_never_blocks(kind: str) -> None:
    env = hookrun.hook_env()
    spool = paths.spool_dir(env)
    os.mkdir(spool, 0o700)
    receiver = hookrun.receiver_for(env)  # bound, and nobody reads it
    try:
        for n in range(30):
            done = hookrun.run(
                hookrun.contender_cmd(kind, "hook"), event_bytes("PostToolUse", tool_use_id=f"t{n}"), env,
                timeout=20,  # a blocking send would hang here
            )
            assert (done.exit, done.stdout) == (0, b"")
        queued = [json.loads(d) for d in receiver.drain_raw()]
    finally:
        receiver.close()
    names = sorted(os.listdir(spool))
    assert names, "a full queue must spill into the spool"
    spooled = []
    for name in names:
        assert re.fullmatch(r"\d{20}-\d+\.json", name), name
        full = os.path.join(spool, name)
        assert os.stat(full).st_mode & 0o777 == 0o600
        with open(full, "rb") as fh:
            spooled.append(json.loads(fh.read()))
    ids = sorted(m["tool_use_id"] for m in queued + spooled)
    assert ids == sorted(f"t{n}" for n in range(30))
    assert all(m["session"] == "claude-jim" for m in spooled)


def test_queue_full_without_spool_drops_without_waiting(kind: str) -> None:
    env = hookrun.hook_env()
    receiver = hookrun.receiver_for(env)
    try:
        for _ in range(15):
            done = hookrun.run(hookrun.contender_cmd(kind, "hook"), event_bytes("Stop"), env, timeout=20)
            assert (done.exit, done.stdout) == (0, b"")
        assert 0 < len(receiver.drain_raw()) < 15
    finally:
        receiver.close()
    assert not os.path.exists(paths.spool_dir(env))


def test_spool_that_is_a_symlink_is_not_used(kind: str, tmp_path) -> None:
    env = hookrun.hook_env()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    os.symlink(elsewhere, paths.spool_dir(env))
    receiver = hookrun.receiver_for(env)
    try:
        for _ in range(15):
            hookrun.run(hookrun.contender_cmd(kind, "hook"), event_bytes("Stop"), env, timeout=20)
    finally:
        receiver.close()
    # and with the daemon down
    done = hookrun.run(hookrun.contender_cmd(kind, "hook"), event_bytes("Stop"), env, timeout=20)
    assert (done.exit, done.stdout, done.stderr) == (0, b"", b"")
    assert os.listdir(elsewhere) == []


def _spooled(env: dict) -> list[dict]:
    folder = paths.spool_dir(env)
    out = []
    for name in sorted(os.listdir(folder)):
        assert re.fullmatch(r"\d{20}-\d+\.json", name), name
        assert os.stat(os.path.join(folder, name)).st_mode & 0o777 == 0o600
        with open(os.path.join(folder, name), "rb") as fh:
            out.append(json.loads(fh.read()))
    return out


def test_daemon_down_spools_for_its_next_start(kind: str) -> None:
    env = hookrun.hook_env()
    os.mkdir(paths.spool_dir(env), 0o700)  # the daemon made it once and left it in place
    # nothing bound at all (ENOENT)
    done = hookrun.run(hookrun.contender_cmd(kind, "hook"), event_bytes("PostToolUse", tool_use_id="a"),
                       env, timeout=20)
    assert (done.exit, done.stdout, done.stderr) == (0, b"", b"")
    # a stale socket file nobody listens on (ECONNREFUSED)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(paths.socket_path(env))
    stale.close()
    done = hookrun.run(hookrun.contender_cmd(kind, "hook"), event_bytes("PostToolUse", tool_use_id="b"),
                       env, timeout=20)
    assert (done.exit, done.stdout, done.stderr) == (0, b"", b"")
    spooled = _spooled(env)
    assert [(m["tool_use_id"], m["session"]) for m in spooled] == [("a", "claude-jim"), ("b", "claude-jim")]


def test_a_socket_that_stopped_reading_spools(kind: str) -> None:
    """A dead daemon's drain shuts the socket for reading while it salvages (EPIPE)."""
    env = hookrun.hook_env()
    os.mkdir(paths.spool_dir(env), 0o700)
    salvaging = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    salvaging.bind(paths.socket_path(env))
    salvaging.shutdown(socket.SHUT_RD)
    try:
        done = hookrun.run(hookrun.contender_cmd(kind, "hook"),
                           event_bytes("PostToolUse", tool_use_id="c"), env, timeout=20)
    finally:
        salvaging.close()
    assert (done.exit, done.stdout, done.stderr) == (0, b"", b"")
    assert [m["tool_use_id"] for m in _spooled(env)] == ["c"]


def test_daemon_down_without_a_spool_folder_drops_and_exits_zero(kind: str) -> None:
    # No spool folder: aipager's daemon never ran here (or it was uninstalled).
    env = hookrun.hook_env()
    done = hookrun.run(hookrun.contender_cmd(kind, "hook"), event_bytes("Stop"), env, timeout=20)
    assert (done.exit, done.stdout, done.stderr) == (0, b"", b"")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(paths.socket_path(env))
    stale.close()
    done = hookrun.run(hookrun.contender_cmd(kind, "hook"), event_bytes("Stop"), env, timeout=20)
    assert (done.exit, done.stdout, done.stderr) == (0, b"", b"")
    assert not os.path.exists(paths.spool_dir(env))


def test_statusline_spools_while_the_daemon_is_down(kind: str) -> None:
    env = hookrun.hook_env()
    os.mkdir(paths.spool_dir(env), 0o700)
    done = hookrun.run(hookrun.contender_cmd(kind, "statusline"), event_bytes("statusline"), env, timeout=20)
    assert done.exit == 0 and done.stdout
    assert [m["type"] for m in _spooled(env)] == ["statusline"]


def _assert_survivors(msg: dict, source: dict) -> None:
    for key in ("hook_event_name", "session_id", "tool_name", "tool_use_id", "transcript_path", "cwd"):
        if key in source:
            assert msg[key] == source[key], key
    assert msg["session"] == "claude-jim"


def test_five_megabyte_event_arrives_truncated(kind: str, receiver) -> None:
    filler = ('quote " backslash \\ newline \n non-ascii é ✓ 😀 ' * 120_000)[: 5 << 20]
    source = fixture("PostToolUse")
    source["tool_response"] = {"stdout": filler, "stderr": "", "interrupted": False}
    done = hookrun.run(hookrun.contender_cmd(kind, "hook"), json.dumps(source).encode(), hookrun.hook_env(), receiver)
    assert (done.exit, done.stdout) == (0, b"")
    raw = done.raw
    assert len(raw) == 1
    assert len(raw[0]) <= wire.MAX_DATAGRAM
    msg = json.loads(raw[0])
    _assert_survivors(msg, source)
    assert msg["tool_input"] == source["tool_input"]
    stdout = msg["tool_response"]["stdout"]
    assert stdout.startswith(filler[:1000])
    marker = re.search(r"…\[truncated by aipager: (\d+) bytes dropped\]$", stdout)
    assert marker, stdout[-200:]
    kept = stdout[: marker.start()]
    assert int(marker.group(1)) == len(filler.encode()) - len(kept.encode())


def test_oversized_prompt_and_many_fields(kind: str, receiver) -> None:
    source = fixture("UserPromptSubmit")
    source["prompt"] = "p" * 300_000
    source["extra"] = ["x" * 50_000] * 6  # not shrinkable first, but must fit too
    done = hookrun.run(hookrun.contender_cmd(kind, "hook"), json.dumps(source).encode(), hookrun.hook_env(), receiver)
    assert done.exit in (0, 2)  # UserPromptSubmit output belongs to the policy
    raw = done.raw
    assert len(raw) == 1 and len(raw[0]) <= wire.MAX_DATAGRAM
    msg = json.loads(raw[0])
    _assert_survivors(msg, source)
    assert "truncated by aipager" in msg["prompt"]


def test_memory_cap_sends_prepared_datagram(kind: str, receiver) -> None:
    big = b'{"hook_event_name":"PreToolUse","x":"' + b"a" * (100 << 20) + b'"}'
    env = hookrun.hook_env(AIPAGER_MEMORY_CAP=str(48 << 20))
    done = hookrun.run(hookrun.contender_cmd(kind, "hook"), big, env, receiver)
    assert done.exit == 2  # Claude Code's refusal, for a PreToolUse
    assert done.sent == [{"type": "hook_memory_cap_hit", "session": "claude-jim", "hook": "aipager-hook"}]
    assert b"Traceback" not in done.stderr
    other = b'{"hook_event_name":"PostToolUse","x":"' + b"a" * (100 << 20) + b'"}'
    done = hookrun.run(hookrun.contender_cmd(kind, "hook"), other, env, receiver)
    assert done.exit == 1
    assert [m["type"] for m in done.sent] == ["hook_memory_cap_hit"]


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"AIPAGER_SOCKET_PATH": "explicit.sock"}, "instance"),
        ({"AIPAGER_INSTANCE_DIR": None, "AIPAGER_SOCKET_PATH": "explicit.sock"}, "explicit.sock"),
        ({"AIPAGER_INSTANCE_DIR": None, "AIPAGER_SOCKET_PATH": ""}, "runtime"),
    ],
)
def test_socket_resolution_order(kind: str, tmp_path, variables: dict, expected: str) -> None:
    overrides = {
        key: (str(tmp_path / value) if key == "AIPAGER_SOCKET_PATH" and value else value)
        for key, value in variables.items()
    }
    # a session name no stray /tmp status file can match (no instance dir = /tmp)
    env = hookrun.hook_env(session=f"claude-t{uuid.uuid4().hex[:12]}", **overrides)
    target = {
        "instance": os.path.join(os.environ["AIPAGER_INSTANCE_DIR"], "aipager.sock"),
        "runtime": os.path.join(os.environ["XDG_RUNTIME_DIR"], "aipager.sock"),
    }.get(expected, str(tmp_path / expected))
    assert paths.socket_path(env) == target
    receiver = hookrun.Receiver(target)
    try:
        done = hookrun.run(hookrun.contender_cmd(kind, "hook"), event_bytes("SessionEnd"), env, receiver)
    finally:
        receiver.close()
    assert [m["hook_event_name"] for m in done.sent] == ["SessionEnd"]


def test_debug_goes_to_stderr_only(kind: str, receiver) -> None:
    quiet = hookrun.run(hookrun.contender_cmd(kind, "hook"), event_bytes("Stop"), hookrun.hook_env(), receiver)
    loud = hookrun.run(
        hookrun.contender_cmd(kind, "hook"), event_bytes("Stop"), hookrun.hook_env(AIPAGER_DEBUG="1"), receiver
    )
    assert quiet.stderr == b"" and loud.stderr != b""
    assert quiet.stdout == loud.stdout
    assert len(quiet.sent) == len(loud.sent) == 1


FORBIDDEN = {"json", "re", "socket", "orjson", "typing", "asyncio", "aiogram", "typer", "enum"}


@pytest.mark.parametrize(("tool", "payload"), [("hook", "PostToolUse"), ("statusline", "statusline")])
def test_twin_imports_builtins_only(tool: str, payload: str, receiver) -> None:
    env = hookrun.hook_env()
    status = paths.status_file(env, "claude-jim")
    with open(os.open(status, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as fh:
        fh.write(event_bytes("statusline"))
    done = hookrun.run(hookrun.listing_cmd(tool), event_bytes(payload), env, receiver)
    loaded = set(done.stderr.decode().split())
    assert "aipager.hookpy.entry" in loaded and len(done.sent) == 1
    assert not loaded & FORBIDDEN, loaded & FORBIDDEN


def test_forwarded_flag_runs_after_forward_only(receiver) -> None:
    """What the native hook asks for when policy_after declines after sending."""
    cmd = hookrun.twin_cmd("hook") + ["--forwarded"]
    done = hookrun.run(cmd, event_bytes("PostToolUse"), hookrun.hook_env(), receiver)
    assert (done.exit, done.stdout, done.sent) == (0, b"", [])


def test_internal_error_report_carries_no_event_content() -> None:
    from aipager.hookpy import common

    secret = "sk-live-do-not-leak"
    try:
        {"tool_input": secret}["missing"]
    except KeyError as exc:
        msg = common.error_message("claude-jim", "aipager-hook", exc)
    assert msg["type"] == wire.REPORT_ERROR and msg["where"] == "hook"
    assert msg["kind"] == "KeyError"
    assert secret not in json.dumps(msg)
