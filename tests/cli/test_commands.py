"""config, uninstall, start, status, doctor, session, send, --version in-process."""

from __future__ import annotations

import json
import os
import sys
import types

import pytest

from aipager import __version__, config, dtach
from aipager.proto import paths
from aipager.install import claude_code
from aipager.cli.app import app
from fakes.telegram_api import OWNER, TOKEN

SECRET = TOKEN.split(":")[1]
USER_SETTINGS = {"model": "opus", "hooks": {"Stop": [{"hooks": [
    {"type": "command", "command": "notify-send done"}]}]}}


@pytest.fixture
def configured(env, bins):
    cfg = config.Config(TOKEN, OWNER["id"], (config.Member(OWNER["id"], "owner", "Owner"),))
    config.save(env, cfg)
    return cfg


def test_version(runner):
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"aipager {__version__}"


# ------------------------------------------------------------------ config


def test_config_show_masks_the_token(runner, configured):
    result = runner.invoke(app, ["config"])
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output and "123456:…" in result.output
    doc = json.loads(runner.invoke(app, ["config", "show", "--json"]).output)
    assert doc["chat_id"] == OWNER["id"] and SECRET not in json.dumps(doc)


def test_config_without_setup(runner):
    result = runner.invoke(app, ["config", "show"])
    assert result.exit_code == 3 and "aipager setup" in result.stderr


def test_config_raw_keys_is_off_until_the_owner_turns_it_on(runner, configured, env):
    assert "owner_raw_keys" not in config.load(env).extra
    on = runner.invoke(app, ["config", "raw-keys", "on"])
    assert on.exit_code == 0 and "typed as keys" in on.output
    assert config.load(env).extra["owner_raw_keys"] is True
    assert runner.invoke(app, ["config", "raw-keys", "off"]).exit_code == 0
    assert config.load(env).extra["owner_raw_keys"] is False
    assert runner.invoke(app, ["config", "raw-keys", "maybe"]).exit_code != 0


def test_config_private_mode_and_a_value_that_is_no_boolean_is_refused(runner, configured, env):
    assert not config.private(config.load(env))
    on = runner.invoke(app, ["config", "private", "on"])
    assert on.exit_code == 0 and "nothing sent is edited away" in on.output
    assert "aipager page" in on.output  # no web_public_url: the page is on the computer
    assert config.private(config.load(env))
    assert "private mode: on" in runner.invoke(app, ["config", "show"]).output
    assert runner.invoke(app, ["config", "private", "off"]).exit_code == 0
    assert not config.private(config.load(env))
    # "yes" guessed as off would send what should stay home; guessed as on, hide a mistake
    with pytest.raises(config.ConfigError, match="private must be true or false"):
        config.from_json({"bot_token": "1:a", "chat_id": 5, "private": "yes"})


def test_config_members_policy_claude(runner, configured, env, tmp_path):
    assert runner.invoke(app, ["config", "member", "add", "55", "--role", "admin",
                               "--label", "bob"]).exit_code == 0
    bad = runner.invoke(app, ["config", "member", "add", "56", "--role", "boss"])
    assert bad.exit_code == 3 and "unknown role" in bad.stderr
    assert runner.invoke(app, ["config", "member", "remove", str(OWNER["id"])]).exit_code == 0
    policy = tmp_path / "policy.json"
    assert runner.invoke(app, ["config", "policy-file", str(policy)]).exit_code == 0
    assert runner.invoke(app, ["config", "claude-path", "/opt/claude"]).exit_code == 0
    cfg = config.load(env)
    assert [(m.id, m.role, m.label) for m in cfg.members] == [(55, "admin", "bob")]
    assert cfg.policy_file == str(policy) and cfg.claude_path == "/opt/claude"
    assert dtach.claude_binary(env) == "/opt/claude"  # sessions use the pinned program
    cleared = runner.invoke(app, ["config", "policy-file", "--clear"])
    assert cleared.exit_code == 0 and "Policy file: default (" in cleared.stdout
    assert config.load(env).policy_file is None
    missing = runner.invoke(app, ["config", "policy-file", str(tmp_path / "later.json")])
    assert "does not exist yet" in missing.stdout
    assert config.load(env).policy_file == str(tmp_path / "later.json")


