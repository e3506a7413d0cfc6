"""Interactive Claude Code (the real TUI) in a dtach session, as a user runs it.

The session runs ``script`` inside dtach so everything the TUI draws is also appended to a
log file: scenarios read the screen from it (ANSI codes stripped).  ``stty`` gives the
terminal a size first, because a dtach master created without a terminal has none.
Typing goes through ``dtach -p``: the text, a pause, then Enter as a separate write — a burst
ending in CR reads as a paste and the CR would stay in the prompt.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from typing import Callable

from e2e.kit.claude import ClaudeHome, claude_binary, installed_program

_CURSOR_RIGHT = re.compile(rb"\x1b\[(\d*)C")
_ANSI = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]|\x1b[=>78M]")


def dtach_program() -> str:
    """dtach from the dtach-bin package aipager depends on."""
    return installed_program("dtach")


def _squash(text: str) -> str:
    return "".join(text.split())


def drawn(text: str, screen: str) -> bool:
    """Whether ``text`` was drawn into ``screen`` (both squashed), allowing a few letters
    to be absent from the log: the TUI redraws only the cells that changed, so a letter
    already in place from the frame before is skipped (the log then reads
    "Allwed by PermissionRequest hok").  Absent letters only, at most one in eight, never
    the first or the last: a different text does not match."""
    needle, hay = _squash(text), _squash(screen)
    if needle in hay:
        return True
    allowed = max(1, len(needle) // 8)
    start = hay.find(needle[0])
    while start >= 0:
        i, j, missing = 0, start, 0
        while i < len(needle) and j < len(hay) and missing <= allowed:
            if hay[j] == needle[i]:
                j += 1
            else:
                missing += 1
            i += 1
        if i == len(needle) and missing <= allowed and hay[j - 1] == needle[-1]:
            return True
        start = hay.find(needle[0], start + 1)
    return False


class DtachSession:
    """Claude Code's TUI running detached in dtach, typed into with ``dtach -p``."""

    def __init__(self, home: ClaudeHome, base_url: str, claude_args: list[str]) -> None:
        self.home = home
        self.base_url = base_url
        self.claude_args = claude_args
        name = home.session.removeprefix("claude-")
        self.socket = os.path.join(home.instance, f"claude-dtach-{name}.sock")
        self.log = os.path.join(home.root, f"screen-{name}.log")
        self._master: subprocess.Popen[bytes] | None = None

    def start(self, wait: float = 20.0) -> None:
        """Start the session and wait until the TUI has drawn its prompt box."""
        claude = shlex.join([claude_binary(), *self.claude_args])
        inner = f"stty rows 40 cols 140; exec script -qfec {shlex.quote(claude)} {shlex.quote(self.log)}"
        # -N: dtach stays in the foreground, so the harness owns the master process.
        argv = [dtach_program(), "-N", self.socket, "-E", "-z", "-r", "none", "sh", "-c", inner]
        self._master = subprocess.Popen(
            argv, cwd=self.home.project, env=self.home.claude_env(self.base_url),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.wait_screen(lambda s: "? for shortcuts" in s or "\u276f" in s, wait, "the prompt box")

    def screen(self) -> str:
        """Everything the TUI drew so far, escape codes removed."""
        try:
            with open(self.log, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return ""
        # The TUI moves the cursor right instead of printing spaces; put the spaces back.
        raw = _CURSOR_RIGHT.sub(lambda m: b" " * int(m.group(1) or 1), raw)
        return _ANSI.sub(b"", raw).decode("utf-8", errors="replace")

    def shows(self, text: str) -> bool:
        """Whether ``text`` was drawn (whitespace ignored: redraws split words apart)."""
        return drawn(text, self.screen())

    def count(self, text: str) -> int:
        """How many times ``text`` was drawn so far (whitespace ignored)."""
        return _squash(self.screen()).count(_squash(text))

    def wait_shown(self, text: str, timeout: float = 20.0) -> None:
        """Wait until :meth:`shows` ``text``; AssertionError with the screen tail if not."""
        self.wait_screen(lambda s: drawn(text, s), timeout, repr(text))

    def wait_screen(self, pred: Callable[[str], bool], timeout: float = 20.0, what: str = "") -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            if pred(text):
                return text
            if self._master is not None and self._master.poll() is not None:
                break
            time.sleep(0.1)
        tail = self.screen()[-2500:]
        msg = f"the TUI did not show {what or 'the expected text'} within {timeout} s; screen tail:\n{tail}"
        raise AssertionError(msg)

    def push(self, data: bytes) -> None:
        """One write into the session, as keystrokes."""
        subprocess.run([dtach_program(), "-p", self.socket], input=data, check=True, timeout=10)

    def press_until(self, data: bytes, done: Callable[[], bool], tries: int = 5,
                    wait: float = 3.0) -> None:
        """Press ``data`` until ``done()``, waiting ``wait`` s after each press.

        The TUI draws a dialog a moment before it reads keys for it; a key sent in between
        is dropped (seen with AskUserQuestion's picker), so a dialog key is pressed again
        when nothing happened.
        """
        for _ in range(tries):
            self.push(data)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if done():
                    return
                time.sleep(0.1)
        msg = f"pressing {data!r} {tries} times changed nothing; screen tail:\n{self.screen()[-2000:]}"
        raise AssertionError(msg)

    def type(self, text: str, pause: float = 0.4) -> None:
        """Type ``text`` and press Enter (two separate writes)."""
        self.push(text.encode())
        time.sleep(pause)
        self.push(b"\r")

    @property
    def alive(self) -> bool:
        return self._master is not None and self._master.poll() is None

    def wait_exit(self, timeout: float = 20.0) -> int | None:
        if self._master is None:
            return None
        try:
            return self._master.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """End the session and everything it started.

        dtach runs its child in a new session on its own pty, so killing the master's process
        group does not reach ``script`` or Claude Code: signal the whole tree, leaves first.
        """
        if self._master is None or self._master.poll() is not None:
            return
        tree = _descendants(self._master.pid)
        _signal_all(tree, signal.SIGHUP)
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.05)
        _signal_all(tree, signal.SIGKILL)
        os.killpg(self._master.pid, signal.SIGTERM)
        if self.wait_exit(5) is None:
            os.killpg(self._master.pid, signal.SIGKILL)
            self._master.wait(5)


def _descendants(root: int) -> list[int]:
    """Every process below ``root`` (from /proc), deepest first."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields start after the last ')'.
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found[::-1]


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class CliSession(DtachSession):
    """A session made the user's way: ``aipager session NAME --detached -- ARGS``.

    There is no screen log here (the CLI runs Claude Code directly under dtach); scenarios
    follow it through the datagrams or the daemon's state.
    """

    def start(self, wait: float = 20.0) -> None:
        env = self.home.claude_env(self.base_url)
        # The CLI finds Claude Code here first (the suite's binary, not one on PATH).
        env["AIPAGER_CLAUDE_BIN"] = claude_binary()
        env.pop("CLAUDE_DTACH_SESSION")  # the CLI sets it from NAME
        name = self.home.session.removeprefix("claude-")
        argv = [installed_program("aipager"), "session", name, "--detached", "--", *self.claude_args]
        run = subprocess.run(argv, cwd=self.home.project, env=env, capture_output=True, text=True,
                             timeout=wait)
        if run.returncode != 0:
            msg = f"{argv} failed ({run.returncode}): {run.stdout}{run.stderr}"
            raise AssertionError(msg)
        self.cli_output = run.stdout

    @property
    def alive(self) -> bool:
        return os.path.exists(self.socket)

    def kill(self) -> subprocess.CompletedProcess[str]:
        """``aipager session kill NAME --yes``."""
        name = self.home.session.removeprefix("claude-")
        return subprocess.run([installed_program("aipager"), "session", "kill", name, "--yes"],
                              env=self.home.aipager_env(), capture_output=True, text=True, timeout=30)

    def stop(self) -> None:
        if self.alive:
            self.kill()
