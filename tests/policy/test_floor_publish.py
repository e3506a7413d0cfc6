"""The owner's floor additions are published, and the built hook enforces what `explain` says.

``aipager policy check --apply`` (daemon down) and the daemon (``floorwatch``:
at start, when the policy file changes, when the published file disappears)
publish the effective floor.  The built ``aipager-hook`` (native and twin)
then decides PreToolUse calls exactly as ``aipager policy explain`` does:
before any prompt (the floor alone, as for ``admin``) and for a prompt typed
from the chat by a ``user`` or an ``admin`` (their permission note, as the
daemon writes it).
"""

from __future__ import annotations

import json
import logging
import os

import pytest
from support import hookrun, jsonfile
from typer.testing import CliRunner

from aipager.proto import paths
from aipager.cli.app import app
from aipager.daemon.floorwatch import FloorPublisher
from aipager.policy import floor, model, notes

NO_NATIVE = os.environ.get("AIPAGER_NO_EXTENSIONS", "") not in ("", "0")
KINDS = ["twin"] if NO_NATIVE else ["native", "twin"]

POLICY = {
    "version": 1,
    "floor": {
        "denied_commands": ["(^|[;&| ])nc\\s", {"regex": "^curl ", "ignore_case": True}],
        "no_access_paths": ["~/secret/**"],
        "no_write_paths": ["~/locked/**"],
    },
}


def write_policy(doc) -> str:
    path = paths.policy_user_file(os.environ)
    jsonfile.write(path, doc)
    return path


def home() -> str:
    return os.environ["HOME"]


#: (id, tool, input with {h} for home, what the owner's additions or the floor's secrets
#: make of it: "deny" or "")
CALLS = [
    ("curl", "Bash", {"command": "curl http://x"}, "deny"),
    ("CURL", "Bash", {"command": "CURL http://x"}, "deny"),
    ("nc", "Bash", {"command": "echo hi | nc host 1"}, "deny"),
    ("ls", "Bash", {"command": "ls -la"}, ""),
    ("read-secret", "Read", {"file_path": "{h}/secret/key.txt"}, "deny"),
    ("grep-secret", "Grep", {"pattern": "x", "path": "{h}/secret"}, ""),
    ("read-notes", "Read", {"file_path": "{h}/notes.txt"}, ""),
    ("write-locked", "Write", {"file_path": "{h}/locked/a.txt", "content": "x"}, "deny"),
    ("read-locked", "Read", {"file_path": "{h}/locked/a.txt"}, ""),
    ("sudo", "Bash", {"command": "sudo ls"}, ""),
    # floor.SECRET_GLOBS, built into both hooks, and the hub credential the config names
    ("read-shadow", "Read", {"file_path": "/etc/shadow"}, "deny"),
    ("read-root-key", "Read", {"file_path": "/root/.ssh/id_ed25519"}, "deny"),
    ("read-environ", "Read", {"file_path": "/proc/self/environ"}, "deny"),
    ("grep-etc", "Grep", {"pattern": "root", "path": "/etc"}, "deny"),
    ("cat-sudoers", "Bash", {"command": "cat /etc/sudoers"}, "deny"),
    ("read-hub-creds", "Read", {"file_path": "{h}/hub-creds.json"}, "deny"),
]


def call_of(index: int) -> dict:
    _, tool, tool_input, _ = CALLS[index]
    return {"tool_name": tool,
            "tool_input": {k: v.replace("{h}", home()) for k, v in tool_input.items()}}


def layout() -> None:
    h = home()
    for folder in ("secret", "locked"):
        os.makedirs(f"{h}/{folder}", exist_ok=True)
    for rel in ("secret/key.txt", "notes.txt", "locked/a.txt"):
        with open(f"{h}/{rel}", "w") as fh:
            fh.write("x\n")


def event(call: dict) -> dict:
    return {"hook_event_name": "PreToolUse", "session_id": "c1", "cwd": home(),
            "tool_use_id": "t1", **call}


