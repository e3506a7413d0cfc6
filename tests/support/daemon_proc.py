"""The real daemon in a subprocess (as `aipager start` runs it), on the test's isolated env."""

from __future__ import annotations

import os
import subprocess
import sys
import time

RUN = (
    "import os, sys\n"
    "from aipager.daemon.app import run_daemon\n"
    "from aipager.proto.errors import AipagerError\n"
    "try:\n"
    "    sys.exit(run_daemon(dict(os.environ)))\n"
    "except AipagerError as exc:\n"
    "    print(exc, file=sys.stderr)\n"
    "    sys.exit(exc.exit_code)\n"
)


def spawn() -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    # -P: "-c" would put the current folder first on sys.path, and run from a checkout that
    # is the source tree: the daemon must be the installed one (its compiled parts too)
    return subprocess.Popen([sys.executable, "-P", "-c", RUN], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def wait_for(pred, timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("timed out")
        time.sleep(0.02)
