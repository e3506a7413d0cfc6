"""The chat side of the real daemon: edit pacing under a flood, Stop → answer, the 100-session
minute, RSS.

``python -m bench --only bot``.  Runs the installed ``aipager start`` against the fake Bot
API (``tests/fakes/telegram_api.py``, served from a thread of this process; the repo's
``tests/`` folder goes on ``sys.path`` for it) in a throwaway world: ``bench/chatrig.py``
says how, and how every Bot API call is timed at the fake.  Events are datagrams on the
control socket shaped as the hook forwards them.

Rows (targets in brackets):

- **flood** — one session, a prompt, then 500 tool events (250 Bash PreToolUse/PostToolUse
  pairs, distinct ``tool_use_id``) evenly over 10 s, then Stop with
  ``last_assistant_message``: ``editMessageText`` calls in the chat, the most progress edits
  whose arrival at the fake falls in any half-open 1-second window [≤ 1], the same with the
  card's final edit counted (it may take the edit the pace keeps in reserve) [≤
  ``outbox.EDIT_BURST``], the smallest gap between two edits, the time from the Stop datagram
  to the card's final edit (no Stop button) [≤ 0.2 s], and whether that text equals the
  daemon's own card (``aipager status --json``; no cost is known, so the chat adds no
  " · $cost").
- **Stop → answer** — per turn a prompt, the card shown, then Stop: from ``sendto`` of the
  Stop datagram to the answer's ``sendMessage`` reaching the fake, p50/p95 [p50 ≤ 50 ms];
  floors measured in the same turns: a ``sendMessage`` round trip straight to the fake with
  aiohttp, and a ``/bin/true`` spawn.  Turns: ``--rounds`` (at most 21) after ``--warmup``
  (at most 3).
- **the 100-session minute** — in a daemon of its own: 100 sessions, each a prompt typed at
  the computer, one tool call and Stop, the Stops evenly over 60 s, each task having run
  0.5 to 4 s (some long enough for their card to be queued first): each answer's lateness
  (Stop datagram → the answer at the fake) in the order the tasks finished, p50/p95/max;
  answers overtaken by one that finished later and the worst such gap [none]; cards still
  showing "working" when the next answer arrived (a card's last edit follows its answer),
  and cards or prompt copies first shown after their answer [none]; the chat's writes (most
  in any second and minute: Telegram's pace), and when the last answer and the last write
  went after the last Stop.
- **RSS** — the daemon's VmRSS/VmHWM (``/proc/<pid>/status``) with the bot loaded, idle
  [≤ 72 MB] (after its first heap trim, ``aipager.heap``), with 20 sessions (those of the
  rows above plus 18 with a finished 10-tool task) [≤ 80 MB] and with 100 [≤ 90 MB]; its
  children (the ingest
  drain) reported on their own; each against the floor aiogram sets (``over_floor_mb``): a
  fresh interpreter of this venv that imported only ``Bot`` and ``Dispatcher``, its models'
  builds deferred as the daemon does (``aipager.lazyaiogram``).  For scale, what a fresh
  interpreter takes after importing the daemon's modules without and with aiogram (eagerly,
  as aiogram does by itself) and with the bot.
"""

from __future__ import annotations

import re
import statistics
import time
from itertools import pairwise

from aipager.bot.outbox import EDIT_BURST
from bench import chatrig
from bench.harness import percentile

GROUP = "bot"
FLOOD_EVENTS = 500
FLOOD_SECONDS = 10.0
MAX_TURNS = 21
RSS_SESSIONS = 20
#: and again with this many (each with a finished task of ten tool calls)
MANY_SESSIONS = 100
TARGET_EDITS_PER_S = 1
TARGET_FINAL_S = 0.2
TARGET_ANSWER_MS = 50.0
#: the 100-session minute: this many tasks end evenly over this many seconds, each having run
#: one of these times (some long enough for their card to be shown first, some not)
MINUTE_SESSIONS = 100
MINUTE_SECONDS = 60.0
MINUTE_RUNS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)
#: how long the row waits for the last answer and for the chat to be quiet after it
MINUTE_WAIT_S = 900.0
#: quiet: no write for this long
MINUTE_QUIET_S = 5.0
#: the Bot API calls that write to a chat (what Telegram paces)
_WRITES = {"sendmessage", "editmessagetext", "setmessagereaction", "sendchataction",
           "senddocument", "sendphoto"}
