"""Ingest on a real Unix socket: permissions, stale/live sockets, bursts while the loop stalls."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import pathlib
import socket
import stat
import sys
import time

import pytest

from aipager.proto import paths
from aipager.daemon import deepq, spool
from aipager.daemon.app import Daemon
from aipager.daemon.ingest import bind_control_socket, native_drain_exe, native_drain_path
from aipager.proto.errors import DaemonAlreadyRunning, DaemonError

BURST = pathlib.Path(__file__).resolve().parents[1] / "support" / "burst.py"


def test_bind_creates_private_socket_and_folder(tmp_path):
    path = str(tmp_path / "ctl" / "aipager.sock")
    sock = bind_control_socket(path)
    try:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(tmp_path / "ctl").st_mode) == 0o700
    finally:
        sock.close()


def test_stale_socket_replaced_live_one_refused(tmp_path):
    path = str(tmp_path / "aipager.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(path)
    stale.close()  # file stays, nobody listens
    live = bind_control_socket(path)
    try:
        with pytest.raises(DaemonAlreadyRunning):
            bind_control_socket(path)
    finally:
        live.close()
    (tmp_path / "plain").write_text("x")
    with pytest.raises(DaemonError):
        bind_control_socket(str(tmp_path / "plain"))


def test_send_or_spool_spools_when_the_queue_is_full(tmp_path):
    path = str(tmp_path / "q.sock")
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(path)
    sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sender.setblocking(False)
    outcomes = [spool.send_or_spool(sender, path, str(tmp_path), b'{"n": %d}' % i) for i in range(200)]
    assert "spooled" in outcomes and "lost" not in outcomes
    names = spool.pending(str(tmp_path))
    assert len(names) == outcomes.count("spooled") and names == sorted(names)
    receiver.close()
    assert spool.send_or_spool(sender, path, str(tmp_path / "missing"), b"{}") == "lost"


def test_send_or_spool_keeps_events_while_the_daemon_is_down(tmp_path):
    folder = tmp_path / "spool"
    folder.mkdir(mode=0o700)
    sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sender.setblocking(False)
    # Nothing bound (ENOENT), then a stale socket file nobody reads (ECONNREFUSED).
    path = str(tmp_path / "d.sock")
    assert spool.send_or_spool(sender, path, str(folder), b'{"n": 1}') == "spooled"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(path)
    stale.close()
    assert spool.send_or_spool(sender, path, str(folder), b'{"n": 2}') == "spooled"
    names = spool.pending(str(folder))
    assert [(folder / n).read_bytes() for n in names] == [b'{"n": 1}', b'{"n": 2}']
    # No spool folder, or a symlink in its place: nothing is written anywhere.
    assert spool.send_or_spool(sender, path, str(tmp_path / "missing"), b"{}") == "lost"
    (tmp_path / "link").symlink_to(folder)
    assert spool.send_or_spool(sender, path, str(tmp_path / "link"), b"{}") == "lost"
    assert len(spool.pending(str(folder))) == 2


def test_stale_spool_names_by_the_time_they_record():
    now = 1_800_000_000.0
    fresh = spool.spool_name(int((now - 3600) * 1e9), 5)
    old = spool.spool_name(int((now - 25 * 3600) * 1e9), 5)
    assert spool.written_at(fresh) == pytest.approx(now - 3600)
    assert (spool.is_stale(fresh, now), spool.is_stale(old, now)) == (False, True)


def test_spool_take_waits_for_a_young_partial_file(tmp_path):
    name = spool.spool_name(time.time_ns(), 1)
    (tmp_path / name).write_bytes(b'{"half')
    assert spool.take(str(tmp_path), name, lambda d: False) is None
    assert (tmp_path / name).exists()
    old = time.time() - 60
    os.utime(tmp_path / name, (old, old))
    assert spool.take(str(tmp_path), name, lambda d: False) == b'{"half'
    assert not (tmp_path / name).exists()


async def _wait_for(pred, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


NATIVE_DRAIN = native_drain_path()
DRAIN_EXE = native_drain_exe()
#: the drains the daemon may run: drain.py with its Python loop, drain.py with the compiled
#: loop (AIPAGER_DRAIN_EXE=0), the executable aipager-drain (the default where installed)
DRAIN_LOOPS = [
    "python",
    pytest.param("c", marks=pytest.mark.skipif(NATIVE_DRAIN is None, reason="aipager._drain_c not built")),
    pytest.param("exe", marks=pytest.mark.skipif(DRAIN_EXE is None, reason="aipager-drain not installed")),
]


def _drain_env(monkeypatch, drain_loop: str) -> dict:
    """The daemon's environment that makes it run ``drain_loop``."""
    if drain_loop == "python":
        monkeypatch.setenv("AIPAGER_NO_EXTENSIONS", "1")
    env = dict(os.environ)
    if drain_loop == "c":
        env["AIPAGER_DRAIN_EXE"] = "0"
    return env


def _assert_runs(drain_loop: str) -> None:
    """The daemon's drain process is ``drain_loop``'s."""
    argv = open(f"/proc/{_drain_pids()[0]}/cmdline", "rb").read().split(b"\0")
    assert (b"_drain_c" in b" ".join(argv)) == (drain_loop == "c")
    assert argv[0].endswith(b"/aipager-drain") == (drain_loop == "exe")
    assert any(arg.endswith(b"/drain.py") for arg in argv) == (drain_loop != "exe")


@functools.cache
def _deep_queue_allowed() -> bool:
    sock, _why = deepq.deep_socket(20)
    if sock is not None:
        sock.close()
    return sock is not None


