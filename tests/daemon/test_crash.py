"""A daemon killed hard (kill -9) loses no event it accepted (issue 16).

Two places hold accepted events the saved state does not: the daemon's memory
(handled since the last save) and the way in (the drain's pipe and backlog, the
kernel queue).  The journal covers the first, the drain's salvage the second.
Both run here for real: ``run_daemon`` in a subprocess, datagrams sent as the
hook sends them (``spool.send_or_spool``), SIGKILL, a second daemon.  The
events-lost figure over random kill points is ``python -m bench --only crash``.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket

import pytest
from support.daemon_proc import spawn, wait_for

from aipager.proto import paths
from aipager.daemon import journal, persist
from aipager.daemon.ingest import native_drain_exe, native_drain_path
from aipager.daemon.spool import send_or_spool


# -- the journal's format ------------------------------------------------------


def test_frames_parse_back_in_order_past_a_number():
    blob, top = journal.frames(4, [b"a", b"", b"ccc"])
    assert top == 7
    assert journal.parse(blob, 0) == ([(5, b"a"), (6, b""), (7, b"ccc")], 7)
    assert journal.parse(blob, 5) == ([(6, b""), (7, b"ccc")], 7)
    assert journal.parse(blob, 7) == ([], 7)


def test_a_torn_last_frame_keeps_the_frames_before_it():
    blob, _ = journal.frames(0, [b"first", b"second"])
    assert journal.parse(blob[:-3], 0) == ([(1, b"first")], 1)
    assert journal.parse(blob[:5], 0) == ([], 0)


def test_the_journal_is_emptied_by_a_save_and_numbers_go_on(tmp_path):
    path = str(tmp_path / "j.bin")
    j = journal.Journal(path)
    j.append([b"1", b"2"])
    assert journal.read(path, 0) == ([(1, b"1"), (2, b"2")], 2)
    j.saved()
    assert os.path.getsize(path) == 0
    j.append([b"3"])
    assert journal.read(path, 2) == ([(3, b"3")], 3)
    assert os.stat(path).st_mode & 0o777 == 0o600
    j.close()


def test_a_journal_that_cannot_be_written_is_logged_once_and_never_raises(tmp_path, caplog):
    j = journal.Journal(str(tmp_path / "missing-folder" / "j.bin"))
    j.append([b"x"])
    j.append([b"y"])
    assert j.seq == 2
    assert caplog.text.count("cannot open the event journal") == 1


def test_a_big_journal_asks_for_a_save(tmp_path, monkeypatch):
    monkeypatch.setattr(journal, "SAVE_AT", 100)
    j = journal.Journal(str(tmp_path / "j.bin"))
    j.append([b"x" * 50])
    assert not j.due
    j.append([b"y" * 50])
    assert j.due
    j.saved()
    assert not j.due
    j.close()


def test_past_its_cap_the_journal_stops_growing_and_says_so(tmp_path, caplog, monkeypatch):
    caplog.set_level(logging.INFO, "aipager.daemon")
    monkeypatch.setattr(journal, "MAX_BYTES", 100)
    path = str(tmp_path / "j.bin")
    j = journal.Journal(path)
    j.append([b"x" * 50])
    j.append([b"y" * 50])
    j.append([b"z" * 50])
    assert journal.read(path, 0)[0] == [(1, b"x" * 50)]
    assert caplog.text.count("reached") == 1
    j.saved()
    j.append([b"w"])
    assert journal.read(path, 0)[0] == [(4, b"w")]
    assert "written again" in caplog.text
    j.close()


# -- the real daemon, killed ---------------------------------------------------------


def _event(name: str, event: str, **more) -> bytes:
    ev = {"session_id": "3f0c9a52-0000-4000-8000-000000000001", "cwd": "/tmp",
          "transcript_path": "/nonexistent.jsonl", "hook_event_name": event, **more,
          "session": name}
    return json.dumps(ev).encode()


def _sequence(name: str, pairs: int, first: int = 0) -> list[bytes]:
    out = []
    for i in range(first, first + pairs):
        tid = f"toolu_k{i:03d}"
        out.append(_event(name, "PreToolUse", tool_name="Bash", tool_use_id=tid,
                          tool_input={"command": f"echo pre-{i}"}))
        out.append(_event(name, "PostToolUse", tool_name="Bash", tool_use_id=tid,
                          tool_input={"command": f"echo post-{i}"},
                          tool_response={"stdout": "x", "stderr": ""}))
    return out


class Sender:
    def __init__(self, env) -> None:
        self.address = paths.socket_path(env)
        self.spool = paths.spool_dir(env)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)

    def send(self, batch: list[bytes]) -> list[str]:
        return [send_or_spool(self.sock, self.address, self.spool, data) for data in batch]


def _start(env):
    proc = spawn()
    wait_for(lambda: persist.load_state(env)["daemon"].get("alive") or proc.poll() is not None)
    assert proc.poll() is None, proc.stderr.read().decode()
    return proc


def _kill(proc) -> str:
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=10)
    return err.decode()


def _stop(proc) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=15)


def _rows(env, name: str) -> list[tuple[str, str, str]]:
    sess = next((s for s in persist.load_state(env)["sessions"] if s["name"] == name), None)
    if sess is None:
        return []
    return [(r["id"], r["summary"], r["status"]) for r in sess["rows"]]


def _complete(pairs: int) -> list[tuple[str, str, str]]:
    return [(f"toolu_k{i:03d}", f"Bash: echo pre-{i}", "ok") for i in range(pairs)]


def test_events_handled_since_the_last_save_survive_a_kill_9():
    """Stopped with the whole sequence journaled and none of it saved, then killed."""
    env = dict(os.environ)
    path = paths.journal_file(env)
    for attempt in range(5):
        name = f"claude-crash{attempt}"
        proc = _start(env)
        sender = Sender(env)
        batch = _sequence(name, 10)
        assert set(sender.send(batch)) == {"sent"}
        wait_for(lambda batch=batch, name=name: len(journal.read(path, 0)[0]) >= len(batch) or _rows(env, name))
        proc.send_signal(signal.SIGSTOP)
        # all 20 still in the journal: no save took them (a save empties it)
        if len(journal.read(path, 0)[0]) == len(batch):
            break
        proc.send_signal(signal.SIGCONT)
        _stop(proc)  # a save came in between: try again
    else:
        pytest.fail("the daemon saved its state before every kill")
    assert _rows(env, name) == []  # the saved state knows nothing of them
    _kill(proc)
    proc = _start(env)
    try:
        assert _rows(env, name) == _complete(10)
        assert persist.load_state(env)["daemon"]["counters"]["journal_replayed"] == 20
    finally:
        _stop(proc)
    # a clean stop leaves the journal empty and the state saying where it stopped
    assert os.path.getsize(path) == 0
    assert persist.load_state(env)["daemon"]["journal_seq"] >= 20
    # and a third start replays nothing twice
    proc = _start(env)
    try:
        assert _rows(env, name) == _complete(10)
        assert persist.load_state(env)["daemon"]["counters"]["journal_replayed"] == 0
    finally:
        _stop(proc)


def _drain_argv(daemon_pid: int) -> list[bytes]:
    kids = open(f"/proc/{daemon_pid}/task/{daemon_pid}/children").read().split()
    argvs = [open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0") for pid in kids]
    drains = [argv for argv in argvs
              if argv[0].endswith(b"/aipager-drain") or any(a.endswith(b"/drain.py") for a in argv)]
    assert len(drains) == 1, argvs
    return drains[0]


@pytest.mark.parametrize("engine", [
    pytest.param("exe", marks=pytest.mark.skipif(native_drain_exe() is None, reason="aipager-drain not installed")),
    pytest.param("native", marks=pytest.mark.skipif(native_drain_path() is None, reason="_drain_c not built")),
    "python",
])
def test_what_the_daemon_never_read_is_spooled_by_the_drain(engine, monkeypatch):
    """The daemon stalls (SIGSTOP), events pile up in the drain's pipe, the daemon is killed:
    the drain spools them, the name of the socket goes, later events spool at the sender,
    and the next daemon has them all, in order.  For each drain: the executable
    ``aipager-drain`` (the default), ``drain.py`` with the compiled loop, with its Python loop."""
    if engine == "python":
        monkeypatch.setenv("AIPAGER_NO_EXTENSIONS", "1")
    if engine == "native":
        monkeypatch.setenv("AIPAGER_DRAIN_EXE", "0")
    env = dict(os.environ)
    name = "claude-stalled"
    proc = _start(env)
    argv = _drain_argv(proc.pid)
    assert argv[0].endswith(b"/aipager-drain") == (engine == "exe")
    assert any(b"_drain_c" in a for a in argv) == (engine == "native"), argv
    sender = Sender(env)
    first, later = _sequence(name, 30), _sequence(name, 10, first=30)
    proc.send_signal(signal.SIGSTOP)
    assert set(sender.send(first)) == {"sent"}
    err = _kill(proc)
    assert "the daemon died; 60 datagram(s) it never read were spooled" in err
    assert not os.path.exists(sender.address)
    assert set(sender.send(later)) == {"spooled"}
    proc = _start(env)
    try:
        wait_for(lambda: len(_rows(env, name)) == 40 and _rows(env, name)[-1][2] == "ok")
        assert _rows(env, name) == _complete(40)
    finally:
        _stop(proc)