def explain(role: str, call: dict, tmp_path) -> tuple[str, str]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event(call)))
    res = CliRunner().invoke(app, ["policy", "explain", "--role", role, str(path)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    return out["decision"], out["reason"] or ""


def hook(kind: str, session: str, payload: dict, **extra: str) -> hookrun.Result:
    env = hookrun.hook_env(session, **extra)
    receiver = hookrun.receiver_for(env)
    try:
        res = hookrun.run(hookrun.contender_cmd(kind, "hook"), json.dumps(payload).encode(), env,
                          receiver)
    finally:
        receiver.close()
    assert b"Traceback" not in res.stderr, res.stderr
    return res


def hook_decision(res: hookrun.Result) -> tuple[str, str]:
    if res.exit == 2:
        return "deny", "exit 2"
    assert res.exit == 0, res.stderr
    if not res.stdout.strip():
        return "allow", ""
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    reason = out["permissionDecisionReason"]
    assert reason.startswith("aipager safety policy: ")
    return "deny", reason[len("aipager safety policy: "):]


@pytest.fixture(params=KINDS)
def kind(request) -> str:
    return hookrun.require(request.param)


@pytest.fixture
def published():
    """The policy written and published as `aipager policy check --apply` does."""
    write_policy(POLICY)
    jsonfile.write(paths.config_file(os.environ), {"hub": {"creds": home() + "/hub-creds.json"}})
    res = CliRunner().invoke(app, ["policy", "check", "--apply"])
    assert res.exit_code == 0, res.output
    assert "floor published for the hook" in res.output
    layout()


# Who started the task: nobody yet (the floor alone: what `explain` says for admin), or a chat
# message from a user / an admin (their permission note).
MODES = [("no prompt yet", "admin"), ("chat user", "user"), ("chat admin", "admin")]


@pytest.mark.parametrize("mode, role", MODES, ids=[m for m, _ in MODES])
@pytest.mark.parametrize("index", range(len(CALLS)), ids=[c[0] for c in CALLS])
def test_hook_and_explain_agree_on_the_published_floor(published, kind, tmp_path, mode, role, index):
    name, _, _, addition = CALLS[index]
    call = call_of(index)
    session = f"claude-fl{index}"
    if mode != "no prompt yet":
        env = hookrun.hook_env(session)
        text = f"please do {name}"
        notes.write_note(env, session, msg_id=1, chat_id=-1, author_user_id=7, author_label="@u",
                         role=role, text=text)
        res = hook(kind, session, {"hook_event_name": "UserPromptSubmit", "session_id": "c1",
                                   "cwd": home(), "prompt": text})
        assert res.exit == 0, res.stderr
        assert any(d.get("hook_event_name") == "queue_pickup" for d in res.sent)
    want = explain(role, call, tmp_path)
    got = hook_decision(hook(kind, session, event(call)))
    assert got == want
    if addition:
        # the owner's additions really are in force (not just agreed on)
        assert got[0] == "deny"


def test_without_publishing_the_hook_misses_the_additions(kind, tmp_path):
    """What the issue saw: `explain` denies, the hook (built-in floor only) allows."""
    write_policy(POLICY)
    layout()
    call = {"tool_name": "Bash", "tool_input": {"command": "curl http://x"}}
    assert explain("admin", call, tmp_path)[0] == "deny"
    assert hook_decision(hook(kind, "claude-unpub", event(call)))[0] == "allow"
    assert CliRunner().invoke(app, ["policy", "check", "--apply"]).exit_code == 0
    assert hook_decision(hook(kind, "claude-pub", event(call)))[0] == "deny"


# ------------------------------------------------------------------ check --apply


def test_check_apply_refuses_a_broken_file_and_keeps_the_published_floor():
    env = dict(os.environ)
    write_policy(POLICY)
    runner = CliRunner()
    assert runner.invoke(app, ["policy", "check", "--apply"]).exit_code == 0
    before = floor_bytes(env)
    write_policy({"version": 1, "floor": {"denied_commands": ["(?i)curl"]}})
    res = runner.invoke(app, ["policy", "check", "--apply"])
    assert res.exit_code == 3
    assert "nothing published" in res.output
    assert floor_bytes(env) == before


def test_check_without_apply_publishes_nothing():
    write_policy(POLICY)
    assert CliRunner().invoke(app, ["policy", "check"]).exit_code == 0
    assert not os.path.exists(paths.floor_file(dict(os.environ)))


# ------------------------------------------------------------------ the daemon's publisher


def floor_bytes(env) -> bytes:
    with open(paths.floor_file(env), "rb") as fh:
        return fh.read()


def _published(env) -> dict:
    with open(paths.floor_file(env)) as fh:
        return json.load(fh)["rules"]


def test_publisher_follows_the_policy_file(caplog):
    env = dict(os.environ)
    pub = FloorPublisher(env)
    assert pub.check() is True  # no policy file: the built-in floor
    assert _published(env) == floor.builtin_floor(env)
    assert pub.check() is False  # nothing changed: nothing written
    write_policy(POLICY)
    assert pub.check() is True
    assert "^curl " in _published(env)["commands_i"]
    assert _published(env) == model.effective_floor(model.load_policy(env), env)

    caplog.set_level(logging.INFO, "aipager.daemon")
    good = floor_bytes(env)
    write_policy("{broken")
    assert pub.check() is False and pub.check() is False
    assert floor_bytes(env) == good  # the last good floor stays
    assert "not valid JSON" in pub.problem
    refused = [r for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(refused) == 1  # once per version of the file, not every tick

    os.unlink(paths.floor_file(env))  # a /tmp cleaner, or someone else
    assert pub.check() is True
    assert floor_bytes(env) == good


def test_publisher_follows_the_hub_credential_the_config_names():
    env = dict(os.environ)
    pub = FloorPublisher(env)
    assert pub.check() is True
    creds = home() + "/creds[1].json"
    jsonfile.write(paths.config_file(env), {"hub": {"creds": creds}})
    assert pub.check() is True
    assert home() + "/creds[[]1].json" in _published(env)["no_access"]
    snap = model.task_snapshot(model.load_policy(env), "admin", env)
    assert snap["no_access"] == _published(env)["no_access"]
    from aipager.policy import _match_py

    assert _match_py.decide(snap, "Read", {"file_path": creds}, home(), home())[0] == "deny"

    write_policy({"version": 1, "floor": {"no_access_paths": ["~/other/**"]}})
    assert pub.check() is True and pub.problem == ""
    assert f"{home()}/other" in _published(env)["no_access"]
    assert "^curl " not in _published(env)["commands_i"]


def test_publisher_started_on_a_broken_file_keeps_what_is_published():
    env = dict(os.environ)
    write_policy(POLICY)
    model.publish(env)
    good = floor_bytes(env)
    write_policy({"version": 1, "roles": 5})
    pub = FloorPublisher(env)
    assert pub.check() is False
    assert floor_bytes(env) == good
    os.unlink(paths.floor_file(env))
    assert pub.check() is True  # put back, and never less than the built-in floor
    published = floor.load_floor(env)
    assert "^curl " in published["commands_i"]
    builtin = floor.builtin_floor(env)
    assert all(item in published[key] for key in ("no_access", "no_write", "commands")
               for item in builtin[key])


def test_the_daemon_publishes_at_start_and_on_change():
    import signal
    import time

    from support.daemon_proc import spawn, wait_for

    from aipager.daemon import persist

    env = dict(os.environ)
    write_policy(POLICY)
    proc = spawn()
    try:
        wait_for(lambda: os.path.exists(paths.floor_file(env)) or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read().decode()
        assert "^curl " in floor.load_floor(env)["commands_i"]
        time.sleep(0.05)  # a new mtime for the edit below
        write_policy({"version": 1, "floor": {"denied_commands": ["^wget "]}})
        wait_for(lambda: "^wget " in floor.load_floor(env)["commands"])
        assert "^curl " not in floor.load_floor(env)["commands_i"]
        write_policy("{broken")
        wait_for(lambda: (persist.load_state(env)["daemon"].get("policy_error") or "") != "")
        assert "^wget " in floor.load_floor(env)["commands"]  # kept
        text = CliRunner().invoke(app, ["status"]).output
        assert "policy: " in text and "not valid JSON" in text
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    assert proc.returncode == 0


# ------------------------------------------------------------------ uploads and a host's creds


def _prompt(kind: str, session: str, user_id, role: str) -> None:
    """A chat prompt from ``user_id`` (its permission note, as the daemon writes it) taken
    by the built hook: the task's snapshot."""
    env = hookrun.hook_env(session)
    text = f"look at what {user_id} sent"
    notes.write_note(env, session, msg_id=1, chat_id=-1, author_user_id=user_id,
                     author_label="@m", role=role, text=text)
    res = hook(kind, session, {"hook_event_name": "UserPromptSubmit", "session_id": "c1",
                               "cwd": home(), "prompt": text})
    assert res.exit == 0, res.stderr


def _read(kind: str, session: str, path: str) -> str:
    return hook_decision(hook(kind, session, event({"tool_name": "Read",
                                                    "tool_input": {"file_path": path}})))[0]


def test_a_members_upload_is_read_by_their_own_task_alone(kind):
    """What a person sends from the phone lands in their own folder (``aipager.files``); the
    built hook lets their task read it, and nobody else's task but the owner's."""
    from aipager import files as chat_files

    env = dict(os.environ)
    ann = chat_files.save_download(env, 7, "photo.jpg", b"\xff\xd8 ann's")
    bob = chat_files.save_download(env, 8, "scan.pdf", b"%PDF bob's")
    assert os.path.dirname(ann) == paths.uploads_dir(env, 7)
    from_hub = os.path.join(paths.files_dir(env), "in", "from-hub", "0123456789-log.txt")
    for who, role, readable in ((7, "user", {ann}), (8, "admin", {bob}), (1, "owner", {ann, bob, from_hub}),
                                (None, "user", set())):
        for i, path in enumerate((ann, bob, from_hub)):
            session = f"claude-up{who}-{i}"  # a task of its own: a refusal halts the task
            _prompt(kind, session, who, role)
            assert _read(kind, session, path) == ("allow" if path in readable else "deny"), (who, path)
    # before any prompt: the floor alone
    assert _read(kind, "claude-upnone", ann) == "deny"


def test_a_joined_hosts_credential_file_is_in_the_floor_the_hook_enforces(kind, tmp_path):
    from aipager.hub import creds

    path = str(tmp_path / "elsewhere" / "box.json")
    os.makedirs(os.path.dirname(path))
    creds.write_creds(path, creds.Creds("box", "pw", "nats://127.0.0.1:4222"))
    creds.record_join(dict(os.environ), "nats://127.0.0.1:4222", path)
    assert CliRunner().invoke(app, ["policy", "check", "--apply"]).exit_code == 0
    assert _read(kind, "claude-cr0", path) == "deny"  # no prompt yet: the floor
    _prompt(kind, "claude-cr1", 7, "user")
    assert _read(kind, "claude-cr1", path) == "deny"
    _prompt(kind, "claude-cr2", 1, "owner")
    assert _read(kind, "claude-cr2", path) == "allow"


def test_folders_moved_by_the_environment_stay_in_the_built_in_floor(kind, tmp_path):
    """XDG_CONFIG_HOME moves the config (and the bot token in it), XDG_RUNTIME_DIR the
    files folder: both hooks build the floor for where they are."""
    moved = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    session = "claude-xdg"
    env = hookrun.hook_env(session, **moved)
    for path in (paths.config_file(env), os.path.join(paths.files_dir(env), "in", "u7", "a.jpg")):
        assert path.startswith(str(tmp_path))
        res = hook(kind, session, event({"tool_name": "Read", "tool_input": {"file_path": path}}),
                   **moved)
        assert hook_decision(res)[0] == "deny", path