#: the goals with the bot loaded (aiogram's own floor is 65 MB): idle, 20 sessions, 100
TARGET_IDLE_MB = 72.0
TARGET_RSS_MB = 80.0
TARGET_MANY_MB = 90.0
#: the idle row waits for the daemon's first heap trim
IDLE_SETTLE_S = 11.0


def _sleep_until(t: float) -> None:
    left = t - time.monotonic()
    if left > 0:
        time.sleep(left)


def _max_in_window(times: list[float], window: float = 1.0) -> int:
    """The most stamps in any half-open window (t - window, t]."""
    best, lo = 0, 0
    ordered = sorted(times)
    for hi, t in enumerate(ordered):
        while ordered[lo] <= t - window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def _card_sent(rig: chatrig.Rig, label: str, since: int, timeout: float = 5.0) -> chatrig.Call:
    call = rig.stamps.wait("sendMessage", lambda c: c.text.startswith(f"⏳ {label} · ")
                           and "⏹ Stop" in c.buttons(), timeout, since)
    if call is None:
        raise RuntimeError(f"the card of {label} never reached the chat:\n{rig.tail()}")
    return call


def flood(rig: chatrig.Rig) -> dict:
    sess = chatrig.Session(rig, "claude-flood")
    sess.start()
    mark = rig.stamps.mark()
    sess.prompt("run the flood")
    card = _card_sent(rig, sess.label, mark)
    pairs = FLOOD_EVENTS // 2
    gap = FLOOD_SECONDS / FLOOD_EVENTS
    start = time.monotonic() + 0.05
    for i in range(pairs):
        tid, cmd = f"toolu_flood{i:04d}", f"echo step {i}"
        _sleep_until(start + 2 * i * gap)
        sess.pre_tool(tid, cmd)
        _sleep_until(start + (2 * i + 1) * gap)
        sess.post_tool(tid, cmd, f"step {i}\n")
    _sleep_until(start + FLOOD_SECONDS)
    t_stop = sess.stop("The flood is done.")

    def final(c: chatrig.Call) -> bool:
        return (c.message_id == card.message_id and "⏹ Stop" not in c.buttons()
                and c.t_in >= t_stop)

    last = rig.stamps.wait("editMessageText", final, 15)
    if last is None:
        raise RuntimeError(f"the card's final edit never came:\n{rig.tail()}")

    def done(st: dict) -> bool:
        view = rig.session(sess.name, st)
        return (bool(view["task"]["ended_at"])
                and view["card"].startswith(f"✅ {sess.label} · done"))

    daemon_card = rig.session(sess.name, rig.wait_status(done, 15, "the flood task done"))["card"]
    time.sleep(1.2)  # anything still paced would show now
    shown = rig.fake.snapshot()["messages"].get((rig.chat_id, card.message_id), {}).get("text")
    edits = [c for c in rig.stamps.of("editMessageText", mark)
             if (c.result or {}).get("chat", {}).get("id") == rig.chat_id]
    upto = [c for c in edits if c.t_in <= last.t_in]
    times = [c.t_in for c in upto]
    gaps = [b - a for a, b in pairwise(times)]
    final_ms = (last.t_in - t_stop) * 1000
    # What took the edit slots between Stop and the final card (each waits ~1 s for its slot).
    between = []
    for c in upto:
        if c.t_in < t_stop or c is last:
            continue
        if c.message_id == card.message_id:
            between.append("card(working)" if "⏹ Stop" in c.buttons() else "card")
        else:
            between.append("status line" if c.text.startswith("📟") else f"#{c.message_id}")
    most = _max_in_window([c.t_in for c in upto if c is not last])
    most_with_final = _max_in_window(times)
    return {
        "group": GROUP, "case": "flood: 500 tool events / 10 s, Stop",
        "edits": len(upto),
        "card_edits": sum(1 for c in upto if c.message_id == card.message_id),
        "edits_after_final": len(edits) - len(upto),
        "max_edits_in_1s": most,
        "max_edits_in_1s_with_final": most_with_final,
        "min_edit_gap_ms": round(min(gaps) * 1000, 1) if gaps else None,
        "stop_to_final_card_ms": round(final_ms, 1),
        "edits_between": " > ".join(between) or "none",
        "final_card_equals_daemon_card": last.text == daemon_card,
        "chat_shows_final_card": shown == daemon_card,
        "met": (most <= TARGET_EDITS_PER_S and most_with_final <= EDIT_BURST
                and final_ms <= TARGET_FINAL_S * 1000
                and last.text == daemon_card == shown),
    }


