"""`aipager setup` against the fake Bot API: success, rejected token, unreachable
API, a chat that never talked to the bot; the token is never shown."""

from __future__ import annotations

import json
import os
import stat

import pytest

from aipager import config
from aipager.proto import paths
from aipager.install import claude_code
from aipager.cli.app import app
from aipager.proto.errors import ChatUnreachable, ConfigError, TelegramUnreachable, TokenRejected
from fakes.telegram_api import OWNER, TOKEN

SECRET = TOKEN.split(":")[1]


@pytest.fixture
def token_file(tmp_path):
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return path


def settings(env):
    with open(paths.claude_settings(env)) as fh:
        return json.load(fh)


def test_scripted_setup_with_token_file(runner, fake_api, bins, token_file, env):
    fake_api.add_private_chat()
    result = runner.invoke(app, ["setup", "--token-file", str(token_file), "--chat-id",
                                 str(OWNER["id"]), "--yes"])
    assert result.exit_code == 0, result.output
    assert "@aipager_test_bot" in result.output
    assert SECRET not in result.output
    cfg = config.load(env)
    assert (cfg.bot_token, cfg.chat_id) == (TOKEN, OWNER["id"])
    assert [(m.id, m.role) for m in cfg.members] == [(OWNER["id"], "owner")]
    assert stat.S_IMODE(os.stat(paths.config_file(env)).st_mode) == 0o600
    assert claude_code.check(env, bins) == []
    assert [m["text"] for m in fake_api.sent] and fake_api.sent[0]["chat"]["id"] == OWNER["id"]

    # Again: the config is rewritten, the settings are not touched a second time.
    before = settings(env)
    mtime = os.stat(paths.claude_settings(env)).st_mtime_ns
    again = runner.invoke(app, ["setup", "--token-file", str(token_file), "--chat-id",
                                str(OWNER["id"]), "--yes"])
    assert again.exit_code == 0, again.output
    assert "already wired" in again.output
    assert settings(env) == before
    assert os.stat(paths.claude_settings(env)).st_mtime_ns == mtime


def test_token_on_stdin_and_chat_detected(runner, fake_api, bins, env):
    fake_api.say("hello bot")
    result = runner.invoke(app, ["setup", "--wait", "5"], input=TOKEN + "\n")
    assert result.exit_code == 0, result.output
    assert config.load(env).chat_id == OWNER["id"]
    assert SECRET not in result.output
    # The message that named the chat is confirmed: it was for setup, and the daemon's chat
    # would have typed it into a session as a (paid) prompt.
    assert fake_api.snapshot()["updates"] == []


def _get_updates(fake_api) -> list[dict]:
    return [p for m, p in fake_api.snapshot()["calls"] if m.lower() == "getupdates"]


def test_a_pending_group_message_does_not_make_detection_spin(runner, fake_api, bins, env):
    group = fake_api.add_group_chat(500, "team")
    fake_api.say("morning all", chat_id=group)
    [pending] = fake_api.snapshot()["updates"]
    result = runner.invoke(app, ["setup", "--wait", "3"], input=TOKEN + "\n")
    assert result.exit_code == ChatUnreachable.exit_code, result.output
    polls = _get_updates(fake_api)
    # Before: the same group update came back at once, a call every ~40 ms (~75 here).
    assert len(polls) <= 6, polls
    assert int(polls[-1]["offset"]) == pending["update_id"] + 1  # skipped, then a real long poll


def test_a_private_message_behind_a_group_message_is_found_and_confirmed(
        runner, fake_api, bins, env):
    import threading

    group = fake_api.add_group_chat(500, "team")
    fake_api.say("morning all", chat_id=group)
    later = threading.Timer(0.8, lambda: fake_api.say("hello bot"))
    later.start()
    try:
        result = runner.invoke(app, ["setup", "--wait", "10"], input=TOKEN + "\n")
    finally:
        later.join()
    assert result.exit_code == 0, result.output
    assert config.load(env).chat_id == OWNER["id"]
    # Both confirmed: the group's skipped, the private one setup's own (never a prompt later)
    assert fake_api.snapshot()["updates"] == []
    assert len(_get_updates(fake_api)) <= 5


def test_rejected_token(runner, fake_api, bins, token_file, env):
    del fake_api.tokens[TOKEN]
    result = runner.invoke(app, ["setup", "--token-file", str(token_file), "--chat-id", "1"])
    assert result.exit_code == TokenRejected.exit_code
    assert "rejected the bot token" in result.stderr
    assert SECRET not in result.output
    assert not config.exists(env)
    assert not os.path.exists(paths.claude_settings(env))


