"""A phone message until Claude Code takes it: the daemon's typing, paced by the terminal's
echo against the old clock, on the real Claude Code.

``python -m bench --only typing``.  Claude Code (``$AIPAGER_TEST_CLAUDE``, else ``claude``
on PATH) runs in real dtach in a throwaway home, offline against the test suite's fake
Anthropic API (``tests/fakes/anthropic.py``: the repo's ``tests/`` goes on ``sys.path``),
with one ``UserPromptSubmit`` hook of its own that appends the time it ran to a file.  Each
run types one encoded chat message with ``DtachIO.type_prompt`` and measures from the call
to that hook's time stamp:

- **echo**: today's typing: the box emptied, the paste echoed on the screen
  (``daemon.screenwatch``), then Enter;
- **clock**: the pauses it replaced (0.15 s after emptying the box, 0.25 s plus one per
  10,000 bytes after the paste), in the same session.

Runs alternate between the two so a slow moment of the machine falls on both.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

GROUP = "typing"
SESSION = "claude-bench"
KEY = "sk-ant-api03-bench-dummy-key-00000000000000000000000"


def add_arguments(parser) -> None:
    parser.add_argument("--typing-rounds", type=int, default=8,
                        help="messages typed per pacing (typing bench)")


def _claude() -> str | None:
    found = os.environ.get("AIPAGER_TEST_CLAUDE") or shutil.which("claude")
    return found if found and os.access(found, os.X_OK) else None


def run(args) -> list[dict]:
    claude = _claude()
    if claude is None:
        return [{"group": GROUP, "case": "phone message → UserPromptSubmit",
                 "contender": "skipped: no claude (set AIPAGER_TEST_CLAUDE)"}]
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tests"))
    from fakes import anthropic as fa

    fake = fa.FakeAnthropic("ok")
    fake.start()
    try:
        return asyncio.run(_measure(claude, fake.base_url, max(2, args.typing_rounds)))
    finally:
        fake.stop()


async def _measure(claude: str, base_url: str, rounds: int) -> list[dict]:
    from aipager import dtach
    from aipager.daemon import terminal
    from aipager.policy import chatprompt
    from aipager.port.model import PromptNote

    root = tempfile.mkdtemp(prefix="apbt-", dir="/tmp")
    home, proj, inst = (os.path.join(root, n) for n in ("home", "proj", "inst"))
    for folder in (os.path.join(home, ".claude"), proj, inst):
        os.makedirs(folder)
    stamps = os.path.join(root, "stamps")
    with open(os.path.join(home, ".claude.json"), "w") as fh:
        json.dump({"hasCompletedOnboarding": True, "theme": "dark",
                   "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
                   "projects": {proj: {"hasTrustDialogAccepted": True}}}, fh)
    hook = f"date +%s.%N >> {stamps}"
    with open(os.path.join(home, ".claude", "settings.json"), "w") as fh:
        json.dump({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                                                              "command": hook}]}]}}, fh)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "TERM": "xterm-256color",
           "LANG": "C.UTF-8", "XDG_RUNTIME_DIR": inst, "AIPAGER_INSTANCE_DIR": inst,
           "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": KEY,
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    dtach.create(env, "bench", cwd=proj, program=[claude, "--permission-mode", "default"])
    io = terminal.DtachIO(env)
    rows: list[dict] = []
    try:
        await _ready(io)
        times: dict[str, list[float]] = {"echo": [], "clock": []}
        saved = io._echo
        for i in range(rounds * 2):
            pacing = "echo" if i % 2 == 0 else "clock"
            io._echo = saved if pacing == "echo" else _clock  # type: ignore[method-assign]
            text = chatprompt.encode(f"bench message {i}: please answer ok", label="owner",
                                     role="owner").text
            seen = _count(stamps)
            start = time.time()
            await io.type_prompt(SESSION, text, note=PromptNote(i, 1, text, 1, "owner", "owner"))
            stamp = await _stamp(stamps, seen)
            if stamp is not None:
                times[pacing].append((stamp - start) * 1000)
            await _ready(io)
        clock_p50 = statistics.median(times["clock"]) if times["clock"] else 0.0
        for pacing, got in times.items():
            if not got:
                continue
            p50 = statistics.median(got)
            rows.append({"group": GROUP, "case": "phone message → UserPromptSubmit",
                         "contender": f"{pacing}-paced", "p50_ms": p50,
                         "p95_ms": sorted(got)[max(0, int(len(got) * 0.95) - 1)],
                         "runs": len(got),
                         "x_clock": p50 / clock_p50 if clock_p50 else 0.0})
    finally:
        await io.close_screens()
        subprocess.run([os.path.join(os.path.dirname(sys.executable), "aipager"), "session",
                        "kill", "bench"], env=env, capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)
    return rows


def _clock(session: str, shown, fallback: float, **_kw):  # noqa: ANN001 - the old pacing
    async def wait() -> bool:
        await asyncio.sleep(fallback)
        return True
    return wait


def _count(path: str) -> int:
    try:
        with open(path) as fh:
            return len(fh.read().split())
    except FileNotFoundError:
        return 0


async def _stamp(path: str, seen: int, timeout: float = 20.0) -> float | None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as fh:
                got = fh.read().split()
        except FileNotFoundError:
            got = []
        if len(got) > seen:
            return float(got[seen])
        await asyncio.sleep(0.005)
    return None


async def _ready(io) -> None:
    """Claude Code idle: its input line empty (its answer to the last message drawn)."""
    from aipager.daemon import screen

    for _ in range(200):
        seen = screen.read(await io.screen(SESSION) or [])
        if isinstance(seen, screen.Prompt) and seen.typed == "":
            await asyncio.sleep(0.3)
            return
        await io.screen_changed(SESSION, 0.2)
