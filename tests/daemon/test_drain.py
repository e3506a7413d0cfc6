"""The drain process, both twin loops (compiled ``aipager._drain_c`` and Python), on real sockets.

Each test starts ``python -I -S drain.py FD NATIVE [MAX_BACKLOG]`` as the daemon
does and talks to it through a real datagram socket and its stdout pipe.
Senders block (with a send timeout) so a datagram the drain did not take shows
up as a failed send, never as a silent gap.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import subprocess
import sys
import termios
import threading
import time

import pytest

from aipager.daemon import deepq, drain
from aipager.daemon.ingest import FrameReader, bind_control_socket, native_drain_path

NO_NATIVE = os.environ.get("AIPAGER_NO_EXTENSIONS", "") not in ("", "0")
NATIVE = native_drain_path()
ENGINES = [
    "python",
    pytest.param("native", marks=pytest.mark.skipif(
        NATIVE is None, reason="aipager._drain_c not built (AIPAGER_NO_EXTENSIONS or no compiler)")),
]


class Drain:
    """One drain process on a bound socket in ``folder``."""

    def __init__(self, folder, engine: str, max_backlog: int | None = None) -> None:
        self.path = str(folder / "d.sock")
        self.sock = bind_control_socket(self.path)
        fd = self.sock.fileno()
        argv = [sys.executable, "-I", "-S", drain.__file__, str(fd), NATIVE if engine == "native" else "-"]
        if max_backlog is not None:
            argv.append(str(max_backlog))
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(fd,))
        self.frames = FrameReader()
        self.sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)  # room for 200 KB
        self.sender.settimeout(10)

    def send(self, data: bytes) -> None:
        self.sender.sendto(data, self.path)

    def read(self, n: int) -> list[bytes]:
        """The next ``n`` datagrams from the pipe (blocks until they are there)."""
        got: list[bytes] = []
        while len(got) < n:
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            assert chunk, f"pipe closed after {len(got)} of {n} datagrams"
            got += self.frames.feed(chunk)
        return got

    def stop(self) -> tuple[int, list[bytes]]:
        """SIGTERM, then everything left on the pipe and the exit status."""
        self.proc.send_signal(signal.SIGTERM)
        rest = self.frames.feed(self.proc.stdout.read())
        return self.proc.wait(timeout=30), rest

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.sock.close()
        self.sender.close()


@pytest.fixture
def start(tmp_path):
    made: list[Drain] = []

    def make(engine: str, max_backlog: int | None = None) -> Drain:
        made.append(Drain(tmp_path, engine, max_backlog))
        return made[-1]

    yield make
    for d in made:
        d.close()


def _wait_until_taken(sock: socket.socket) -> None:
    """Wait until the drain has taken every queued datagram (FIONREAD: size of the next one)."""
    size = bytearray(4)
    for _ in range(3000):
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, size)
        if int.from_bytes(size, sys.byteorder) == 0:
            return
        time.sleep(0.01)
    raise AssertionError("the drain never emptied the socket")


def _payloads(n: int, size: int = 1000) -> list[bytes]:
    return [b"%06d:" % i + b"x" * (size - 7 - i % 300) for i in range(n)]


@pytest.mark.parametrize("engine", ENGINES)
def test_frames_many_datagrams_in_order_including_a_200_kb_one(start, engine):
    d = start(engine)
    sent = _payloads(3000, 300) + [b"b" * 200_000, b"", b"after"]
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.extend(d.read(len(sent))))
    reader.start()
    for data in sent:
        d.send(data)
    reader.join(timeout=60)
    code, rest = d.stop()
    assert got == sent and rest == []
    assert code == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_pipe_full_backlog_then_catch_up(start, engine):
    d = start(engine)
    # 3 MB while nobody reads: the 1 MiB pipe fills, the rest waits in the drain's
    # memory; every blocking send still completes because the drain keeps taking.
    first = _payloads(3000)
    for data in first:
        d.send(data)
    assert d.read(len(first)) == first
    later = _payloads(50, 500)
    for data in later:
        d.send(data)
    assert d.read(len(later)) == later
    code, rest = d.stop()
    assert (code, rest) == (0, [])


@pytest.mark.parametrize("engine", ENGINES)
def test_full_backlog_leaves_the_socket_unread_and_drops_nothing(start, engine):
    cap = 64 * 1024
    d = start(engine, max_backlog=cap)
    d.sender.settimeout(1.0)  # a full socket queue shows up as a timed-out send
    sent: list[bytes] = []
    with pytest.raises(TimeoutError):
        for data in _payloads(10_000):
            d.send(data)
            sent.append(data)
    volume = sum(4 + len(x) for x in sent)
    # The pipe (1 MiB, less what partly filled pages waste) and the capped backlog
    # filled, then the drain stopped reading: at most a kernel queue and one
    # receive batch beyond the cap.
    assert drain.PIPE_SIZE // 2 <= volume <= drain.PIPE_SIZE + cap + 64 * 1024
    d.sender.settimeout(10)
    assert d.read(len(sent)) == sent  # nothing was dropped
    d.send(b"resumed")
    assert d.read(1) == [b"resumed"]


@pytest.mark.parametrize("engine", ENGINES)
def test_sigterm_takes_the_kernel_queue_and_writes_everything(start, engine):
    d = start(engine)
    first = _payloads(2000)  # 2 MB: pipe full, the rest in the drain's memory
    for data in first:
        d.send(data)
    _wait_until_taken(d.sock)
    d.proc.send_signal(signal.SIGSTOP)
    queued = [b"queued %d" % i for i in range(8)]  # these wait in the kernel queue
    for data in queued:
        d.send(data)
    d.proc.send_signal(signal.SIGTERM)
    d.proc.send_signal(signal.SIGCONT)
    got = d.frames.feed(d.proc.stdout.read())  # until the drain closes the pipe
    assert d.proc.wait(timeout=30) == 0
    assert got == first + queued
    d.sock.setblocking(False)
    with pytest.raises(BlockingIOError):
        d.sock.recv(1024)  # nothing left behind in the socket


@pytest.mark.parametrize("engine", ENGINES)
def test_the_daemon_closing_the_pipe_ends_the_drain(start, engine):
    d = start(engine)
    d.send(b"one")
    assert d.read(1) == [b"one"]
    d.proc.stdout.close()
    d.send(b"two")  # taken, then the write finds no reader
    assert d.proc.wait(timeout=30) == 0


def test_an_unloadable_native_module_falls_back_to_the_python_loop(tmp_path):
    bogus = tmp_path / "_drain_c.so"
    bogus.write_bytes(b"not an ELF file")
    path = str(tmp_path / "f.sock")
    sock = bind_control_socket(path)
    proc = subprocess.Popen([sys.executable, "-I", "-S", drain.__file__, str(sock.fileno()), str(bogus)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(sock.fileno(),))
    sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sender.sendto(b"still moved", path)
    frames = FrameReader()
    got: list[bytes] = []
    while not got:
        got += frames.feed(os.read(proc.stdout.fileno(), 4096))
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    sock.close()
    assert got == [b"still moved"] and proc.returncode == 0
    assert b"using the Python loop" in err


@pytest.mark.skipif(NO_NATIVE, reason="AIPAGER_NO_EXTENSIONS=1 run: the Python loop is expected")
def test_the_built_package_has_the_native_drain():
    assert NATIVE is not None and NATIVE.endswith(".so")


def test_deep_socket_queues_more_than_the_system_allows(tmp_path):
    sock, why = deepq.deep_socket(200)
    if sock is None:
        pytest.skip(f"this machine refuses unprivileged user namespaces ({why})")
    path = str(tmp_path / "deep.sock")
    sock.bind(path)
    assert deepq.is_deep(sock)
    # Several senders, as hooks are: each one's send buffer also bounds what it may queue.
    senders = [socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) for _ in range(10)]
    for sender in senders:
        sender.setblocking(False)
    accepted = 0
    try:
        for i in range(500):
            senders[i % 10].sendto(b"%d" % i, path)
            accepted += 1
    except BlockingIOError:
        pass
    # Linux refuses once more than the limit wait: 201 of them, never 11.
    assert accepted == 201
    assert [sock.recv(64) for _ in range(3)] == [b"0", b"1", b"2"]
    sock.close()


def test_without_the_helper_the_socket_is_ordinary(tmp_path, monkeypatch):
    monkeypatch.setattr(deepq.sys, "executable", "/bin/false")  # the helper cannot run
    sock, why = deepq.deep_socket(200)
    assert sock is None and why
    bound = bind_control_socket(str(tmp_path / "plain.sock"), queue_len=200)
    try:
        assert not deepq.is_deep(bound)
        sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sender.setblocking(False)
        sender.sendto(b"works", str(tmp_path / "plain.sock"))
        assert bound.recv(64) == b"works"
    finally:
        bound.close()