def test_config_token_and_chat_are_checked_first(runner, configured, fake_api, env, tmp_path):
    fake_api.add_private_chat()
    other = {"id": 99, "first_name": "Group-ish", "is_bot": False}
    fake_api.add_private_chat(other)
    assert runner.invoke(app, ["config", "chat", "99"]).exit_code == 0
    assert config.load(env).chat_id == 99
    unknown = runner.invoke(app, ["config", "chat", "12345"])
    assert unknown.exit_code == 5 and config.load(env).chat_id == 99
    calls = len(fake_api.calls)
    for bad in (["config", "chat", "0"], ["config", "chat", "--", str(-(1 << 60))],
                ["config", "member", "add", "--", "-5"], ["config", "member", "add", str(1 << 53)]):
        refused = runner.invoke(app, bad)
        assert refused.exit_code == 3 and "not a Telegram" in refused.stderr, refused.output
    assert len(fake_api.calls) == calls and config.load(env).chat_id == 99
    new = "654321:BBnewNEWnewNEWnewNEWnewNEW11"
    bad = runner.invoke(app, ["config", "token"], input=new + "\n")
    assert bad.exit_code == 4 and config.load(env).bot_token == TOKEN
    fake_api.tokens[new] = {**fake_api.tokens[TOKEN], "username": "other_bot"}
    good = runner.invoke(app, ["config", "token"], input=new + "\n")
    assert good.exit_code == 0, good.output
    assert config.load(env).bot_token == new and "BBnew" not in good.output


def test_config_rewire(runner, env, bins):
    first = runner.invoke(app, ["config", "rewire"])
    assert first.exit_code == 0 and "wired" in first.output
    assert claude_code.check(env, bins) == []
    assert "already wired" in runner.invoke(app, ["config", "rewire"]).output


# ------------------------------------------------------------------ uninstall


def test_uninstall_twice_keeps_audit_log_and_user_settings(runner, env, bins, fake_daemon):
    path = paths.claude_settings(env)
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as fh:
        json.dump(USER_SETTINGS, fh)
    claude_code.install(env, bins)
    os.makedirs(paths.state_dir(env), exist_ok=True)
    with open(paths.audit_log(env), "w") as fh:
        fh.write('{"action": "allow"}\n')

    result = runner.invoke(app, ["uninstall", "--yes"])
    assert result.exit_code == 0, result.output
    assert "Daemon stopped" in result.output
    assert fake_daemon.wait(5) == 0
    with open(path) as fh:
        after = json.load(fh)
    assert after == USER_SETTINGS
    again = runner.invoke(app, ["uninstall", "--yes"])
    assert again.exit_code == 0 and "No aipager entries" in again.output
    with open(path) as fh:
        assert json.load(fh) == after
    assert os.path.exists(paths.audit_log(env))


def test_uninstall_purge_keeps_only_the_audit_log(runner, env, configured):
    os.makedirs(paths.state_dir(env), exist_ok=True)
    with open(paths.audit_log(env), "w") as fh:
        fh.write("{}\n")
    with open(paths.log_file(env), "w") as fh:
        fh.write("log\n")
    os.makedirs(paths.spool_dir(env), mode=0o700)
    with open(os.path.join(paths.spool_dir(env), "00000000000000000001-1.json"), "w") as fh:
        fh.write("{}")
    assert runner.invoke(app, ["uninstall", "--yes", "--purge"]).exit_code == 0
    assert not config.exists(env)
    assert os.listdir(paths.state_dir(env)) == [os.path.basename(paths.audit_log(env))]
    # Without the spool folder the hooks keep nothing for a daemon that is down.
    assert not os.path.exists(paths.spool_dir(env))


# ------------------------------------------------------------------ start


@pytest.fixture
def daemon_app(monkeypatch):
    """A stand-in for aipager.main that records how it was started."""
    calls = []
    module = types.ModuleType("aipager.main")

    def run(env, verbose=False, cfg=None, web=True):
        import logging

        logging.getLogger("aipager.daemon").info("fake daemon ran")
        logging.getLogger("aiohttp.client").error("failed: /bot%s/getMe", TOKEN)
        calls.append((env, verbose, cfg, web))
        return 0

    module.run = run
    monkeypatch.setitem(sys.modules, "aipager.main", module)
    return calls


