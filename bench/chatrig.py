"""The chat benches' rig (``bench.bot``, ``bench.permission``): the real daemon against the
fake Bot API, and a clock on every call the fake answers.

- **The fake.** ``tests/fakes/telegram_api.py`` (``FakeBotAPI``) serves on 127.0.0.1 from a
  thread of the bench process; the repo's ``tests/`` folder is put on ``sys.path`` to import
  it (the bench runs from a checkout, like the tests).  An aiohttp middleware added to the
  fake's app before it starts (``Stamps``) records every call as ``Call(method, t_in, t_out,
  result)``: ``time.monotonic()`` when the request reached the fake's handler and when it was
  answered, and for ``sendMessage``/``editMessageText`` the message the fake answered with
  (id, text, markup).  CLOCK_MONOTONIC is system-wide on Linux, so these times compare with
  the bench's own stamps (datagram sent, hook spawned).
- **The daemon.** ``aipager start`` of the interpreter's own venv (the installed aipager,
  found next to ``sys.executable``) in a private world under a short ``/tmp/apb*`` folder
  (HOME, XDG_*, ``AIPAGER_INSTANCE_DIR``; Unix socket paths stay far below 108 bytes), with
  a config for the owner's private chat and ``AIPAGER_TELEGRAM_API_BASE`` pointing at the
  fake.  Stopped with SIGTERM (SIGKILL for it and its children after a timeout); the folder
  is removed.
- **Events.** Datagrams go to ``paths.socket_path(env)`` as the hook sends them (non-blocking
  ``sendto``, spool file when the queue is full: ``spool.send_or_spool``), each Claude Code's
  hook payload plus ``"session"`` (shapes from ``tests/fixtures/sequences``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO, "tests")
BIN = os.path.dirname(sys.executable)


def telegram_fake() -> Any:
    """The ``fakes.telegram_api`` module of this checkout."""
    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    from fakes import telegram_api

    return telegram_api


def program(name: str) -> str:
    """An installed aipager program of the venv running the bench."""
    path = os.path.join(BIN, name)
    if not os.access(path, os.X_OK):
        msg = f"{path} is missing: install aipager into this venv (pip install -e .)"
        raise SystemExit(msg)
    return path


# -- the fake's clock ----------------------------------------------------------------------


@dataclass
class Call:
    method: str
    #: monotonic seconds: the request reached the fake's handler / was answered
    t_in: float
    t_out: float
    #: the message the fake answered with (sendMessage / editMessageText), else None
    result: dict | None

    @property
    def text(self) -> str:
        return str((self.result or {}).get("text") or "")

    @property
    def message_id(self) -> int | None:
        return (self.result or {}).get("message_id")

    def buttons(self) -> dict[str, str]:
        rows = ((self.result or {}).get("reply_markup") or {}).get("inline_keyboard") or []
        return {b["text"]: b.get("callback_data", "") for row in rows for b in row}


_MESSAGE_METHODS = {"sendmessage", "editmessagetext"}


class Stamps:
    """Every call the fake answers, timed in the fake's own loop (see the module docstring)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        #: (method, t_in) of every request as it reaches the handler (long polls too)
        self.arrived: list[tuple[str, float]] = []
        self.cond = threading.Condition()
        from aiohttp import web

        @web.middleware
        async def stamp(request: Any, handler: Any) -> Any:
            t_in = time.monotonic()
            with self.cond:
                self.arrived.append((request.match_info.get("method", ""), t_in))
                self.cond.notify_all()
            resp = await handler(request)
            t_out = time.monotonic()
            method = request.match_info.get("method", "")
            result = None
            body = getattr(resp, "body", None)
            if method.lower() in _MESSAGE_METHODS and isinstance(body, (bytes, bytearray)):
                with contextlib.suppress(ValueError):
                    doc = json.loads(body)
                    if doc.get("ok") and isinstance(doc.get("result"), dict):
                        result = doc["result"]
            with self.cond:
                self.calls.append(Call(method, t_in, t_out, result))
                self.cond.notify_all()
            return resp

        self.middleware = stamp

    def mark(self) -> int:
        """An index: ``wait(..., since=mark())`` looks only at calls after now."""
        with self.cond:
            return len(self.calls)

    def wait(self, method: str, pred: Callable[[Call], bool] | None = None, timeout: float = 10.0,
             since: int = 0) -> Call | None:
        """The first call of ``method`` (from index ``since``) matching ``pred``, else None."""
        deadline = time.monotonic() + timeout
        method = method.lower()
        with self.cond:
            while True:
                for call in self.calls[since:]:
                    if call.method.lower() == method and (pred is None or pred(call)):
                        return call
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(min(left, 0.5))

    def wait_arrival(self, method: str, timeout: float = 10.0) -> bool:
        """Whether a request of ``method`` reached the fake (answered or not) within ``timeout``."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not any(m.lower() == method.lower() for m, _ in self.arrived):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.5))
        return True

    def of(self, method: str, since: int = 0) -> list[Call]:
        with self.cond:
            return [c for c in self.calls[since:] if c.method.lower() == method.lower()]


# -- the daemon in its own world ---------------------------------------------------------


class Rig:
    """The fake Bot API in a thread and one ``aipager start`` against it (a context manager).

    Attributes:
        env: the daemon's environment (paths, knobs); hooks run with it too.
        fake, stamps, base: the fake, its clock, its base URL.
        chat_id: the owner's private chat (== the owner's user id).
    """

    def __init__(self, extra_env: dict[str, str] | None = None, *,
                 args: tuple[str, ...] = ("start",), extra: dict[str, Any] | None = None) -> None:
        #: knobs added to the daemon's environment (``AIPAGER_WEB_PORT``…)
        self.extra_env = dict(extra_env or {})
        #: ``aipager`` arguments that start it (``start --hub``), the config's extra keys
        self.args, self.extra = args, dict(extra or {})
        self.tg = telegram_fake()
        self.fake = self.tg.FakeBotAPI()
        self.chat_id = self.fake.add_private_chat(self.tg.OWNER)
        self.stamps = Stamps()
        self.fake.app.middlewares.append(self.stamps.middleware)
        self.root = ""
        self.env: dict[str, str] = {}
        self.proc: subprocess.Popen | None = None
        self.base = ""
        self._stack = contextlib.ExitStack()
        self._sock: socket.socket | None = None

    # lifecycle

    def __enter__(self) -> Rig:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _start(self) -> None:
        self.prepare()
        self.launch()

    def prepare(self) -> None:
        """The daemon's world (folders, config, the fake in its thread), not yet started."""
        from aipager import config
        from aipager.proto import paths

        self.root = tempfile.mkdtemp(prefix="apb", dir="/tmp")
        self._stack.callback(shutil.rmtree, self.root, True)
        home = os.path.join(self.root, "h")
        inst = os.path.join(self.root, "i")
        for folder in (home, inst, os.path.join(self.root, "project")):
            os.makedirs(folder, mode=0o700)
        self.base = self._stack.enter_context(self.fake.in_thread())
        self.env = {
            "PATH": os.pathsep.join([BIN, "/usr/bin", "/bin"]),
            "HOME": home,
            "XDG_CONFIG_HOME": os.path.join(home, ".config"),
            "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
            "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
            "XDG_RUNTIME_DIR": inst,
            "AIPAGER_INSTANCE_DIR": inst,
            "AIPAGER_TELEGRAM_API_BASE": self.base,
            "LANG": "C.UTF-8",
            **self.extra_env,
        }
        owner = self.tg.OWNER["id"]
        config.save(self.env, config.Config(bot_token=self.tg.TOKEN, chat_id=self.chat_id,
                                            members=(config.Member(owner, "owner", "owner"),),
                                            extra=self.extra))
        self.address = paths.socket_path(self.env)
        self.spool_dir = paths.spool_dir(self.env)
        self.output = os.path.join(self.root, "daemon.out")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)

    def launch(self) -> None:
        """``aipager start``, until it is ready: the socket is bound, the bot said hello
        (getMe, command menu) and polls.  Its output is appended to ``self.output``."""
        mark = self.stamps.mark()
        with open(self.output, "ab") as out:
            self.proc = subprocess.Popen([program("aipager"), *self.args], env=self.env, cwd=self.root,
                                         stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        from aipager.daemon.ingest import socket_is_live

        while not socket_is_live(self.address):
            self._alive("binding its socket")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the daemon never bound {self.address}:\n{self.tail()}")
            time.sleep(0.05)
        if self.stamps.wait("setMyCommands", timeout=20, since=mark) is None:
            raise RuntimeError(f"the daemon's bot never reached the fake Bot API:\n{self.tail()}")
        if not self.stamps.wait_arrival("getUpdates", timeout=10):
            raise RuntimeError(f"the daemon's bot does not poll:\n{self.tail()}")

    def kill_hard(self) -> None:
        """SIGKILL the daemon process alone (its drain lives on), as the OOM killer would."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def _alive(self, what: str) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"the daemon exited ({self.proc.returncode}) while {what}:\n"
                               f"{self.tail()}")

    def close(self) -> None:
        """SIGTERM (SIGKILL it and its children after 20 s), stop the fake, remove the world."""
        try:
            if self._sock is not None:
                self._sock.close()
                self._sock = None
            if self.proc is not None:
                stop_process(self.proc)
        finally:
            self._stack.close()

    def log_problems(self) -> int:
        """ERROR/CRITICAL lines and tracebacks in the daemon's output so far."""
        try:
            with open(self.output, encoding="utf-8", errors="replace") as fh:
                return sum(1 for line in fh if " ERROR " in line or " CRITICAL " in line
                           or line.startswith("Traceback"))
        except OSError:
            return 0

    def tail(self) -> str:
        try:
            with open(self.output, encoding="utf-8", errors="replace") as fh:
                return fh.read()[-3000:]
        except OSError:
            return ""

    # talking to it

    def send(self, ev: dict) -> float:
        """One datagram as the hook sends it; returns the monotonic time just before ``sendto``."""
        from aipager.daemon.spool import send_or_spool

        data = json.dumps(ev).encode()
        assert self._sock is not None
        t = time.monotonic()
        how = send_or_spool(self._sock, self.address, self.spool_dir, data)
        if how == "lost":
            raise RuntimeError(f"a datagram was lost ({ev.get('hook_event_name')})")
        return t

    def status(self) -> dict:
        """``aipager status --json``."""
        run = subprocess.run([program("aipager"), "status", "--json"], env=self.env,
                             capture_output=True, text=True, timeout=30)
        if run.returncode != 0:
            raise RuntimeError(f"aipager status --json failed: {run.stderr}")
        return json.loads(run.stdout)

    def session(self, name: str, status: dict | None = None) -> dict | None:
        status = status or self.status()
        return next((s for s in status["state"].get("sessions", []) if s.get("name") == name),
                    None)

    def wait_status(self, pred: Callable[[dict], Any], timeout: float = 20.0,
                    what: str = "") -> dict:
        deadline = time.monotonic() + timeout
        while True:
            self._alive(f"waiting for {what}")
            status = self.status()
            with contextlib.suppress(KeyError, TypeError, IndexError):
                if pred(status):
                    return status
            if time.monotonic() > deadline:
                raise RuntimeError(f"the daemon's state never showed {what} within {timeout} s")
            time.sleep(0.2)


# -- events as the hook forwards them ------------------------------------------------------


class Session:
    """Claude Code's hook payloads for one session, plus ``"session"`` as the hook adds it."""

    def __init__(self, rig: Rig, name: str) -> None:
        self.rig = rig
        self.name = name
        self.label = name.removeprefix("claude-")
        self.id = f"00000000-0000-4000-8000-{zlib.crc32(name.encode()):012d}"
        self.cwd = os.path.join(rig.root, "project")
        self.prompt_id = ""
        self._turn = 0

    def base(self, event: str, **more: Any) -> dict:
        ev = {"session_id": self.id,
              "transcript_path": os.path.join(self.rig.root, f"{self.id}.jsonl"),
              "cwd": self.cwd, "hook_event_name": event}
        if self.prompt_id:
            ev["prompt_id"] = self.prompt_id
        ev.update(more)
        ev["session"] = self.name
        return ev

    def start(self) -> float:
        return self.rig.send(self.base("SessionStart", source="startup"))

    def prompt(self, text: str) -> float:
        self._turn += 1
        self.prompt_id = f"{self.id[:24]}{self._turn:012d}"
        return self.rig.send(self.base("UserPromptSubmit", permission_mode="default", prompt=text))

    def pre_tool(self, tool_use_id: str, command: str) -> float:
        return self.rig.send(self.base("PreToolUse", permission_mode="default", tool_name="Bash",
                                       tool_input={"command": command, "description": "run it"},
                                       tool_use_id=tool_use_id))

    def post_tool(self, tool_use_id: str, command: str, stdout: str = "") -> float:
        return self.rig.send(self.base(
            "PostToolUse", permission_mode="default", tool_name="Bash",
            tool_input={"command": command, "description": "run it"},
            tool_response={"stdout": stdout, "stderr": "", "interrupted": False,
                           "isImage": False, "noOutputExpected": not stdout},
            tool_use_id=tool_use_id, duration_ms=12))

    def permission_request(self, tool_use_id: str, command: str) -> dict:
        """The PermissionRequest payload Claude Code gives the hook (stdin: no ``session``)."""
        ev = self.base("PermissionRequest", permission_mode="default", tool_name="Bash",
                       tool_input={"command": command, "description": "run it"},
                       permission_suggestions=[{"type": "addDirectories",
                                                "directories": [self.cwd],
                                                "destination": "session"}],
                       tool_use_id=tool_use_id)
        del ev["session"]
        return ev

    def stop(self, answer: str) -> float:
        return self.rig.send(self.base("Stop", permission_mode="default", stop_hook_active=False,
                                       last_assistant_message=answer, background_tasks=[],
                                       session_crons=[]))


# -- processes ---------------------------------------------------------------------------


def children(pid: int) -> list[int]:
    """``pid``'s descendants (from /proc/<pid>/task/*/children)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tids = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as fh:
                    kids = [int(x) for x in fh.read().split()]
            except OSError:
                continue
            for kid in kids:
                if kid not in found:
                    found.append(kid)
                    todo.append(kid)
    return found


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM ``proc``; after 20 s, SIGKILL it and the children it had."""
    if proc.poll() is not None:
        return
    kids = children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        for pid in [proc.pid, *kids]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(5)


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM in KB (empty when the process is gone)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            parts = fh.read().split(b"\0")
    except OSError:
        return "?"
    return " ".join(os.path.basename(p.decode(errors="replace")) if i == 0 else
                    p.decode(errors="replace") for i, p in enumerate(parts) if p)


# -- floors ------------------------------------------------------------------------------


class DirectClient:
    """``sendMessage`` straight to the fake with aiohttp (a keep-alive session, like aiogram's):
    the HTTP floor of every chat latency."""

    def __init__(self, base: str, token: str, chat_id: int) -> None:
        import asyncio

        import aiohttp

        self._loop = asyncio.new_event_loop()
        self._url = f"{base}/bot{token}/sendMessage"
        self._chat = chat_id
        self._session = self._loop.run_until_complete(self._open(aiohttp))

    @staticmethod
    async def _open(aiohttp: Any) -> Any:
        return aiohttp.ClientSession()

    async def _post(self, text: str) -> float:
        start = time.perf_counter()
        async with self._session.post(self._url, data={"chat_id": str(self._chat),
                                                       "text": text}) as resp:
            doc = await resp.json()
        elapsed = (time.perf_counter() - start) * 1000
        if not doc.get("ok"):
            raise RuntimeError(f"direct sendMessage refused: {doc}")
        return elapsed

    def send_ms(self, text: str) -> float:
        return self._loop.run_until_complete(self._post(text))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(self._session.close())
        self._loop.close()


def spawn_ms(argv: list[str]) -> float:
    """Milliseconds from spawn to reaped (stdin/stdout/stderr /dev/null)."""
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, {"PATH": "/usr/bin:/bin"}, file_actions=actions)
    os.waitpid(pid, 0)
    return (time.perf_counter() - start) * 1000


def floor_argv() -> dict[str, list[str]]:
    return {"/bin/true spawn": ["/bin/true"],
            "python -S -I -c pass spawn": [sys.executable, "-S", "-I", "-c", "pass"]}


def stats_row(group: str, case: str, contender: str, times: list[float], true_p50: float | None,
              py_p50: float | None = None, **extra: Any) -> dict:
    """A table row (p50/p95 and ratios to the floors of the same run)."""
    import statistics

    from bench.harness import percentile

    p50 = statistics.median(times)
    row = {"group": group, "case": case, "contender": contender, "p50_ms": p50,
           "p95_ms": percentile(times, 0.95), "runs": len(times)}
    if true_p50:
        row["x_true"] = p50 / true_p50
    if py_p50:
        row["x_python"] = p50 / py_p50
    row.update(extra)
    return row
