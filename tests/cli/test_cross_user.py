"""Issue 16 from the command line: another local user's folder, control socket or
dtach socket is named as an attack and never used.

Each scenario runs as two unprivileged users in a private /tmp
(``support.crossuser``); the victim uses the default paths (no
XDG_RUNTIME_DIR, no AIPAGER_*) unless a scenario spells out a shared one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import crossuser as cu

VICTIM_DIR = f"/tmp/aipager-{cu.VICTIM}"
AIPAGER = os.path.join(os.path.dirname(sys.executable), "aipager")
UNSAFE = 8  # aipager.proto.errors.UnsafePath.exit_code

_CONFIG = (
    "from aipager import config\n"
    "from fakes.telegram_api import OWNER, TOKEN\n"
    "import os\n"
    "config.save(os.environ, config.Config(TOKEN, OWNER['id'], "
    "(config.Member(OWNER['id'], 'owner', 'Owner'),)))\n"
)


def _victim_env(**extra: str) -> dict[str, str]:
    # nothing real may start: no Telegram, no Claude Code
    return cu.user_env(cu.VICTIM, AIPAGER_TELEGRAM_API_BASE="http://127.0.0.1:9",
                       AIPAGER_CLAUDE_BIN="/bin/false", **extra)


def _aipager(*args: str, **extra: str) -> subprocess.CompletedProcess:
    done = cu.as_user(cu.VICTIM, [AIPAGER, *args], _victim_env(**extra), timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _attacker(code: str, *args: str) -> None:
    done = cu.python_as(cu.ATTACKER, code, *args)
    assert done.returncode == 0, done.stderr


def _attacker_folder(path: str) -> None:
    _attacker("import os, sys; os.mkdir(sys.argv[1]); os.chmod(sys.argv[1], 0o777)", path)


# ---------------------------------------------------------------- control socket


def scenario_start_doctor_status(variant: str) -> None:
    """The attacker squats the victim's private folder (0777 or a symlink), or the
    shared socket name the victim configured; start, doctor and status say so."""
    extra: dict[str, str] = {}
    if variant == "folder":
        _attacker_folder(VICTIM_DIR)
        planted = cu.Listener(cu.ATTACKER, f"{VICTIM_DIR}/aipager.sock")
        named = VICTIM_DIR
    elif variant == "symlink":
        _attacker_folder("/tmp/mallory")
        _attacker("import os, sys; os.symlink('/tmp/mallory', sys.argv[1])", VICTIM_DIR)
        planted = cu.Listener(cu.ATTACKER, "/tmp/mallory/aipager.sock")
        named = VICTIM_DIR
    else:  # the old default, spelled out: a shared folder
        extra["AIPAGER_SOCKET_PATH"] = "/tmp/aipager.sock"
        planted = cu.Listener(cu.ATTACKER, "/tmp/aipager.sock")
        named = "/tmp/aipager.sock"
    made = cu.python_as(cu.VICTIM, _CONFIG, env=_victim_env())
    assert made.returncode == 0, made.stderr

    start = _aipager("start", **extra)
    assert start.returncode == UNSAFE, (start.stdout, start.stderr)
    assert "possible attack" in start.stderr and named in start.stderr, start.stderr
    doctor = _aipager("doctor", "--offline", **extra)
    assert doctor.returncode != 0
    assert "possible attack" in doctor.stdout and named in doctor.stdout, doctor.stdout
    status = _aipager("status", **extra)
    assert status.returncode == 0, status.stderr
    assert "WARNING: possible attack" in status.stdout and named in status.stdout, status.stdout
    doc = json.loads(_aipager("status", "--json", **extra).stdout)
    assert any("possible attack" in line for line in doc["unsafe_paths"]), doc

    assert planted.stop() == []  # never connected to, never sent to
    if variant == "symlink":
        st = os.lstat("/tmp/mallory")
        assert (st.st_uid, st.st_mode & 0o777) == (cu.ATTACKER, 0o777)  # left as it was
        assert os.listdir("/tmp/mallory") == ["aipager.sock"]


@pytest.mark.parametrize("variant", ["folder", "symlink", "socket"])
def test_start_doctor_status_name_another_users_socket(variant: str) -> None:
    cu.run(__file__, "scenario_start_doctor_status", variant)


# ---------------------------------------------------------------- dtach sockets

_DISCOVER = (
    "import json, os\n"
    "from aipager import dtach\n"
    "from aipager.daemon.terminal import DtachIO\n"
    "print(json.dumps([DtachIO(os.environ).discover(), "
    "[s.to_json() for s in dtach.list_sessions(os.environ)]]))\n"
)


def scenario_dtach(variant: str) -> None:
    """The attacker's stream socket at the name of the victim's session x1."""
    extra: dict[str, str] = {}
    if variant == "private":  # the victim's private folder, squatted first
        _attacker_folder(VICTIM_DIR)
        sock = f"{VICTIM_DIR}/claude-dtach-x1.sock"
    elif variant == "shared":  # a shared session folder the victim configured
        os.mkdir("/tmp/shared")
        os.chmod("/tmp/shared", 0o1777)
        extra["AIPAGER_INSTANCE_DIR"] = "/tmp/shared"
        sock = "/tmp/shared/claude-dtach-x1.sock"
    else:  # the old default name: no longer where the victim looks
        sock = "/tmp/claude-dtach-x1.sock"
    planted = cu.Listener(cu.ATTACKER, sock, kind="stream")

    send = _aipager("send", "x1", "rm -rf ~", **extra)
    session = _aipager("session", "x1", "--detached", **extra)
    listed = _aipager("session", "list", "--json", **extra)
    found = cu.python_as(cu.VICTIM, _DISCOVER, env=_victim_env(**extra))
    assert found.returncode == 0, found.stderr
    discovered, sessions = json.loads(found.stdout)

    assert planted.stop() == []  # no keystroke, not even a connection
    assert discovered == {}
    assert json.loads(listed.stdout)["sessions"] == []
    if variant == "old-name":
        assert send.returncode == 4 and "no running session x1" in send.stderr, send.stderr
        return
    assert send.returncode == UNSAFE and "possible attack" in send.stderr, send.stderr
    assert session.returncode == UNSAFE and "possible attack" in session.stderr, session.stderr
    if variant == "shared":
        # listed with the reason, never live, and left in place
        assert [(s["name"], s["live"], "possible attack" in s["problem"]) for s in sessions] == [
            ("x1", False, True)]
        assert json.loads(listed.stdout)["refused"][0]["socket"] == sock
    else:
        assert sessions == []  # nothing in a folder that is not the victim's is trusted
    assert os.lstat(sock).st_uid == cu.ATTACKER


@pytest.mark.parametrize("variant", ["private", "shared", "old-name"])
def test_send_session_and_discovery_refuse_another_users_dtach_socket(variant: str) -> None:
    cu.run(__file__, "scenario_dtach", variant)