def test_start_runs_the_daemon_and_logs_to_file(runner, configured, env, daemon_app):
    import logging

    root = logging.getLogger()
    try:
        result = runner.invoke(app, ["start", "--verbose"])
        result = runner.invoke(app, ["start", "--verbose"])  # handlers are not stacked
        ours = [h for h in root.handlers if getattr(h, "_aipager", False)]
        assert len(ours) == 2
    finally:
        for handler in [h for h in root.handlers if getattr(h, "_aipager", False)]:
            handler.close()
            root.removeHandler(handler)
    assert result.exit_code == 0, result.output
    assert len(daemon_app) == 2 and daemon_app[0][1] is True
    assert daemon_app[0][0]["HOME"] == env["HOME"]
    with open(paths.log_file(env)) as fh:
        log = fh.read()
    assert "fake daemon ran" in log
    assert "/bot123456:***/getMe" in log and SECRET not in log


def _drop_log_handlers() -> None:
    import logging

    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_aipager", False)]:
        handler.close()
        root.removeHandler(handler)


def test_start_on_an_unconfigured_machine_serves_the_page_alone(runner, bins, env, daemon_app):
    try:
        result = runner.invoke(app, ["start"])
    finally:
        _drop_log_handlers()
    assert result.exit_code == 0, result.output
    assert "aipager setup" in result.output  # Telegram can be connected later
    (call,) = daemon_app
    assert call[2] is None and call[3] is True  # no config: the page alone
    assert claude_code.check(env, bins) == []  # Claude Code is wired all the same


def test_start_unconfigured_without_the_page_has_nothing_to_serve(runner, daemon_app):
    result = runner.invoke(app, ["start", "--no-web"])
    assert result.exit_code == 3 and "aipager setup" in result.stderr
    assert daemon_app == []


@pytest.mark.parametrize("blocked", ["XDG_STATE_HOME", "AIPAGER_INSTANCE_DIR"])
def test_start_that_cannot_make_its_folders_says_so_in_one_line(runner, configured, env,
                                                                daemon_app, monkeypatch,
                                                                tmp_path, blocked):
    """A file where a folder must be (a read-only HOME acts alike: the subprocess test)."""
    import logging

    in_the_way = tmp_path / "not-a-folder"
    in_the_way.write_text("")
    monkeypatch.setenv(blocked, str(in_the_way))
    result = runner.invoke(app, ["start"])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("aipager: cannot write to ") and blocked in result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.output
    assert daemon_app == []  # stopped before the log or the daemon
    assert not [h for h in logging.getLogger().handlers if getattr(h, "_aipager", False)]


def test_purge_keeps_the_program_that_install_sh_made(runner, env, configured):
    venv = os.path.join(paths.data_dir(env), "venv")
    os.makedirs(os.path.join(venv, "bin"))
    assert runner.invoke(app, ["uninstall", "--yes", "--purge"]).exit_code == 0
    assert os.listdir(paths.data_dir(env)) == ["venv"] and not config.exists(env)


# ------------------------------------------------------------------ status


def test_status_reads_the_saved_state(runner, monkeypatch, fake_daemon):
    module = types.ModuleType("aipager.daemon.persist")
    # The shape aipager.daemon.persist documents: a list of sessions.
    module.load_state = lambda env: {"version": 1, "daemon": {"alive": True}, "sessions": [
        {"name": "claude-x1", "label": "x1", "state": "working", "model": "opus",
         "context_pct": 42, "cost_usd": 0.07839999999999998, "waiting_for": "permission"},
        {"name": "claude-old", "label": "old", "state": "gone", "model": "opus"}]}
    monkeypatch.setitem(sys.modules, "aipager.daemon.persist", module)
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 0, result.output
    assert f"running (pid {fake_daemon.pid})" in result.output
    assert "x1" in result.output and "state=working" in result.output
    assert "context_pct=42" in result.output and "waiting_for=permission" in result.output
    assert "cost=$0.08" in result.output and "0.0783" not in result.output
    assert "old" not in result.output
    assert "state=gone" in runner.invoke(app, ["status", "--all"]).output
    doc = json.loads(runner.invoke(app, ["status", "--json"]).output)
    assert doc["daemon"]["running"] and doc["state"]["sessions"][0]["model"] == "opus"
    # to a millionth of a dollar, without the float's noise (a state an older daemon saved)
    assert doc["state"]["sessions"][0]["cost_usd"] == 0.0784


