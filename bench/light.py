"""Light and quiet: the daemon's memory and idle wake-ups without a bot, and the chat's
pace while a hundred sessions start.

``python -m bench --only light``.  Each figure is shown next to its floor (the goal) in the
same row, measured in this run:

- **RSS, page-only / joined host**: ``aipager start`` (no config) and ``aipager start
  --join`` (a hub that does not answer) as the real program, in throwaway folders; the
  daemon's tree (its process and the drain) once it listens and settled [floor 50 MB].
- **context switches per idle second**: the daemon's process and threads, over
  ``IDLE_SECONDS`` with nothing happening [floor 5/s].
- **writes per chat, 100 sessions**: the outbox against a bot that answers at once, on its
  own clock: a session every 2.4 s for four minutes, each card edited twice a second, a
  reaction and "typing…" every 2.5 s, an answer every 15 s; the most writes in any second
  and any minute, and how late the answers went [floors: 1/s after a burst of
  ``PRIVATE_BURST``, answers 0 s late].
- **one host bursting**: the same outbox and clock, a private chat: one hub host ("box")
  puts 2,000 notices from 20 sessions in 10 s while 20 other hosts each finish a task (the
  prompt's copy, then the answer) one every 1.5 s from the second 2; how late the other
  hosts' answers went, with the burst and without it (their own two messages a task
  already ask more than the chat's one a second, so the pace alone makes them late, and a
  burst that spent the chat's allowance before they came adds that much), how many of
  the bursting host's messages went while another host's answer waited [floor 0: the
  fairness itself]; when the bursting host's last message
  went after its burst [floor 60 s: current within a minute], how many of its messages
  were sent, and how many of its notices the counts said were left out.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

GROUP = "light"
IDLE_SECONDS = 5.0
#: one host's burst (``_burst``): this many notices from its sessions over this many seconds,
#: while this many other hosts each finish a task; simulated up to a cap
BURST_EVENTS = 2000
BURST_SESSIONS = 20
BURST_SECONDS = 10.0
BURST_HOSTS = 20
BURST_CAP_S = 2400.0
MB = 1024 * 1024


def _tree_rss(pid: int) -> int:
    """The resident bytes of ``pid`` and its children."""
    total = 0
    pids = [pid] + [int(p) for p in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    for p in pids:
        with open(f"/proc/{p}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return total


def _switches(pid: int) -> int:
    total = 0
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        with open(status) as fh:
            for line in fh:
                if "ctxt_switches" in line:
                    total += int(line.split()[1])
    return total


def _daemon(mode: str) -> dict:
    root = tempfile.mkdtemp(prefix="aipager-bench-light-")
    home, run = os.path.join(root, "home"), os.path.join(root, "run")
    os.makedirs(home)
    os.makedirs(run, mode=0o700)
    env = {"HOME": home, "XDG_RUNTIME_DIR": run, "PATH": os.environ["PATH"],
           "AIPAGER_WEB_PORT": "0"}
    args = ["start"]
    if mode == "joined host":
        from aipager.hub import creds

        who = creds.write_creds(os.path.join(root, "box.json"),
                                creds.Creds("box", "pw", "nats://127.0.0.1:9", ""))
        args += ["--join", "nats://127.0.0.1:9", "--creds", who]
    err = os.path.join(root, "stderr")
    with open(err, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "aipager.cli", *args], env=env,
                                stdout=subprocess.DEVNULL, stderr=fh)
    try:
        deadline = time.monotonic() + 60
        while "listening" not in open(err).read():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(open(err).read()[-2000:])
            time.sleep(0.1)
        time.sleep(2.0)  # settled: the page bound, the link retrying
        before = _switches(proc.pid)
        time.sleep(IDLE_SECONDS)
        per_second = (_switches(proc.pid) - before) / IDLE_SECONDS
        rss = _tree_rss(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        shutil.rmtree(root, ignore_errors=True)
    return {"case": f"{mode}: RSS MB (floor 50)", "value": round(rss / MB, 1), "floor": 50,
            "switches_per_idle_s": round(per_second, 1), "switches_floor": 5}


class _Bot:
    """Answers every call at once with a message id; counts nothing itself."""

    def __init__(self, clock, writes: list) -> None:
        self._clock, self._writes, self._id = clock, writes, 0

    def __getattr__(self, name):
        async def call(*args, **kwargs):
            self._writes.append((self._clock(), kwargs.get("text") or
                                 (args[1] if len(args) > 1 else "")))
            self._id += 1
            return type("Sent", (), {"message_id": self._id})()

        return call

    async def __call__(self, method):
        """A method object (the outbox's ``rawmethods``: a post or an edit)."""
        self._writes.append((self._clock(), getattr(method, "text", "") or ""))
        self._id += 1
        return {"message_id": self._id}


async def _pace() -> list[dict]:
    from aipager.bot.chatstate import ChatState
    from aipager.bot.outbox import PRIVATE_BURST, Action, Live, Outbox, Post, React

    now = [1000.0]
    writes: list[tuple[float, str]] = []
    box = Outbox(_Bot(lambda: now[0], writes), ChatState(), clock=lambda: now[0])
    box.start()
    chat, answers = 1, {}
    for step in range(480):
        t = step * 0.5
        for n in range(min(100, int(t / 2.4) + 1)):
            box.put(Live(chat, f"s{n} {step}", key=f"card:s{n}:1", session=f"s{n}"))
        if step % 5 == 0:
            box.put(React(chat, 1, "👀"))
            box.put(Action(chat))
        if step % 30 == 29:
            answers[f"answer {step}"] = now[0]
            box.put(Post(chat, f"answer {step}", session="s0"), urgent=True)
        for _ in range(20):
            await asyncio.sleep(0)  # the lane sends what the clock allows
        now[0] += 0.5
    await box.close(0.2)
    times = [t for t, _ in writes]
    per_second = max(sum(1 for t in times[i:] if t < s + 1.0) for i, s in enumerate(times))
    per_minute = max(sum(1 for t in times[i:] if t < s + 60.0) for i, s in enumerate(times))
    sent = {text: t for t, text in writes}
    late = max(sent.get(a, float("inf")) - t for a, t in answers.items())
    return [{"case": "100 sessions: most writes in a second", "value": per_second,
             "floor": PRIVATE_BURST},
            {"case": "100 sessions: most writes in a minute", "value": per_minute,
             "floor": 60 + PRIVATE_BURST},
            {"case": "100 sessions: latest answer, s late", "value": late, "floor": 0.0},
            {"case": "100 sessions: card texts coalesced", "value": box.counters["coalesced"]}]


async def _burst() -> list[dict]:
    """One host bursts while the others each finish a task (module docstring), against the
    same others with no burst.  The pace alone makes them late (two messages a task, 20
    tasks in 30 s, a chat that takes one a second), and a burst that spent the chat's
    allowance before they came leaves them later still: the floor is on fairness itself,
    the bursting host's messages sent while another host's answer waited."""
    calm = await _others_late(bursting=False)
    rows = await _others_late(bursting=True)
    rows[0] = {**rows[0], "case": f"{BURST_EVENTS} notices from one host, {BURST_HOSTS} hosts "
               "answer: other hosts' answers, s late (max)", "without the burst": calm[0]["value"]}
    return rows


async def _others_late(bursting: bool) -> list[dict]:
    from aipager.bot.chatstate import ChatState
    from aipager.bot.outbox import Outbox, Post

    now = [1000.0]
    writes: list[tuple[float, str]] = []
    box = Outbox(_Bot(lambda: now[0], writes), ChatState(), clock=lambda: now[0])
    box.start()
    chat, start = 1, now[0]
    answers: dict[str, float] = {}
    flood: list[tuple[float, str, str]] = []  # (when, session, text): the bursting host's
    for n in range(BURST_EVENTS if bursting else 0):
        session = f"claude-s{n % BURST_SESSIONS:02d}@box"
        flood.append((n * BURST_SECONDS / BURST_EVENTS, session, f"box notice {n}"))
    others = [(2.0 + i * 1.5, f"claude-w@h{i:02d}") for i in range(BURST_HOSTS)]
    step = put = 0
    while True:
        t = step * 0.5
        while put < len(flood) and flood[put][0] <= t:  # (in time order)
            _at, session, text = flood[put]
            box.put(Post(chat, text, session=session), urgent=True)
            put += 1
        for at, session in others:
            if t - 0.5 < at <= t:
                label = session.removeprefix("claude-")
                box.put(Post(chat, f"⌨️ {label} · typed at the computer:\ngo",
                             key=f"prompt:{session}:1", session=session))
                answers[f"{label} answered."] = now[0]
                box.put(Post(chat, f"{label}\n{label} answered.", session=session), urgent=True)
        for lane in box._lanes.values():
            lane.wake.set()  # the clock moved: a lane waiting for the pace looks again
        for _ in range(20):
            await asyncio.sleep(0)
        if (t > BURST_SECONDS + 60 and box.idle()) or t > BURST_CAP_S:
            break
        now[0] += 0.5
        step += 1
    await box.close(0.2)
    late = []
    for words, put_at in answers.items():
        sent = next((w for w, text in writes if words in text), None)
        late.append(float("inf") if sent is None else sent - put_at)
    box_writes = [w for w, text in writes if text.startswith(("box notice", "📦 s"))]
    waits = [(put_at, next((w for w, text in writes if words in text), float("inf")))
             for words, put_at in answers.items()]
    unfair = sum(1 for w in box_writes if any(put < w < sent for put, sent in waits))
    left_out = sum(int(text.split(" · ")[1].split()[0].replace(",", ""))
                   for _w, text in writes if text.startswith("📦 s"))
    burst_end = start + BURST_SECONDS
    return [{"case": "other hosts' answers, s late (max)", "value": round(max(late), 1),
             "p50": round(statistics.median(late), 1)},
            {"case": "the bursting host's messages sent while another host's answer waited",
             "value": unfair, "floor": 0},
            {"case": "the bursting host's chat current, s after its burst",
             "value": round(max(box_writes) - burst_end, 1) if box_writes else None,
             "floor": 60.0},
            {"case": "the bursting host's messages sent / its notices left out",
             "value": len(box_writes), "left_out": left_out}]


def run(args) -> list[dict]:
    rows = [_daemon("page-only"), _daemon("joined host")]
    rows += asyncio.run(_pace())
    rows += asyncio.run(_burst())
    return rows
