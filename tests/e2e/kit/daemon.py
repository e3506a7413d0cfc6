"""The real daemon as a user runs it: ``aipager start`` in a subprocess, read back through
``aipager status --json`` and its log file.

The config is the owner's private chat with the bot (chat id == the owner's user id, as
``aipager setup`` writes it), the fake Bot API's token, the owner and a ``user`` member, and
``new_session_folder`` (where ``/new`` starts sessions: the home's project).  The daemon's
environment points the bot at the fake Bot API (``AIPAGER_TELEGRAM_API_BASE``) and, when
given, carries what Claude Code needs to reach the fake model, so sessions the bot starts
with ``/new`` run offline like the harness's own.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from typing import Any, Callable, Sequence

from aipager.cli import status_cmd
from aipager.proto import paths
from e2e.kit.claude import ClaudeHome, claude_binary, installed_program
from fakes.telegram_api import OWNER, TOKEN

#: the owner: the person the fake Bot API's helpers speak as by default
OWNER_ID = OWNER["id"]
USER_ID = 2002
#: the owner's private chat with the bot
CHAT_ID = OWNER_ID
BOT_TOKEN = TOKEN


def write_config(home: ClaudeHome) -> str:
    """aipager's config for the home: the owner's private chat, the owner and a ``user``."""
    from aipager import config

    cfg = config.Config(
        bot_token=BOT_TOKEN,
        chat_id=CHAT_ID,
        members=(config.Member(OWNER_ID, "owner", "owner"), config.Member(USER_ID, "user", "guest")),
        extra={"new_session_folder": home.project},
    )
    return config.save(home.aipager_env(), cfg)


class Daemon:
    """One ``aipager start`` process for a :class:`ClaudeHome`.

    Args:
        home: the throwaway world.
        api_base: the fake Bot API's base URL (the bot polls it).
        extra_env: more environment for the daemon (and so for sessions ``/new`` starts).
        args: options of ``aipager start`` (``--hub``, ``--join URL --creds FILE``).
    """

    def __init__(self, home: ClaudeHome, api_base: str = "",
                 extra_env: dict[str, str] | None = None, args: Sequence[str] = ()) -> None:
        self.home = home
        self.args = list(args)
        self.extra_env = dict(extra_env or {})
        if api_base:
            self.extra_env["AIPAGER_TELEGRAM_API_BASE"] = api_base
        self.env = self.environment()
        self.proc: subprocess.Popen[bytes] | None = None
        self.output = os.path.join(home.root, "daemon-output.log")

    @classmethod
    def for_chat(cls, home: ClaudeHome, api_base: str, model_url: str) -> Daemon:
        """A daemon whose bot polls the fake Bot API at ``api_base`` and whose ``/new``
        sessions run the suite's Claude Code against the fake model at ``model_url``,
        as the harness's own sessions do."""
        session_env = home.claude_env(model_url)
        session_env.pop("CLAUDE_DTACH_SESSION")  # dtach.create sets it per session
        extra = {k: v for k, v in session_env.items() if k not in home.aipager_env()}
        extra["AIPAGER_CLAUDE_BIN"] = claude_binary()
        return cls(home, api_base=api_base, extra_env=extra)

    # -- lifecycle -------------------------------------------------------------------------

    def environment(self) -> dict[str, str]:
        """The home's aipager environment (read again: a scenario may add knobs) plus ours;
        its web page on a free port (``aipager start`` prints which)."""
        return {**self.home.aipager_env(), "AIPAGER_WEB_PORT": "0", **self.extra_env}

    def start(self, wait: float = 60.0) -> None:
        """Start ``aipager start`` and wait until its state says it is alive."""
        self.env = self.environment()
        with open(self.output, "ab") as out:
            self.proc = subprocess.Popen(
                [installed_program("aipager"), "start", *self.args], env=self.env,
                cwd=self.home.root,
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            )
        try:
            self.wait_state(lambda st: st["state"]["daemon"].get("alive") is True, wait,
                            "daemon alive")
        except BaseException:
            # A fixture that fails in setup is never torn down: leave no daemon behind.
            with contextlib.suppress(AssertionError):
                self.stop()
            raise

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (a clean shutdown) and wait; returns the exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            msg = f"the daemon did not stop within {timeout} s of SIGTERM"
            raise AssertionError(msg) from None

    # -- reading it back -------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """``aipager status --json`` parsed."""
        run = subprocess.run(
            [installed_program("aipager"), "status", "--json"], env=self.env,
            capture_output=True, text=True, timeout=30,
        )
        if run.returncode != 0:
            msg = f"aipager status --json failed ({run.returncode}): {run.stderr}"
            raise AssertionError(msg)
        return json.loads(run.stdout)

    def session(self, name: str | None = None) -> dict[str, Any] | None:
        """The daemon's saved view of session ``name`` (the home's session by default)."""
        name = name or self.home.session
        for sess in self.status()["state"].get("sessions", []):
            if sess.get("name") == name:
                return sess
        return None

    def saved(self) -> dict[str, Any]:
        """``{"state", "state_error"}`` as ``aipager status --json`` gives them, read here
        with its own loader: a poll through the CLI costs a Python start (~0.3 s of CPU)."""
        state, problem = status_cmd.load_state(self.env)
        return {"state": state, "state_error": problem}

    def wait_state(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 20.0,
                   what: str = "", *, cli: bool = False) -> dict[str, Any]:
        """Poll the daemon's saved state (``cli``: all of ``aipager status --json``) until
        ``pred`` holds; AssertionError otherwise."""
        deadline = time.monotonic() + timeout
        status: dict[str, Any] = {}
        while True:
            status = self.status() if cli else self.saved()
            try:
                if pred(status):
                    return status
            except (KeyError, TypeError, IndexError):
                pass
            if self.proc is not None and self.proc.poll() is not None:
                msg = f"the daemon exited ({self.proc.returncode}) while waiting for {what}:\n{self.tail()}"
                raise AssertionError(msg)
            if time.monotonic() > deadline:
                break
            time.sleep(0.1 if not cli else 0.3)
        shown = json.dumps(status.get("state"), indent=1)[-4000:]
        msg = f"daemon state never showed {what or 'the expected'} within {timeout} s:\n{shown}"
        raise AssertionError(msg)

    def wait_session(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 20.0,
                     what: str = "", name: str | None = None) -> dict[str, Any]:
        """Poll until the session's saved view satisfies ``pred``; return that view."""
        name = name or self.home.session

        def holds(status: dict[str, Any]) -> bool:
            sess = next((s for s in status["state"]["sessions"] if s.get("name") == name), None)
            return sess is not None and pred(sess)

        status = self.wait_state(holds, timeout, what)
        return next(s for s in status["state"]["sessions"] if s.get("name") == name)

    def log(self) -> str:
        """The daemon's log file (what its log notifier wrote: answers, notices)."""
        try:
            with open(paths.log_file(self.env), encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except FileNotFoundError:
            return ""

    def tail(self) -> str:
        try:
            with open(self.output, encoding="utf-8", errors="replace") as fh:
                out = fh.read()[-3000:]
        except FileNotFoundError:
            out = ""
        return f"--- output\n{out}\n--- log\n{self.log()[-3000:]}"
