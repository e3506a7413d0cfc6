"""SendUserFile through the installed hook: the compiled checks
(``_fasthook/sendfile.pxi``) against the Python twin (``sendfile.py``).

Real files of every kind the checks know (regular, missing, a folder, a hard
link, empty, over 50 MB as a sparse file, secret-shaped names, the send
floor, the system's secrets, other users' homes, a symlink into them, the
task's no-access globs, files outside the session's folder), named in every
shape a SendUserFile call may use.  Both hooks must print the same bytes, send the
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

from aipager.proto import paths
from aipager.policy import rules, snapshot

SESSION = "claude-sf"
NO_NATIVE = os.environ.get("AIPAGER_NO_EXTENSIONS", "") not in ("", "0")
pytestmark = pytest.mark.skipif(NO_NATIVE, reason="AIPAGER_NO_EXTENSIONS=1 run: no native hook to compare")

#: name -> what make_tree puts there
FILES = ["ok.txt", "missing.txt", "folder", "linked.txt", "empty.txt", "huge.bin", ".env", "id_rsa",
         "server.pem", "my-credentials.json", "to-ssh", "secret/plan.txt", "../proj/ok.txt",
         "deep/../ok.txt", "/proc/self/status", "/dev/null", "~/.ssh/config", "~/.netrc",
         "../outside.txt", "~/outside.txt", "to-outside", "to-shadow", "/etc/shadow", "/root/x.txt",
         "/home/someone-else/x.txt", "~/.local/share/keyrings/login.keyring"]
#: files every task may send
ALLOWED = ("ok.txt", "../proj/ok.txt", "deep/../ok.txt")
#: files only the owner's and terminal-typed tasks may send: the task's
#: no-access globs and the session's folder hold the others back
ALLOWED_UNRESTRICTED = ("secret/plan.txt", "../outside.txt", "~/outside.txt", "to-outside")


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
    # outside the session's folder: in HOME, and a symlink in the folder to it
    with open(os.path.join(home, "outside.txt"), "w") as fh:
        fh.write("elsewhere\n")
    os.symlink(os.path.join(home, "outside.txt"), os.path.join(proj, "to-outside"))
    os.symlink("/etc/shadow", os.path.join(proj, "to-shadow"))
    os.makedirs(os.path.join(home, ".local", "share", "keyrings"))
    with open(os.path.join(home, ".local", "share", "keyrings", "login.keyring"), "w") as fh:
        fh.write("k\n")
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
    if name in ALLOWED or (name in ALLOWED_UNRESTRICTED and task != "telegram"):
        assert stdout == b"" and extra == []
    else:
        # a soft deny: no safety marker, the reason names the file, the audit gets a record
        assert refused.startswith("aipager will not send this file: ")
        assert "aipager safety policy" not in refused
        assert [f["path"] for f in extra[0]["files"]] == [name.replace("~", home)]
        assert extra[0]["tool_use_id"] == "toolu_9"


CODES = {"missing.txt": "missing", "folder": "not_file", "linked.txt": "hard_link", "empty.txt": "empty",
         "huge.bin": "too_big", ".env": "floor", "to-ssh": "floor", "/dev/null": "floor",
         "../outside.txt": "outside", "to-outside": "outside",
         "to-shadow": "floor", "/root/x.txt": "floor"}


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


def reasons(native) -> list:
    return [(f["code"], f["reason"]) for f in native[2][0]["files"]] if native[2] else []


#: the system's secrets: refused for every task (the owner's, typed at the
#: terminal, a chat user's, none recorded)
SYSTEM = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
          "/etc/sudoers.d/90-cloud", "/etc/ssh/ssh_host_ed25519_key",
          "/etc/ssh/ssh_host_rsa_key.pub", "/etc/ssl/private/site.key", "/etc/security/opasswd",
          "/var/backups/shadow.bak",
          "/etc/krb5.keytab", "/etc/wireguard/wg0.conf", "~/.gnupg/private-keys-v1.d/a",
          "~/.local/share/keyrings/login.keyring", "~/.aws/credentials",
          "~/.config/gcloud/credentials.db", "~/.azure/msal_token_cache.json", "~/.kube/config",
          "~/.docker/config.json", "~/.pki/nssdb/key4.db", "~/.vault-token",
          "~/.cargo/credentials.toml"]


@pytest.mark.parametrize("path", SYSTEM)
@pytest.mark.parametrize("task", ["exempt", "terminal", "telegram", None])
def test_the_systems_secrets_go_for_no_task(world, path: str, task) -> None:
    env, home, proj = world
    full = path.replace("~", home)
    event = event_for({"files": [full]}, proj)
    native, twin, declined = run_both(env, event, task_writer(env, task, proj))
    assert native == twin
    assert not declined
    assert reasons(native) == [("floor", f"{full} is in a protected place")]


@pytest.mark.parametrize("task", ["exempt", "terminal", "telegram"])
def test_a_symlink_to_shadow_in_the_folder(world, task: str) -> None:
    env, _, proj = world
    event = event_for({"files": ["to-shadow"]}, proj)
    native, twin, declined = run_both(env, event, task_writer(env, task, proj))
    assert native == twin
    assert not declined
    # the spelled and absolute forms pass; the resolved one is refused
    assert reasons(native) == [("floor", "/etc/shadow is in a protected place")]


#: (HOME, path, refused as another user's home); the paths do not exist, so a
#: path let through is refused as missing
HOMES = [
    ("/home/ann", "/home/ann/notes.txt", False),
    ("/home/ann/", "/home/ann/notes.txt", False),
    ("/home/ann", "/home/ann", False),
    ("/home/ann", "/home/bob/notes.txt", True),
    ("/home/ann", "/home/annex/notes.txt", True),
    ("/home/ann", "/home/bob", True),
    ("/home/ann", "/home//bob/notes.txt", True),
    ("/home/ann", "/home/ann/../bob/notes.txt", True),
    ("/home/ann", "/root/notes.txt", True),
    ("/home/ann", "/root", True),
    ("/home/ann", "/rootless/notes.txt", False),
    ("/home/ann", "/home/notes.txt", True),
    ("/root", "/root/proj/notes.txt", False),
    ("/root", "/home/ann/notes.txt", True),
    ("/home", "/home/ann/notes.txt", True),
    ("/", "/home/ann/notes.txt", True),
    ("/", "/root/notes.txt", True),
    ("/home/ann/sub", "/home/ann/notes.txt", True),
    ("/home/ann/sub", "/home/ann/sub/notes.txt", False),
    ("/srv/ann", "/home/ann/notes.txt", True),
]


@pytest.mark.parametrize(("home", "path", "refused"), HOMES)
@pytest.mark.parametrize("task", ["exempt", "terminal"])
def test_other_users_homes(world, home: str, path: str, refused: bool, task: str) -> None:
    env, _, proj = world
    env = dict(env, HOME=home)
    event = event_for({"files": [path]}, proj)
    native, twin, declined = run_both(env, event, task_writer(env, task, proj))
    assert native == twin
    assert not declined
    got = reasons(native)
    assert len(got) == 1
    if refused:
        assert got[0][0] == "floor"
        assert got[0][1].endswith(" is in another user's home")
    else:
        assert got[0][0] == "missing"


def test_roots_credentials_stay_refused_with_home_root(world) -> None:
    env, _, proj = world
    env = dict(env, HOME="/root")
    native, twin, declined = run_both(env, event_for({"files": ["/root/.ssh/id_ed25519"]}, proj),
                                      task_writer(env, "exempt", proj))
    assert native == twin
    assert not declined
    assert reasons(native) == [("floor", "/root/.ssh/id_ed25519 is in a protected place")]


def test_a_home_that_is_a_symlink_counts_resolved_too(world, tmp_path) -> None:
    """HOME=/home/ann that resolves to /home/ann2 (a link): both are the user's."""
    from aipager.policy import sendfile

    homes = ["/home/ann", "/home/ann2"]
    assert not sendfile._other_home("/home/ann2/x", homes)
    assert not sendfile._other_home("/home/ann/x", homes)
    assert sendfile._other_home("/home/bob/x", homes)
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    assert sendfile.own_homes(str(link) + "/") == [str(link), str(tmp_path)]
    assert sendfile.own_homes("relative") == []


