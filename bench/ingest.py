"""Daemon ingest bench: sustained rate, sendto→handled delay, RSS with 20 sessions × 200 rows.

``run(args) -> list[dict]`` is what ``python -m bench`` collects; ``python -m
bench.ingest`` runs it alone and prints a table (``--json`` for one JSON line
per result, ``--quick`` for a short run).

The daemon runs in its own process (``--serve``, the real ``Daemon`` on a
throwaway instance folder) so the senders never share its GIL.  It records,
for every handled event, the monotonic time it was handled; CLOCK_MONOTONIC
is system-wide on Linux, so ``handled_ns - sent_ns`` (the sender stamps
``bench_sent_ns`` just before ``sendto``) is the real delay.  Senders behave
like the hook: non-blocking ``sendto``, spool file on EAGAIN, from a pool of
sockets (a hook is one process, one socket, per event).

Rate rows: ``ingest_sustained`` paces one ``sendto`` every 50 µs (payloads
built before timing), ``ingest_burst`` sends 20 back to back each 1 ms,
``ingest_max`` is the daemon-side rate while one sender goes flat out.  Each
shows the drain loop (``c``/``python``), the socket's queue length and the
load average before the phase.  ``--python-drain`` and ``--system-queue``
measure without the compiled drain / the raised socket queue.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

TARGET_RATE = 20_000
TARGET_P50_MS = 1.0
TARGET_RSS_MB = 80.0


# -- the daemon side -------------------------------------------------------------


def serve(result_path: str) -> int:
    """Run the real daemon; on SIGTERM write what it measured to ``result_path``."""
    from aipager.daemon.app import Daemon

    stamps: list[tuple[int, int]] = []  # (handled_ns, sent_ns or 0)
    now = time.monotonic_ns

    async def progress(daemon: Daemon) -> None:
        # How many events it handled, for the sender to wait until a flood is worked
        # off: with the raised socket queue it waits in the drain, not in the spool.
        while True:
            with open(result_path + ".progress.tmp", "w") as fh:
                fh.write(str(daemon.core.counters["received"]))
            os.replace(result_path + ".progress.tmp", result_path + ".progress")
            await asyncio.sleep(0.05)

    daemon = Daemon(dict(os.environ), services=[progress])

    def on_handled(ev: dict) -> None:
        stamps.append((now(), ev.get("bench_sent_ns") or 0))

    daemon.core.on_handled = on_handled
    code = asyncio.run(daemon.serve())
    with open(result_path, "w") as fh:
        json.dump({"stamps": stamps, "counters": daemon.core.counters,
                   "socket_queue": daemon.socket_queue or "system"}, fh)
    return code


# -- the sender side ---------------------------------------------------------------


def _mix(i: int, session: str, sent_ns: int | None = None) -> bytes:
    """About 1 KB per event on average: the shapes a busy session produces."""
    kind = i % 4
    base: dict[str, Any] = {"session": session, "session_id": "bench", "prompt_id": "p",
                            "transcript_path": "/tmp/bench.jsonl", "cwd": "/home/dev/project"}
    if kind == 0:
        ev = {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": f"t{i}",
              "tool_input": {"command": f"grep -rn pattern{i} src/ | head -50 " + "x" * 900,
                             "description": "search"},
              "sl_tokens": {"context_pct": 12, "total_output": 400, "total_input": 9000}}
    elif kind == 1:
        ev = {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"t{i - 1}",
              "tool_input": {"command": "grep"},
              "tool_response": {"stdout": "src/a.py:1: match\n" * 60, "stderr": ""}}
    elif kind == 2:
        ev = {**base, "hook_event_name": "MessageDisplay", "message_id": f"m{i}", "index": 0,
              "delta": "Looking at the results of that search now. " * 18}
    else:
        ev = {"type": "statusline", "session": session, "context_pct": 12 + i % 50, "cost_usd": i / 1e4,
              "model_name": "Opus 5.5", "total_input": 9000, "total_output": i, "lines_added": 3,
              "lines_removed": 1, "session_id": "bench"}
    if sent_ns is not None:
        ev["bench_sent_ns"] = sent_ns
    return json.dumps(ev).encode()


#: sender sockets used in turn: a hook is one process (one socket) per event, and
#: the kernel charges queued datagrams to their sender's send buffer (~90 x 1 KB
#: each by default), so one socket alone would hit its own limit first
SENDER_SOCKETS = 32


def _sender(address: str, spool_dir: str):
    from aipager.daemon.spool import send_or_spool

    socks = []
    for _ in range(SENDER_SOCKETS):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.setblocking(False)
        socks.append(sock)
    counts = {"sent": 0, "spooled": 0, "lost": 0}
    turn = [0]

    def send(data: bytes) -> None:
        turn[0] = (turn[0] + 1) % SENDER_SOCKETS
        counts[send_or_spool(socks[turn[0]], address, spool_dir, data)] += 1

    return send, counts


def _start_prompt(send, session: str) -> None:
    send(json.dumps({"hook_event_name": "UserPromptSubmit", "session": session, "prompt": "bench",
                     "prompt_id": "p"}).encode())


class _Daemon:
    def __init__(self, root: str, python_drain: bool = False, system_queue: bool = False) -> None:
        self.env = {**os.environ, "AIPAGER_INSTANCE_DIR": root, "HOME": root,
                    "XDG_STATE_HOME": os.path.join(root, "state"),
                    "XDG_DATA_HOME": os.path.join(root, "data"),
                    "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        if python_drain:
            self.env["AIPAGER_NO_EXTENSIONS"] = "1"
        if system_queue:
            self.env["AIPAGER_DEEP_QUEUE"] = "0"
        self.result = os.path.join(root, "result.json")
        from aipager.proto import paths

        self.address = paths.socket_path(self.env)
        self.spool_dir = paths.spool_dir(self.env)
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.ingest", "--serve", self.result],
                                     env=self.env, cwd=os.path.dirname(os.path.dirname(__file__)))
        end = time.monotonic() + 20
        while not os.path.exists(self.address):
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError("bench daemon did not start")
            time.sleep(0.02)

    def rss_mb(self) -> tuple[float, float]:
        """(daemon RSS, RSS of its children: the drain process) in MB."""
        def rss(pid: int) -> float:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
            return float("nan")

        return rss(self.proc.pid), sum(rss(k) for k in self._children())

    def _children(self) -> list[int]:
        pid = self.proc.pid
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(k) for k in fh.read().split()]

    def drain_engine(self) -> str:
        """Which loop the daemon's drain process runs: "c", "python" or "none" (thread)."""
        end = time.monotonic() + 5
        while time.monotonic() < end:  # the drain starts just after the socket is bound
            for kid in self._children():
                with open(f"/proc/{kid}/cmdline", "rb") as fh:
                    argv = fh.read().split(b"\0")
                if any(arg.endswith(b"drain.py") for arg in argv):
                    return "c" if b"_drain_c" in b" ".join(argv) else "python"
            time.sleep(0.02)
        return "none"

    def received(self) -> int:
        """Datagrams the daemon took so far (its own count, refreshed every 50 ms)."""
        try:
            with open(self.result + ".progress") as fh:
                return int(fh.read() or 0)
        except FileNotFoundError:
            return 0

    def stop(self) -> dict:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        with open(self.result) as fh:
            return json.load(fh)


