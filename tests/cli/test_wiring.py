"""aipager.install.claude_code against sample settings files: absent, empty, the user's own
hooks, an old aipager path, invalid JSON.  Each install/uninstall runs twice and
the second run must change nothing."""

from __future__ import annotations

import json
import os

import pytest
from support import jsonfile

from aipager.proto import paths, wire
from aipager import claudefiles
from aipager.install import claude_code
from aipager.proto.errors import SettingsError

USER_HOOK = {"type": "command", "command": "/usr/local/bin/my-linter --fix"}
USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [USER_HOOK]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "UserCustomEvent": [{"hooks": [{"type": "command", "command": "echo hi"}]}],
    },
}


def settings_path(env):
    return paths.claude_settings(env)


def write(env, content):
    jsonfile.write(settings_path(env), content)


def read(env):
    return jsonfile.read(settings_path(env))


def backups(env):
    return jsonfile.backups(settings_path(env))


def assert_fully_wired(doc, bins):
    for event in wire.HOOK_EVENTS:
        ours = [g for g in doc["hooks"][event] if any(claude_code.is_ours(h) for h in g["hooks"])]
        assert len(ours) == 1, event
        group = ours[0]
        assert group["hooks"] == [claude_code.desired_group(event, bins.hook)["hooks"][0]]
        assert group["hooks"][0]["command"] == bins.hook
        assert os.path.isabs(group["hooks"][0]["command"])
        assert ("matcher" in group) == (event in wire.TOOL_EVENTS)
    assert doc["hooks"]["PreModelSwitch"][0]["hooks"][0]["timeout"] == 5
    perm = [g for g in doc["hooks"]["PermissionRequest"] if g.get("matcher") == "*"]
    assert perm[0]["hooks"][0]["timeout"] == 30
    form = [g for g in doc["hooks"]["Elicitation"] if any(claude_code.is_ours(h) for h in g["hooks"])]
    assert form[0]["hooks"][0]["timeout"] == 120  # the hook itself waits up to 90 s for a form
    assert "timeout" not in doc["hooks"]["Stop"][-1]["hooks"][0]
    assert doc["statusLine"] == {"type": "command", "command": bins.statusline}
    assert claude_code.problems(doc, bins) == []


@pytest.mark.parametrize("sample", ["absent", "empty", "blank-object", "user", "old-path"])
def test_install_twice_then_uninstall_twice(env, bins, sample):
    original = None
    if sample == "empty":
        write(env, "")
    elif sample == "blank-object":
        original = {}
        write(env, original)
    elif sample == "user":
        original = USER_SETTINGS
        write(env, original)
    elif sample == "old-path":
        old = json.loads(json.dumps(USER_SETTINGS))
        stale = {"type": "command", "command": "/old/venv/bin/aipager-hook"}
        old["hooks"]["PreToolUse"].append({"matcher": "*", "hooks": [stale]})
        old["hooks"]["SessionStart"] = [{"hooks": [stale]}, {"hooks": [stale]}]
        old["hooks"]["RetiredEvent"] = [{"hooks": [stale]}]
        old["statusLine"] = {"type": "command", "command": "/old/venv/bin/aipager-statusline"}
        write(env, old)

    first = claude_code.install(env, bins)
    assert first.changed
    doc = read(env)
    assert_fully_wired(doc, bins)
    assert len(backups(env)) == (0 if sample == "absent" else 1)

    second = claude_code.install(env, bins)
    assert not second.changed and second.backup is None
    assert read(env) == doc
    assert len(backups(env)) == (0 if sample == "absent" else 1)
    assert claude_code.check(env, bins) == []

    if sample in ("user", "old-path"):
        # The user's entries are untouched, in place and in order.
        assert doc["model"] == "opus" and doc["permissions"] == USER_SETTINGS["permissions"]
        assert doc["hooks"]["PreToolUse"][0] == {"matcher": "Bash", "hooks": [USER_HOOK]}
        assert doc["hooks"]["Stop"][0]["hooks"][0]["command"] == "notify-send done"
        assert doc["hooks"]["UserCustomEvent"] == USER_SETTINGS["hooks"]["UserCustomEvent"]
        assert "RetiredEvent" not in doc["hooks"]

    assert claude_code.uninstall(env).changed
    after = read(env)
    assert not claude_code.uninstall(env).changed
    assert read(env) == after
    if original is not None:
        assert after == original
    elif sample == "old-path":
        assert after == USER_SETTINGS  # the stale entries went too
    else:
        assert after == {}


def test_invalid_json_is_reported_and_never_overwritten(env, bins):
    write(env, '{"hooks": {')
    for action in (lambda: claude_code.install(env, bins), lambda: claude_code.uninstall(env)):
        with pytest.raises(SettingsError, match="not valid JSON"):
            action()
    with open(settings_path(env)) as fh:
        assert fh.read() == '{"hooks": {'
    assert backups(env) == []
    problems = claude_code.check(env, bins)
    assert len(problems) == 1 and "not valid JSON" in problems[0].what


@pytest.mark.parametrize("doc", [[1, 2], {"hooks": []}, {"hooks": {"Stop": {}}}])
def test_wrong_shapes_are_refused(env, bins, doc):
    write(env, doc)
    with pytest.raises(SettingsError):
        claude_code.install(env, bins)
    assert read(env) == doc


