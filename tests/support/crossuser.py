"""Attacks by a second local user, run for real (issue 16).

A scenario is a plain function of a test module.  ``run`` starts it as root
in a private mount namespace (``unshare -m``) whose /tmp is a fresh tmpfs,
and the scenario drops to two unprivileged uids with ``setpriv``: ``ATTACKER``
plants folders, sockets and symlinks in /tmp, ``VICTIM`` runs aipager with
the default paths (a HOME, no XDG_RUNTIME_DIR, no AIPAGER_*).  The uids need
no passwd entry, so neither the user database nor the real /tmp is touched.
Where the machine refuses (not root, no setpriv/unshare, no mount
namespace), ``run`` skips with the reason.

Inside the namespace, folders on the way to the interpreter that others may
not search (a pyenv under a 0700 /root) are made searchable by mounting a
0755 tmpfs over them with the needed child bound back: nothing outside the
namespace changes.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

#: unprivileged uids (and gids) with no passwd entry
ATTACKER = 64201
VICTIM = 64202
#: exit status of the namespace runner when the machine refuses the setup
SKIP = 77
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(TESTS)


@functools.lru_cache(maxsize=1)
def unavailable() -> str | None:
    """Why cross-user scenarios cannot run here, or None."""
    if os.geteuid() != 0:
        return "cross-user attacks need root to act as two users (setpriv) in a private /tmp"
    for tool in ("unshare", "setpriv", "mount"):
        if shutil.which(tool) is None:
            return f"cross-user attacks need {tool}, which is not installed"
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return f"the machine refuses a private mount namespace: {probe.stderr.strip()}"
    return None


def run(test_file: str, scenario: str, *args: str, timeout: float = 240) -> None:
    """Run ``scenario(*args)`` of ``test_file`` in the namespace; fail with its output."""
    import pytest

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": TESTS,
           "LANG": "C.UTF-8", "HOME": "/"}
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", sys.executable, os.path.abspath(__file__),
         os.path.abspath(test_file), scenario, *args],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO, check=False)
    if proc.returncode == SKIP:
        pytest.skip(proc.stdout.strip().splitlines()[-1])
    assert proc.returncode == 0, f"scenario {scenario}{args} failed:\n{proc.stdout}\n{proc.stderr}"


# ---------------------------------------------------------------- inside the namespace


def _mount(*argv: str) -> None:
    subprocess.run(["mount", *argv], check=True, capture_output=True)


def _expose(paths_needed: list[str]) -> None:
    """Make every folder on the way to ``paths_needed`` searchable by others."""
    wanted: dict[str, set[str]] = {}
    for target in paths_needed:
        parts = os.path.realpath(target).strip("/").split("/")
        for i in range(1, len(parts)):
            folder = "/" + "/".join(parts[:i])
            if not os.stat(folder).st_mode & 0o001:
                wanted.setdefault(folder, set()).add(parts[i])
                break
    for folder, children in wanted.items():
        kept = {}
        for child in children:
            keep = f"/tmp/.keep-{len(kept)}-{child}"
            os.mkdir(keep)
            _mount("--bind", os.path.join(folder, child), keep)
            kept[child] = keep
        _mount("-t", "tmpfs", "-o", "mode=0755", "crossuser", folder)
        for child, keep in kept.items():
            os.mkdir(os.path.join(folder, child), 0o755)
            _mount("--move", keep, os.path.join(folder, child))
            os.rmdir(keep)


def _hold_tmp_paths(paths_needed: list[str]) -> list[tuple[str, str]]:
    """Bind the folders under /tmp that the run needs (a checkout or venv made there, as CI
    may) to a holding place, so they can come back after /tmp is replaced."""
    tops = sorted({"/tmp/" + os.path.realpath(p)[len("/tmp/"):].split("/", 1)[0]
                   for p in paths_needed if os.path.realpath(p).startswith("/tmp/")})
    held = []
    for i, top in enumerate(tops):
        hold = f"/run/crossuser-hold-{os.getpid()}-{i}"
        os.makedirs(hold)
        _mount("--bind", top, hold)
        held.append((top, hold))
    return held


def _isolate() -> str | None:
    """A fresh /tmp, the interpreter reachable by others; None, or why not."""
    try:
        held = _hold_tmp_paths([os.path.realpath(sys.executable), sys.prefix, REPO])
        _mount("-t", "tmpfs", "-o", "mode=1777", "crossuser-tmp", "/tmp")
        for top, hold in held:
            os.mkdir(top, 0o755)
            _mount("--move", hold, top)
            os.rmdir(hold)
        _expose([os.path.realpath(sys.executable), sys.prefix, sys.base_prefix, REPO])
    except (subprocess.CalledProcessError, OSError) as exc:
        return f"cannot set up the private /tmp: {exc}"
    probe = as_user(ATTACKER, [sys.executable, "-c", "import aipager"], user_env(ATTACKER))
    if probe.returncode != 0:
        return f"an unprivileged user cannot run this Python here: {probe.stderr.strip()[-300:]}"
    return None


def home(uid: int) -> str:
    """``/tmp/home-<uid>``, the user's own 0700 HOME (made once)."""
    path = f"/tmp/home-{uid}"
    if not os.path.isdir(path):
        os.mkdir(path, 0o700)
        os.chown(path, uid, uid)
    return path


