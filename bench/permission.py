"""A permission request through the chat and back: the installed hook, the real daemon, the
fake Bot API.

``python -m bench --only permission``.  The rig is ``bench/chatrig.py``: ``aipager start``
of this venv in a throwaway world against the fake Bot API (``tests/fakes/telegram_api.py``,
served from a thread of this process; the repo's ``tests/`` folder goes on ``sys.path`` for
it), every Bot API call timed where the fake receives it.

Each run, as Claude Code does it: the PreToolUse datagram of a Bash call (distinct
``tool_use_id`` and command), then the installed ``aipager-hook`` spawned with the
PermissionRequest payload on stdin (from a file), ``CLAUDE_DTACH_SESSION=claude-perm`` and
the daemon's HOME/instance environment; its stdout is a pipe the bench reads.

- **hook start → request in the chat**: from ``posix_spawn`` of the hook to the request's
  ``sendMessage`` (with its "✅ Allow" button) reaching the fake [p50 ≤ 50 ms].
- **tap → decision on stdout**: from injecting the tap on "✅ Allow" (``fake.tap``: the
  callback query answers the bot's parked ``getUpdates``) to the first byte of the
  decision JSON on the hook's stdout [p50 ≤ 50 ms]; the output is checked to be the allow
  decision, and the hook to exit 0.

Floors of the same runs: ``/bin/true`` and ``python -S -I -c pass`` spawned to exit, and a
``sendMessage`` round trip straight to the fake with aiohttp.  Runs: ``--rounds`` (at most
15) after ``--warmup`` (at most 3).
"""

from __future__ import annotations

import json
import os
import select
import signal
import statistics
import time

from bench import chatrig

GROUP = "permission"
MAX_RUNS = 15
TARGET_MS = 50.0
SESSION = "claude-perm"
#: seconds the hook waits for the tap (bounded: a lost tap ends the run, not the bench)
DEADLINE = "10"
ALLOW = (b'{"hookSpecificOutput":{"hookEventName":"PermissionRequest",'
         b'"decision":{"behavior":"allow"}}}')


