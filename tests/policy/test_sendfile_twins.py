"""SendUserFile through the installed hook: the compiled checks
(``_fasthook/sendfile.pxi``) against the Python twin (``sendfile.py``).

Real files of every kind the checks know (regular, missing, a folder, a hard
link, empty, over 50 MB as a sparse file, secret-shaped names, the send
floor, a symlink into it, the task's no-access globs), named in every shape
a SendUserFile call may use.  Both hooks must print the same bytes, send the
same datagrams and exit alike; the native one must decide itself (no
"declined to stage 2") except where it is documented to decline.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import hookrun

from aipager import paths
from aipager.policy import rules, snapshot

SESSION = "claude-sf"
NO_NATIVE = os.environ.get("AIPAGER_NO_EXTENSIONS", "") not in ("", "0")
pytestmark = pytest.mark.skipif(NO_NATIVE, reason="AIPAGER_NO_EXTENSIONS=1 run: no native hook to compare")

#: name -> what make_tree puts there
FILES = ["ok.txt", "missing.txt", "folder", "linked.txt", "empty.txt", "huge.bin", ".env", "id_rsa",
         "server.pem", "my-credentials.json", "to-ssh", "secret/plan.txt", "../proj/ok.txt",
         "deep/../ok.txt", "/proc/self/status", "/dev/null", "~/.ssh/config", "~/.netrc"]


def make_tree(home: str) -> str:
    proj = os.path.join(home, "proj")
    os.makedirs(os.path.join(proj, "folder"))
    os.makedirs(os.path.join(proj, "secret"))
    os.makedirs(os.path.join(proj, "deep"))
    os.makedirs(os.path.join(home, ".ssh"))
    for name in ("ok.txt", ".env", "id_rsa", "server.pem", "my-credentials.json", "secret/plan.txt"):
        with open(os.path.join(proj, name), "w") as fh:
            fh.write("data\n")
    for path in (os.path.join(home, ".ssh", "config"), os.path.join(home, ".netrc")):
        with open(path, "w") as fh:
            fh.write("x\n")
    open(os.path.join(proj, "empty.txt"), "w").close()
    with open(os.path.join(proj, "huge.bin"), "wb") as fh:
        fh.truncate(50 * 1024 * 1024 + 1)
    with open(os.path.join(proj, "shared.txt"), "w") as fh:
        fh.write("two names\n")
    os.link(os.path.join(proj, "shared.txt"), os.path.join(proj, "linked.txt"))
    os.symlink(os.path.join(home, ".ssh", "config"), os.path.join(proj, "to-ssh"))
    return proj


@pytest.fixture
def world(tmp_path):
    home = str(tmp_path / "home")
    os.makedirs(home)
    proj = make_tree(home)
    env = hookrun.hook_env(SESSION, HOME=home)
    return env, home, proj


def task_writer(env: dict, task: str | None, proj: str):
    """Lays out the task before each run: a tool call the rules deny halts
    the task, and the second hook must see what the first one saw."""

    def write() -> None:
        path = paths.policy_file(env, SESSION)
        if os.path.exists(path):
            os.unlink(path)
        if task is None:
            return  # no snapshot: the floor decides
        rule_set = dict(rules.empty(), no_access=[proj + "/secret", proj + "/secret/*"])
        origin = "terminal" if task == "terminal" else "telegram"
        snapshot.write(env, SESSION, snapshot.make(origin, task == "exempt", rule_set, now=1.0))

    return write


def run_both(env: dict, event: dict, prepare) -> tuple:
    outcomes = []
    for kind in ("native", "twin"):
        prepare()
        done, declined = hookrun.run_watched(kind, json.dumps(event).encode(), env)
        extra = [m for m in done.sent if m.get("hook_event_name") == "send_files_refused"]
        outcomes.append(((done.exit, done.stdout, extra), declined))
    (native, declined), (twin, _) = outcomes
    return native, twin, declined


def event_for(tool_input, cwd: str) -> dict:
    return {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": cwd, "tool_name": "SendUserFile",
            "tool_input": tool_input, "tool_use_id": "toolu_9"}


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("task", ["telegram", "terminal", "exempt"])
def test_each_file_kind(world, name: str, task: str) -> None:
    env, home, proj = world
    native, twin, declined = run_both(env, event_for({"files": [name.replace("~", home)]}, proj),
                                      task_writer(env, task, proj))
    assert native == twin
    assert not declined
    exit_code, stdout, extra = native
    assert exit_code == 0
    refused = json.loads(stdout)["hookSpecificOutput"]["permissionDecisionReason"] if stdout else ""
    if name == "ok.txt" or name.endswith("/ok.txt") or (name == "secret/plan.txt" and task != "telegram"):
        assert stdout == b"" and extra == []
    else:
        # a soft deny: no safety marker, the reason names the file, the audit gets a record
        assert refused.startswith("aipager will not send this file: ")
        assert "aipager safety policy" not in refused
        assert [f["path"] for f in extra[0]["files"]] == [name.replace("~", home)]
        assert extra[0]["tool_use_id"] == "toolu_9"


CODES = {"missing.txt": "missing", "folder": "not_file", "linked.txt": "hard_link", "empty.txt": "empty",
         "huge.bin": "too_big", ".env": "floor", "to-ssh": "floor", "/dev/null": "floor"}


@pytest.mark.parametrize(("name", "code"), sorted(CODES.items()))
def test_the_reason_codes(world, name: str, code: str) -> None:
    env, home, proj = world
    native, twin, _ = run_both(env, event_for({"file_path": name}, proj), task_writer(env, "telegram", proj))
    assert native == twin
    assert native[2][0]["files"][0]["code"] == code


@pytest.mark.parametrize("tool_input", [
    {"files": []},
    {},
    {"files": None, "path": None},
    {"files": [None, 5, True, ""]},
    {"files": [{"path": "ok.txt"}, {"file_path": ".env"}, {"path": None, "file_path": "ok.txt"}, {}]},
    {"paths": "missing.txt", "file_paths": ["ok.txt", "empty.txt"], "file_path": "folder", "path": "id_rsa"},
    {"files": {"path": "server.pem"}},
])
def test_every_way_to_name_files(world, tool_input: dict) -> None:
    env, _, proj = world
    native, twin, declined = run_both(env, event_for(tool_input, proj), task_writer(env, "telegram", proj))
    assert native == twin
    assert not declined
    assert native[1] != b""  # each of these refuses at least one file


@pytest.mark.parametrize("tool_input", [
    {"files": ["café.txt"]},
    {"files": [1.5]},
    {"files": [["nested"]]},
])
def test_what_the_compiled_side_hands_over(world, tool_input: dict) -> None:
    env, _, proj = world
    native, twin, declined = run_both(env, event_for(tool_input, proj), task_writer(env, "telegram", proj))
    assert native == twin
    assert declined


def test_relative_path_without_a_working_folder(world) -> None:
    env, _, proj = world
    native, twin, _ = run_both(env, event_for({"files": ["ok.txt"]}, ""), task_writer(env, "telegram", proj))
    assert native == twin
    assert native[2][0]["files"][0]["code"] == "unchecked"


names = st.sampled_from(FILES + ["", "nope/../../x", "folder/", "./ok.txt"])
items = st.one_of(names, st.builds(lambda n: {"path": n}, names), st.builds(lambda n: {"file_path": n}, names),
                  st.sampled_from([None, 3, False]))
inputs = st.fixed_dictionaries({}, optional={
    "files": st.one_of(st.lists(items, max_size=4), items),
    "paths": st.lists(items, max_size=2),
    "file_path": names,
    "path": names,
})


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tool_input=inputs, task=st.sampled_from(["telegram", "terminal", "exempt", None]))
def test_mixed_requests_agree(world, tool_input: dict, task) -> None:
    env, home, proj = world
    tool_input = json.loads(json.dumps(tool_input).replace("~", home))
    native, twin, declined = run_both(env, event_for(tool_input, proj), task_writer(env, task, proj))
    assert native == twin
    assert not declined