def stop_to_answer(rig: chatrig.Rig, turns: int, warmup: int) -> list[dict]:
    sess = chatrig.Session(rig, "claude-turns")
    sess.start()
    client = chatrig.DirectClient(rig.base, rig.tg.TOKEN, rig.chat_id)
    answer_ms: list[float] = []
    http_ms: list[float] = []
    true_ms: list[float] = []
    try:
        for k in range(warmup + turns):
            mark = rig.stamps.mark()
            sess.prompt(f"turn {k}")
            _card_sent(rig, sess.label, mark)
            time.sleep(0.25)  # the task runs a moment; its card is on screen
            marker = f"Turn {k} answered."
            t_stop = sess.stop(marker)
            got = rig.stamps.wait("sendMessage", lambda c, marker=marker: c.text.startswith(f"{sess.label}\n")
                                  and marker in c.text, 10, mark)
            if got is None:
                raise RuntimeError(f"the answer of turn {k} never reached the chat:\n{rig.tail()}")
            direct = client.send_ms(f"floor {k}")
            spawn = chatrig.spawn_ms(["/bin/true"])
            if k >= warmup:
                answer_ms.append((got.t_in - t_stop) * 1000)
                http_ms.append(direct)
                true_ms.append(spawn)
    finally:
        client.close()
    case = f"Stop→answer, {turns} turns"
    true_p50 = statistics.median(true_ms)
    p50 = statistics.median(answer_ms)
    return [
        chatrig.stats_row(GROUP, case, "/bin/true spawn", true_ms, true_p50),
        chatrig.stats_row(GROUP, case, "direct sendMessage RTT", http_ms, true_p50),
        chatrig.stats_row(GROUP, case, "Stop→answer at fake", answer_ms, true_p50,
                          target_p50_ms=TARGET_ANSWER_MS, met=p50 <= TARGET_ANSWER_MS),
    ]


def _first_line(call: chatrig.Call) -> str:
    return call.text.split("\n", 1)[0]