def test_status_without_daemon_or_state_module(runner, monkeypatch):
    monkeypatch.setitem(sys.modules, "aipager.daemon.persist", None)
    result = runner.invoke(app, ["status", "--json"])
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert doc["daemon"]["running"] is False and doc["state"] is None
    assert "not readable" in doc["state_error"]
    text = runner.invoke(app, ["status"]).output
    assert "not running" in text and "not readable" in text


# ------------------------------------------------------------------ doctor


def test_doctor_all_good_then_each_problem_with_a_fix(runner, configured, fake_api, env, bins,
                                                      fake_daemon, monkeypatch, tmp_path):
    fake_api.add_private_chat()
    claude = tmp_path / "claude"
    claude.write_text("#!/bin/sh\n")
    claude.chmod(0o755)
    monkeypatch.setenv("AIPAGER_CLAUDE_BIN", str(claude))
    claude_code.install(env, bins)
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "all good" in result.output and "FAIL" not in result.output

    fake_daemon.terminate()
    fake_daemon.wait()
    with open(bins.hook, "w") as fh:
        fh.write("#!/usr/bin/env python3\n")  # a script, not the native build
    del fake_api.tokens[TOKEN]
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1
    failed = {line.split()[1] for line in result.output.splitlines() if line.startswith("FAIL")}
    assert failed == {"token", "hook", "daemon"}
    assert result.output.count("fix:") == 3
    doc = json.loads(runner.invoke(app, ["doctor", "--json", "--offline"]).output)
    assert {c["name"] for c in doc if not c["ok"]} == {"hook binaries", "daemon"}


def test_doctor_names_private_files_open_to_others(runner, configured, env):
    """The token, logs and state are the owner's alone: doctor says which are not, and how."""
    from aipager.proto import paths

    def check():
        doc = json.loads(runner.invoke(app, ["doctor", "--json", "--offline"]).output)
        return next(c for c in doc if c["name"] == "private files")

    os.makedirs(paths.state_dir(env), mode=0o700, exist_ok=True)
    with open(paths.log_file(env), "w", encoding="utf-8"):
        pass
    os.chmod(paths.log_file(env), 0o600)
    assert check()["ok"] is True
    os.chmod(paths.config_file(env), 0o644)
    os.chmod(paths.state_dir(env), 0o755)
    found = check()
    assert found["ok"] is False
    assert f"{paths.config_file(env)} is open to others (-rw-r--r--)" in found["detail"]
    assert f"{paths.state_dir(env)} is open to others (drwxr-xr-x)" in found["detail"]
    assert found["fix"] == f"chmod 700 {paths.state_dir(env)}; chmod 600 {paths.config_file(env)}"
    os.chmod(paths.config_file(env), 0o600)
    os.chmod(paths.state_dir(env), 0o700)
    # the policy file may be readable (an editor's 0644), never writable by others
    with open(paths.policy_user_file(env), "w", encoding="utf-8") as fh:
        fh.write("{}")
    os.chmod(paths.policy_user_file(env), 0o644)
    assert check()["ok"] is True
    os.chmod(paths.policy_user_file(env), 0o666)
    found = check()
    assert found["ok"] is False and found["fix"] == f"chmod go-w {paths.policy_user_file(env)}"
    os.chmod(paths.policy_user_file(env), 0o644)
    os.symlink(paths.config_file(env), paths.audit_log(env))
    found = check()
    assert found["ok"] is False and f"{paths.audit_log(env)} is a symlink" in found["detail"]
    assert "move what is not yours, or a symlink, away" in found["fix"]


