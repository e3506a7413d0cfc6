"""Run the hook executables (native or twin) against a real datagram socket.

Shared by tests/hook and bench/: a ``Receiver`` binds the AF_UNIX datagram
socket the hook resolves (``paths.socket_path``), ``contender_cmd`` builds the
command line of the installed native binary or of the pure-Python twin
started exactly as the native stage 2 starts it (``python -S -I -c BOOT``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field

import aipager
from aipager.proto import paths
from aipager.hookpy import entry

#: the bootstrap the native binary execs on a decline (_fasthook/stage2.pxi)
BOOT = entry.BOOT
TOOLS = ("hook", "statusline")


def native_path(tool: str) -> str | None:
    """The installed ``aipager-<tool>`` of the environment under test."""
    name = f"aipager-{tool}"
    beside = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(beside):
        return beside
    return shutil.which(name)


def is_elf(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(4) == b"\x7fELF"


def needed_libraries(path: str) -> list[str]:
    """The shared libraries an executable is linked with (``readelf -d``, else ``ldd``): the
    compiled hook, status line and drain must name no libpython."""
    tool = shutil.which("readelf")
    if tool:
        dynamic = subprocess.run([tool, "-d", path], capture_output=True, text=True, check=True).stdout
        return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    return subprocess.run(["ldd", path], capture_output=True, text=True, check=True).stdout.split()


def twin_cmd(tool: str) -> list[str]:
    """The pure-Python twin, from wherever this test run imports aipager."""
    site = os.path.dirname(os.path.dirname(os.path.abspath(aipager.__file__)))
    return [sys.executable, "-S", "-I", "-c", BOOT, site, tool]


def listing_cmd(tool: str, site: str | None = None) -> list[str]:
    """The twin as BOOT starts it, printing the names in ``sys.modules`` to stderr at the end."""
    cmd = twin_cmd(tool)
    if site is not None:
        cmd[5] = site
    cmd[4] = boot_loader() + (
        "from aipager.hookpy.entry import main\nrc = main(sys.argv[2:])\n"
        "sys.stderr.write(' '.join(sorted(sys.modules)))\nsys.exit(rc)\n"
    )
    return cmd


def copy_site(source_site: str, dest_site: str, **replace: bytes) -> str:
    """Copy the aipager package from one site dir to another, without the
    install-time bundle; ``replace`` maps paths relative to the new site to new
    contents.  Returns ``dest_site``."""
    import pathlib

    from aipager.hookpy import hot

    shutil.copytree(os.path.join(source_site, "aipager"), os.path.join(dest_site, "aipager"),
                    ignore=shutil.ignore_patterns(os.path.basename(hot.FILE), "__pycache__"))
    for rel, data in replace.items():
        pathlib.Path(dest_site, rel).write_bytes(data)
    return dest_site


def boot_loader() -> str:
    """BOOT up to where it runs the twin: sys.path and the bundle set up, nothing run."""
    cut = BOOT.find("try:\n    from aipager.hookpy.entry import run")
    assert cut > 0, "entry.BOOT changed: update boot_loader"
    return BOOT[:cut]


def require(kind: str) -> str:
    """``kind`` after checking that a native contender really is the installed ELF."""
    if kind == "native":
        path = native_path("hook")
        assert path and is_elf(path), "the native aipager-hook must be installed"
    return kind


def contender_cmd(kind: str, tool: str) -> list[str]:
    if kind == "twin":
        return twin_cmd(tool)
    path = native_path(tool)
    if path is None:
        msg = f"aipager-{tool} is not installed next to {sys.executable} nor on PATH"
        raise FileNotFoundError(msg)
    return [path]


class Receiver:
    """A bound, never-blocking datagram socket standing in for the daemon."""

    def __init__(self, path: str) -> None:
        self.path = path
        if os.path.exists(path):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.setblocking(False)

    def drain_raw(self) -> list[bytes]:
        got = []
        while True:
            try:
                got.append(self.sock.recv(1 << 22))
            except BlockingIOError:
                return got

    def drain(self) -> list[dict]:
        return [json.loads(d) for d in self.drain_raw()]

    def close(self) -> None:
        self.sock.close()
        if os.path.exists(self.path):
            os.unlink(self.path)


@dataclass
class Result:
    exit: int
    stdout: bytes
    stderr: bytes
    sent: list = field(default_factory=list)
    raw: list = field(default_factory=list)


def run(cmd: list[str], stdin: bytes, env: dict, receiver: Receiver | None = None, timeout: float = 60) -> Result:
    """Run one contender; the datagrams it left in the receiver's queue."""
    done = subprocess.run(cmd, input=stdin, env=env, capture_output=True, timeout=timeout)
    raw = receiver.drain_raw() if receiver is not None else []
    return Result(done.returncode, done.stdout, done.stderr, [json.loads(d) for d in raw], raw)


def hook_env(session: str | None = "claude-jim", **overrides: str | None) -> dict:
    """os.environ (isolated by tests/conftest.py) + the session + overrides."""
    env = dict(os.environ)
    env.pop("CLAUDE_DTACH_SESSION", None)
    if session is not None:
        env["CLAUDE_DTACH_SESSION"] = session
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def receiver_for(env: dict) -> Receiver:
    return Receiver(paths.socket_path(env))


#: what the native hook writes on stderr (AIPAGER_DEBUG=1) when it hands over
DECLINED = b"declined to stage 2"


def run_watched(kind: str, stdin: bytes, env: dict) -> tuple[Result, bool]:
    """One hook run with AIPAGER_DEBUG=1 and a daemon stand-in: the result,
    and whether the native hook declined to the Python twin."""
    receiver = receiver_for(env)
    try:
        done = run(contender_cmd(kind, "hook"), stdin, dict(env, AIPAGER_DEBUG="1"), receiver)
    finally:
        receiver.close()
    assert b"Traceback" not in done.stderr, done.stderr
    return done, DECLINED in done.stderr
