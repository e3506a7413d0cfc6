"""Fixtures for the CLI tests: fake hook programs, the fake Bot API, a runner."""

from __future__ import annotations

import os
import stat

import pytest
from typer.testing import CliRunner

from aipager import dtach

from fakes.telegram_api import FakeBotAPI


@pytest.fixture
def bins(tmp_path, monkeypatch):
    """Stand-ins for the installed aipager-hook / aipager-statusline (native-looking)."""
    from aipager.install.claude_code import Binaries

    folder = tmp_path / "venv" / "bin"
    folder.mkdir(parents=True)
    made = []
    for name in ("aipager-hook", "aipager-statusline"):
        path = folder / name
        path.write_bytes(b"\x7fELF" + b"\0" * 60)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        made.append(str(path))
    monkeypatch.setenv("AIPAGER_HOOK_BIN", made[0])
    monkeypatch.setenv("AIPAGER_STATUSLINE_BIN", made[1])
    return Binaries(hook=made[0], statusline=made[1])


@pytest.fixture
def fake_api(monkeypatch):
    """The fake Bot API in a thread; the CLI is pointed at it."""
    fake = FakeBotAPI()
    with fake.in_thread() as base:
        monkeypatch.setenv("AIPAGER_TELEGRAM_API_BASE", base)
        fake.base = base
        yield fake


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def env():
    """The (already isolated) environment as a dict, like the CLI reads it."""
    return dict(os.environ)


_DAEMON = """
import os, signal, socket, sys, time
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(sys.argv[1])
signal.signal(signal.SIGTERM, lambda *a: (os.unlink(sys.argv[1]), sys.exit(0)))
print("ready", flush=True)
while True:
    time.sleep(1)
"""


@pytest.fixture
def fake_daemon(env):
    """A process bound to the control socket, as the daemon is (stopped afterwards)."""
    import subprocess
    import sys

    from aipager.proto import paths

    sock = paths.socket_path(env)
    proc = subprocess.Popen([sys.executable, "-c", _DAEMON, sock], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "ready"
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


FAKE_CLAUDE = """#!/bin/sh
out="$FAKE_CLAUDE_OUT"
echo "start session=$CLAUDE_DTACH_SESSION cwd=$PWD nested=${CLAUDECODE:-no} args=$*" >> "$out"
while IFS= read -r line; do echo "line:$line" >> "$out"; done
"""


@pytest.fixture
def fake_claude(tmp_path, monkeypatch):
    """A harmless `claude`: AIPAGER_CLAUDE_BIN points at it; returns its record file."""
    program = tmp_path / "fake-claude"
    program.write_text(FAKE_CLAUDE)
    program.chmod(0o755)
    out = tmp_path / "typed.txt"
    out.touch()
    monkeypatch.setenv("AIPAGER_CLAUDE_BIN", str(program))
    monkeypatch.setenv("FAKE_CLAUDE_OUT", str(out))
    monkeypatch.setenv("CLAUDECODE", "1")  # as if started from inside Claude Code
    yield out
    env = dict(os.environ)
    for info in dtach.list_sessions(env):
        dtach.kill(env, info.name, grace=1.0)