def test_doctor_on_a_bare_machine(runner, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    result = runner.invoke(app, ["doctor", "--offline"])
    assert result.exit_code == 1
    for name in ("claude", "settings.json", "daemon"):
        assert any(line.startswith("FAIL") and name in line for line in result.output.splitlines())


def test_doctor_in_page_only_mode_says_so_instead_of_failing(runner, env, bins, fake_api,
                                                             fake_daemon, monkeypatch, tmp_path):
    """Issue 43: without Telegram (`aipager start` before `aipager setup`) doctor said FAIL
    twice (config, token); the page alone is a way aipager runs, not a problem."""
    claude = tmp_path / "claude"
    claude.write_text("#!/bin/sh\n")
    claude.chmod(0o755)
    monkeypatch.setenv("AIPAGER_CLAUDE_BIN", str(claude))
    claude_code.install(env, bins)
    assert not config.exists(env)
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "FAIL" not in result.output and "all good" in result.output
    assert "ok    telegram       not set up (page only)" in result.output
    assert "`aipager setup` connects a Telegram chat" in result.output
    assert fake_api.calls == []  # no token to check: Telegram is not asked anything
    # a config that is there but broken is still a problem, with its fix
    os.makedirs(os.path.dirname(paths.config_file(env)), mode=0o700, exist_ok=True)
    with open(os.open(paths.config_file(env), os.O_WRONLY | os.O_CREAT, 0o600), "w") as fh:
        fh.write("{oops")
    broken = runner.invoke(app, ["doctor"])
    assert broken.exit_code == 1 and "FAIL  config" in broken.output
    assert broken.output.count("FAIL") == 1


def test_doctor_checks_the_codex_wiring_when_codex_is_in_use(runner, configured, env, bins,
                                                             monkeypatch, tmp_path):
    """Codex found (or wired before): doctor checks its wiring as `aipager codex check`
    does and says what to run; without Codex it says nothing of it."""
    home = tmp_path / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("AIPAGER_CODEX_BIN", raising=False)

    def codex_checks():
        doc = json.loads(runner.invoke(app, ["doctor", "--json", "--offline"]).output)
        return [c for c in doc if c["name"] == "codex"]

    assert codex_checks() == []  # no Codex here: nothing alarming, nothing at all
    program = tmp_path / "bin" / "codex"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(program.parent))
    [found] = codex_checks()
    assert found["ok"] is False and str(program) in found["detail"]
    assert "not wired" in found["detail"] and found["fix"] == "run `aipager codex install`"
    text = runner.invoke(app, ["doctor", "--offline"]).output
    assert "FAIL  codex" in text and "fix: run `aipager codex install`" in text

    assert runner.invoke(app, ["codex", "install"]).exit_code == 0
    [found] = codex_checks()
    assert found["ok"] is True and "wired and trusted" in found["detail"]

    # wired, then the trust lost (Codex skips an untrusted hook, silently): said, with the fix
    (home / "config.toml").write_text("")
    monkeypatch.setenv("PATH", "/nonexistent")  # Codex moved away: the wiring still counts
    [found] = codex_checks()
    assert found["ok"] is False and "not trusted" in found["detail"]
    assert "`aipager codex check`" in found["detail"]
    assert found["fix"] == "run `aipager codex install`"


# ------------------------------------------------------------------ sessions


def wait_for(path, text, timeout=5.0):
    import time

    deadline = time.monotonic() + timeout
    while text not in path.read_text() and time.monotonic() < deadline:
        time.sleep(0.02)
    return path.read_text()


def test_session_create_send_list_kill(runner, fake_claude, env):
    result = runner.invoke(app, ["session", "--detached", "w1", "--", "--model", "opus"])
    assert result.exit_code == 0, result.output
    assert "Started session w1" in result.output
    again = runner.invoke(app, ["session", "w1", "--detached"])
    assert again.exit_code == 0 and "already running" in again.output

    sent = runner.invoke(app, ["send", "w1", "fix the tests"])
    assert sent.exit_code == 0, sent.output
    started, typed = wait_for(fake_claude, "line:fix the tests").splitlines()
    assert started.startswith("start session=claude-w1 ")
    assert started.endswith(" nested=no args=--model opus --teammate-mode in-process")
    assert typed == "line:fix the tests"
    piped = runner.invoke(app, ["send", "w1", "-"], input="from stdin\n")
    assert piped.exit_code == 0
    assert "line:from stdin" in wait_for(fake_claude, "line:from stdin")

    listed = json.loads(runner.invoke(app, ["session", "list", "--json"]).output)
    assert [(s["name"], s["live"]) for s in listed["sessions"]] == [("w1", True)]
    assert "w1" in runner.invoke(app, ["session", "list"]).output

    killed = runner.invoke(app, ["session", "kill", "w1", "--yes"])
    assert killed.exit_code == 0 and "ended" in killed.output
    assert runner.invoke(app, ["session", "list"]).output.strip() == "no sessions"
    gone = runner.invoke(app, ["session", "kill", "w1", "--yes"])
    assert gone.exit_code == 4