def test_malformed_token(runner, fake_api, bins, env):
    result = runner.invoke(app, ["setup", "--chat-id", "1"], input="not-a-token\n")
    assert result.exit_code == TokenRejected.exit_code
    assert "not a bot token" in result.stderr
    assert fake_api.calls == []  # refused before any network call


def test_unreachable_api(runner, bins, token_file, env, monkeypatch):
    monkeypatch.setenv("AIPAGER_TELEGRAM_API_BASE", "http://127.0.0.1:9")  # discard port: closed
    result = runner.invoke(app, ["setup", "--token-file", str(token_file), "--chat-id", "1"])
    assert result.exit_code == TelegramUnreachable.exit_code
    assert "no usable answer" in result.stderr
    assert not config.exists(env)


def test_chat_that_never_talked_to_the_bot(runner, fake_api, bins, token_file, env):
    result = runner.invoke(app, ["setup", "--token-file", str(token_file), "--chat-id", "777"])
    assert result.exit_code == ChatUnreachable.exit_code
    assert "send any message to your bot" in result.stderr
    assert not config.exists(env)


def test_no_message_arrives_while_detecting(runner, fake_api, bins, token_file, env):
    result = runner.invoke(app, ["setup", "--token-file", str(token_file), "--wait", "1"])
    assert result.exit_code == ChatUnreachable.exit_code
    assert "pass --chat-id" in result.stderr


def test_existing_setup_needs_yes(runner, fake_api, bins, token_file, env):
    config.save(env, config.Config(TOKEN, 1))
    result = runner.invoke(app, ["setup", "--token-file", str(token_file), "--chat-id", "1"])
    assert result.exit_code == ConfigError.exit_code
    assert "--yes" in result.stderr


def test_moving_to_another_chat_keeps_the_token_without_asking_for_it(runner, fake_api, bins,
                                                                      token_file, env):
    fake_api.add_private_chat()
    first = runner.invoke(app, ["setup", "--token-file", str(token_file), "--chat-id",
                                str(OWNER["id"]), "--yes"])
    assert first.exit_code == 0, first.output
    # only the chat changes: no token file, stdin empty — the saved token is used
    again = runner.invoke(app, ["setup", "--chat-id", str(OWNER["id"]), "--yes"], input="")
    assert again.exit_code == 0, again.output
    assert "Keeping the bot token of the current setup." in again.output
    assert "Bot token" not in again.output
    assert config.load(env).bot_token == TOKEN


def test_invalid_settings_json_stops_setup_and_is_kept(runner, fake_api, bins, token_file, env):
    fake_api.add_private_chat()
    os.makedirs(os.path.dirname(paths.claude_settings(env)))
    with open(paths.claude_settings(env), "w") as fh:
        fh.write("{oops")
    result = runner.invoke(app, ["setup", "--token-file", str(token_file), "--chat-id",
                                 str(OWNER["id"])])
    assert result.exit_code == 3
    assert "not valid JSON" in result.stderr
    assert not config.exists(env) and fake_api.calls == []  # stopped before anything else
    with open(paths.claude_settings(env)) as fh:
        assert fh.read() == "{oops"


def test_token_file_that_never_ends_is_refused_after_4_kib(runner, fake_api, bins, env):
    import resource
    import threading

    # /dev/zero: before, setup read it until memory ran out (2.8 GB in 5 s)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    done: list = []
    worker = threading.Thread(target=lambda: done.append(runner.invoke(
        app, ["setup", "--token-file", "/dev/zero", "--chat-id", "1"])), daemon=True)
    worker.start()
    worker.join(20)
    assert done, "setup still reading /dev/zero after 20 s"
    result = done[0]
    assert result.exit_code == TokenRejected.exit_code, result.output
    assert "longer than 4096 bytes" in result.stderr and "/dev/zero" in result.stderr
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 50_000  # KiB
    assert fake_api.calls == [] and not config.exists(env)


