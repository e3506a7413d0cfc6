"""Running Claude Code in print mode (``claude -p``) against the fake API."""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from e2e.kit.claude import ClaudeHome, claude_binary

#: tools print-mode scenarios may use without a permission prompt
DEFAULT_ALLOWED = ("Bash", "Write", "Edit", "Read", "Agent")


@dataclass
class PrintRun:
    """What one ``claude -p`` run left behind."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    #: True when the harness ended the run (``until`` was met, or the timeout)
    stopped_by_harness: bool

    def describe(self) -> str:
        return (
            f"{self.argv!r} -> rc {self.returncode}\n--- stdout\n{self.stdout[-3000:]}"
            f"\n--- stderr\n{self.stderr[-3000:]}"
        )


def run_print(
    home: ClaudeHome,
    base_url: str,
    prompt: str,
    *,
    args: Sequence[str] = (),
    allowed: Sequence[str] = DEFAULT_ALLOWED,
    timeout: float = 60.0,
    until: Callable[[], bool] | None = None,
) -> PrintRun:
    """Run ``claude -p PROMPT`` in the home's project folder and wait for it.

    Args:
        until: some runs never exit by themselves (a finished subagent keeps print mode
            alive in 2.1.328); when this returns true the harness sends SIGINT, which
            ends the session the way a user's Ctrl-C does (SessionEnd still fires).
        timeout: the run is killed after this long; the caller's assertions then fail
            on what is missing.
    """
    argv = [claude_binary(), "-p", prompt, *args]
    if allowed:
        argv += ["--allowedTools", ",".join(allowed)]
    proc = subprocess.Popen(
        argv,
        cwd=home.project,
        env=home.claude_env(base_url),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout
    stopped = False
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            stopped = True
            break
        if until is not None and until():
            proc.send_signal(signal.SIGINT)
            stopped = True
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
            break
        time.sleep(0.05)
    out, err = proc.communicate()
    return PrintRun(argv, proc.returncode, out, err, stopped)