def _settle(daemon: _Daemon, offered: int, timeout: float = 120.0) -> None:
    """Wait until the daemon received all ``offered`` events (spool included), then 1 s more."""
    end = time.monotonic() + timeout
    while daemon.received() < offered and time.monotonic() < end:
        time.sleep(0.05)
    time.sleep(1.0)


def _saved_sessions(daemon: _Daemon) -> list[dict]:
    from aipager.daemon.persist import load_state

    return load_state(daemon.env)["sessions"]


def _pace(send, payloads: list[bytes], rate: int, slice_ms: bool = False) -> float:
    """Send ``payloads`` at ``rate``/s; returns the seconds it took.

    Per event (the default): one ``sendto`` every ``1/rate`` s, like hooks
    that are one process per event.  ``slice_ms``: in 1 ms slices, i.e.
    ``rate/1000`` datagrams back to back each millisecond (a burstier load
    the ~10-datagram kernel queue must absorb before the drain wakes).  The
    payloads are built before timing so the sender's own JSON work does not
    compete with the daemon for the machine's cores.
    """
    per = max(1, rate // 1000) if slice_ms else 1
    n = len(payloads)
    clock = time.perf_counter
    start = clock()
    i = 0
    while i < n:
        due = start + i / rate
        while clock() < due:
            pass
        for data in payloads[i:i + per]:
            send(data)
        i += per
    return clock() - start


def _phase(daemon: "_Daemon", send, counts: dict, payloads: list[bytes], rate: int | None,
           slice_ms: bool = False) -> tuple[float, dict, float]:
    """One sending phase on a settled daemon: (seconds, its counts, load average before)."""
    _settle(daemon, sum(counts.values()) - counts["lost"])
    load = os.getloadavg()[0]
    before = dict(counts)
    if rate is None:
        start = time.perf_counter()
        for data in payloads:
            send(data)
        took = time.perf_counter() - start
    else:
        took = _pace(send, payloads, rate, slice_ms)
    return took, {k: counts[k] - before[k] for k in counts}, load


def _ingest_row(name: str, n: int, took: float, got: dict, load: float, setup: dict, note: str) -> dict:
    offered = got["sent"] + got["spooled"] + got["lost"]
    refused = got["spooled"] / offered if offered else 0.0
    rate = n / took
    return {"bench": name, "value": round(rate), "unit": "ev/s", "target": f">= {TARGET_RATE}",
            "ok": rate >= TARGET_RATE * 0.99 and got["spooled"] == 0 and got["lost"] == 0,
            "detail": {**got, "refused_at_socket": f"{100 * refused:.2f}%",
                       "load_average": round(load, 2), **setup, "note": note}}


def measure(quick: bool = False, python_drain: bool = False, system_queue: bool = False) -> list[dict]:
    n_rate = 40_000 if quick else 200_000
    n_lat = 1_000 if quick else 5_000
    out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="apb-", dir="/tmp") as root:
        daemon = _Daemon(root, python_drain, system_queue)
        engine = daemon.drain_engine()
        send, counts = _sender(daemon.address, daemon.spool_dir)
        for session in ("claude-bench", "claude-burst", "claude-bench2"):
            _start_prompt(send, session)

        # 1. rate: paced per event at the target (the sustained figure), paced in
        #    1 ms slices (the burst behaviour), then as fast as one sender goes.
        #    EAGAIN at the socket counts as "spooled": the hook's fallback, not a loss.
        phases = {}
        for name, session, rate, slices in (("sustained", "claude-bench", TARGET_RATE, False),
                                            ("burst", "claude-burst", TARGET_RATE, True),
                                            ("unpaced", "claude-bench2", None, False)):
            payloads = [_mix(i, session) for i in range(n_rate)]
            phases[name] = _phase(daemon, send, counts, payloads, rate, slices)
            del payloads

        # 2. delay: one event per millisecond, each stamped just before sendto,
        #    once the daemon has worked off the flood (spool included).
        _settle(daemon, sum(counts.values()) - counts["lost"])
        for i in range(n_lat):
            due = time.perf_counter() + 0.001
            send(_mix(10 * n_rate + i, "claude-lat", time.monotonic_ns()))
            while time.perf_counter() < due:
                pass

        time.sleep(1.5)  # let the spool timer settle
        flood_rss, _ = daemon.rss_mb()
        result = daemon.stop()

    # 3. memory: a fresh daemon with 20 sessions × 200 rows (each row a Pre+Post pair).
    with tempfile.TemporaryDirectory(prefix="apb-", dir="/tmp") as root:
        daemon = _Daemon(root, python_drain, system_queue)
        send, _ = _sender(daemon.address, daemon.spool_dir)
        for s in range(20):
            name = f"claude-rss{s}"
            _start_prompt(send, name)
            for r in range(200):
                send(_mix(4 * (100_000 + r), name))      # PreToolUse (kind 0)
                send(_mix(4 * (100_000 + r) + 1, name))  # its PostToolUse (kind 1)
            time.sleep(0.02)
        time.sleep(2.0)  # spool replay, card flush, a state save
        rss, drain_rss = daemon.rss_mb()
        rows = sum(s["rows_count"] for s in _saved_sessions(daemon))
        daemon.stop()

    stamps = result["stamps"]
    handled = result["counters"]["handled"]
    expected = sum(counts.values()) - counts["lost"]
    handled_ns = sorted(h for h, _ in stamps)
    # Daemon-side rate: its densest run of n_rate consecutive handled events (the
    # unpaced phase, spool replay included), measured rather than guessed.
    span = _densest_span(handled_ns, n_rate)
    delays = sorted((h - s) / 1e6 for h, s in stamps if s)
    p50 = statistics.median(delays) if delays else float("nan")
    p99 = delays[int(len(delays) * 0.99) - 1] if delays else float("nan")
    rate = core_rate(n_rate // 2)
    out.append({"bench": "daemon.core_rate", "value": round(rate), "unit": "ev/s",
                "target": f">= {TARGET_RATE}", "ok": rate >= TARGET_RATE,
                "detail": {"note": "decode + route + handlers, one process, no socket"}})
    setup = {"drain": engine, "socket_queue": result["socket_queue"]}
    took, got, load = phases["sustained"]
    out.append(_ingest_row("daemon.ingest_sustained", n_rate, took, got, load, setup,
                           "one sendto every 1/rate s; EAGAIN at the socket counted as spooled"))
    took, got, load = phases["burst"]
    out.append(_ingest_row("daemon.ingest_burst", n_rate, took, got, load, setup,
                           "rate/1000 sendto back to back each 1 ms; EAGAIN counted as spooled"))
    took, got, load = phases["unpaced"]
    out.append({"bench": "daemon.ingest_max", "value": round(n_rate / span) if span else 0,
                "unit": "ev/s", "target": f">= {TARGET_RATE}",
                "ok": bool(span) and n_rate / span >= TARGET_RATE,
                "detail": {**got, "sender_rate": round(n_rate / took), "load_average": round(load, 2),
                           "note": "daemon-side handled rate while one sender goes flat out"}})
    out.append({"bench": "daemon.events_lost", "value": expected - handled, "unit": "events",
                "target": "0", "ok": expected == handled,
                "detail": {"offered": expected, "handled": handled, **result["counters"]}})
    out.append({"bench": "daemon.delay_p50", "value": round(p50, 3), "unit": "ms",
                "target": f"<= {TARGET_P50_MS}", "ok": p50 <= TARGET_P50_MS,
                "detail": {"p99_ms": round(p99, 3), "samples": len(delays)}})
    out.append({"bench": "daemon.rss_20x200", "value": round(rss, 1), "unit": "MB",
                "target": f"<= {TARGET_RSS_MB}", "ok": rss <= TARGET_RSS_MB,
                "detail": {"rows": rows, "drain_process_mb": round(drain_rss, 1),
                           "after_the_flood_mb": round(flood_rss, 1),
                           "load_average": os.getloadavg()[0], "cpus": os.cpu_count()}})
    return out


def core_rate(n: int) -> float:
    """Events/s the daemon core handles in this process (decode, route, handlers): no socket."""
    from aipager.daemon.core import DaemonCore
    from aipager.port.outputs import RecordingNotifier

    core = DaemonCore(RecordingNotifier(maxlen=1000), read_answer=lambda p: None)
    core.feed_bytes(json.dumps({"hook_event_name": "UserPromptSubmit", "session": "claude-core",
                                "prompt": "bench", "prompt_id": "p"}).encode())
    data = [_mix(i, "claude-core") for i in range(n)]
    start = time.perf_counter()
    for item in data:
        core.feed_bytes(item)
    return n / (time.perf_counter() - start)


def _densest_span(sorted_ns: list[int], n: int) -> float:
    """Seconds the daemon took for its fastest run of ``n`` consecutive events."""
    if len(sorted_ns) < n or n < 2:
        return 0.0
    best = min(sorted_ns[i + n - 1] - sorted_ns[i] for i in range(0, len(sorted_ns) - n + 1,
                                                               max(1, n // 100)))
    return best / 1e9


def run(args: Any = None) -> list[dict]:
    """Entry point for the bench runner: ``args`` may be None, argv strings or a Namespace."""
    if isinstance(args, (list, tuple)):
        args = _parser().parse_args(list(args))
    quick = bool(getattr(args, "quick", False) or getattr(args, "ingest_quick", False))
    return measure(quick=quick, python_drain=bool(getattr(args, "python_drain", False)),
                   system_queue=bool(getattr(args, "system_queue", False)))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options this module adds to ``python -m bench``."""
    parser.add_argument("--ingest-quick", action="store_true", help="shorter daemon ingest run")
    parser.add_argument("--python-drain", action="store_true",
                        help="daemon ingest with the drain's Python loop (AIPAGER_NO_EXTENSIONS=1)")
    parser.add_argument("--system-queue", action="store_true",
                        help="daemon ingest with the system's socket queue (AIPAGER_DEEP_QUEUE=0)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter run")
    parser.add_argument("--python-drain", action="store_true",
                        help="the drain's Python loop instead of the compiled one")
    parser.add_argument("--system-queue", action="store_true",
                        help="the system's socket queue length instead of a raised one")
    parser.add_argument("--json", action="store_true", help="one JSON line per result")
    parser.add_argument("--serve", metavar="RESULT", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.serve:
        return serve(args.serve)
    rows = run(args)
    for row in rows:
        if args.json:
            print(json.dumps(row))
        else:
            mark = "ok " if row["ok"] else "MISS"
            print(f"{mark} {row['bench']:<22} {row['value']:>10} {row['unit']:<7} target {row['target']:<9} "
                  f"{json.dumps(row['detail'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
