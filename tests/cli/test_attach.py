"""`aipager session NAME` on a real terminal (a pty): create, attach, type,
detach with Ctrl-\\, reattach — with the real dtach and a stand-in Claude Code."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

import aipager
from aipager import dtach
from aipager.proto import paths

PACKAGE_ROOT = os.path.dirname(os.path.dirname(aipager.__file__))
FAKE_CLAUDE = '#!/bin/sh\nwhile IFS= read -r l; do echo "$l" >> "$OUT"; done\n'
CTRL_BACKSLASH = b"\x1c"


class Terminal:
    """`aipager session NAME` running with a pty as its terminal."""

    def __init__(self, name: str, env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "aipager.cli", "session", name],
                                     stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.screen = b""

    def read_until(self, text: bytes, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while text not in self.screen and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                try:
                    self.screen += os.read(self.master, 4096)
                except OSError:
                    break
        return text in self.screen

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def close(self) -> int:
        try:
            return self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.master)


def test_attach_type_detach_reattach(tmp_path, env):
    program = tmp_path / "fake-claude"
    program.write_text(FAKE_CLAUDE)
    program.chmod(0o755)
    out = tmp_path / "typed.txt"
    out.touch()
    run_env = {**env, "PYTHONPATH": PACKAGE_ROOT, "AIPAGER_CLAUDE_BIN": str(program),
               "OUT": str(out)}
    try:
        first = Terminal("a1", run_env)
        assert first.read_until(b"Detach with Ctrl-\\")
        time.sleep(0.3)  # let dtach -a put the terminal in raw mode
        first.type(b"typed at the terminal\r")
        deadline = time.monotonic() + 5
        while "typed at the terminal" not in out.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        first.type(CTRL_BACKSLASH)
        assert first.close() == 0
        assert b"Started session a1" in first.screen
        assert dtach.is_live(paths.dtach_socket(env, "a1"))  # detaching kept it running

        second = Terminal("a1", run_env)
        assert second.read_until(b"Detach with Ctrl-\\")
        time.sleep(0.3)
        second.type(CTRL_BACKSLASH)
        assert second.close() == 0
        assert b"Started session" not in second.screen  # reattached, not recreated
    finally:
        dtach.kill(env, "a1", grace=1.0)
    assert out.read_text() == "typed at the terminal\n"
