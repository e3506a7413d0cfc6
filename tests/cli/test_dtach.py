"""aipager.dtach with the real dtach from dtach-bin, running a stand-in for
Claude Code that records its arguments, environment and every typed line."""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from aipager import dtach
from aipager.proto import paths
from aipager.proto.errors import InvalidSessionName, SessionError, SessionNotFound

def wait_for_lines(path, count, timeout=5.0):
    """The record's lines once it has ``count`` of them (the session runs apart)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = path.read_text().splitlines()
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.02)


def test_create_type_list_kill_end_to_end(fake_claude, tmp_path):
    env = dict(os.environ)
    work = tmp_path / "project"
    work.mkdir()
    sock = dtach.create(env, "t1", args=["--model", "x y"], cwd=str(work))
    assert sock == paths.dtach_socket(env, "t1") and dtach.is_live(sock)
    dtach.type_text(env, "t1", "hello world")
    dtach.type_text(env, "claude-t1", "second prompt")
    lines = wait_for_lines(fake_claude, 3)
    assert lines == [
        f"start session=claude-t1 cwd={work} nested=no args=--model x y --teammate-mode in-process",
        "line:hello world",
        "line:second prompt",
    ]
    assert [(s.name, s.session, s.live) for s in dtach.list_sessions(env)] == [
        ("t1", "claude-t1", True)]
    holders = dtach.socket_holders(sock)
    assert holders and dtach.descendants(holders) > holders  # the master and its child
    assert dtach.kill(env, "t1") is True
    assert not os.path.exists(sock)
    assert not any(dtach.alive(p) for p in dtach.descendants(holders))
    assert dtach.list_sessions(env) == []
    assert dtach.kill(env, "t1") is False


def test_a_new_process_starts_with_no_notes_of_the_old_one(fake_claude):
    """A note is a message typed into a process; a new process at the name can take none
    of them, so none may restrict or name its tasks (nor a typing mark clear its input)."""
    from aipager.policy import notes

    env = dict(os.environ)
    notes.write_note(env, "claude-renew", msg_id=1, chat_id=1, author_user_id=7,
                     author_label="ana", role="user", text="typed into the old one")
    mark = paths.typing_mark(env, "claude-renew")
    with open(mark, "w") as fh:
        fh.write("{}")
    dtach.create(env, "renew")
    try:
        assert notes.list_notes(env, "claude-renew") == []
        assert not os.path.exists(mark)
    finally:
        dtach.kill(env, "renew")


def test_a_live_session_is_not_created_twice(fake_claude):
    env = dict(os.environ)
    dtach.create(env, "dup")
    with pytest.raises(SessionError, match="already running"):
        dtach.create(env, "dup")


def test_stale_socket_is_reported_then_cleaned_and_replaced(fake_claude):
    env = dict(os.environ)
    sock = paths.dtach_socket(env, "old")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock)
    listener.close()  # the file stays, nobody answers: a dead session
    assert [(s.name, s.live) for s in dtach.list_sessions(env)] == [("old", False)]
    with pytest.raises(SessionNotFound):
        dtach.type_text(env, "old", "hi")
    assert dtach.list_sessions(env, clean=True) == []
    assert not os.path.exists(sock)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock)
    listener.close()
    dtach.create(env, "old")  # a stale socket does not block a new session
    assert dtach.is_live(sock)


def test_typing_into_a_missing_session(fake_claude):
    with pytest.raises(SessionNotFound, match="aipager session nope"):
        dtach.type_text(dict(os.environ), "nope", "hi")


# "\u0430" Cyrillic a, "\uff41" fullwidth a, "\u0663" Arabic-Indic 3, "\u200b" zero width space
NEVER_NAMES = ["", "a b", "x/y", "../x", "é", "a" * 65, "claude-", "x;rm", "abc\n", "abc\r",
               "\nabc", "abc\n\n", "ab\tc", "\u0430bc", "\uff41bc", "x\u0663", "x1\u200b",
               "claude-abc\n", "x\x00"]


@pytest.mark.parametrize("bad", [*NEVER_NAMES, "-rf", "--", "-", "claude--rf", "-" + "a" * 63])
def test_invalid_names(bad):
    with pytest.raises(InvalidSessionName) as caught:
        dtach.check_name(bad)
    assert "\n" not in str(caught.value) and "\r" not in str(caught.value)  # one line


@pytest.mark.parametrize("bad", NEVER_NAMES)
def test_names_no_version_could_create_are_not_existing_names(bad):
    with pytest.raises(InvalidSessionName):
        dtach.existing_name(bad)


def test_a_leading_dash_is_refused_for_new_sessions_with_its_own_reason():
    with pytest.raises(InvalidSessionName, match="may not start with '-'"):
        dtach.check_name("-rf")
    with pytest.raises(InvalidSessionName, match="may not start with '-'"):
        dtach.session_name("claude--rf")
    # older versions gave such names out: those sessions can still be reached
    assert dtach.existing_name("-rf") == "-rf"
    assert dtach.existing_name("claude--rf") == "-rf"


def test_names():
    assert dtach.check_name("claude-x1") == "x1"
    assert dtach.session_name("api_fix-2") == "claude-api_fix-2"
    assert dtach.check_name("a" * 64) == "a" * 64
    assert dtach.check_name("_x-") == "_x-"
    assert dtach.existing_name("x-1") == "x-1"


def _older_session(env, name):
    """A live dtach session named as an older version allowed (check_name refuses it now)."""
    sock = paths.dtach_socket(env, name)
    argv = dtach.create_argv(dtach.dtach_binary(env), sock, ["sleep", "60"])
    subprocess.run(argv, env=env, check=True)
    deadline = time.monotonic() + 5
    while not dtach.is_live(sock) and time.monotonic() < deadline:
        time.sleep(0.02)
    return sock


def test_an_older_session_with_a_leading_dash_is_listed_typed_into_and_killed():
    env = dict(os.environ)
    sock = _older_session(env, "-rf")
    try:
        assert [(s.name, s.session, s.live) for s in dtach.list_sessions(env)] == [
            ("-rf", "claude--rf", True)]
        dtach.type_text(env, "-rf", "hi")
        with pytest.raises(InvalidSessionName):
            dtach.create(env, "-rf")
        holders = dtach.descendants(dtach.socket_holders(sock))
        assert dtach.kill(env, "claude--rf") is True
        assert not os.path.exists(sock)
        assert not any(dtach.alive(p) for p in holders)
    finally:
        dtach.kill(env, "-rf")


def test_sockets_no_version_could_name_are_not_sessions():
    env = dict(os.environ)
    folder = paths.session_dir(env)
    # plain files (a 65-letter socket path is too long to bind): only the name decides
    for name in ["abc\n", "a" * 65, "\u0430bc", "ok"]:
        with open(os.path.join(folder, f"claude-dtach-{name}.sock"), "w"):
            pass
    found = dtach.list_sessions(env)
    assert [(s.name, s.live) for s in found] == [("ok", False)]
    assert found[0].problem  # not a socket: listed, never used


def test_argv_builders_and_typing_writes():
    assert dtach.create_argv("/d", "/s.sock", ["claude", "-c"]) == ["/d", "-n", "/s.sock", "-z",
                                                                    "claude", "-c"]
    assert dtach.attach_argv("/d", "/s.sock") == ["/d", "-a", "/s.sock", "-e", "^\\", "-r",
                                                  "winch", "-z"]
    assert dtach.push_argv("/d", "/s.sock") == ["/d", "-p", "/s.sock"]
    writes = dtach.typing_writes("héllo")
    assert [w for w, _ in writes] == ["héllo".encode(), b"\r"]
    assert writes[0][1] > 0  # a pause between the text and Enter
    assert dtach.typing_writes("") == [(b"\r", 0.0)]


def test_session_env_names_the_session_and_drops_nesting():
    env = dtach.session_env({"CLAUDECODE": "1", "PATH": "/bin"}, "x1")
    assert env == {"PATH": "/bin", "CLAUDE_DTACH_SESSION": "claude-x1",
                   "CLAUDE_CODE_ATTACHMENTS_BY_PATH": "1"}


def test_program_lookup_order(tmp_path, monkeypatch):
    monkeypatch.setattr(dtach, "_configured_claude", lambda env: None)
    on_path = tmp_path / "claude"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    env = {"PATH": str(tmp_path)}
    assert dtach.claude_binary(env) == str(on_path)
    assert dtach.claude_binary(env, claude_path="/pinned/claude") == "/pinned/claude"
    assert dtach.claude_binary({**env, "AIPAGER_CLAUDE_BIN": "/env/claude"},
                               claude_path="/pinned/claude") == "/env/claude"
    with pytest.raises(SessionError, match="not found"):
        dtach.claude_binary({"PATH": "/nonexistent"})
    assert os.access(dtach.dtach_binary({}), os.X_OK)


@pytest.mark.parametrize("name", ["join", "Status", "new"])
def test_a_session_may_not_take_a_chat_commands_name(fake_claude, name):
    with pytest.raises(InvalidSessionName, match="name of a chat command"):
        dtach.create(dict(os.environ), name)


def test_attached_clients_counts_connected_terminals(tmp_path):
    """What the kernel lists for a dtach socket: one connected socket per attached client."""
    import socket as _socket

    path = str(tmp_path / "s.sock")
    server = _socket.socket(_socket.AF_UNIX)
    server.bind(path)
    server.listen()
    assert dtach.attached_clients([path]) == {path: 0}
    client = _socket.socket(_socket.AF_UNIX)
    client.connect(path)
    accepted, _ = server.accept()
    try:
        assert dtach.attached_clients([path, "/nowhere"]) == {path: 1, "/nowhere": 0}
    finally:
        client.close()
        accepted.close()
        server.close()
    assert dtach.attached_clients([path], str(tmp_path / "no-table")) == {path: 0}


def test_connected_clients_leaves_out_a_connection_whose_client_has_gone(tmp_path):
    """A liveness probe or a finished ``dtach -p``: the client closed, dtach has not yet
    closed its end.  /proc/net/unix still lists it; the kernel's socket diagnostics say the
    other end is gone, so it is not somebody at the computer."""
    import socket as _socket

    path = str(tmp_path / "s.sock")
    server = _socket.socket(_socket.AF_UNIX)
    server.bind(path)
    server.listen()
    terminal = _socket.socket(_socket.AF_UNIX)
    terminal.connect(path)
    kept, _ = server.accept()
    probe = _socket.socket(_socket.AF_UNIX)
    probe.connect(path)
    lingering, _ = server.accept()
    probe.close()  # gone; the server has not closed its end
    try:
        assert dtach.attached_clients([path]) == {path: 2}
        assert dtach.connected_clients([path, "/nowhere"]) == {path: 1, "/nowhere": 0}
        terminal.close()
        assert dtach.connected_clients([path]) == {path: 0}
    finally:
        for s in (kept, lingering, server):
            s.close()
