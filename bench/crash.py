"""Events lost when the daemon is killed hard: ``python -m bench --only crash``.

The rig is ``bench/chatrig.py`` (``aipager start`` of this venv, with its bot, against the
fake Bot API).  Each round is one new session and 100 events sent as the hook sends them
(``spool.send_or_spool``: ``sendto``, a spool file when nobody listens or the queue is
full), 0–2 ms apart: SessionStart (with a model name only this round uses), the prompt,
then 49 PreToolUse/PostToolUse pairs.  At a random point of the sequence the daemon
process alone gets SIGKILL (its drain process lives on, as after the OOM killer) and the
sending goes straight on; then ``aipager start`` again, and the round waits (10 s at most)
until the restarted daemon's state holds the whole sequence.

Every event leaves its own mark in the state, so each is counted once:

- SessionStart: the session's model is this round's name (nothing else sets it here);
- the prompt: the task's prompt is this round's text;
- a PreToolUse: a row with its tool_use_id whose summary names the *pre* command (a row
  made by a PostToolUse whose PreToolUse was lost names the *post* command instead);
- a PostToolUse: that row's status is ``ok``.

Target (issue 16): 20 rounds, events lost = 0.  The seed is printed, so a loss can be
replayed (``--crash-seed``).
"""

from __future__ import annotations

import random
import time

from bench import chatrig

GROUP = "crash"
EVENTS = 100
PAIRS = (EVENTS - 2) // 2


def add_arguments(parser) -> None:
    parser.add_argument("--crash-rounds", type=int, default=20, help="kill -9 rounds (default 20)")
    parser.add_argument("--crash-seed", type=int, default=None, help="seed of the kill points")


def _present(sess: dict | None, model: str, prompt: str, r: int) -> int:
    if sess is None:
        return 0
    found = int(sess.get("model") == model)
    found += int((sess.get("task") or {}).get("prompt") == prompt)
    rows = {row.get("id"): row for row in sess.get("rows") or []}
    for i in range(PAIRS):
        row = rows.get(f"toolu_c{r:02d}{i:03d}")
        if row is None:
            continue
        found += int(f"pre-{i}" in str(row.get("summary")))
        found += int(row.get("status") == "ok")
    return found


def run(args) -> list[dict]:
    seed = args.crash_seed if args.crash_seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    rounds = max(1, args.crash_rounds)
    lost_per_round: list[int] = []
    kill_points: list[int] = []
    replayed = 0
    with chatrig.Rig() as rig:
        for r in range(rounds):
            name = f"claude-crash{r:02d}"
            sess = chatrig.Session(rig, name)
            model, prompt = f"bench-model-{r:02d}", f"round {r} of the crash bench"
            kill_at = rng.randrange(1, EVENTS)
            kill_points.append(kill_at)
            sends = [lambda sess=sess, model=model: rig.send(sess.base("SessionStart", source="startup",
                                                                        model=model)),
                     lambda sess=sess, prompt=prompt: sess.prompt(prompt)]
            for i in range(PAIRS):
                tid = f"toolu_c{r:02d}{i:03d}"
                sends.append(lambda sess=sess, tid=tid, i=i: sess.pre_tool(tid, f"echo pre-{i}"))
                sends.append(lambda sess=sess, tid=tid, i=i: sess.post_tool(tid, f"echo post-{i}", "x"))
            for k, send in enumerate(sends):
                if k == kill_at:
                    rig.kill_hard()
                send()
                time.sleep(rng.random() * 0.002)
            rig.launch()
            deadline = time.monotonic() + 10
            while True:
                found = _present(rig.session(name), model, prompt, r)
                if found == EVENTS or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            lost_per_round.append(EVENTS - found)
            counters = rig.status()["state"]["daemon"].get("counters") or {}
            replayed += int(counters.get("journal_replayed") or 0)
        problems = rig.log_problems()
    return [{"group": GROUP, "rounds": rounds, "events_per_round": EVENTS, "seed": seed,
             "events_lost": sum(lost_per_round),
             "rounds_with_loss": sum(1 for n in lost_per_round if n),
             "lost_per_round": lost_per_round, "kill_points": kill_points,
             "journal_replayed": replayed, "daemon_log_errors": problems}]
