"""PreToolUse with a 100-rule policy: the compiled check against the floors.

The session's snapshot holds the built-in floor plus generated rules, 100 in
all (command regexes and path globs, inside the portable dialect).  Cases:

- ASCII Bash / Read / Grep calls that match nothing (every rule runs): the
  compiled path.  Target (issue 4): p50 <= 2x ``/bin/true``.
- UserPromptSubmit typed at the terminal (no note outstanding), while a chat
  message's note is waiting (the prompt is not it: the floor snapshot), and
  the Telegram prompt itself (its note matches: the sender's rules,
  queue_pickup, extra context for Claude): the compiled side does all three.
- SendUserFile (its file checks) and PreModelSwitch (aipager's own model
  switch, allowed once): compiled too.
- a non-ASCII command, and a Telegram prompt the compiled side cannot read
  exactly (it starts with a no-break space): handed to Python, paths that
  must start Python: their native rows.  Target: <= 1.3x
  ``python -S -I -c pass``.

Contenders: the installed native aipager-hook, the pure-Python twin started
on its own (what an install without the compiled hook runs; the native
hook's stage 2 also skips ``resource`` and ``_socket``, so a decline costs
less than this row), ``/bin/true`` and ``python -S -I -c pass``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

from aipager.proto import paths
from aipager.policy import floor, marker, notes, snapshot
from bench import harness

SESSION = "claude-bench"
RULES = 100


def policy_rules(home: str) -> dict:
    """Built-in floor plus generated rules: RULES patterns in all."""
    rule_set = floor.builtin_floor({"HOME": home})
    have = len(rule_set["commands"]) + len(rule_set["no_access"]) + len(rule_set["no_write"])
    extra_cmd = [f"(^|[;&|] *)tool{i:02d} +--(force|yes)" for i in range((RULES - have) // 2)]
    extra_glob = [f"/srv/app{i:02d}/secrets/*" for i in range(RULES - have - len(extra_cmd))]
    rule_set["commands"] += extra_cmd
    rule_set["no_access"] += extra_glob
    return rule_set


def _cases(cwd: str) -> list[tuple[str, dict]]:
    pre = {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": cwd, "permission_mode": "default",
           "tool_use_id": "toolu_1"}
    return [
        ("Bash allow, 100 rules", dict(pre, tool_name="Bash",
                                        tool_input={"command": "git status && pytest -q tests/unit",
                                                    "description": "x"})),
        ("Read allow, 100 rules", dict(pre, tool_name="Read", tool_input={"file_path": "src/app/main.py"})),
        ("Grep allow, 100 rules", dict(pre, tool_name="Grep", tool_input={"pattern": "TODO", "path": "src"})),
        ("Bash non-ASCII -> Python", dict(pre, tool_name="Bash", tool_input={"command": "echo café > notes.txt"})),
        ("SendUserFile", dict(pre, tool_name="SendUserFile", tool_input={"files": ["report.txt"]})),
        ("PreModelSwitch", {"hook_event_name": "PreModelSwitch", "session_id": "sid-1", "cwd": cwd,
                                      "source": "command", "requested_model": "opus"}),
        ("UserPromptSubmit terminal", {"hook_event_name": "UserPromptSubmit", "session_id": "s",
                                       "cwd": cwd, "prompt": "bench prompt"}),
        ("UserPromptSubmit note waiting", {"hook_event_name": "UserPromptSubmit", "session_id": "s",
                                                     "cwd": cwd, "prompt": "bench prompt"}),
        ("UserPromptSubmit from Telegram", {"hook_event_name": "UserPromptSubmit", "session_id": "s",
                                                      "cwd": cwd, "prompt": "[via Telegram from ana] bench prompt"}),
        # a leading no-break space (Python's lstrip drops it): the compiled side
        # hands the whole pick-up to Python
        ("UserPromptSubmit from Telegram, declined -> Python",
         {"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": cwd,
          "prompt": "\u00a0[via Telegram from ana] bench prompt"}),
    ]


def _native() -> str | None:
    path = os.path.join(os.path.dirname(sys.executable), "aipager-hook")
    return path if os.path.exists(path) else None


def _twin() -> list[str]:
    import aipager
    from aipager.hookpy import entry

    site = os.path.dirname(os.path.dirname(os.path.abspath(aipager.__file__)))
    return [sys.executable, "-S", "-I", "-c", entry.BOOT, site, "hook"]


def _prepare(env: dict, case: str, snap: dict) -> None:
    """Reset the session files a case reads: the snapshot, and one note that
    stays outstanding (it is not the prompt) for the "note waiting" case, or
    the note of the Telegram message the prompt carries."""
    snapshot.write(env, SESSION, snap)
    snapshot.clear_mark(env, SESSION)
    for note in notes.list_notes(env, SESSION):
        os.unlink(note.path)
    if "note waiting" in case:
        notes.write_note(env, SESSION, msg_id=1, chat_id=-1, author_user_id=5, author_label="ana",
                         role="user", text="a chat message still waiting")
    if "from Telegram" in case:
        notes.write_note(env, SESSION, msg_id=2, chat_id=-1, author_user_id=5, author_label="ana",
                         role="user", text="bench prompt")
    if case.startswith("PreModelSwitch"):
        marker.write_modelswitch_marker(env, SESSION, "opus", "sid-1")


def run(args) -> list[dict]:
    sink = harness.Sink()
    # not under /tmp/aipager*: the floor protects aipager's own files there
    home = tempfile.mkdtemp(prefix="bench-home-", dir=os.path.expanduser("~"))
    os.makedirs(os.path.join(home, "proj", "src"))
    with open(os.path.join(home, "proj", "report.txt"), "w", encoding="utf-8") as fh:
        fh.write("a report to send\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "AIPAGER_INSTANCE_DIR": sink.dir,
           "CLAUDE_DTACH_SESSION": SESSION}
    snap = snapshot.make("telegram", False, policy_rules(home))
    rows: list[dict] = []
    try:
        with tempfile.TemporaryDirectory(prefix="aipager-bench-policy-") as folder:
            for case, event in _cases(os.path.join(home, "proj")):
                path = os.path.join(folder, "event.json")
                with open(path, "w", encoding="utf-8") as fh:
                    json.dump(event, fh, ensure_ascii=False)
                contenders = harness.floors() + [harness.Contender("twin hook", _twin())]
                native = _native()
                if native:
                    contenders.insert(2, harness.Contender("native hook", [native]))
                harness.measure(contenders, path, env, sink, args.rounds, args.warmup,
                                before=lambda case=case: _prepare(env, case, snap))
                rules = len(snap["commands"]) + len(snap["no_access"]) + len(snap["no_write"])
                rows += harness.rows("policy", case, contenders, rules=rules)
                # the case measured what it says: one more run of each hook, then
                # its files (a run that denied would have halted the task: void)
                for c in contenders[2:]:
                    _prepare(env, case, snap)
                    harness.spawn_once(c.argv, path, env)
                    _check(env, case)
    finally:
        shutil.rmtree(paths.notes_dir(env, SESSION), ignore_errors=True)
        sink.close()
        shutil.rmtree(home, ignore_errors=True)
    return rows


def _check(env: dict, case: str) -> None:
    assert not snapshot.read(env, SESSION)["halted"], f"{case}: a rule matched"
    if case.startswith("PreModelSwitch"):
        assert not os.path.exists(paths.modelswitch_marker(env, SESSION)), f"{case}: marker not claimed"
    if case.startswith("UserPromptSubmit"):
        want = ("unattributed" if "note waiting" in case
                else "telegram" if "from Telegram" in case else "terminal")
        assert snapshot.read(env, SESSION)["origin"] == want, case



