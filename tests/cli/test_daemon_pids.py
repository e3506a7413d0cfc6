"""Finding the running daemon from the CLI: by its control socket or by its lock."""

from __future__ import annotations

import signal
import subprocess
import sys

from aipager.proto import paths
from aipager.cli._daemon import daemon_pids, lock_holder

HOLD = (
    "import sys, time\n"
    "from aipager.daemon import lock\n"
    "lock.acquire(sys.argv[1])\n"
    "print('held', flush=True)\n"
    "time.sleep(60)\n"
)


def _hold_lock(path: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, path], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_the_lock_holder_counts_as_the_daemon_without_a_visible_socket(tmp_path) -> None:
    env = {"HOME": str(tmp_path), "AIPAGER_INSTANCE_DIR": str(tmp_path / "inst"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    assert daemon_pids(env) == set()
    proc = _hold_lock(paths.lock_file(env))
    try:
        assert daemon_pids(env) == {proc.pid}
    finally:
        proc.send_signal(signal.SIGKILL)  # a crash: the pid stays in the file
        proc.wait()
    assert lock_holder(paths.lock_file(env)) is None
    assert daemon_pids(env) == set()


def test_a_live_process_that_does_not_hold_the_lock_file_is_not_the_daemon(tmp_path) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        path = tmp_path / "daemon.lock"
        path.write_text(f"{other.pid}\n")
        assert lock_holder(str(path)) is None
        path.write_text("not a pid\n")
        assert lock_holder(str(path)) is None
    finally:
        other.kill()
        other.wait()
    assert lock_holder(str(tmp_path / "missing.lock")) is None