def test_session_without_a_terminal_creates_but_does_not_attach(runner, fake_claude, env):
    result = runner.invoke(app, ["session", "w2"])
    assert result.exit_code == 0
    assert "Not attaching" in result.stderr
    assert dtach.is_live(paths.dtach_socket(env, "w2"))


def test_list_removes_stale_sockets(runner, env):
    import socket

    sock = paths.dtach_socket(env, "dead")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock)
    listener.close()
    doc = json.loads(runner.invoke(app, ["session", "list", "--json"]).stdout)
    assert doc == {"sessions": [], "stale_removed": ["dead"]}
    assert not os.path.exists(sock)


@pytest.mark.parametrize("argv", [["session", "bad name", "--detached"], ["send", "a/b", "x"],
                                  ["session", "kill", "../x"],
                                  ["session", "abc\n", "--detached"], ["send", "abc\r", "x"],
                                  ["session", "kill", "--yes", "--", "abc\n"],
                                  ["session", "kill", "--yes", "--", "a" * 65],
                                  ["session", "--detached", "\u0430bc"]])
def test_invalid_session_names(runner, argv, env):
    result = runner.invoke(app, argv)
    assert result.exit_code == 2 and "invalid session name" in result.stderr
    assert len(result.stderr.splitlines()) == 1  # a control character shows escaped
    assert dtach.list_sessions(env) == []


def test_a_new_name_may_not_start_with_a_dash(runner, fake_claude, env):
    result = runner.invoke(app, ["session", "--detached", "--", "-rf"])
    assert result.exit_code == 2
    assert result.stderr == ("aipager: invalid session name '-rf': a name may not start with "
                             "'-' (for example: api-fix)\n")
    assert dtach.list_sessions(env) == []


def test_an_older_session_named_with_a_leading_dash_is_listed_and_killed_after_dashes(
        runner, env):
    import subprocess

    sock = paths.dtach_socket(env, "-rf")
    subprocess.run(dtach.create_argv(dtach.dtach_binary(env), sock, ["sleep", "60"]),
                   env=env, check=True)
    try:
        listed = json.loads(runner.invoke(app, ["session", "list", "--json"]).output)
        assert [(s["name"], s["live"]) for s in listed["sessions"]] == [("-rf", True)]
        again = runner.invoke(app, ["session", "--detached", "--", "-rf"])
        assert again.exit_code == 0 and "Session -rf is already running" in again.output
        # without --, "-rf" reads as options: the error says where a name goes
        wrong = runner.invoke(app, ["session", "kill", "-rf", "--yes"])
        assert wrong.exit_code == 2
        said = " ".join(wrong.output.replace("│", " ").split())  # out of typer's box
        assert "No such option: -r; a session name that starts with '-' goes after --:" in said
        assert "session kill -- NAME" in said
        assert dtach.is_live(sock)
        killed = runner.invoke(app, ["session", "kill", "--yes", "--", "-rf"])
        assert killed.exit_code == 0, killed.output
        assert killed.output == "Session -rf ended.\n"
        assert not os.path.exists(sock)
        # gone now, and not to be started again under that name
        gone = runner.invoke(app, ["send", "--", "-rf", "hi"])
        assert gone.exit_code == 4
        assert gone.stderr == "aipager: no running session -rf\n"
    finally:
        dtach.kill(env, "-rf")


def test_send_to_a_missing_session(runner):
    result = runner.invoke(app, ["send", "nope", "hi"])
    assert result.exit_code == 4 and "no running session nope" in result.stderr


def test_start_on_an_unconfigured_terminal_asks_nothing(runner, bins, env, daemon_app,
                                                         monkeypatch):
    from aipager.cli import lifecycle

    monkeypatch.setattr(lifecycle, "interactive", lambda: True)  # as if on a terminal
    try:
        result = runner.invoke(app, ["start"], input="")
    finally:
        _drop_log_handlers()
    assert result.exit_code == 0, result.output
    assert not config.exists(env) and claude_code.check(env, bins) == []
    assert len(daemon_app) == 1


def test_session_without_claude_installed(runner, monkeypatch, env):
    monkeypatch.setenv("PATH", "/nonexistent")
    result = runner.invoke(app, ["session", "w3", "--detached"])
    assert result.exit_code == 1 and "not found on PATH" in result.stderr
    assert not os.path.exists(paths.dtach_socket(env, "w3"))
