"""The hook (both twins) forwarding a recorded sequence into the real daemon process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import orjson
import pytest
from support.daemon_proc import wait_for
from support.sequences import load_sequence

from aipager.daemon import persist
from aipager.hookpy.entry import BOOT


def _hook_commands() -> dict[str, list[str]]:
    found = {"twin": [sys.executable, "-S", "-I", "-c", BOOT, _site_dir(), "hook"]}
    native = shutil.which("aipager-hook", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if native:
        found["installed"] = [native]
    return found


def _site_dir() -> str:
    import aipager

    return os.path.dirname(os.path.dirname(aipager.__file__))


HOOKS = _hook_commands()


@pytest.mark.parametrize("which", sorted(HOOKS))
def test_recorded_sequence_through_the_hook(daemon, which):
    env = {**os.environ, "CLAUDE_DTACH_SESSION": "claude-viahook"}
    events = load_sequence("print_tools.jsonl")
    for ev in events:
        # The hook adds `session` itself from CLAUDE_DTACH_SESSION: give it what Claude Code gives.
        payload = {k: v for k, v in ev.items() if k not in ("session", "sl_tokens")}
        done = subprocess.run(HOOKS[which], input=orjson.dumps(payload), env=env,
                              capture_output=True, timeout=30)
        assert done.returncode in (0, 2), done.stderr
    env = dict(os.environ)

    def sessions():
        return {s["name"]: s for s in persist.load_state(env)["sessions"]}

    wait_for(lambda: sessions().get("claude-viahook", {}).get("state") == "gone")
    sess = sessions()["claude-viahook"]
    assert [(r["tool"], r["status"]) for r in sess["rows"]] == [
        ("Bash", "ok"), ("Bash", "failed"), ("Write", "ok"), ("Edit", "ok")]
    assert len(sess["delivered_answers"]) == 2  # one answer: its turn key and its text key
