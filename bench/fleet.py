"""A fleet on one machine: a hub and twenty-one joined hosts, each the real program.

``python -m bench --only fleet`` (about three minutes).  The hub is ``aipager start --hub``
(its own ``nats-server`` from the wheel, its bot on the fake Bot API in a thread of this
process: ``bench.chatrig``); each host is ``aipager start --join URL --creds FILE`` in a world
of its own, with a credential from ``aipager hub invite``.  Events go to each host's socket as
its hook would send them; every figure is read off the fake Bot API's clock (when a
``sendMessage`` reached it), against the moment this process sent the event.

- **one host bursting**: host ``box`` gets 2,000 hook events from 20 sessions in 10 s (a
  prompt and its answer, over and over) while the 20 other hosts each finish a task (a prompt
  and its answer), one every 1.5 s from the second 2: how late each other host's answer
  reached the chat [floor 2 s], when the bursting host's last message went after its burst
  [floor 60 s: current within a minute], and how many of its messages were sent.
- **a host killed**: ``kill -9`` of one host's daemon; how long until the chat says it is
  offline [floor 20 s: three missed heartbeats of 5 s and the hub's next look], and whether
  ``/status`` then shows its session unreachable.

``AIPAGER_FLEET_DUMP=FILE`` writes every message the chat got (seconds after the burst,
method, text) and the ``/status`` answer there, to see how the chat caught up.

Measured on this project's 2-core machine: other hosts' answers at most 1.6 s late (p50
1.0), the bursting host's chat current 44 s after its burst in 40 messages (its 1,000
prompts and answers folded), the chat told a host was offline 16.6 s after its kill -9,
and ``/status`` then showing "❔ h04s00 · unreachable".  (Before prompt copies folded with
their answers, one turn a second left that chat about 1,000 s behind.)
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import time
import zlib
from typing import Any

from bench import chatrig

GROUP = "fleet"
HOSTS = 20
BURST_EVENTS = 2000
BURST_SESSIONS = 20
BURST_SECONDS = 10.0
#: how long the run waits for the chat to catch up after the burst
CATCH_UP_S = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Host:
    """``aipager start --join`` in a world of its own, fed datagrams as its hooks would."""

    def __init__(self, root: str, name: str, hub_env: dict[str, str], url: str) -> None:
        from aipager.proto import paths

        self.name, self.root = name, os.path.join(root, name)
        home, inst = os.path.join(self.root, "h"), os.path.join(self.root, "i")
        for folder in (home, inst, os.path.join(self.root, "project")):
            os.makedirs(folder, mode=0o700)
        self.env = {"PATH": hub_env["PATH"], "HOME": home, "LANG": "C.UTF-8",
                    "XDG_CONFIG_HOME": os.path.join(home, ".config"),
                    "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
                    "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
                    "XDG_RUNTIME_DIR": inst, "AIPAGER_INSTANCE_DIR": inst}
        creds = os.path.join(self.root, "creds.json")
        run = subprocess.run([chatrig.program("aipager"), "hub", "invite", name, "--out", creds],
                             env=hub_env, capture_output=True, text=True, timeout=60)
        if run.returncode != 0:
            raise RuntimeError(f"hub invite {name} failed: {run.stderr}")
        self.argv = [chatrig.program("aipager"), "start", "--join", url, "--creds", creds]
        self.address = paths.socket_path(self.env)
        self.spool = paths.spool_dir(self.env)
        self.proc: subprocess.Popen | None = None
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.turns: dict[str, int] = {}
        #: the children of a daemon killed with ``kill``
        self.orphans: list[int] = []

    def start(self) -> None:
        out = open(os.path.join(self.root, "daemon.out"), "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(self.argv, env=self.env, cwd=self.root,
                                     stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        out.close()

    def ready(self) -> bool:
        from aipager.daemon.ingest import socket_is_live

        return socket_is_live(self.address)

    def send(self, session: str, event: str, **more: Any) -> float:
        from aipager.daemon.spool import send_or_spool

        sid = f"00000000-0000-4000-8000-{zlib.crc32((self.name + session).encode()):012d}"
        ev = {"session_id": sid, "transcript_path": os.path.join(self.root, f"{sid}.jsonl"),
              "cwd": os.path.join(self.root, "project"), "hook_event_name": event,
              "permission_mode": "default", **more, "session": session}
        if event == "UserPromptSubmit":
            self.turns[session] = self.turns.get(session, 0) + 1
        if event in ("UserPromptSubmit", "Stop"):
            ev["prompt_id"] = f"{sid[:24]}{self.turns.get(session, 0):012d}"
        t = time.monotonic()
        if send_or_spool(self.sock, self.address, self.spool, json.dumps(ev).encode()) == "lost":
            raise RuntimeError(f"a datagram to {self.name} was lost")
        return t

    def kill(self) -> None:
        """``kill -9`` of the daemon alone (its drain lives on, reaped by ``close``)."""
        assert self.proc is not None
        self.orphans = chatrig.children(self.proc.pid)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        self.sock.close()
        if self.proc is not None:
            drains = [*chatrig.children(self.proc.pid), *self.orphans]
            chatrig.stop_process(self.proc)
            for pid in drains:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)


def _wait(pred: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise RuntimeError(f"never {what} within {timeout:.0f} s")
        time.sleep(0.2)


def _hub_hosts(env: dict[str, str]) -> dict[str, Any]:
    run = subprocess.run([chatrig.program("aipager"), "hub", "hosts", "--json"], env=env,
                         capture_output=True, text=True, timeout=30)
    return json.loads(run.stdout) if run.returncode == 0 else {}


def _measure(rig: chatrig.Rig, hosts: list[Host]) -> list[dict]:
    box, others = hosts[0], hosts[1:]
    stamps = rig.stamps
    for host in hosts:  # every session known to the hub before the clock starts
        for n in range(BURST_SESSIONS if host is box else 1):
            host.send(f"claude-{host.name}s{n:02d}", "SessionStart", source="startup")
    _wait(lambda: all((_hub_hosts(rig.env).get(h.name) or {}).get("online") for h in hosts),
          90, "every host online at the hub")
    time.sleep(3.0)  # the hub has their sessions; the chat's greeting went
    mark = stamps.mark()
    start = time.monotonic()
    sent: dict[str, float] = {}  # an other host's answer words -> when its Stop was sent
    plan = sorted([(n * BURST_SECONDS / BURST_EVENTS, "box", n) for n in range(BURST_EVENTS)]
                  + [(2.0 + i * 1.5, "other", i) for i in range(len(others))])
    for at, kind, n in plan:
        delay = start + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if kind == "box":
            session = f"claude-boxs{n % BURST_SESSIONS:02d}"
            if (n // BURST_SESSIONS) % 2 == 0:
                box.send(session, "UserPromptSubmit", prompt=f"box task {n}")
            else:
                box.send(session, "Stop", last_assistant_message=f"box answer {n}.",
                         stop_hook_active=False)
        else:
            host = others[n]
            session = f"claude-{host.name}s00"
            host.send(session, "UserPromptSubmit", prompt="go")
            words = f"{host.name} answered."
            sent[words] = host.send(session, "Stop", last_assistant_message=words,
                                    stop_hook_active=False)
    burst_end = start + BURST_SECONDS

    def caught_up() -> bool:
        got = {w for w in sent if any(w in c.text for c in stamps.of("sendMessage", mark))}
        box_calls = [c for c in stamps.of("sendMessage", mark) if "box answer" in c.text
                     or "boxs" in c.text]
        return len(got) == len(sent) and bool(box_calls) and \
            time.monotonic() - box_calls[-1].t_in > 5.0

    with contextlib.suppress(RuntimeError):
        _wait(caught_up, CATCH_UP_S, "the chat caught up")
    calls = stamps.of("sendMessage", mark)
    late = []
    for words, t in sent.items():
        got = next((c.t_in for c in calls if words in c.text), None)
        late.append(float("inf") if got is None else got - t)
    box_calls = [c for c in calls if "box answer" in c.text or "boxs" in c.text]
    if os.environ.get("AIPAGER_FLEET_DUMP"):
        with open(os.environ["AIPAGER_FLEET_DUMP"], "w") as fh:
            for c in calls:
                fh.write(f"{c.t_in - burst_end:8.2f} {c.method} {c.text[:90]!r}\n")
    rows = [{"group": GROUP, "case": f"{BURST_EVENTS} events on one host, {len(others)} hosts "
                                     "answer: other hosts' answers, s late (max)",
             "value": round(max(late), 2), "p50": round(statistics.median(late), 2),
             "floor": 2.0},
            {"group": GROUP, "case": "the bursting host's chat current, s after its burst",
             "value": round(box_calls[-1].t_in - burst_end, 1) if box_calls else None,
             "floor": 60.0},
            {"group": GROUP, "case": "the bursting host's messages sent",
             "value": len(box_calls)}]

    # kill -9 of one host: the chat says so, /status shows its session unreachable
    victim = others[4]
    mark = stamps.mark()
    killed = time.monotonic()
    victim.kill()
    said = stamps.wait("sendMessage", lambda c: f"📴 {victim.name} is offline" in c.text,
                       timeout=90, since=mark)
    rows.append({"group": GROUP, "case": "kill -9 of a host: the chat says it is offline, s",
                 "value": round(said.t_in - killed, 1) if said else None, "floor": 20.0})
    mark = stamps.mark()
    rig.fake.say("/status")
    status = stamps.wait("sendMessage", lambda c: "Sessions:" in c.text, timeout=20, since=mark)
    if os.environ.get("AIPAGER_FLEET_DUMP"):
        with open(os.environ["AIPAGER_FLEET_DUMP"], "a") as fh:
            fh.write("STATUS\n" + (status.text if status else "none") + "\n")
    line = next((ln for ln in (status.text if status else "").splitlines()
                 if f"{victim.name}s00" in ln), "")
    rows.append({"group": GROUP, "case": "/status then shows its session",
                 "value": line.strip() or None, "unreachable": "unreachable" in line})
    return rows


def run(args) -> list[dict]:
    port = _free_port()
    rig = chatrig.Rig(args=("start", "--hub"),
                      extra={"hub": {"name": "laptop", "listen": f"127.0.0.1:{port}"}})
    hosts: list[Host] = []
    try:
        rig.prepare()  # the hub's world and config: its hosts are invited before it starts
        url = f"nats://127.0.0.1:{port}"
        names = ["box", *(f"h{i:02d}" for i in range(HOSTS))]
        hosts = [Host(rig.root, name, rig.env, url) for name in names]
        rig.launch()
        for host in hosts:
            host.start()
        _wait(lambda: all(h.ready() for h in hosts), 120, "every host listening")
        return _measure(rig, hosts)
    finally:
        for host in hosts:
            host.close()
        rig.close()
