"""Spawn-per-run latency harness with a real receiving socket.

Each contender is started fresh for every run with ``os.posix_spawn`` (stdin
from the payload file, stdout/stderr to /dev/null) and timed from spawn to
``wait4``; the same ``wait4`` gives ``ru_maxrss``.  Rounds are interleaved:
every round runs each contender once, starting from a different one each
round, so drift hits all alike.  After every run the receiving socket is
drained and the datagrams counted, so a contender that forwards nothing
cannot look fast.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field


@dataclass
class Contender:
    name: str
    argv: list[str]
    #: floors deliver nothing by design; others are expected to
    floor: bool = False
    times: list = field(default_factory=list)
    rss: list = field(default_factory=list)
    delivered: int = 0


class Sink:
    """The daemon's socket, bound in a private instance folder."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="aipager-bench-")
        self.path = os.path.join(self.dir, "aipager.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self.sock.bind(self.path)
        self.sock.setblocking(False)

    def drain(self) -> int:
        count = 0
        while True:
            try:
                self.sock.recv(1 << 22)
            except BlockingIOError:
                return count
            count += 1

    def close(self) -> None:
        self.sock.close()
        for name in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, name))
        os.rmdir(self.dir)


def spawn_once(argv: list[str], payload_path: str, env: dict) -> tuple[float, int]:
    """(milliseconds from spawn to reaped, ru_maxrss in KB)."""
    fd = os.open(payload_path, os.O_RDONLY)
    try:
        actions = [
            (os.POSIX_SPAWN_DUP2, fd, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ]
        start = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
        _pid, _status, usage = os.wait4(pid, 0)
        elapsed = (time.perf_counter_ns() - start) / 1e6
    finally:
        os.close(fd)
    return elapsed, usage.ru_maxrss


def measure(contenders: list[Contender], payload_path: str, env: dict, sink: Sink, rounds: int,
            warmup: int, before=None) -> None:
    """Fill each contender's times/rss/delivered over interleaved rounds.

    ``before()``, if given, runs untimed ahead of every spawn: it resets the
    files a run consumes (a chat note the prompt takes, the snapshot it rewrites).
    """
    sink.drain()
    for rnd in range(warmup + rounds):
        shift = rnd % len(contenders)
        for contender in contenders[shift:] + contenders[:shift]:
            if before is not None:
                before()
            ms, rss = spawn_once(contender.argv, payload_path, env)  # rss: see peak_rss_time_v
            got = sink.drain()
            if rnd >= warmup:
                contender.times.append(ms)
                contender.rss.append(rss)
                contender.delivered += got


def peak_rss_time_v(argv: list[str], payload_path: str, env: dict, runs: int = 5) -> float | None:
    """Median "Maximum resident set size" (KB) from /usr/bin/time -v, if present."""
    if not os.path.exists("/usr/bin/time"):
        return None
    found = []
    for _ in range(runs):
        with open(payload_path, "rb") as stdin:
            done = subprocess.run(["/usr/bin/time", "-v", *argv], stdin=stdin, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in done.stderr.splitlines():
            if "Maximum resident set size" in line:
                found.append(int(line.rsplit(":", 1)[1]))
    return statistics.median(found) if found else None


def floors() -> list[Contender]:
    """The two floors every ratio is read against, measured in the same run."""
    return [
        Contender("/bin/true", ["/bin/true"], floor=True),
        Contender("python -S -I -c pass", [sys.executable, "-S", "-I", "-c", "pass"], floor=True),
    ]


def rows(group: str, case: str, contenders: list[Contender], **extra) -> list[dict]:
    """One table row per contender; ``contenders`` starts with ``floors()``."""
    true_p50 = statistics.median(contenders[0].times)
    py_p50 = statistics.median(contenders[1].times)
    out = []
    for c in contenders:
        p50 = statistics.median(c.times)
        out.append({
            "group": group,
            "case": case,
            "contender": c.name,
            "p50_ms": p50,
            "p95_ms": percentile(c.times, 0.95),
            "x_true": p50 / true_p50,
            "x_python": p50 / py_p50,
            "delivered": c.delivered / len(c.times),
            "runs": len(c.times),
            **extra,
        })
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
