"""Every command once as a real program: `python -m aipager.cli ...`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import aipager
from aipager import config, dtach
from aipager.proto import paths
from aipager.install import claude_code
from fakes.telegram_api import OWNER, TOKEN

SECRET = TOKEN.split(":")[1]
# The folder holding the aipager package, installed or checked out.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(aipager.__file__))


def aipager_cli(*args, input=None, extra_env=None, timeout=60):
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_ROOT
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-m", "aipager.cli", *args], input=input,
                          capture_output=True, text=True, env=env, timeout=timeout)


def test_version_and_help_stay_light():
    assert aipager_cli("--version").stdout.strip() == f"aipager {aipager.__version__}"
    probe = ("import sys\nfrom aipager.cli.app import app\n"
             "try:\n    app(['--help'], prog_name='aipager')\nexcept SystemExit:\n    pass\n"
             "print('HEAVY', sorted(m for m in ('aiogram', 'aiohttp', 'aipager.daemon')"
             " if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=env, timeout=60).stdout
    assert "setup" in out and "session" in out
    assert "HEAVY []" in out


def test_setup_config_status_doctor_uninstall(fake_api, bins, env, tmp_path):
    fake_api.add_private_chat()
    result = aipager_cli("setup", "--chat-id", str(OWNER["id"]), "--yes", input=TOKEN + "\n")
    assert result.returncode == 0, result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert config.load(env).chat_id == OWNER["id"]
    assert claude_code.check(env, bins) == []

    shown = aipager_cli("config", "show", "--json")
    assert json.loads(shown.stdout)["chat_id"] == OWNER["id"]
    status = aipager_cli("status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["daemon"]["running"] is False
    doctor = aipager_cli("doctor", "--offline")
    assert doctor.returncode == 1 and "FAIL  daemon" in doctor.stdout

    removed = aipager_cli("uninstall", "--yes")
    assert removed.returncode == 0, removed.stderr
    assert claude_code.check(env, bins) != []
    assert "No aipager entries" in aipager_cli("uninstall", "--yes").stdout


def test_rejected_token_exit_code(fake_api, bins, tmp_path):
    token_file = tmp_path / "t"
    token_file.write_text("999999:ZZunknownUNKNOWNunknownUNK00")
    result = aipager_cli("setup", "--token-file", str(token_file), "--chat-id", "1")
    assert result.returncode == 4
    assert "rejected" in result.stderr and "ZZunknown" not in result.stderr + result.stdout


def test_session_send_kill(tmp_path, env):
    program = tmp_path / "fake-claude"
    out = tmp_path / "typed.txt"
    program.write_text('#!/bin/sh\nwhile IFS= read -r l; do echo "$l" >> "$OUT"; done\n')
    program.chmod(0o755)
    extra = {"AIPAGER_CLAUDE_BIN": str(program), "OUT": str(out)}
    try:
        created = aipager_cli("session", "s1", "--detached", extra_env=extra)
        assert created.returncode == 0, created.stderr
        assert aipager_cli("send", "s1", "hello from a shell").returncode == 0
        listed = json.loads(aipager_cli("session", "list", "--json").stdout)
        assert [s["name"] for s in listed["sessions"]] == ["s1"]
        assert aipager_cli("session", "kill", "s1", "--yes").returncode == 0
    finally:
        for info in dtach.list_sessions(env):
            dtach.kill(env, info.name, grace=1.0)
    assert out.read_text() == "hello from a shell\n"
    assert not os.path.exists(paths.dtach_socket(env, "s1"))


@pytest.mark.parametrize("argv", [["service", "status"], ["start", "--no-web"]])
def test_service_and_start_fail_cleanly_here(argv):
    # No systemd user manager, and no config in the isolated home (without the web
    # page nothing is left to serve): a clear message and a non-zero code, never a
    # traceback.
    result = aipager_cli(*argv, extra_env={"PATH": "/nonexistent"})
    assert result.returncode in (3, 6)
    assert "Traceback" not in result.stderr and result.stderr.startswith("aipager: ")


def test_start_in_a_read_only_home_fails_in_one_line(tmp_path):
    """HOME on a read-only mount (root ignores file modes): one message, no traceback,
    before the daemon starts (it could never save its state there)."""
    import shutil

    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1)")
    home, run = tmp_path / "home", tmp_path / "run"
    home.mkdir()
    run.mkdir(mode=0o700)
    env = {"HOME": str(home), "XDG_RUNTIME_DIR": str(run), "PATH": os.environ["PATH"],
           "PYTHONPATH": PACKAGE_ROOT, "AIPAGER_TELEGRAM_API_BASE": "http://127.0.0.1:9"}
    config.save(env, config.Config(TOKEN, OWNER["id"]))
    script = 'mount --bind -o ro "$HOME" "$HOME" && exec "$@"'
    cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
           sys.executable, "-m", "aipager.cli", "start"]
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script,
                            "sh", "true"], env=env, capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"no private read-only mount here: {probe.stderr.strip()}")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [(
        f"aipager: cannot write to {paths.state_dir(env)} (Read-only file system), where aipager "
        "keeps its log, state and audit log; make it writable, or set XDG_STATE_HOME to a "
        "writable folder")]


def _daemon_modules(tmp_path, *args):
    """Run ``aipager start ARGS`` as the program until it listens, and return what its
    daemon process imported (``-X importtime`` after the CLI's last line: the program
    replaced itself with the daemon) and whether pydantic's compiled core is mapped in it."""
    import signal
    import time

    home, run = tmp_path / "home", tmp_path / "run"
    home.mkdir()
    run.mkdir(mode=0o700)
    env = {"HOME": str(home), "XDG_RUNTIME_DIR": str(run), "PATH": os.environ["PATH"],
           "PYTHONPATH": PACKAGE_ROOT, "AIPAGER_WEB_PORT": "0", "PYTHONPROFILEIMPORTTIME": "1"}
    err = tmp_path / "stderr"
    with open(err, "wb") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "aipager.cli", "start", *args],
                                env=env, stdout=subprocess.DEVNULL, stderr=fh)
    try:
        deadline = time.monotonic() + 60
        while "daemon 0" not in err.read_text() or "listening" not in err.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, err.read_text()[-2000:]
            time.sleep(0.1)
        time.sleep(1.0)  # its services started (the page, the host's link)
        cmdline = open(f"/proc/{proc.pid}/cmdline", "rb").read().split(b"\0")
        maps = open(f"/proc/{proc.pid}/maps").read()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    text = err.read_text()
    daemon_part = text[text.index("daemon starting"):]
    imported = {line.rsplit("|", 1)[1].strip() for line in daemon_part.splitlines()
                if line.startswith("import time:")}
    return cmdline, imported, "pydantic_core" in maps


@pytest.mark.parametrize("mode", ["page-only", "joined host"])
def test_a_daemon_without_a_bot_never_imports_aiogram_or_pydantic(tmp_path, mode):
    from aipager.hub import creds

    if mode == "page-only":
        args: tuple[str, ...] = ()
    else:
        who = creds.write_creds(str(tmp_path / "box.json"),
                                creds.Creds("box", "pw", "nats://127.0.0.1:9", ""))
        args = ("--join", "nats://127.0.0.1:9", "--creds", who)
    cmdline, imported, pydantic_mapped = _daemon_modules(tmp_path, *args)
    # the program became the daemon, without docstrings (``main.daemon_argv``)
    assert cmdline[1:4] == [b"-OO", b"-m", b"aipager.main"]
    assert "aipager.daemon.app" in imported  # the log is the daemon's own imports
    heavy = {m for m in imported if m.split(".")[0] in ("aiogram", "pydantic", "typer", "click")}
    assert heavy == set() and not pydantic_mapped