def test_a_group_shared_with_the_user_keeps_their_hook(env, bins):
    shared = {"hooks": {"Stop": [{"hooks": [USER_HOOK, {"type": "command",
                                                        "command": "/x/aipager-hook"}]}]}}
    write(env, shared)
    claude_code.install(env, bins)
    stop = read(env)["hooks"]["Stop"]
    assert stop[0] == claude_code.desired_group("Stop", bins.hook)
    assert stop[1] == {"hooks": [USER_HOOK]}
    claude_code.uninstall(env)
    assert read(env)["hooks"]["Stop"] == [{"hooks": [USER_HOOK]}]


def test_the_users_statusline_comes_back_on_uninstall(env, bins):
    mine = {"type": "command", "command": "~/bin/my-status", "padding": 0}
    write(env, {"statusLine": mine})
    result = claude_code.install(env, bins)
    assert any("statusLine" in note for note in result.notes)
    assert read(env)["statusLine"]["command"] == bins.statusline
    claude_code.uninstall(env)
    assert read(env) == {"statusLine": mine}


def test_file_mode_is_kept(env, bins):
    write(env, {})
    os.chmod(settings_path(env), 0o640)
    claude_code.install(env, bins)
    assert os.stat(settings_path(env)).st_mode & 0o777 == 0o640


def test_a_symlinked_settings_file_is_written_through_to_its_target(env, bins):
    """Dotfile managers (stow, chezmoi, home-manager) link settings.json into a repo."""
    repo = os.path.join(paths.home(env), "dotfiles", "claude")
    os.makedirs(repo)
    target = os.path.join(repo, "settings.json")
    jsonfile.write(target, USER_SETTINGS)
    os.chmod(target, 0o644)
    link = settings_path(env)
    os.makedirs(os.path.dirname(link))
    os.symlink(os.path.relpath(target, os.path.dirname(link)), link)  # relative, as stow does

    result = claude_code.install(env, bins)
    assert result.changed and os.path.islink(link)
    assert os.path.realpath(link) == os.path.realpath(target)
    assert_fully_wired(jsonfile.read(target), bins)
    assert os.stat(target).st_mode & 0o777 == 0o644
    # the backup holds the old content, beside the link, out of the dotfiles repo
    assert jsonfile.read(result.backup) == USER_SETTINGS and os.path.dirname(result.backup) == \
        os.path.dirname(link)
    assert sorted(os.listdir(repo)) == ["settings.json"]

    claude_code.uninstall(env)
    assert os.path.islink(link) and jsonfile.read(target) == USER_SETTINGS


def test_a_symlink_whose_target_cannot_be_written_is_named(env, bins, tmp_path):
    link = settings_path(env)
    os.makedirs(os.path.dirname(link))
    os.symlink(str(tmp_path / "gone" / "settings.json"), link)  # its folder does not exist
    with pytest.raises(SettingsError, match="where the link .* points"):
        claude_code.install(env, bins)
    assert os.path.islink(link)


def test_check_reports_each_problem(env, bins):
    assert any("not wired" in p.what for p in claude_code.check(env, bins))
    claude_code.install(env, bins)
    doc = read(env)
    doc["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"] = 10
    doc["hooks"]["PreToolUse"][0].pop("matcher")
    doc["hooks"]["Stop"] = []
    write(env, doc)
    whats = [p.what for p in claude_code.check(env, bins)]
    assert "PermissionRequest: timeout should be 30" in whats
    assert "PreToolUse: matcher should be '*'" in whats
    assert "Stop: aipager-hook is not wired" in whats
    assert all(p.fix for p in claude_code.check(env, bins))


def test_find_binaries_reports_a_missing_install(env, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(claude_code.sysconfig, "get_path", lambda name: "/nonexistent")
    monkeypatch.setattr(claude_code.sys, "argv", ["/nonexistent/aipager"])
    with pytest.raises(SettingsError, match="aipager-hook is not installed"):
        claude_code.find_binaries({"PATH": "/nonexistent"})


def test_is_native(tmp_path, bins):
    script = tmp_path / "s"
    script.write_text("#!/usr/bin/env python3\n")
    assert claudefiles.is_native(bins.hook) and not claudefiles.is_native(str(script))


def test_a_model_switch_from_the_chat_puts_claude_codes_setting_back(env):
    path = paths.claude_settings(env)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"theme": "dark"}, fh)
    os.chmod(path, 0o640)
    before = claudefiles.model_setting(env)
    assert before == claudefiles.NO_MODEL
    assert claudefiles.put_back_model(env, before, "sonnet") is False  # not written yet: nothing
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"theme": "dark", "model": "sonnet"}, fh)  # what Claude Code's /model does
    assert claudefiles.put_back_model(env, before, "sonnet") is True
    with open(path, encoding="utf-8") as fh:
        assert json.load(fh) == {"theme": "dark"}
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert not [n for n in os.listdir(os.path.dirname(path)) if "aipager-backup" in n]
    # a model chosen before comes back; a file changed by someone else since is left alone
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"model": "haiku"}, fh)
    assert claudefiles.put_back_model(env, "opus", "haiku") is True
    assert claudefiles.model_setting(env) == "opus"
    assert claudefiles.put_back_model(env, "haiku", "sonnet") is False
    assert claudefiles.model_setting(env) == "opus"
