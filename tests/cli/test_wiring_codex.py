"""aipager.install.codex and `aipager codex` against sample Codex homes: hooks.json absent,
holding the user's hooks, an old aipager path; config.toml with the user's settings and
comments, a trust entry Codex wrote, one in a form aipager does not edit, invalid TOML.
Each install/uninstall runs twice and the second run must change nothing.  The hash rule
is pinned here; tests/e2e/test_codex_hooks.py proves it on the real Codex."""

from __future__ import annotations

import hashlib
import json
import os
import tomllib

import pytest

from aipager.cli.app import app
from aipager.install import codex
from aipager.proto.errors import SettingsError

USER_CONFIG = """\
# my Codex settings
model = "gpt-5.5"   # keep this
model_provider = "mine"

[model_providers.mine]
name = "Mine"
base_url = "https://llm.example.invalid/v1"
wire_api = "responses"

[projects."/home/me/src"]
trust_level = "trusted"
"""
USER_GROUP = {"matcher": "^Bash$", "hooks": [{"type": "command", "command": "echo mine"}]}


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A CODEX_HOME (the variable set) with the user's config.toml."""
    folder = tmp_path / "codex-home"
    folder.mkdir()
    (folder / "config.toml").write_text(USER_CONFIG)
    monkeypatch.setenv("CODEX_HOME", str(folder))
    return folder


@pytest.fixture
def env(bins, home):
    """The environment as the CLI reads it, once the hook stand-in and CODEX_HOME are set."""
    return dict(os.environ)


def read_hooks(home) -> dict:
    return json.loads((home / "hooks.json").read_text())


def trust(home) -> dict:
    return codex.trust_entries(tomllib.loads((home / "config.toml").read_text()))


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------- the hash rule


def test_the_hash_is_of_the_sorted_compact_normalised_handler():
    group = codex.desired_group("PreToolUse", "/v/bin/aipager-hook")
    want = ('{"event_name":"pre_tool_use","hooks":[{"async":false,"command":'
            '"/v/bin/aipager-hook","timeout":600,"type":"command"}],"matcher":"*"}')
    assert codex.trust_hash("PreToolUse", group, group["hooks"][0]) == sha(want)


def test_the_hash_names_the_timeout_and_drops_a_matcher_the_event_ignores():
    perm = codex.desired_group("PermissionRequest", "/h")
    assert codex.trust_hash("PermissionRequest", perm, perm["hooks"][0]) == sha(
        '{"event_name":"permission_request","hooks":[{"async":false,"command":"/h",'
        '"timeout":30,"type":"command"}],"matcher":"*"}')
    stop = {"matcher": "*", "hooks": [{"type": "command", "command": "/h"}]}
    assert codex.trust_hash("Stop", stop, stop["hooks"][0]) == sha(
        '{"event_name":"stop","hooks":[{"async":false,"command":"/h","timeout":600,'
        '"type":"command"}]}')


@pytest.mark.parametrize(("event", "digest"), [
    # written by the real Codex 0.169.0 TUI when told "Trust all and continue" for this
    # hooks.json (aipager's hook at /work/main/.venv/bin/aipager-hook): Codex gives these
    # two events at most one second, and hashes them so
    ("SessionEnd", "ecbf9b94615498e027cccc4199a1b0df52abdf0445b346a92e9bef6aabf04e97"),
    ("Interrupt", "968382e2d2dfda01dbabf9ceac4b3b2972f703c79d6651ee8b714447809db646"),
    # ones the TUI left as aipager wrote them (it found them unchanged)
    ("SessionStart", "b39024786d99900325c6b94d2c38c8433ed191707f5dfc747efa0fe029323f39"),
    ("PermissionRequest", "3033976150ff75a65edbe117db3c4d93d553e465aef8cb0dfefe5a90fe9b2486"),
])
def test_hashes_are_the_ones_the_real_tui_writes(event: str, digest: str):
    group = codex.desired_group(event, "/work/main/.venv/bin/aipager-hook")
    assert codex.trust_hash(event, group, group["hooks"][0]) == "sha256:" + digest


def test_status_message_and_non_ascii_are_hashed_as_codex_serialises_them():
    handler = {"type": "command", "command": "/é", "statusMessage": "ça", "timeout": 0}
    assert codex.trust_hash("SessionStart", {"hooks": [handler]}, handler) == sha(
        '{"event_name":"session_start","hooks":[{"async":false,"command":"/é",'
        '"statusMessage":"ça","timeout":1,"type":"command"}]}')


def test_event_labels_and_keys():
    assert [codex.event_label(e) for e in ("PreToolUse", "SessionStart", "Stop")] == [
        "pre_tool_use", "session_start", "stop"]
    assert codex.trust_key("/c/hooks.json", "PostCompact", 2, 1) == "/c/hooks.json:post_compact:2:1"