@pytest.mark.parametrize("drain_loop", DRAIN_LOOPS)
@pytest.mark.parametrize("queue", ["raised", "system"])
async def test_fifty_hooks_at_once_while_the_loop_stalls_lose_nothing(capsys, monkeypatch, drain_loop, queue):
    env = _drain_env(monkeypatch, drain_loop)
    if queue == "system":
        env["AIPAGER_DEEP_QUEUE"] = "0"
    daemon = Daemon(env)
    serving = asyncio.create_task(daemon.serve())
    await _wait_for(lambda: os.path.exists(paths.socket_path(env)))
    await _wait_for(lambda: _drain_pids())
    _assert_runs(drain_loop)
    # The raised queue is in effect wherever this machine lets a helper make it.
    assert daemon.socket_queue == (deepq.QUEUE_LEN if queue == "raised" and _deep_queue_allowed() else None)
    rows = lambda: len(getattr(daemon.core.registry.get("claude-burst"), "rows", ()))  # noqa: E731
    totals = {"sent": 0, "spooled": 0, "lost": 0}
    for round_no in range(3):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(BURST), paths.socket_path(env), paths.spool_dir(env), "50", "1024", f"r{round_no}-",
            stdout=asyncio.subprocess.PIPE, env={**env, "PYTHONPATH": os.pathsep.join(sys.path)})
        # Stall the event loop for 200 ms while the senders fire (CPU-bound, holding the GIL
        # except at the interpreter's switch points, like a slow handler would).
        await asyncio.sleep(0.15)
        end = time.perf_counter() + 0.2
        while time.perf_counter() < end:
            pass
        out, _ = await proc.communicate()
        counts = json.loads(out)
        for key in totals:
            totals[key] += counts[key]
        await _wait_for(lambda round_no=round_no: rows() == 50 * (round_no + 1))
    daemon.stop_event.set()
    await serving
    with capsys.disabled():
        print(f"\nburst 3x50 with a 200 ms stall ({drain_loop} drain, socket queue "
              f"{daemon.socket_queue or 'system'}): {totals}, handled rows {rows()}")
    assert totals["lost"] == 0
    assert rows() == 150 and daemon.core.counters["malformed"] == 0
    assert spool.pending(paths.spool_dir(env)) == []
    assert not os.path.exists(paths.socket_path(env))


def test_frame_reader_splits_partial_chunks():
    from aipager.daemon.drain import frame
    from aipager.daemon.ingest import FrameReader

    stream = b"".join(frame(d) for d in (b"one", b"", b"x" * 70000, b"four"))
    reader = FrameReader()
    got = []
    for i in range(0, len(stream), 7):
        got += reader.feed(stream[i:i + 7])
    assert got == [b"one", b"", b"x" * 70000, b"four"]


async def _burst_through(daemon: Daemon, env: dict, rounds: int = 2) -> dict:
    totals = {"sent": 0, "spooled": 0, "lost": 0}
    rows = lambda: len(getattr(daemon.core.registry.get("claude-burst"), "rows", ()))  # noqa: E731
    for round_no in range(rounds):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(BURST), paths.socket_path(env), paths.spool_dir(env), "50", "1024",
            f"t{round_no}-", stdout=asyncio.subprocess.PIPE,
            env={**env, "PYTHONPATH": os.pathsep.join(sys.path)})
        await asyncio.sleep(0.15)
        end = time.perf_counter() + 0.2
        while time.perf_counter() < end:
            pass
        out, _ = await proc.communicate()
        for key, value in json.loads(out).items():
            totals[key] += value
        await _wait_for(lambda round_no=round_no: rows() == 50 * (round_no + 1))
    return totals


async def test_thread_fallback_when_the_drain_cannot_start(monkeypatch):
    from aipager.daemon import ingest

    async def refuse(self):
        raise OSError("no subprocesses here")

    monkeypatch.setattr(ingest.DrainIngest, "start", refuse)
    env = dict(os.environ)
    daemon = Daemon(env)
    serving = asyncio.create_task(daemon.serve())
    await _wait_for(lambda: os.path.exists(paths.socket_path(env)))
    totals = await _burst_through(daemon, env)
    daemon.stop_event.set()
    await serving
    assert totals["lost"] == 0


def _drain_pids() -> list[int]:
    kids = [int(p) for p in open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split()]
    found = []
    for pid in kids:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        if argv[0].endswith(b"/aipager-drain") or any(arg.endswith(b"/drain.py") for arg in argv):
            found.append(pid)
    return found


@pytest.mark.parametrize("drain_loop", DRAIN_LOOPS)
async def test_a_dead_drain_is_replaced_by_the_thread(monkeypatch, drain_loop):
    env = _drain_env(monkeypatch, drain_loop)
    daemon = Daemon(env)
    serving = asyncio.create_task(daemon.serve())
    await _wait_for(lambda: os.path.exists(paths.socket_path(env)))
    await _wait_for(lambda: _drain_pids())
    _assert_runs(drain_loop)
    killed = _drain_pids()
    assert len(killed) == 1
    os.kill(killed[0], 9)
    await asyncio.sleep(0.3)
    totals = await _burst_through(daemon, env, rounds=1)
    daemon.stop_event.set()
    await serving
    assert totals["lost"] == 0


async def test_services_run_with_the_daemon_and_a_failing_one_is_contained():
    env = dict(os.environ)
    seen = []

    async def broken(daemon):
        raise RuntimeError("bot crashed")

    async def polling(daemon):
        seen.append(daemon.socket_path)
        await asyncio.Event().wait()  # runs until cancelled at shutdown

    daemon = Daemon(env, services=[broken, polling])
    serving = asyncio.create_task(daemon.serve())
    await _wait_for(lambda: seen)
    assert not serving.done()
    daemon.stop_event.set()
    assert await serving == 0