def minute(rig: chatrig.Rig) -> dict:
    """The 100-session minute (module docstring): each task's Stop, its answer at the fake."""
    sessions = [chatrig.Session(rig, f"claude-m{i:03d}") for i in range(MINUTE_SESSIONS)]
    for sess in sessions:
        sess.start()
    names = {s.name for s in sessions}

    def started(st: dict) -> bool:
        return names <= {s["name"] for s in st["state"].get("sessions", [])}

    rig.wait_status(started, 60, f"{MINUTE_SESSIONS} sessions started")
    time.sleep(3.0)  # what starting them showed (the status line) has gone
    mark = rig.stamps.mark()
    t0 = time.monotonic() + 1.0
    gap = MINUTE_SECONDS / MINUTE_SESSIONS
    plan: list[tuple[float, int, str]] = []
    for i in range(MINUTE_SESSIONS):
        end = t0 + i * gap
        begin = end - MINUTE_RUNS[i % len(MINUTE_RUNS)]
        plan.append((begin, i, "prompt"))
        plan.append((begin + 0.1, i, "pre"))
        plan.append((begin + 0.2, i, "post"))
        plan.append((end, i, "stop"))
    plan.sort()
    t_stop: list[float] = [0.0] * MINUTE_SESSIONS
    for at, i, what in plan:
        _sleep_until(at)
        sess = sessions[i]
        if what == "prompt":
            sess.prompt(f"task {i}")
        elif what == "pre":
            sess.pre_tool(f"toolu_m{i:03d}", f"ls m{i}")
        elif what == "post":
            sess.post_tool(f"toolu_m{i:03d}", f"ls m{i}", "a\nb\n")
        else:
            t_stop[i] = sess.stop(f"{sess.label} finished its task.")
    # (an answer may ride in its prompt's copy: found by its words wherever they are)
    said = re.compile(r"^m(\d{3}) finished its task\.$", re.M)
    arrived: dict[int, chatrig.Call] = {}
    deadline = time.monotonic() + MINUTE_WAIT_S
    while len(arrived) < MINUTE_SESSIONS and time.monotonic() < deadline:
        for c in rig.stamps.of("sendMessage", mark):
            for number in said.findall(c.text):
                arrived.setdefault(int(number), c)
        time.sleep(0.5)
    # then until the chat is quiet: what still trailed behind the answers (prompt copies,
    # cards) shows when the chat was current again
    while time.monotonic() < deadline:
        last = max((c.t_in for c in rig.stamps.calls[mark:] if c.method.lower() in _WRITES),
                   default=0.0)
        if time.monotonic() - last > MINUTE_QUIET_S:
            break
        time.sleep(0.5)
    late = [(arrived[i].t_in - t_stop[i]) for i in range(MINUTE_SESSIONS) if i in arrived]
    # Overtaken: a later-finished answer reached the chat first; by how much at worst.
    overtaken, worst = 0, 0.0
    for i in arrived:
        first_later = min((arrived[j].t_in for j in arrived if j > i), default=None)
        if first_later is not None and first_later < arrived[i].t_in:
            overtaken += 1
            worst = max(worst, arrived[i].t_in - first_later)
    # Each answer with its own card: a card shown for the task shows its end (no ⏹ Stop)
    # before any later answer arrives (its last edit follows its answer), and no card of
    # the task is first shown after the answer.
    sends = rig.stamps.of("sendMessage", mark)
    edits = rig.stamps.of("editMessageText", mark)
    working_late = card_after = cards = prompts_shown = prompt_after = 0
    for i, sess in enumerate(sessions):
        answer = arrived.get(i)
        head = re.compile(rf"^\S+ {re.escape(sess.label)} · ")
        card = next((c for c in sends if head.match(_first_line(c))
                     and "typed at the computer" not in _first_line(c)), None)
        prompt = next((c for c in sends if _first_line(c).startswith(f"⌨️ {sess.label} · ")),
                      None)
        prompts_shown += prompt is not None
        prompt_after += bool(prompt and answer and prompt.t_in > answer.t_in)
        if card is None or answer is None:
            continue
        cards += 1
        if card.t_in > answer.t_in:
            card_after += 1
            continue
        upto = min((c.t_in for c in arrived.values() if c.t_in > answer.t_in),
                   default=float("inf"))
        shown = [c for c in [card, *edits] if c.message_id == card.message_id
                 and c.t_in < upto]
        if "⏹ Stop" in shown[-1].buttons():
            working_late += 1
    writes = sorted(c.t_in for c in rig.stamps.calls[mark:]
                    if c.method.lower() in _WRITES)
    done_at = max((c.t_in for c in arrived.values()), default=t0)
    current_at = max(writes, default=t0)
    return {
        "group": GROUP, "case": f"{MINUTE_SESSIONS}-session minute: Stop → answer",
        "answers": len(arrived),
        "answer_p50_s": round(statistics.median(late), 1) if late else None,
        "answer_p95_s": round(percentile(late, 0.95), 1) if late else None,
        "answer_max_s": round(max(late), 1) if late else None,
        "late_in_finish_order_s": " ".join(f"{x:.0f}" for x in late),
        "overtaken_answers": overtaken,
        "worst_overtaken_s": round(worst, 1),
        "cards_shown": cards, "cards_working_at_next_answer": working_late,
        "cards_after_answer": card_after, "prompts_shown": prompts_shown,
        "prompts_after_answer": prompt_after,
        "chat_writes": len(writes),
        "max_writes_in_1s": _max_in_window(writes),
        "max_writes_in_60s": _max_in_window(writes, 60.0),
        "last_answer_after_last_stop_s": round(done_at - max(t_stop), 1),
        "chat_current_after_last_stop_s": round(current_at - max(t_stop), 1),
        "met": (len(arrived) == MINUTE_SESSIONS and overtaken == 0 and not working_late
                and not card_after and not prompt_after),
    }


def _mb(kb: int | None) -> float | None:
    return None if kb is None else round(kb / 1024, 1)


def rss(rig: chatrig.Rig, case: str, sessions: int, floor: float | None,
        target: float) -> dict:
    assert rig.proc is not None
    mine = chatrig.proc_status(rig.proc.pid)
    now = _mb(mine.get("VmRSS"))
    row = {"group": GROUP, "case": case, "sessions": sessions,
           "daemon_rss_mb": now, "daemon_hwm_mb": _mb(mine.get("VmHWM")),
           "aiogram_floor_mb": floor,
           "over_floor_mb": None if now is None or floor is None else round(now - floor, 1),
           "target_mb": target, "met": (now or 0) <= target}
    for pid in chatrig.children(rig.proc.pid):
        name = chatrig.cmdline(pid)
        kind = "drain" if "drain" in name else f"child{pid}"
        row[f"{kind}_rss_mb"] = _mb(chatrig.proc_status(pid).get("VmRSS"))
    return row


