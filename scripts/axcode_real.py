"""aipager's hook against the real AX Code: the driver ``scripts/axcode_real.sh`` runs.

Builds nothing itself: it is given an ``ax-code`` program (the launcher the shell script
writes for a checkout built from source) and runs, in a throwaway home:

- the real daemon (``aipager start``) whose bot polls the fake Bot API
  (tests/fakes/telegram_api.py), and a scripted fake OpenAI chat-completions server
  (tests/fakes/openai.py) that AX Code's ``@ai-sdk/openai-compatible`` provider talks to;
- ``aipager ax-code install --ax-code <program>``: the form that AX Code's version reads;
- a chat member's message (role ``admin``: the safety floor applies) waiting for the session,
  written the way the daemon writes it before typing, then ``ax-code run`` with exactly that
  text as the prompt, in a session aipager named (``CLAUDE_DTACH_SESSION``).  The model runs
  an allowed ``bash``, then a ``sudo`` one the floor forbids, then answers.

Checks, each printed as ``ok``/``FAIL``: the forbidden command did not run and its refusal,
with aipager's reason, reached the model; the allowed one ran; the daemon saw the prompt, the
tool steps and the Stop, and the chat got the task.  Exit 0 when all hold.

Run with the project's venv python: ``python scripts/axcode_real.py --ax-code PATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from e2e.kit.claude import installed_program, make_home  # noqa: E402
from e2e.kit.daemon import CHAT_ID, OWNER_ID, Daemon, write_config  # noqa: E402
from fakes import openai as fo  # noqa: E402
from fakes.telegram_api import OWNER, FakeBotAPI  # noqa: E402

from aipager.policy import notes  # noqa: E402

SESSION = "claude-ax"
TASK = "AXREAL: show the folder, then clean the system"
FORBIDDEN = "touch pwned.txt; sudo -n rm -rf /var/cache/thing"
ALLOWED = "echo hello-from-ax > ran.txt"
ANSWER = "AXREAL done: one command ran, the other was refused."


class Report:
    """The lines the script prints, and whether every check held."""

    def __init__(self) -> None:
        self.failed = 0

    def check(self, ok: bool, what: str, detail: str = "") -> None:
        self.failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f"\n       {detail}" if detail and not ok else ""))

    def info(self, what: str) -> None:
        print(f"     {what}")


def ax_config(project: str, base_url: str) -> None:
    """The project's ax-code.json: one provider, the fake server, an empty catalogue is enough."""
    model = {"name": "Fake", "tool_call": True, "limit": {"context": 100000, "output": 4000}}
    doc = {"model": "fake/fake-e2e", "small_model": "fake/fake-e2e",
           "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
                                 "options": {"baseURL": base_url, "apiKey": "sk-fake"},
                                 "models": {"fake-e2e": model}}}}
    with open(os.path.join(project, "ax-code.json"), "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)


def refusals(fake: fo.FakeOpenAI) -> list[str]:
    """Every tool result the model was shown that says a hook blocked the call."""
    seen: list[str] = []
    for req in fake.requests_with("AXREAL"):
        for text in req.tool_results():
            if "hook blocked" in text and text not in seen:
                seen.append(text)
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ax-code", required=True, help="the AX Code program to run")
    parser.add_argument("--keep", action="store_true", help="keep the throwaway home")
    args = parser.parse_args()
    report = Report()

    version = subprocess.run([args.ax_code, "--version"], capture_output=True, text=True,
                             timeout=60, check=False).stdout.strip()
    report.info(f"AX Code: {version or '(no version)'} ({args.ax_code})")

    home = make_home(SESSION)
    bot = FakeBotAPI()
    bot.add_private_chat(OWNER)
    fake = fo.FakeOpenAI("OK.")
    fake.script("AXREAL", fo.bash(ALLOWED, say="Looking first."), fo.bash(FORBIDDEN), fo.text(ANSWER))
    fake.start()
    daemon = None
    try:
        with bot.in_thread() as api_base:
            write_config(home)
            daemon = Daemon(home, api_base=api_base)
            daemon.start()
            env = home.aipager_env()
            subprocess.run(["git", "init", "-q", home.project], check=True)
            ax_config(home.project, fake.base_url)

            wired = subprocess.run([installed_program("aipager"), "ax-code", "install", "--project",
                                    home.project, "--ax-code", args.ax_code],
                                   env=env, capture_output=True, text=True, check=False)
            report.check(wired.returncode == 0, "aipager ax-code install", wired.stderr + wired.stdout)
            for line in wired.stdout.splitlines():
                if line.startswith("AX Code"):
                    report.info(line)
            with open(os.path.join(home.project, ".ax-code", "hooks.json"), encoding="utf-8") as fh:
                pre = [e for e in json.load(fh)["hooks"] if e["event"] == "PreToolUse"]
            report.info(f"PreToolUse entry: {json.dumps(pre[0])}")

            # the chat member's message, as the daemon records it before typing it
            notes.write_note(env, SESSION, msg_id=900, chat_id=CHAT_ID, author_user_id=OWNER_ID + 1,
                             author_label="ana", role="admin", text=TASK)
            run_env = dict(env, CLAUDE_DTACH_SESSION=SESSION, AX_CODE_TRUST_PROJECT_CONFIG="1")
            started = time.monotonic()
            run = subprocess.run([args.ax_code, "run"], input=TASK, cwd=home.project, env=run_env,
                                 capture_output=True, text=True, timeout=300, check=False)
            report.info(f"ax-code run: exit {run.returncode} in {time.monotonic() - started:.1f} s")
            for line in run.stdout.splitlines():
                if "blocked" in line or "AXREAL" in line or "hello" in line:
                    report.info("| " + line.strip())

            # --- the block
            report.check(os.path.exists(os.path.join(home.project, "ran.txt")),
                         "the allowed bash ran (ran.txt written)")
            report.check(not os.path.exists(os.path.join(home.project, "pwned.txt")),
                         "the forbidden bash did not run (no pwned.txt)")
            shown = refusals(fake)
            want = "PreToolUse hook blocked tool bash: aipager safety policy: command matches denied pattern"
            report.check(any(want in text for text in shown), "its refusal and reason reached the model",
                         f"tool results: {shown}")
            for text in shown:
                report.info("model read: " + text.strip().splitlines()[0][:160])

            # --- the daemon and the chat
            sess = daemon.wait_session(lambda s: bool(s.get("task")) and bool(s["task"].get("ended_at")),
                                       30, "the task ended")
            task = sess["task"]
            report.info(f"daemon task: prompt={task.get('prompt')!r} origin={task.get('origin')}")
            report.check((task.get("prompt") or "").strip() == TASK, "the prompt reached the daemon")
            report.check(task.get("origin") == "telegram", "as the chat member's task (the note was taken)")
            rows = [(r["tool"], r["summary"], r["status"]) for r in sess.get("rows", [])]
            for row in rows:
                report.info(f"daemon row: {row}")
            report.check(("Bash", f"Bash: {ALLOWED}", "ok") in rows, "the allowed step reached the daemon")
            report.check(any(r[1] == f"Bash: {FORBIDDEN}" for r in rows),
                         "the blocked step reached the daemon")
            blocked = [a for a in home.audit() if "safety" in json.dumps(a)]
            report.check(bool(blocked), "the block is in the daemon's audit log", json.dumps(home.audit()[-3:]))
            report.check(bool(task.get("ended_at")), "the Stop ended the task")
            texts = [m.get("text", "") for m in bot.bot_messages(CHAT_ID)]
            for text in texts[-4:]:
                report.info("chat: " + text.replace("\n", " | ")[:200])
            report.check(any("sudo" in t for t in texts), "the chat was told of the block")
            report.check(any(ANSWER in t for t in texts), "the answer reached the chat")
    finally:
        if daemon is not None:
            daemon.stop()
        fake.stop()
        if args.keep:
            print(f"     home kept: {home.root}")
        else:
            shutil.rmtree(home.root, ignore_errors=True)
    print(f"{'PASS' if not report.failed else 'FAIL'}: {report.failed} check(s) failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
