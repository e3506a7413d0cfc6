"""The drain process, every contender, on real sockets.

Three contenders keep one contract: ``python -I -S drain.py FD NATIVE ...``
with its Python loop (``python``) or the compiled ``aipager._drain_c``
(``native``), and the glibc-only executable ``aipager-drain FD ...`` (``exe``:
the same compiled loop, ``_fasthook/drainloop.pxi``, and the salvage in C).
Each test starts one as the daemon does and talks to it through a real
datagram socket and its stdout pipe.  Senders block (with a send timeout) so a
datagram the drain did not take shows up as a failed send, never as a silent gap.
"""

from __future__ import annotations

import fcntl
import json
import errno
import os
import re
import signal
import socket
import subprocess
import sys
import termios
import threading
import time

import pytest

from aipager.daemon import deepq, drain
from aipager.daemon.ingest import FrameReader, bind_control_socket, native_drain_exe, native_drain_path
from aipager.proto import wire
from support import hookrun

NO_NATIVE = os.environ.get("AIPAGER_NO_EXTENSIONS", "") not in ("", "0")
NATIVE = native_drain_path()
EXE = native_drain_exe()
ENGINES = [
    "python",
    pytest.param("native", marks=pytest.mark.skipif(
        NATIVE is None, reason="aipager._drain_c not built (AIPAGER_NO_EXTENSIONS or no compiler)")),
    pytest.param("exe", marks=pytest.mark.skipif(
        EXE is None, reason="aipager-drain not installed (AIPAGER_NO_EXTENSIONS or no compiler)")),
]


def drain_argv(engine: str, fd: int) -> list[str]:
    """The command line the daemon gives ``engine`` (ingest.DrainIngest.start), up to FD."""
    if engine == "exe":
        return [EXE, str(fd)]  # drain.py's arguments without NATIVE
    return [sys.executable, "-I", "-S", drain.__file__, str(fd), NATIVE if engine == "native" else "-"]


class Drain:
    """One drain process on a bound socket in ``folder``."""

    def __init__(self, folder, engine: str, max_backlog: int | None = None) -> None:
        self.path = str(folder / "d.sock")
        self.sock = bind_control_socket(self.path)
        fd = self.sock.fileno()
        argv = drain_argv(engine, fd)
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
    assert EXE is not None, "aipager-drain must be installed next to aipager-hook (pip install .)"


# -- the salvage: a daemon killed hard (drain.Salvage; the executable's is in C) --------------


class Salvaging:
    """A drain started with the salvage arguments, its pipe unread, for a stand-in daemon
    (a ``sleep`` process) that is then killed with SIGKILL."""

    def __init__(self, folder, engine: str) -> None:
        self.path = str(folder / "s.sock")
        self.spool = folder / "spool"
        self.spool.mkdir(mode=0o700)
        self.sock = bind_control_socket(self.path)
        self.daemon = subprocess.Popen(["sleep", "300"])
        fd = self.sock.fileno()
        self.read_end, write_end = os.pipe()
        argv = drain_argv(engine, fd) + ["-", str(self.read_end), str(self.spool), self.path,
                                         str(self.daemon.pid)]
        self.proc = subprocess.Popen(argv, stdout=write_end, stderr=subprocess.PIPE,
                                     pass_fds=(fd, self.read_end))
        os.close(write_end)
        self.sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        self.sender.settimeout(10)

    def kill_daemon(self) -> tuple[int, str]:
        """SIGKILL the stand-in daemon (our read end closes too, as the daemon's would);
        the drain's exit status and stderr."""
        self.daemon.kill()
        self.daemon.wait()
        os.close(self.read_end)
        self.read_end = -1
        _out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, err.decode()

    def spooled(self) -> list[tuple[str, bytes]]:
        names = sorted(n for n in os.listdir(self.spool))
        return [(n, (self.spool / n).read_bytes()) for n in names]

    def close(self) -> None:
        for proc in (self.proc, self.daemon):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if self.read_end >= 0:
            os.close(self.read_end)
        self.sock.close()
        self.sender.close()