_RSS_PROBE = ("import sys\nfor m in sys.argv[1:]: __import__(m)\n"
              "print([x.split()[1] for x in open('/proc/self/status')"
              " if x.startswith('VmRSS')][0])")
#: the least a process holding aiogram's ``Bot`` and ``Dispatcher`` takes (builds deferred)
_FLOOR_PROBE = ("from aipager.lazyaiogram import import_aiogram\nimport_aiogram()\n"
                "from aiogram import Bot, Dispatcher\n" + _RSS_PROBE)


def _probe(code: str, *mods: str) -> float | None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code, *mods], capture_output=True, text=True,
                          timeout=60)
    return _mb(int(done.stdout.strip())) if done.returncode == 0 else None


def aiogram_floor() -> float | None:
    """RSS of a fresh interpreter that imported only aiogram's ``Bot`` and ``Dispatcher``."""
    return _probe(_FLOOR_PROBE)


def rss_floors() -> dict:
    """What the daemon's imports alone take (fresh interpreters of this venv): python, the
    daemon without the bot, the daemon's modules plus aiogram, plus the bot."""
    row: dict = {"group": GROUP, "case": "RSS floors: imports alone"}
    for key, mods in (("python_mb", []), ("daemon_no_bot_mb", ["aipager.daemon.app"]),
                      ("plus_aiogram_eager_mb", ["aipager.daemon.app", "aiogram"]),
                      ("plus_bot_mb", ["aipager.daemon.app", "aipager.bot.service"])):
        row[key] = _probe(_RSS_PROBE, *mods)
    row["aiogram_bot_dispatcher_deferred_mb"] = aiogram_floor()
    return row


def more_sessions(rig: chatrig.Rig, total: int) -> int:
    have = len(rig.status()["state"].get("sessions", []))
    # new names after the ones already there (a second call must not reuse them)
    names = [f"claude-s{j:03d}" for j in range(have, total)]
    for name in names:
        sess = chatrig.Session(rig, name)
        sess.start()
        sess.prompt("a short task")
        for i in range(10):
            tid, cmd = f"toolu_{name}_{i}", f"ls step-{i}"
            sess.pre_tool(tid, cmd)
            sess.post_tool(tid, cmd, "a\nb\n")
        sess.stop(f"{name} finished.")
        time.sleep(0.01)

    def settled(st: dict) -> bool:
        live = st["state"].get("sessions", [])
        return len(live) >= total and all(s["task"] and s["task"]["ended_at"] for s in live)

    status = rig.wait_status(settled, 60, f"{total} sessions with finished tasks")
    time.sleep(1.5)
    return len(status["state"]["sessions"])


def run(args) -> list[dict]:
    turns = max(3, min(MAX_TURNS, args.rounds))
    warmup = max(0, min(3, args.warmup))
    rows: list[dict] = []
    floor = aiogram_floor()
    with chatrig.Rig() as rig:
        time.sleep(IDLE_SETTLE_S)
        rows.append(rss(rig, "daemon RSS: bot loaded, idle", 0, floor, TARGET_IDLE_MB))
        rows.append(flood(rig))
        rows.extend(stop_to_answer(rig, turns, warmup))
        count = more_sessions(rig, RSS_SESSIONS)
        row = rss(rig, f"daemon RSS: bot, {count} sessions", count, floor, TARGET_RSS_MB)
        row["daemon_log_errors"] = rig.log_problems()
        rows.append(row)
        count = more_sessions(rig, MANY_SESSIONS)
        row = rss(rig, f"daemon RSS: bot, {count} sessions", count, floor, TARGET_MANY_MB)
        row["daemon_log_errors"] = rig.log_problems()
        rows.append(row)
    with chatrig.Rig() as rig:  # a daemon of its own: the rows above measure memory
        row = minute(rig)
        row["daemon_log_errors"] = rig.log_problems()
        rows.append(row)
    rows.append(rss_floors())
    return rows
