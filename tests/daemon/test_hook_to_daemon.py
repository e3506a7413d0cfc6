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
    search = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    native = shutil.which("aipager-hook", path=search)
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
    # one answer: its turn key, its text key, and that a Stop said it
    assert [k[:2] for k in sess["delivered_answers"]] == ["p:", "t:", "s:"]


def test_a_status_file_that_cannot_be_written_is_reported_once(daemon):
    """The installed status-line helper cannot write the status file (a folder is in its
    place): the daemon shows why in ``aipager status``, logs it once over many redraws,
    and clears it when the file is written again."""
    from typer.testing import CliRunner

    from aipager.proto import paths
    from aipager.cli.app import app

    helper = shutil.which("aipager-statusline", path=os.path.dirname(sys.executable))
    assert helper, "aipager-statusline is not installed next to this interpreter"
    env = {**os.environ, "CLAUDE_DTACH_SESSION": "claude-sl"}
    status = orjson.dumps({"model": {"display_name": "Opus 5.5"},
                           "context_window": {"used_percentage": 12}})
    blocker = paths.status_file(env, "claude-sl")
    os.mkdir(blocker)

    def session():
        found = [s for s in persist.load_state(env)["sessions"] if s["name"] == "claude-sl"]
        return found[0] if found else {}

    for _ in range(3):
        done = subprocess.run([helper], input=status, env=env, capture_output=True, timeout=30)
        assert done.returncode == 0 and done.stdout == b"[sl] Opus 5.5 | 12% ctx\n"
    wait_for(lambda: session().get("status_file_error"))
    assert session()["status_file_error"] == "cannot write the status file (Is a directory)"
    shown = CliRunner().invoke(app, ["status"], env=env).output
    assert "! cannot write the status file (Is a directory): no token counts" in shown
    os.rmdir(blocker)
    subprocess.run([helper], input=status, env=env, capture_output=True, timeout=30, check=True)
    wait_for(lambda: session().get("status_file_error") == "")
    daemon.terminate()
    _, err = daemon.communicate(timeout=15)
    log = err.decode()
    with open(paths.log_file(env), encoding="utf-8") as fh:
        log += fh.read()
    assert log.count("cannot write the status file") == 1
    assert "the status file is written again" in log
