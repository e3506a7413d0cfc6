"""Hostile inputs: symlinks and traversal into protected places, tricks around
sudo, and model-switch marker abuse (symlink, foreign owner, expiry, replay)."""

from __future__ import annotations

import json
import os

import pytest

from aipager.proto import paths
from aipager.policy import floor, hookside, marker, match, snapshot

ENGINES = ["py"] + (["c"] if match._c is not None else [])
SESSION = "claude-h"


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("{}")
    (home / "proj").mkdir()
    return str(home)


def floor_snap(home: str) -> dict:
    snap = snapshot.make("telegram", False, floor.builtin_floor({"HOME": home}))
    return snapshot.normalise(snap)


def decide(engine, snap, home, tool, cwd=None, **tool_input):
    event = {"cwd": cwd or home + "/proj", "tool_name": tool, "tool_input": tool_input}
    if engine == "py":
        return match.decide_py(snap, event, home)
    decision = match.decide_c(snap, event, home)
    assert decision[0] != match.DECLINED, "ASCII paths must be decided in C"
    return decision


def test_symlink_into_protected_folder(engine, home):
    os.symlink(home + "/.claude", home + "/proj/innocent")
    decision, reason = decide(engine, floor_snap(home), home, "Read", file_path="innocent/settings.json")
    assert decision == "deny" and ".claude/settings.json" in reason


def test_symlink_to_protected_file_for_write(engine, home):
    os.symlink(home + "/.claude/settings.json", home + "/proj/notes.txt")
    assert decide(engine, floor_snap(home), home, "Write", file_path="notes.txt")[0] == "deny"


def test_symlink_then_dotdot_follows_the_kernel(engine, home):
    # proj/deep -> home/.claude/x ; proj/deep/.. is home/.claude for the kernel
    os.makedirs(home + "/.claude/x")
    os.symlink(home + "/.claude/x", home + "/proj/deep")
    assert decide(engine, floor_snap(home), home, "Read", file_path="deep/../settings.json")[0] == "deny"


def test_symlinked_parent_of_a_new_file(engine, home):
    os.symlink(home + "/.claude", home + "/proj/cfg")
    assert decide(engine, floor_snap(home), home, "Write", file_path="cfg/new/hooks.json")[0] == "deny"


def test_traversal_through_missing_folders(engine, home):
    snap = floor_snap(home)
    assert decide(engine, snap, home, "Write", file_path="no/such/../../../.claude/x")[0] == "deny"


def test_grep_through_symlinked_home(engine, home):
    os.symlink(home, home + "/proj/up")
    assert decide(engine, floor_snap(home), home, "Grep", pattern="token", path="up")[0] == "deny"


def test_plain_project_file_allowed(engine, home):
    (open(home + "/proj/a.py", "w")).close()
    assert decide(engine, floor_snap(home), home, "Edit", file_path="a.py")[0] == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "sudo id",
        "s'u'do id",
        's"ud"o id',
        "\\sudo id",
        "x=sudo; $x id",
        "$(printf sudo) id",
        "`echo sudo` id",
        "env sudo id",
        "command sudo id",
        "exec sudo id",
        "nohup sudo id &",
        "true && sudo -s",
        "echo ok|sudo tee /etc/x",
        "(sudo id)",
        "su -c id",
        "${SHELL} -c 'sudo id'",
        "eval sudo id",
        "pkexec id",
    ],
)
def test_sudo_tricks_denied(engine, home, command):
    assert decide(engine, floor_snap(home), home, "Bash", command=command)[0] == "deny"


@pytest.mark.parametrize("command", ["echo pseudo", "cat sudoers.md.txt", "ls ./issue", "git log --oneline"])
def test_sudo_lookalikes_allowed(engine, home, command):
    assert decide(engine, floor_snap(home), home, "Bash", command=command)[0] == "allow"


# --- model-switch marker -------------------------------------------------------

EVENT = {"hook_event_name": "PreModelSwitch", "session_id": "cs-1", "from_model": "claude-opus-5-5",
         "to_model": "claude-sonnet-5-5", "requested_model": "Sonnet", "source": "command"}


class Ctx:
    def __init__(self, env):
        self.env = env
        self.session = SESSION
        self.raw = b""
        self.sent: list = []

    def send(self, msg):
        self.sent.append(msg)


@pytest.fixture
def env():
    return dict(os.environ)


def switch(env, event=EVENT):
    out = hookside.before_forward("PreModelSwitch", dict(event), Ctx(env))
    return None if out is None else json.loads(out.stdout)


def test_marker_allows_once(env):
    path = marker.write_modelswitch_marker(env, SESSION, "sonnet", "cs-1")
    assert os.stat(path).st_mode & 0o777 == 0o600
    first = switch(env)
    assert first["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert switch(env) is None  # replay: already claimed
    assert not os.path.exists(path)


@pytest.mark.parametrize(
    "change",
    [{"source": "picker"}, {"source": "sdk"}, {"session_id": "other"}, {"session_id": ""},
     {"requested_model": "haiku", "to_model": "claude-haiku"}],
)
def test_marker_mismatch_prints_nothing(env, change):
    marker.write_modelswitch_marker(env, SESSION, "sonnet", "cs-1")
    assert switch(env, {**EVENT, **change}) is None
    assert os.path.exists(paths.modelswitch_marker(env, SESSION))


def test_marker_to_model_matches_case_insensitively(env):
    marker.write_modelswitch_marker(env, SESSION, "CLAUDE-SONNET-5-5", "cs-1")
    assert switch(env, {**EVENT, "requested_model": "x"}) is not None


def test_expired_marker_is_deleted(env):
    marker.write_modelswitch_marker(env, SESSION, "sonnet", "cs-1", now=1000.0)
    assert switch(env) is None
    assert not os.path.exists(paths.modelswitch_marker(env, SESSION))


def test_marker_for_another_session_is_refused(env):
    path = marker.write_modelswitch_marker(env, "claude-other", "sonnet", "cs-1")
    os.rename(path, paths.modelswitch_marker(env, SESSION))
    assert switch(env) is None


def test_symlinked_marker_is_refused(env, tmp_path):
    real = marker.write_modelswitch_marker(env, "claude-x", "sonnet", "cs-1")
    doc = json.load(open(real))
    doc["session"] = SESSION
    target = tmp_path / "planted.json"
    target.write_text(json.dumps(doc))
    os.symlink(target, paths.modelswitch_marker(env, SESSION))
    assert switch(env) is None
    assert target.exists()


@pytest.mark.skipif(os.getuid() != 0, reason="changing a file's owner needs root")
def test_foreign_marker_is_refused(env):
    path = marker.write_modelswitch_marker(env, SESSION, "sonnet", "cs-1")
    os.chown(path, 65534, 65534)
    assert switch(env) is None


def test_marker_claim_survives_a_racing_claim(env, monkeypatch):
    path = marker.write_modelswitch_marker(env, SESSION, "sonnet", "cs-1")
    real_rename = os.rename

    def someone_else_first(src, dst):
        real_rename(src, src + ".theirs")
        return real_rename(src, dst)

    monkeypatch.setattr(marker.posix, "rename", someone_else_first)
    assert switch(env) is None
    assert os.path.exists(path + ".theirs")

