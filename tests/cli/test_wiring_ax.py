"""aipager.install.ax_code and `aipager ax-code` against sample .ax-code/hooks.json
files: absent, empty, the user's own entries and packs, an old aipager path,
invalid JSON, wrong shapes.  Each install/uninstall runs twice and the second
run must change nothing.

The form written follows the ``ax-code --version`` on PATH: a stand-in
printing what the real one prints (``7.7.8`` for the build from source; a
``v`` in front for a release) answers 7.24.4 unless a test says otherwise, so
most tests see the protocol form; the legacy tests ask for 7.7.8 or none."""

from __future__ import annotations

import json
import os
import stat

import pytest
from support import jsonfile

from aipager.proto import paths, wire
from aipager.install import claude_code, ax_code
from aipager.cli.app import app
from aipager.proto.errors import SettingsError

USER_ENTRY = {"event": "PreToolUse", "matcher": "bash", "command": "echo running bash",
              "blockOnFailure": False}
USER_DOC = {
    "packs": ["block-force-push", "log-bash-commands"],
    "hooks": [USER_ENTRY, {"event": "Stop", "command": "notify-send done"}],
}


def fake_ax_code(folder, answer: str, code: int = 0) -> str:
    """An ``ax-code`` whose ``--version`` prints ``answer`` and exits ``code``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ax-code"
    path.write_text(f"#!/bin/sh\nprintf '%s\\n' '{answer}'\nexit {code}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def ax_version(tmp_path, monkeypatch):
    """Put an ``ax-code`` answering a version first on PATH; returns a setter."""
    folder = tmp_path / "axbin"
    base = os.environ.get("PATH", "")

    def put(answer: str | None, code: int = 0) -> None:
        if answer is None:
            monkeypatch.setenv("PATH", "/nonexistent")
            return
        fake_ax_code(folder, answer, code)
        monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{base}")

    put("7.24.4")
    return put


@pytest.fixture
def env(bins, ax_version):
    """The isolated environment, read after ``bins`` set AIPAGER_HOOK_BIN."""
    return dict(os.environ)


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    return str(folder)


def hooks_path(project):
    return paths.ax_code_hooks(project)


def write(project, content):
    jsonfile.write(hooks_path(project), content)


def read(project):
    return jsonfile.read(hooks_path(project))


def backups(project):
    return jsonfile.backups(hooks_path(project))


def ours(doc):
    return [e for e in doc["hooks"] if claude_code.is_ours(e)]


def assert_fully_wired(doc, bins):
    entries = ours(doc)
    assert [e["event"] for e in entries] == list(ax_code.AX_EVENTS)
    for entry in entries:
        # the absolute path of the installed program, Claude Code's protocol,
        # and no matcher: AX Code runs a matcher-less entry for every tool
        assert entry == {"event": entry["event"], "command": bins.hook, "protocol": "claude-code"}
        assert os.path.isabs(entry["command"])
    assert ax_code.problems(doc, bins.hook) == []


def assert_legacy_wired(doc, bins):
    entries = ours(doc)
    # 7.7.8 ignores the whole file for an event it does not know
    assert [e["event"] for e in entries] == [e for e in ax_code.AX_EVENTS if e != "PostToolUseFailure"]
    for entry in entries:
        want = {"event": entry["event"], "command": bins.hook}
        if entry["event"] in ("PreToolUse", "UserPromptSubmit"):
            want["blockOnFailure"] = True  # else a refusal is only logged
        assert entry == want
    assert ax_code.problems(doc, bins.hook, form=ax_code.LEGACY) == []


def test_every_ax_event_aipager_knows_is_wired():
    # the ten AX events shared with Claude Code are the daemon's own events;
    # Interrupt is the one AX-only event
    shared = [e for e in ax_code.AX_EVENTS if e in wire.HOOK_EVENTS]
    assert len(shared) == 10
    assert set(ax_code.AX_EVENTS) - set(shared) == {"Interrupt"}


@pytest.mark.parametrize("sample", ["absent", "empty", "blank-object", "user", "old-path"])
def test_install_twice_then_uninstall_twice(bins, env, project, sample):
    original = None
    if sample == "empty":
        write(project, "")
    elif sample == "blank-object":
        original = {}
        write(project, original)
    elif sample == "user":
        original = USER_DOC
        write(project, original)
    elif sample == "old-path":
        old = json.loads(json.dumps(USER_DOC))
        stale = {"event": "PreToolUse", "command": "/old/venv/bin/aipager-hook"}
        old["hooks"].insert(1, stale)
        old["hooks"].append(dict(stale, event="SessionStart"))
        old["hooks"].append(dict(stale, event="SessionStart"))
        write(project, old)

    first = ax_code.install(project, env)
    assert first.changed and first.path == hooks_path(project)
    assert any("AX_CODE_TRUST_PROJECT_CONFIG=1" in note for note in first.notes)
    doc = read(project)
    assert_fully_wired(doc, bins)
    assert len(backups(project)) == (0 if sample == "absent" else 1)

    second = ax_code.install(project, env)
    assert not second.changed and second.backup is None
    assert read(project) == doc
    assert len(backups(project)) == (0 if sample == "absent" else 1)
    assert ax_code.check(project, env) == []

    if sample == "user":
        # the user's entries keep their order, aipager's come after them
        assert doc["packs"] == USER_DOC["packs"]
        assert doc["hooks"][:2] == USER_DOC["hooks"]
    if sample == "old-path":
        # put where the first stale entry was, between the user's two
        assert doc["hooks"][0] == USER_ENTRY
        assert doc["hooks"][-1] == {"event": "Stop", "command": "notify-send done"}

    assert ax_code.uninstall(project).changed
    after = read(project)
    assert not ax_code.uninstall(project).changed
    assert read(project) == after
    if original is not None:
        assert after == original
    elif sample == "old-path":
        assert after == USER_DOC  # the stale entries went too
    else:
        assert after == {}


def test_uninstall_without_a_file_writes_nothing(project):
    result = ax_code.uninstall(project)
    assert not result.changed
    assert not os.path.exists(os.path.dirname(hooks_path(project)))


def test_a_path_with_a_space_is_quoted_for_the_shell(env, project, tmp_path):
    spaced = str(tmp_path / "my venv" / "bin" / "aipager-hook")
    ax_code.install(project, env, hook_path=spaced)
    entries = ours(read(project))
    assert len(entries) == len(ax_code.AX_EVENTS)
    assert entries[0]["command"] == f"'{spaced}'"
    assert ax_code.check(project, env, hook_path=spaced) == []
    assert not ax_code.install(project, env, hook_path=spaced).changed


def test_invalid_json_is_reported_and_never_overwritten(bins, env, project):
    write(project, '{"hooks": [')
    for action in (lambda: ax_code.install(project, env), lambda: ax_code.uninstall(project)):
        with pytest.raises(SettingsError, match="not valid JSON"):
            action()
    with open(hooks_path(project)) as fh:
        assert fh.read() == '{"hooks": ['
    assert backups(project) == []
    found = ax_code.check(project, env)
    assert len(found) == 1 and "not valid JSON" in found[0].what


@pytest.mark.parametrize("doc", [[1, 2], {"hooks": {}}, {"hooks": "x"}])
def test_wrong_shapes_are_refused(bins, env, project, doc):
    write(project, doc)
    with pytest.raises(SettingsError):
        ax_code.install(project, env)
    assert read(project) == doc
    assert backups(project) == []


def test_a_file_ax_code_would_reject_as_too_long_is_refused(bins, env, project):
    room = ax_code.MAX_ENTRIES - len(ax_code.AX_EVENTS)
    many = {"hooks": [{"event": "Stop", "command": f"echo {n}"} for n in range(room + 1)]}
    write(project, many)
    with pytest.raises(SettingsError, match="ignores the whole file"):
        ax_code.install(project, env)
    assert read(project) == many
    many["hooks"].pop()
    write(project, many)
    assert ax_code.install(project, env).changed
    assert len(read(project)["hooks"]) == ax_code.MAX_ENTRIES


def test_check_reports_each_problem(bins, env, project):
    assert any("not wired" in p.what for p in ax_code.check(project, env))
    ax_code.install(project, env)
    doc = read(project)
    by_event = {e["event"]: e for e in ours(doc)}
    by_event["PreToolUse"]["matcher"] = "bash"
    del by_event["Interrupt"]["protocol"]
    by_event["PostCompact"]["command"] = "/old/bin/aipager-hook"
    doc["hooks"] = [e for e in doc["hooks"] if e.get("event") != "Stop"]
    doc["hooks"].append(dict(by_event["SessionStart"]))
    write(project, doc)
    whats = [p.what for p in ax_code.check(project, env)]
    assert "PreToolUse: matcher limits it to 'bash'" in whats
    assert any(w.startswith('Interrupt: "protocol" should be "claude-code"') for w in whats)
    assert f"PostCompact: runs /old/bin/aipager-hook, not {bins.hook}" in whats
    assert "Stop: aipager-hook is not wired" in whats
    assert "SessionStart: aipager-hook is wired 2 times" in whats
    assert len(whats) == 5
    # "*" is AX Code's other spelling of every tool: not a problem
    by_event["PreToolUse"]["matcher"] = "*"
    assert not any(p.what.startswith("PreToolUse")
                   for p in ax_code.problems({"hooks": list(by_event.values())}, bins.hook))


def test_install_fixes_what_check_reports(bins, env, project):
    ax_code.install(project, env)
    doc = read(project)
    for entry in ours(doc):
        entry["command"] = "/elsewhere/aipager-hook"
        entry["matcher"] = "edit"
    write(project, doc)
    assert ax_code.check(project, env)
    assert ax_code.install(project, env).changed
    assert ax_code.check(project, env) == []


def test_the_claude_code_wiring_is_unaffected(bins, env, project):
    ax_code.install(project, env)
    assert not os.path.exists(paths.claude_settings(env))


# ---------------------------------------------------------------- the CLI


def test_cli_install_check_uninstall(runner, bins, env, project):
    done = runner.invoke(app, ["ax-code", "install", "--project", project])
    assert done.exit_code == 0, done.output
    assert f"Wired aipager into {hooks_path(project)}" in done.output
    assert "AX_CODE_TRUST_PROJECT_CONFIG=1" in done.output
    assert_fully_wired(read(project), bins)

    again = runner.invoke(app, ["ax-code", "install", "--project", project])
    assert again.exit_code == 0 and "nothing written" in again.output

    ok = runner.invoke(app, ["ax-code", "check", "--project", project])
    assert ok.exit_code == 0 and "AX Code wiring OK" in ok.output

    gone = runner.invoke(app, ["ax-code", "uninstall", "--project", project])
    assert gone.exit_code == 0 and "Removed aipager" in gone.output
    assert read(project) == {}

    bad = runner.invoke(app, ["ax-code", "check", "--project", project])
    assert bad.exit_code == 1
    assert "PreToolUse: aipager-hook is not wired -> run `aipager ax-code install`" in bad.output


def test_cli_defaults_to_the_current_folder(runner, bins, env, project, monkeypatch):
    monkeypatch.chdir(project)
    assert runner.invoke(app, ["ax-code", "install"]).exit_code == 0
    assert_fully_wired(read(project), bins)


def test_cli_reports_invalid_json_without_a_traceback(runner, bins, env, project):
    write(project, "{nope")
    done = runner.invoke(app, ["ax-code", "install", "--project", project])
    assert done.exit_code == SettingsError.exit_code
    assert "not valid JSON" in done.output and "Traceback" not in done.output
    with open(hooks_path(project)) as fh:
        assert fh.read() == "{nope"


# ---------------------------------------------------------------- the two forms


@pytest.mark.parametrize("answer, version, form", [
    ("7.7.8", (7, 7, 8), "legacy"),
    ("v7.7.8", (7, 7, 8), "legacy"),
    ("ax-code 7.24.3", (7, 24, 3), "legacy"),
    ("7.24.4", (7, 24, 4), "protocol"),
    ("v8.0.0", (8, 0, 0), "protocol"),
    ("local", None, "legacy"),
])
def test_the_version_ax_code_reports_picks_the_form(env, ax_version, answer, version, form):
    ax_version(answer)
    found = ax_code.detect_version(dict(os.environ))
    assert found == version
    assert ax_code.form_for(found) == form


def test_legacy_form_for_ax_code_7_7_8(bins, ax_version, project):
    ax_version("7.7.8")
    env = dict(os.environ)
    write(project, USER_DOC)
    first = ax_code.install(project, env)
    assert "AX Code 7.7.8: the legacy hook form." in first.notes
    doc = read(project)
    assert_legacy_wired(doc, bins)
    assert doc["hooks"][:2] == USER_DOC["hooks"] and doc["packs"] == USER_DOC["packs"]
    assert ax_code.check(project, env) == []
    assert not ax_code.install(project, env).changed

    # the same project once AX Code is upgraded: the protocol form replaces it
    ax_version("7.24.4")
    env = dict(os.environ)
    whats = [p.what for p in ax_code.check(project, env)]
    assert 'SessionStart: "protocol" should be "claude-code" (AX Code ignores its answers)' in whats
    assert "PostToolUseFailure: aipager-hook is not wired" in whats
    assert ax_code.install(project, env).changed
    assert_fully_wired(read(project), bins)
    # and back
    ax_version("7.7.8")
    env = dict(os.environ)
    whats = [p.what for p in ax_code.check(project, env)]
    assert 'PreToolUse: "blockOnFailure" should be true (AX Code ignores its refusals)' in whats
    assert any("an unknown event makes it ignore the whole file" in w for w in whats)
    assert ax_code.install(project, env).changed
    assert_legacy_wired(read(project), bins)


@pytest.mark.parametrize("answer, code", [(None, 0), ("7.24.4", 1), ("no version here", 0)])
def test_without_an_ax_code_to_ask_the_legacy_form_is_written(bins, ax_version, project, answer, code):
    ax_version(answer, code)
    env = dict(os.environ)
    result = ax_code.install(project, env)
    assert any("wrote the legacy form" in note for note in result.notes)
    assert_legacy_wired(read(project), bins)
    assert ax_code.check(project, env) == []  # check follows the file then


def test_the_form_asked_for_wins(bins, env, project):
    ax_code.install(project, env, form=ax_code.LEGACY)  # the AX Code on PATH says 7.24.4
    assert_legacy_wired(read(project), bins)
    assert ax_code.check(project, env, form=ax_code.LEGACY) == []
    with pytest.raises(SettingsError, match="unknown AX Code hook form"):
        ax_code.install(project, env, form="claude")


def test_cli_form_and_program(runner, bins, env, project, tmp_path):
    legacy = fake_ax_code(tmp_path / "old", "7.7.8")
    done = runner.invoke(app, ["ax-code", "install", "--project", project, "--ax-code", legacy])
    assert done.exit_code == 0, done.output
    assert "AX Code 7.7.8: the legacy hook form." in done.output
    assert_legacy_wired(read(project), bins)
    ok = runner.invoke(app, ["ax-code", "check", "--project", project, "--ax-code", legacy])
    assert ok.exit_code == 0, ok.output
    # the 7.24.4 on PATH reads the other form
    bad = runner.invoke(app, ["ax-code", "check", "--project", project])
    assert bad.exit_code == 1 and '"protocol" should be "claude-code"' in bad.output

    # a form the installed AX Code cannot read turns every hook off (the floor too): refused
    before = read(project)
    refused = runner.invoke(app, ["ax-code", "install", "--project", project, "--form", "protocol",
                                  "--ax-code", legacy])
    assert refused.exit_code != 0 and "AX Code 7.7.8 does not read the protocol hook form" \
        in refused.output and "--force" in refused.output and "Traceback" not in refused.output
    assert read(project) == before
    forced = runner.invoke(app, ["ax-code", "install", "--project", project, "--form", "protocol",
                                 "--ax-code", legacy, "--force"])
    assert forced.exit_code == 0, forced.output
    assert "Warning: AX Code 7.7.8 does not read the protocol hook form" in forced.output
    assert "safety floor" in forced.output
    # and the check that follows the install says the same
    assert '"protocol" should' in forced.output or "blockOnFailure" in forced.output
    assert_fully_wired(read(project), bins)
    upgraded = runner.invoke(app, ["ax-code", "install", "--project", project, "--form",
                                   "protocol"])  # the 7.24.4 on PATH reads it
    assert upgraded.exit_code == 0 and "AX Code hook form: protocol (as asked)." in upgraded.output
    wrong = runner.invoke(app, ["ax-code", "install", "--project", project, "--form", "claude"])
    assert wrong.exit_code == 2 and "Traceback" not in wrong.output