def test_a_long_token_file_or_stdin_line_is_refused(runner, fake_api, bins, env, tmp_path):
    big = tmp_path / "big"
    big.write_text(TOKEN + "\n" + "x" * 5000)
    by_file = runner.invoke(app, ["setup", "--token-file", str(big), "--chat-id", "1"])
    assert by_file.exit_code == TokenRejected.exit_code and "longer than 4096" in by_file.stderr
    by_stdin = runner.invoke(app, ["setup", "--chat-id", "1"], input="7" * 10_000 + "\n")
    assert by_stdin.exit_code == TokenRejected.exit_code and "stdin" in by_stdin.stderr
    # The bound is generous: a token with a trailing newline and spaces still passes.
    fake_api.add_private_chat()
    ok = runner.invoke(app, ["setup", "--chat-id", str(OWNER["id"]), "--yes"],
                       input=" " * 3000 + TOKEN + "\n")
    assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize("args", [["--chat-id", "0"], ["--chat-id", str(1 << 52)],
                                  ["--chat-id", "-99999999999999999999"],
                                  ["--chat-id", "-100500", "--owner-id", "-7"],
                                  ["--chat-id", "-100500", "--owner-id", str(1 << 60)]])
def test_ids_telegram_cannot_have_are_refused_first(runner, fake_api, bins, token_file, env, args):
    result = runner.invoke(app, ["setup", "--token-file", str(token_file), *args])
    assert result.exit_code == ConfigError.exit_code, result.output
    assert "not a Telegram" in result.stderr and "52 bits" in result.stderr
    assert fake_api.calls == [] and not config.exists(env)


def test_token_is_never_an_argument(runner):
    result = runner.invoke(app, ["setup", "--token", TOKEN])
    assert result.exit_code == 2
    assert SECRET not in result.output


def test_interactive_setup_hides_the_token_and_detects_the_chat(runner, fake_api, bins, env,
                                                               monkeypatch):
    from aipager.cli import setup_cmd

    monkeypatch.setattr(setup_cmd, "interactive", lambda: True)  # as if on a terminal
    fake_api.say("hi")
    result = runner.invoke(app, ["setup", "--wait", "5"], input=f"{TOKEN}\n\n")
    assert result.exit_code == 0, result.output
    assert "input hidden" in result.output and SECRET not in result.output
    assert "leave empty to detect" in result.output
    assert config.load(env).chat_id == OWNER["id"]

    # Already set up: the question comes first, and "no" changes nothing.
    before = config.load(env)
    declined = runner.invoke(app, ["setup"], input="n\n")
    assert declined.exit_code == 0 and "Replace" in declined.output
    assert config.load(env) == before


def test_setup_with_a_group_names_its_owner_and_checks_what_the_bot_reads(
        runner, fake_api, bins, token_file, env):
    group = fake_api.add_group_chat(-100555, "team")
    fake_api.bot_is_admin = False
    result = runner.invoke(app, ["setup", "--token-file", str(token_file), "--chat-id", str(group),
                                 "--owner-id", "4242", "--yes"])
    assert result.exit_code == 0, result.output
    assert "privacy mode" in result.stderr and "setprivacy" in result.stderr
    cfg = config.load(env)
    assert cfg.chat_id == group and [(m.id, m.role) for m in cfg.members] == [(4242, "owner")]
    doctor = runner.invoke(app, ["doctor"])
    assert "privacy mode" in doctor.output and "setprivacy" in doctor.output
    fake_api.bot_is_admin = True
    doctor = runner.invoke(app, ["doctor"])
    assert "reads the group's messages (admin)" in doctor.output


def test_setup_with_a_group_and_no_owner_warns(runner, fake_api, bins, token_file, env):
    group = fake_api.add_group_chat(-100556, "team")
    result = runner.invoke(app, ["setup", "--token-file", str(token_file), "--chat-id", str(group),
                                 "--yes"])
    assert result.exit_code == 0, result.output
    assert "no owner yet" in result.stderr
    assert "reads the group's messages (admin)" in result.output


def test_setup_wires_codex_too_when_this_computer_has_it(runner, fake_api, bins, token_file,
                                                         env, tmp_path, monkeypatch):
    """Codex found (its program pinned or on PATH): setup wires and trusts aipager's hook in
    its home as `aipager codex install` does; without Codex it says nothing of it."""
    from aipager.install import codex

    fake_api.add_private_chat()
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    monkeypatch.delenv("AIPAGER_CODEX_BIN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    args = ["setup", "--token-file", str(token_file), "--chat-id", str(OWNER["id"]), "--yes"]
    plain = runner.invoke(app, args)
    assert plain.exit_code == 0, plain.output
    assert "Codex" not in plain.output and not home.exists()

    program = tmp_path / "codex"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("AIPAGER_CODEX_BIN", str(program))
    wired = runner.invoke(app, args)
    assert wired.exit_code == 0, wired.output
    assert f"Codex found and wired: {home / 'hooks.json'}" in wired.output
    assert codex.check(dict(os.environ), bins.hook) == []
    again = runner.invoke(app, args)
    assert f"Codex already wired: {home / 'hooks.json'}" in again.output
