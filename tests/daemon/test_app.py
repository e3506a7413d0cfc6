"""run_daemon as `aipager start` runs it: a real process on an isolated instance folder."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess

import orjson
from support.daemon_proc import spawn, wait_for

from aipager.proto import paths
from aipager.daemon import persist

def _spawn() -> subprocess.Popen:
    return spawn()


def _wait(pred, timeout=10.0):
    wait_for(pred, timeout)


def _send(data: bytes) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.sendto(data, paths.socket_path(dict(os.environ)))
    finally:
        sock.close()


def test_lifecycle(daemon):
    env = dict(os.environ)
    sock_path = paths.socket_path(env)
    assert stat.S_IMODE(os.stat(sock_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(paths.spool_dir(env)).st_mode) == 0o700

    second = _spawn()
    _, err = second.communicate(timeout=20)
    assert second.returncode == 9 and b"already running" in err

    for junk in (b"", b"\xff\xfe", b"{", b"[]", b'{"hook_event_name": 5, "session": "claude-x"}'):
        _send(junk)
    _send(orjson.dumps({"hook_event_name": "UserPromptSubmit", "session": "claude-app",
                        "prompt": "hello", "prompt_id": "p1"}))
    _wait(lambda: any(s["name"] == "claude-app" for s in persist.load_state(env)["sessions"]))
    state = persist.load_state(env)
    assert daemon.poll() is None
    assert state["daemon"]["alive"] is True and state["daemon"]["pid"] == daemon.pid
    assert state["daemon"]["counters"]["malformed"] >= 3

    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=10) == 0
    assert not os.path.exists(sock_path)
    after = persist.load_state(env)
    assert after["daemon"]["alive"] is False and after["daemon"]["stopped_at"] is not None
    (sess,) = after["sessions"]
    assert (sess["state"], sess["task"]["prompt"]) == ("working", "hello")


def test_stale_socket_is_replaced_and_sigint_stops(tmp_path):
    env = dict(os.environ)
    path = paths.socket_path(env)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(path)
    stale.close()
    proc = _spawn()
    try:
        _wait(lambda: persist.load_state(env)["daemon"]["alive"] or proc.poll() is not None)
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        assert not os.path.exists(path)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_spooled_events_left_while_down_are_replayed_at_start():
    env = dict(os.environ)
    import time

    from aipager.daemon import spool

    folder = paths.spool_dir(env)
    os.makedirs(folder, mode=0o700, exist_ok=True)

    def spool_at(ns: int, ev: dict) -> None:
        with open(os.path.join(folder, spool.spool_name(ns, 77)), "wb") as fh:
            fh.write(orjson.dumps({"session": "claude-spooled", **ev}))

    now = time.time_ns()
    # Two days old: a long-dead daemon must not replay it.
    spool_at(now - 48 * 3600 * 10**9, {"hook_event_name": "UserPromptSubmit", "prompt": "stale",
                                        "prompt_id": "p0"})
    spool_at(now - 3 * 10**9, {"hook_event_name": "SessionStart", "source": "startup"})
    spool_at(now - 2 * 10**9, {"hook_event_name": "UserPromptSubmit", "prompt": "fresh",
                               "prompt_id": "p1"})
    spool_at(now - 1 * 10**9, {"hook_event_name": "PreToolUse", "tool_name": "Bash",
                               "tool_use_id": "t1", "tool_input": {"command": "ls"},
                               "prompt_id": "p1"})
    proc = _spawn()
    try:
        _wait(lambda: any(s["name"] == "claude-spooled" and s["rows"]
                          for s in persist.load_state(env)["sessions"]))
        assert spool.pending(folder) == []
        state = persist.load_state(env)
        (sess,) = state["sessions"]
        # In order, and the stale prompt never became a task.
        assert (sess["task"]["seq"], sess["task"]["prompt"]) == (1, "fresh")
        assert [r["summary"] for r in sess["rows"]] == ["Bash: ls"]
        assert state["daemon"]["counters"]["spool_stale"] == 1
        assert state["daemon"]["counters"]["spool_replayed"] == 3
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    with open(paths.log_file(env), encoding="utf-8") as fh:
        assert "dropped 1 spooled event(s) older than 24 h" in fh.read()


def test_shutdown_handles_everything_the_socket_accepted(daemon):
    """Events accepted by the socket (or spooled) right before SIGTERM are all handled."""
    from aipager.daemon.spool import send_or_spool

    env = dict(os.environ)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)
    counts = {"sent": 0, "spooled": 0, "lost": 0}
    for i in range(3000):
        if i == 1500:
            daemon.send_signal(signal.SIGTERM)
        data = orjson.dumps({"type": "statusline", "session": "claude-flood", "context_pct": i % 70,
                             "cost_usd": i / 1000})
        counts[send_or_spool(sock, paths.socket_path(env), paths.spool_dir(env), data)] += 1
    sock.close()
    assert daemon.wait(timeout=20) == 0
    state = persist.load_state(env)
    c = state["daemon"]["counters"]
    # What the socket refused after it was removed is "lost" (nobody listens any more);
    # everything accepted or spooled before that was handled.
    from aipager.daemon import spool

    left = len(spool.pending(paths.spool_dir(env)))
    assert c["handled"] + c["repeats"] + left == counts["sent"] + counts["spooled"], (counts, c, left)