class Hook:
    """One ``aipager-hook`` process: stdin from a file, stdout a pipe, stderr a file."""

    def __init__(self, argv: list[str], env: dict, stdin_path: str, stderr_path: str) -> None:
        read_fd, write_fd = os.pipe()
        in_fd = os.open(stdin_path, os.O_RDONLY)
        err_fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            actions = [(os.POSIX_SPAWN_DUP2, in_fd, 0), (os.POSIX_SPAWN_DUP2, write_fd, 1),
                       (os.POSIX_SPAWN_DUP2, err_fd, 2), (os.POSIX_SPAWN_CLOSE, read_fd)]
            self.started = time.monotonic()
            self.pid = os.posix_spawn(argv[0], argv, env, file_actions=actions)
        finally:
            os.close(in_fd)
            os.close(err_fd)
            os.close(write_fd)
        self.fd = read_fd
        self.out = b""
        self.first_byte: float | None = None
        self.status: int | None = None

    def read(self, timeout: float) -> None:
        """Read stdout to EOF (stamping the first byte) within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                return
            chunk = os.read(self.fd, 65536)
            if self.first_byte is None and chunk:
                self.first_byte = time.monotonic()
            if not chunk:
                return
            self.out += chunk

    def reap(self, timeout: float = 5.0) -> int:
        deadline = time.monotonic() + timeout
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                _, status = os.waitpid(self.pid, 0)
                self.status = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.005)
        return self.status

    def close(self) -> None:
        if self.status is None:
            self.reap(0)
        os.close(self.fd)


def run(args) -> list[dict]:
    runs = max(3, min(MAX_RUNS, args.rounds))
    warmup = max(0, min(3, args.warmup))
    hook_argv = [chatrig.program("aipager-hook")]
    floors = chatrig.floor_argv()
    times: dict[str, list[float]] = {"sent": [], "decided": [], "http": [],
                                     **{name: [] for name in floors}}
    with chatrig.Rig() as rig:
        env = {**rig.env, "CLAUDE_DTACH_SESSION": SESSION,
               "AIPAGER_PERMISSION_REPLY_DEADLINE": DEADLINE}
        payload = os.path.join(rig.root, "permission-request.json")
        stderr = os.path.join(rig.root, "hook.err")
        sess = chatrig.Session(rig, SESSION)
        sess.start()
        sess.prompt("touch a few files")
        client = chatrig.DirectClient(rig.base, rig.tg.TOKEN, rig.chat_id)
        try:
            for i in range(warmup + runs):
                tid, cmd = f"toolu_perm{i:03d}", f"touch {rig.root}/project/made-{i}"
                with open(payload, "w", encoding="utf-8") as fh:
                    json.dump(sess.permission_request(tid, cmd), fh)
                sess.pre_tool(tid, cmd)
                mark = rig.stamps.mark()
                hook = Hook(hook_argv, env, payload, stderr)
                try:
                    shown = rig.stamps.wait("sendMessage", lambda c, cmd=cmd: cmd in c.text
                                            and "✅ Allow" in c.buttons(), 10, mark)
                    if shown is None:
                        raise RuntimeError(f"run {i}: the request never reached the chat\n"
                                           f"{_hook_err(stderr)}\n{rig.tail()}")
                    tapped = time.monotonic()
                    rig.fake.tap(shown.message_id, shown.buttons()["✅ Allow"])
                    hook.read(15)
                    code = hook.reap()
                finally:
                    hook.close()
                if hook.first_byte is None or hook.out.strip() != ALLOW or code != 0:
                    raise RuntimeError(f"run {i}: the hook printed {hook.out!r}, exit {code}\n"
                                       f"{_hook_err(stderr)}\n{rig.tail()}")
                sess.post_tool(tid, cmd)
                http = client.send_ms(f"floor {i}")
                spawned = {name: chatrig.spawn_ms(argv) for name, argv in floors.items()}
                if i >= warmup:
                    times["sent"].append((shown.t_in - hook.started) * 1000)
                    times["decided"].append((hook.first_byte - tapped) * 1000)
                    times["http"].append(http)
                    for name, ms in spawned.items():
                        times[name].append(ms)
        finally:
            client.close()
        problems = rig.log_problems()
    true_p50 = statistics.median(times["/bin/true spawn"])
    py_p50 = statistics.median(times["python -S -I -c pass spawn"])
    rows = []
    case = "hook start→request sendMessage"
    for name in floors:
        rows.append(chatrig.stats_row(GROUP, case, name.removesuffix(" spawn"), times[name],
                                      true_p50, py_p50))
    p50 = statistics.median(times["sent"])
    rows.append(chatrig.stats_row(GROUP, case, "aipager-hook→fake", times["sent"], true_p50,
                                  py_p50, target_p50_ms=TARGET_MS, met=p50 <= TARGET_MS))
    case = "tap→decision on hook stdout"
    rows.append(chatrig.stats_row(GROUP, case, "/bin/true", times["/bin/true spawn"], true_p50,
                                  py_p50))
    rows.append(chatrig.stats_row(GROUP, case, "direct sendMessage RTT", times["http"], true_p50,
                                  py_p50))
    p50 = statistics.median(times["decided"])
    rows.append(chatrig.stats_row(GROUP, case, "tap→stdout", times["decided"], true_p50, py_p50,
                                  target_p50_ms=TARGET_MS, met=p50 <= TARGET_MS))
    sent_p50 = statistics.median(times["sent"])
    rows.append({"group": GROUP, "case": "targets", "runs": runs, "target_p50_ms": TARGET_MS,
                 "hook_to_chat_met": sent_p50 <= TARGET_MS, "tap_to_stdout_met": p50 <= TARGET_MS,
                 "daemon_log_errors": problems})
    return rows


def _hook_err(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return "hook stderr: " + fh.read()[-2000:]
    except OSError:
        return ""