def user_env(uid: int, **extra: str) -> dict[str, str]:
    """The default environment of a login: HOME and PATH, no XDG_* and no AIPAGER_*."""
    env = {"HOME": home(uid), "PATH": os.path.dirname(sys.executable) + ":/usr/bin:/bin",
           "LANG": "C.UTF-8", "PYTHONPATH": TESTS}
    env.update(extra)
    return env


def _as(uid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


def as_user(uid: int, argv: list[str], env: dict[str, str], stdin: bytes | str | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``argv`` as ``uid`` (text output when ``stdin`` is not bytes)."""
    text = not isinstance(stdin, bytes)
    return subprocess.run(_as(uid) + argv, input=stdin, env=env, capture_output=True,
                          timeout=timeout, text=text, check=False, cwd="/tmp")


def popen_as(uid: int, argv: list[str], env: dict[str, str], **kw) -> subprocess.Popen:
    return subprocess.Popen(_as(uid) + argv, env=env, cwd="/tmp", **kw)


def python_as(uid: int, code: str, *args: str, env: dict[str, str] | None = None,
              stdin: str | None = None) -> subprocess.CompletedProcess:
    return as_user(uid, [sys.executable, "-c", code, *args], env or user_env(uid), stdin)


_LISTEN = r"""
import json, os, select, socket, sys
path, kind, private = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
if private:
    from aipager.proto import trust
    trust.ensure_private_dir(os.path.dirname(path))
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM if kind == "dgram" else socket.SOCK_STREAM)
s.bind(path)
if not private:
    os.chmod(path, 0o777)  # anyone may talk to it: the attacker hopes someone does
if kind == "stream":
    s.listen(8)
print("ready", flush=True)
got = []
while True:
    ready, _, _ = select.select([s, 0], [], [])
    if s in ready:
        if kind == "dgram":
            got.append(s.recv(1 << 20).decode("utf-8", "replace"))
        else:
            conn, _ = s.accept()
            conn.settimeout(2)
            try:
                got.append(conn.recv(1 << 20).decode("utf-8", "replace") or "<connected>")
            except OSError:
                got.append("<connected>")
            conn.close()
    if 0 in ready and not os.read(0, 1):
        break
print(json.dumps(got), flush=True)
"""


class Listener:
    """A socket bound by ``uid`` at ``path`` that records what reaches it.

    ``kind`` is "dgram" (a control socket) or "stream" (a dtach socket).  With
    ``private`` the user first makes the socket's folder its private folder
    (as the daemon does) and leaves the socket 0755; else the socket is 0777.
    """

    def __init__(self, uid: int, path: str, kind: str = "dgram", private: bool = False) -> None:
        self.path = path
        self.proc = popen_as(uid, [sys.executable, "-c", _LISTEN, path, kind, "1" if private else "0"],
                             user_env(uid), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        assert line == "ready", f"listener at {path}: {line} {self.proc.stderr.read()}"

    def stop(self) -> list[str]:
        """What reached the socket, in order."""
        out, err = self.proc.communicate("", timeout=20)
        assert self.proc.returncode == 0, err
        return json.loads(out.strip().splitlines()[-1])


def wait_for(pred, timeout: float = 20.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def main(argv: list[str]) -> int:
    test_file, scenario, *args = argv
    why = _isolate()
    if why:
        print(why)
        return SKIP
    spec = importlib.util.spec_from_file_location("crossuser_scenarios", test_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    getattr(module, scenario)(*args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
