"""Issue 16, the control socket: another local user never receives the victim's events.

Each test runs its scenario as two unprivileged users in a private /tmp
(``support.crossuser``): the attacker prepares, the victim's hook (native and
twin) runs with the default paths.  The ``scenario_*`` functions run inside
that namespace, as root, and drop to the users themselves.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess

from support import crossuser as cu
from support import hookrun, replyrun

EVENTS = os.path.join(cu.TESTS, "fixtures", "events")
VICTIM_DIR = f"/tmp/aipager-{cu.VICTIM}"
SECRET = "the-victims-secret-4711"
SESSION = "claude-jim"


def _event(name: str, **changes) -> bytes:
    with open(os.path.join(EVENTS, f"{name}.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    doc.update(changes)
    return json.dumps(doc).encode()


def _secret_events() -> list[bytes]:
    """A tool result and an answer carrying the secret, and one the C stage declines (NaN)."""
    post = _event("PostToolUse", tool_response={"stdout": SECRET, "stderr": "", "interrupted": False})
    stop = _event("Stop", last_assistant_message=SECRET)
    declined = post[:-1] + b', "odd": NaN}'
    return [post, stop, declined]


def _victim_hook(kind: str, stdin: bytes, tool: str = "hook", **env: str) -> subprocess.CompletedProcess:
    done = cu.as_user(cu.VICTIM, hookrun.contender_cmd(kind, tool),
                      cu.user_env(cu.VICTIM, CLAUDE_DTACH_SESSION=SESSION, **env), stdin)
    assert b"Traceback" not in done.stderr, done.stderr
    return done


def _attacker_mkdir(path: str, mode: int = 0o777) -> None:
    done = cu.python_as(cu.ATTACKER, "import os, sys; os.mkdir(sys.argv[1]); os.chmod(sys.argv[1], int(sys.argv[2]))",
                        path, str(mode))
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------- scenarios (inside the namespace)


def scenario_foreign_private_folder(kind: str) -> None:
    """The attacker made /tmp/aipager-<victim uid> (0777) and listens in it, and on the old name."""
    _attacker_mkdir(VICTIM_DIR)
    _attacker_mkdir(f"{VICTIM_DIR}/aipager-spool")
    inside = cu.Listener(cu.ATTACKER, f"{VICTIM_DIR}/aipager.sock")
    old_name = cu.Listener(cu.ATTACKER, "/tmp/aipager.sock")
    for stdin in _secret_events():
        done = _victim_hook(kind, stdin)
        assert done.returncode == 0, done.stderr
    assert inside.stop() == [] and old_name.stop() == []
    assert os.listdir(f"{VICTIM_DIR}/aipager-spool") == []  # not the victim's: nothing spooled


def scenario_foreign_socket_in_a_shared_folder(kind: str) -> None:
    """The victim spells out the old shared name; the attacker bound it first (0777)."""
    spool = "/tmp/aipager-spool"
    made = cu.python_as(cu.VICTIM, "import os, sys; os.mkdir(sys.argv[1], 0o700)", spool)
    assert made.returncode == 0, made.stderr
    squatter = cu.Listener(cu.ATTACKER, "/tmp/aipager.sock")
    for stdin in _secret_events():
        done = _victim_hook(kind, stdin, AIPAGER_SOCKET_PATH="/tmp/aipager.sock")
        assert done.returncode == 0, done.stderr
    assert squatter.stop() == []
    # "nobody listens": each event waits in the victim's own spool for its daemon
    spooled = sorted(os.listdir(spool))
    assert len(spooled) == 3, spooled
    for name in spooled:
        with open(os.path.join(spool, name), "rb") as fh:
            assert SECRET.encode() in fh.read()


def scenario_twins_use_the_private_folder(kind: str) -> None:
    """Default paths, non-root: socket and session files live in /tmp/aipager-<uid>."""
    where = cu.python_as(cu.VICTIM, "from aipager.proto import paths; import json; "
                         "print(json.dumps([paths.socket_path({}), paths.session_dir({})]))")
    assert json.loads(where.stdout) == [f"{VICTIM_DIR}/aipager.sock", VICTIM_DIR], where.stderr
    daemon = cu.Listener(cu.VICTIM, f"{VICTIM_DIR}/aipager.sock", private=True)
    st = os.lstat(VICTIM_DIR)
    assert (st.st_uid, st.st_mode & 0o7777) == (cu.VICTIM, 0o700)
    assert _victim_hook(kind, _event("Stop")).returncode == 0
    assert _victim_hook(kind, _event("statusline"), tool="statusline").returncode == 0
    got = [json.loads(d) for d in daemon.stop()]
    assert [m.get("hook_event_name") or m.get("type") for m in got] == ["Stop", "statusline"]
    status = os.lstat(f"{VICTIM_DIR}/claude-status-{SESSION}.json")
    assert (status.st_uid, status.st_mode & 0o777) == (cu.VICTIM, 0o600)


def scenario_reply_wait_without_runtime_dir(kind: str) -> None:
    """A non-root user without XDG_RUNTIME_DIR gets the chat's decision back."""
    made = cu.python_as(cu.VICTIM, "import sys; from aipager.proto import trust; trust.ensure_private_dir(sys.argv[1])",
                        VICTIM_DIR)
    assert made.returncode == 0, made.stderr
    receiver = hookrun.Receiver(f"{VICTIM_DIR}/aipager.sock")  # the victim's daemon, played by root
    os.chown(receiver.path, cu.VICTIM, cu.VICTIM)
    env = cu.user_env(cu.VICTIM, CLAUDE_DTACH_SESSION=SESSION, AIPAGER_PERMISSION_REPLY_DEADLINE="10")
    allow = {"behavior": "allow"}
    try:
        done = replyrun.run_hook(kind, env, lambda ev: [replyrun.reply(ev["aipager_request_id"], allow)],
                                 receiver, prefix=tuple(cu._as(cu.VICTIM)))
    finally:
        receiver.close()
    assert done.forwarded["aipager_reply_addr"].startswith(f"{VICTIM_DIR}/aipager-reply-")
    assert done.stdout == replyrun.OUT + b'{"behavior":"allow"}}}', (done.stdout, done.stderr)
    assert [p for p in os.listdir(VICTIM_DIR) if p.startswith("aipager-reply-")] == []


# ---------------------------------------------------------------- tests


def test_hook_never_sends_into_a_private_folder_another_user_made(kind: str) -> None:
    cu.run(__file__, "scenario_foreign_private_folder", kind)


def test_hook_never_sends_to_another_users_socket_and_spools_instead(kind: str) -> None:
    cu.run(__file__, "scenario_foreign_socket_in_a_shared_folder", kind)


def test_twins_default_to_the_private_folder(kind: str) -> None:
    cu.run(__file__, "scenario_twins_use_the_private_folder", kind)


def test_permission_reply_wait_works_for_a_non_root_user(kind: str) -> None:
    cu.run(__file__, "scenario_reply_wait_without_runtime_dir", kind)


def test_socket_ours_twins_agree(tmp_path) -> None:
    """The twin's check on the cases the C one sees: ours, missing, symlink, not a socket."""
    from aipager.hookpy.transport import socket_ours

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(str(tmp_path / "s.sock"))
        os.symlink(tmp_path / "s.sock", tmp_path / "link.sock")
        (tmp_path / "file").write_text("")
        assert socket_ours(str(tmp_path / "s.sock"))
        assert not socket_ours(str(tmp_path / "link.sock"))
        assert not socket_ours(str(tmp_path / "missing.sock"))
        assert not socket_ours(str(tmp_path / "file"))
    finally:
        sock.close()