def test_codex_home_is_canonical_when_set_and_home_dot_codex_otherwise(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert codex.codex_home({"CODEX_HOME": str(tmp_path / "link")}) == str(real)
    assert codex.codex_home({"HOME": "/home/me"}) == "/home/me/.codex"


# ---------------------------------------------------------------- hooks.json plans


def test_plan_wires_every_event_and_keeps_the_users_hooks():
    doc = {"description": "mine", "hooks": {"PreToolUse": [USER_GROUP]}}
    new = codex.plan_hooks(doc, "/v/bin/aipager-hook")
    assert new["description"] == "mine"
    assert set(new["hooks"]) == set(codex.CODEX_EVENTS)
    assert new["hooks"]["PreToolUse"] == [USER_GROUP, codex.desired_group("PreToolUse", "/v/bin/aipager-hook")]
    assert new["hooks"]["PermissionRequest"][0] == {
        "matcher": "*", "hooks": [{"type": "command", "command": "/v/bin/aipager-hook", "timeout": 30}]}
    assert new["hooks"]["Stop"][0] == {"hooks": [{"type": "command", "command": "/v/bin/aipager-hook"}]}
    assert codex.plan_hooks(new, "/v/bin/aipager-hook") == new
    assert doc == {"description": "mine", "hooks": {"PreToolUse": [USER_GROUP]}}


def test_a_moved_install_is_repointed_in_place():
    old = codex.plan_hooks({"hooks": {"Stop": [USER_GROUP]}}, "/old/aipager-hook")
    new = codex.plan_hooks(old, "/new/aipager-hook")
    assert new["hooks"]["Stop"] == [USER_GROUP, codex.desired_group("Stop", "/new/aipager-hook")]
    assert "/old/" not in json.dumps(new)


def test_unplan_removes_only_ours():
    doc = codex.plan_hooks({"hooks": {"PreToolUse": [USER_GROUP]}}, "/v/aipager-hook")
    assert codex.plan_unhooks(doc) == {"hooks": {"PreToolUse": [USER_GROUP]}}
    assert codex.plan_unhooks(codex.plan_hooks({}, "/v/aipager-hook")) == {}


def test_a_hooks_table_of_the_wrong_shape_is_refused():
    with pytest.raises(SettingsError):
        codex.plan_hooks({"hooks": []}, "/h")
    with pytest.raises(SettingsError):
        codex.plan_hooks({"hooks": {"Stop": {}}}, "/h")


# ---------------------------------------------------------------- config.toml plans


def test_trust_is_appended_and_everything_else_kept():
    text = codex.plan_trust(USER_CONFIG, {"/c/hooks.json:stop:0:0": "sha256:aa"}, {})
    assert text.startswith(USER_CONFIG)
    assert text[len(USER_CONFIG):] == (
        '\n[hooks.state."/c/hooks.json:stop:0:0"]\ntrusted_hash = "sha256:aa"\n')
    assert codex.plan_trust(text, {"/c/hooks.json:stop:0:0": "sha256:aa"}, {}) == text


def test_a_table_codex_wrote_gets_its_hash_line_replaced_and_keeps_its_other_keys():
    before = USER_CONFIG + ('\n[hooks.state."/c/hooks.json:stop:0:0"]\n'
                            'enabled = true\ntrusted_hash = "sha256:old"  # by Codex\n')
    text = codex.plan_trust(before, {"/c/hooks.json:stop:0:0": "sha256:new"}, {})
    assert text == before.replace('"sha256:old"  # by Codex', '"sha256:new"')
    gone = codex.plan_trust(text, {}, {"/c/hooks.json:stop:0:0": "sha256:new"})
    assert gone == before.replace('trusted_hash = "sha256:old"  # by Codex\n', "")


def test_drop_removes_a_whole_table_of_ours_and_only_with_our_hash():
    ours = {"/c/hooks.json:stop:0:0": "sha256:aa", "/c/hooks.json:pre_tool_use:0:0": "sha256:bb"}
    text = codex.plan_trust(USER_CONFIG, ours, {})
    assert codex.plan_trust(text, {}, ours) == USER_CONFIG
    # a key holding another hash (the user's hook now sits there) is not ours to drop
    assert codex.plan_trust(text, {}, {"/c/hooks.json:stop:0:0": "sha256:zz"}) == text


def test_trust_in_a_form_aipager_does_not_edit_is_refused_unchanged():
    inline = USER_CONFIG + '\n[hooks]\nstate = { "/c/hooks.json:stop:0:0" = { trusted_hash = "x" } }\n'
    with pytest.raises(SettingsError, match="does not edit|without breaking"):
        codex.plan_trust(inline, {"/c/hooks.json:stop:0:0": "sha256:aa"}, {})
    with pytest.raises(SettingsError, match="not valid TOML"):
        codex.plan_trust("model = \n", {"k": "v"}, {})


# ---------------------------------------------------------------- the files


def test_install_twice_then_uninstall_restores_the_files(bins, env, home):
    first = codex.install(env)
    assert first.changed and first.backup is None  # no hooks.json before
    hooks = read_hooks(home)
    entries = trust(home)
    hooks_path = str(home / "hooks.json")
    for event in codex.CODEX_EVENTS:
        group = hooks["hooks"][event][0]
        key = codex.trust_key(hooks_path, event, 0)
        assert entries[key]["trusted_hash"] == codex.trust_hash(event, group, group["hooks"][0])
    text = (home / "config.toml").read_text()
    assert text.startswith(USER_CONFIG)
    assert codex.check(env) == []

    again = codex.install(env)
    assert not again.changed and again.backup is None and again.notes == []
    assert (home / "config.toml").read_text() == text

    gone = codex.uninstall(env)
    assert gone.changed
    assert (home / "config.toml").read_text() == USER_CONFIG
    assert read_hooks(home) == {}
    assert not codex.uninstall(env).changed


def test_the_users_hook_before_ours_shifts_our_key_and_keeps_its_trust(bins, env, home):
    hooks_path = str(home / "hooks.json")
    (home / "hooks.json").write_text(json.dumps({"hooks": {"PreToolUse": [USER_GROUP]}}))
    user_key = codex.trust_key(hooks_path, "PreToolUse", 0)
    user_hash = codex.trust_hash("PreToolUse", USER_GROUP, USER_GROUP["hooks"][0])
    (home / "config.toml").write_text(
        USER_CONFIG + f'\n[hooks.state."{user_key}"]\ntrusted_hash = "{user_hash}"\n')

    codex.install(env)
    entries = trust(home)
    assert entries[user_key]["trusted_hash"] == user_hash
    assert codex.trust_key(hooks_path, "PreToolUse", 1) in entries
    assert codex.check(env) == []

    codex.uninstall(env)
    assert trust(home) == {user_key: {"trusted_hash": user_hash}}
    assert read_hooks(home) == {"hooks": {"PreToolUse": [USER_GROUP]}}


def test_a_stale_trust_entry_of_ours_is_moved(bins, env, home):
    codex.install(env)
    hooks_path = str(home / "hooks.json")
    # the user puts their hook first: ours moves to index 1 at the next install
    doc = read_hooks(home)
    doc["hooks"]["Stop"].insert(0, USER_GROUP)
    (home / "hooks.json").write_text(json.dumps(doc))
    assert any("Stop: aipager-hook is not trusted" in p.what for p in codex.check(env))

    codex.install(env)
    entries = trust(home)
    assert codex.trust_key(hooks_path, "Stop", 1) in entries
    assert codex.trust_key(hooks_path, "Stop", 0) not in entries
    assert codex.check(env) == []


def test_check_reports_missing_untrusted_changed_and_disabled(bins, env, home):
    assert any(p.what == "Stop: aipager-hook is not wired" for p in codex.check(env))
    codex.install(env)
    doc = read_hooks(home)
    doc["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"] = 5
    (home / "hooks.json").write_text(json.dumps(doc))
    text = (home / "config.toml").read_text()
    key = codex.trust_key(str(home / "hooks.json"), "Stop", 0)
    text = text.replace(f'[hooks.state."{key}"]\n', f'[hooks.state."{key}"]\nenabled = false\n')
    (home / "config.toml").write_text(text)

    found = [p.what for p in codex.check(env)]
    assert "PermissionRequest: timeout should be 30" in found
    assert "PermissionRequest: aipager-hook changed since it was trusted (Codex skips it)" in found
    assert "Stop: aipager-hook is disabled in Codex" in found
    assert codex.check(env, hook_path="/elsewhere/aipager-hook")[0].what.startswith(
        "SessionStart: points at")


def test_invalid_files_are_left_alone(bins, env, home):
    (home / "config.toml").write_text("model = \n")
    with pytest.raises(SettingsError, match="not valid TOML"):
        codex.install(env)
    assert not (home / "hooks.json").exists()
    assert "not valid TOML" in codex.check(env)[0].what
    (home / "config.toml").write_text(USER_CONFIG)
    (home / "hooks.json").write_text("{nope")
    with pytest.raises(SettingsError, match="not valid JSON"):
        codex.install(env)
    assert (home / "config.toml").read_text() == USER_CONFIG


def test_default_home_is_home_dot_codex(bins, env, tmp_path, monkeypatch):
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    codex.install(dict(os.environ))
    assert (tmp_path / "me" / ".codex" / "hooks.json").exists()
    assert "hooks" in tomllib.loads((tmp_path / "me" / ".codex" / "config.toml").read_text())


# ---------------------------------------------------------------- the CLI


def test_cli_install_check_uninstall(runner, bins, env, home):
    done = runner.invoke(app, ["codex", "install"])
    assert done.exit_code == 0, done.output
    assert f"Wired aipager into {home / 'hooks.json'}" in done.output
    again = runner.invoke(app, ["codex", "install"])
    assert again.exit_code == 0 and "nothing written" in again.output
    ok = runner.invoke(app, ["codex", "check"])
    assert ok.exit_code == 0 and "Codex wiring OK" in ok.output
    gone = runner.invoke(app, ["codex", "uninstall"])
    assert gone.exit_code == 0 and "Removed aipager" in gone.output
    assert (home / "config.toml").read_text() == USER_CONFIG
    bad = runner.invoke(app, ["codex", "check"])
    assert bad.exit_code == 1
    assert "PreToolUse: aipager-hook is not wired -> run `aipager codex install`" in bad.output
