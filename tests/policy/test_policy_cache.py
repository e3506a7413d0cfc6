"""A chat prompt reads the policy file only when it changed (``model.current_policy``)."""

from __future__ import annotations

import json
import os

import pytest

from aipager.daemon import encode
from aipager.port.model import PromptNote
from aipager.port.model import Session
from aipager.policy import model

MEMBER = PromptNote(1, 1, "", 7, "ann", "user")


def attached(env, sess, text: str) -> bool:
    """Whether a member's @-mention is written as a mention (decided as an allowed Read)."""
    return bool(encode.encode(env, text, MEMBER, cwd=sess.cwd).attached)


@pytest.fixture
def setup(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    (project / "notes.txt").write_text("plans")
    env = {"HOME": str(home), "AIPAGER_INSTANCE_DIR": str(tmp_path / "inst"),
           "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    policy_file = tmp_path / "cfg" / "aipager" / "policy.json"
    policy_file.parent.mkdir(parents=True)
    sess = Session(name="claude-jim", label="jim", registered_at=0.0, cwd=str(project))
    return env, policy_file, sess, str(project / "notes.txt")


def _policy(no_access: list[str], pad: str = "") -> str:
    # ``pad`` only changes the size (a second field would break the schema)
    return json.dumps({"version": 1, "roles": {"user": {"no_access_paths": no_access}}}) + pad


def test_an_unchanged_policy_file_is_not_read_again(setup):
    env, policy_file, sess, notes = setup
    policy_file.write_text(_policy([]))
    first = model.current_policy(env)
    assert attached(env, sess, "look at @notes.txt")
    # Same inode, size and mtime: the file's version is unchanged, so what the
    # next prompt is checked with must be what was read before (its new text
    # would refuse the mention).
    st = os.stat(policy_file)
    with open(policy_file, "r+", encoding="utf-8") as fh:
        fh.write(_policy([notes]).ljust(st.st_size)[: st.st_size])
    os.utime(policy_file, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert model.current_policy(env) is first
    assert attached(env, sess, "look at @notes.txt")


def test_an_edit_of_the_policy_counts_at_the_next_prompt(setup):
    env, policy_file, sess, notes = setup
    policy_file.write_text(_policy([]))
    assert attached(env, sess, "look at @notes.txt")
    # an edit in place that keeps the size: the new mtime tells it apart
    st = os.stat(policy_file)
    policy_file.write_text(_policy(["/nonexistent/x"]).ljust(st.st_size))
    os.utime(policy_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert model.current_policy(env).role("user").no_access_paths == ("/nonexistent/x",)
    # an editor's save (a new file renamed over the old one)
    fresh = policy_file.with_name("policy.json.new")
    fresh.write_text(_policy([notes]))
    os.replace(fresh, policy_file)
    assert not attached(env, sess, "look at @notes.txt")
    # and a removed file is the built-in roles again
    policy_file.unlink()
    assert attached(env, sess, "look at @notes.txt")


def test_an_unusable_policy_is_not_remembered(setup):
    env, policy_file, sess, _ = setup
    policy_file.write_text("{not json")
    # fails closed: nothing is attached while the policy cannot be read
    assert not attached(env, sess, "look at @notes.txt")
    policy_file.write_text(_policy([]))
    assert attached(env, sess, "look at @notes.txt")