@pytest.fixture
def salvaging(tmp_path):
    made: list[Salvaging] = []

    def make(engine: str) -> Salvaging:
        made.append(Salvaging(tmp_path, engine))
        return made[-1]

    yield make
    for s in made:
        s.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_killed_daemon_s_unread_datagrams_are_spooled_in_order(salvaging, engine):
    s = salvaging(engine)
    # 3 MB: the 1 MiB pipe is full, the rest waits in the drain's memory, and one big one
    sent = _payloads(3000) + [b"b" * 200_000, b"", b"last"]
    for data in sent:
        s.sender.sendto(data, s.path)
    _wait_until_taken(s.sock)
    before = time.time_ns()
    code, err = s.kill_daemon()
    after = time.time_ns()
    assert code == 0, err
    assert f"the daemon died; {len(sent)} datagram(s) it never read were spooled" in err
    assert not os.path.exists(s.path)  # the name went: new datagrams spool at the sender
    got = s.spooled()
    assert [data for _name, data in got] == sent  # all of them, in name order
    pattern = re.compile(r"^(\d{20})-(\d+)\.json$")
    stamps = [int(pattern.match(name).group(1)) for name, _data in got]
    assert stamps == list(range(stamps[0], stamps[0] + len(sent)))  # consecutive nanoseconds
    # named just before the death was noticed: after the kill's start, before its end
    assert before - len(sent) <= stamps[0] and stamps[-1] < after
    assert {int(pattern.match(name).group(2)) for name, _data in got} == {s.proc.pid}
    assert {os.stat(s.spool / name).st_mode & 0o777 for name, _data in got} == {0o600}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sender_connected_before_the_death_loses_nothing_it_was_told_went_in(
        salvaging, engine):
    """A hook that connected to the socket before the drain cut its name (the native hook
    hands such a socket to its Python twin) keeps writing through the salvage: every write
    the kernel accepted is spooled, and once the drain stops reading the writes fail
    (EPIPE, or ECONNREFUSED once it exited), which makes a hook spool them itself."""
    s = salvaging(engine)
    s.sender.connect(s.path)
    s.sender.setblocking(False)
    accepted: list[bytes] = []
    refused: list[int] = []
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set():
            data = b"w%d" % i
            try:
                s.sender.send(data)
                accepted.append(data)
            except BlockingIOError:
                time.sleep(0.0005)  # the queue is full for a moment: try the same again
                continue
            except OSError as exc:
                refused.append(exc.errno)
                if len(refused) > 50:
                    return
            i += 1

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(0.3)
    code, err = s.kill_daemon()
    time.sleep(0.2)
    stop.set()
    writer.join()
    assert code == 0, err
    assert refused and set(refused) <= {errno.EPIPE, errno.ECONNREFUSED}
    spooled = [data for _name, data in s.spooled()]
    assert spooled == accepted  # all of them, in order: none accepted and then lost


@pytest.mark.parametrize("engine", ENGINES)
def test_a_killed_daemon_s_replaced_socket_name_is_left_alone(salvaging, engine):
    s = salvaging(engine)
    s.sender.sendto(b"held", s.path)
    _wait_until_taken(s.sock)
    os.unlink(s.path)  # another daemon took the name meanwhile
    other = bind_control_socket(s.path)
    try:
        code, err = s.kill_daemon()
        assert code == 0, err
        assert os.path.exists(s.path)
        assert [data for _name, data in s.spooled()] == [b"held"]
    finally:
        other.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_sigterm_with_the_daemon_alive_spools_nothing(salvaging, engine):
    s = salvaging(engine)
    s.sender.sendto(b"one", s.path)
    _wait_until_taken(s.sock)
    s.proc.send_signal(signal.SIGTERM)
    _out, err = s.proc.communicate(timeout=30)
    assert s.proc.returncode == 0 and err == b""
    assert FrameReader().feed(os.read(s.read_end, 1 << 16)) == [b"one"]
    assert s.spooled() == [] and os.path.exists(s.path)


# -- the executable itself ---------------------------------------------------------------------

needs_exe = pytest.mark.skipif(EXE is None, reason="aipager-drain not installed")


@needs_exe
def test_the_drain_executable_is_elf_without_libpython():
    with open(EXE, "rb") as fh:
        blob = fh.read()
    assert blob[:4] == b"\x7fELF"
    needed = hookrun.needed_libraries(EXE)
    assert needed, "no dynamic dependencies found at all"
    assert not [lib for lib in needed if "python" in lib], needed
    # the values it was built with (wire_constants.h's stamp) are the installed Python's
    start = blob.index(b"aipager-wire:") + len(b"aipager-wire:")
    stamp = json.loads(blob[start:blob.index(b"\0", start)])
    assert stamp["aipager.proto.wire:RECV_MAX"] == wire.RECV_MAX
    assert stamp["aipager.daemon.drain:MAX_BACKLOG"] == drain.MAX_BACKLOG
    assert stamp["aipager.daemon.drain:PIPE_SIZE"] == drain.PIPE_SIZE


@needs_exe
@pytest.mark.parametrize("args", [[], ["x"], ["3", "lots"], ["3", "-", "4", "spool", "sock"]])
def test_the_drain_executable_refuses_a_bad_command_line(args):
    done = subprocess.run([EXE, *args], capture_output=True, timeout=30)
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr.startswith(b"aipager drain: ") and done.stderr.count(b"\n") == 1


@needs_exe
def test_the_drain_executable_reports_a_failing_socket(tmp_path):
    with open(tmp_path / "f", "w") as fh:  # not a socket: recvmmsg fails with ENOTSOCK
        done = subprocess.run([EXE, str(fh.fileno())], capture_output=True, timeout=30, pass_fds=(fh.fileno(),),
                              input=b"")
    # poll says a regular file is readable at once, and receiving from it fails
    assert done.returncode == 1
    assert done.stderr.startswith(b"aipager drain: stopped by ") and done.stderr.count(b"\n") == 1


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