@pytest.mark.parametrize("task", ["telegram", None, "exempt", "terminal"])
@pytest.mark.parametrize("where", ["inside", "outside", "link-out", "link-in", "climb", "cwd-link",
                                   "no-cwd"])
def test_only_the_sessions_folder_for_others(world, task, where: str) -> None:
    """A task whose author is not the owner (and none recorded) sends only
    files whose resolved path lies in the resolved cwd."""
    env, home, proj = world
    os.symlink(proj, os.path.join(home, "proj-link"))
    os.symlink(os.path.join(proj, "ok.txt"), os.path.join(home, "into-proj"))
    cwd, name = {
        "inside": (proj, os.path.join(proj, "ok.txt")),
        "outside": (proj, os.path.join(home, "outside.txt")),
        "link-out": (proj, "to-outside"),
        "link-in": (proj, os.path.join(home, "into-proj")),
        "climb": (os.path.join(proj, "deep"), "../../outside.txt"),
        "cwd-link": (os.path.join(home, "proj-link"), "ok.txt"),
        "no-cwd": ("", os.path.join(proj, "ok.txt")),
    }[where]
    event = event_for({"files": [name]}, cwd)
    native, twin, declined = run_both(env, event, task_writer(env, task, proj))
    assert native == twin
    assert not declined
    restricted = task in ("telegram", None)
    if not restricted or where in ("inside", "link-in", "cwd-link"):
        assert reasons(native) == []
    elif where == "no-cwd":
        assert reasons(native) == [("outside", "this task has no folder to send files from")]
    else:
        folder = os.path.realpath(cwd)
        reason = f"{home}/outside.txt is outside this task's folder {folder}"
        assert reasons(native) == [("outside", reason)]


def test_reasons_are_one_line() -> None:
    """The reasons Claude reads: one line each (test_extensions.py checks the
    compiled twin's formats are these strings)."""
    from aipager.policy import sendfile

    names = [n for n in dir(sendfile) if n.startswith("REASON_")]
    assert len(names) == 6
    for name in names:
        text = getattr(sendfile, name)
        assert "\n" not in text
        want = {"REASON_OUTSIDE": 2, "REASON_NO_FOLDER": 0}.get(name, 1)
        assert text.count("%s") == want
