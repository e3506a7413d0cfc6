"""`aipager service ...` with a fake `systemctl` on PATH that records its argv."""

from __future__ import annotations

import os

import pytest

from aipager.install import systemd
from aipager.cli.app import app
from aipager.proto.errors import ServiceError

FAKE_SYSTEMCTL = """#!/bin/sh
echo "$*" >> "$SYSTEMCTL_LOG"
case "$*" in *status*) echo "aipager.service - inactive"; exit 3;; esac
[ -n "$SYSTEMCTL_FAIL" ] && { echo "Failed to connect to bus" >&2; exit 1; }
exit 0
"""


@pytest.fixture
def systemctl(tmp_path, monkeypatch):
    folder = tmp_path / "fakebin"
    folder.mkdir()
    program = folder / "systemctl"
    program.write_text(FAKE_SYSTEMCTL)
    program.chmod(0o755)
    log = tmp_path / "systemctl.log"
    monkeypatch.setenv("SYSTEMCTL_LOG", str(log))
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    fake_aipager = folder / "aipager"
    fake_aipager.write_text("#!/bin/sh\n")
    fake_aipager.chmod(0o755)
    return log


def calls(log):
    return log.read_text().splitlines() if log.exists() else []


def test_unit_text_keeps_sessions_alive_across_restarts(env):
    env = {**env, "PATH": "/opt/x bin:/usr/bin", "AIPAGER_INSTANCE_DIR": "/tmp/i"}
    text = systemd.unit_text("/venv/bin/aipager", env)
    lines = text.splitlines()
    assert "ExecStart=/venv/bin/aipager start" in lines
    assert "KillMode=process" in lines
    assert "Restart=always" in lines
    assert 'Environment="PATH=/opt/x bin:/usr/bin"' in lines
    assert "Environment=AIPAGER_INSTANCE_DIR=/tmp/i" in lines
    assert "WantedBy=default.target" in lines
    assert systemd.unit_text("/a%b/aipager", {}).count("/a%%b/aipager start") == 1


def test_install_status_stop_start_uninstall(runner, systemctl, env):
    unit = systemd.unit_path(env)
    assert unit.startswith(os.environ["XDG_CONFIG_HOME"])
    result = runner.invoke(app, ["service", "install"])
    assert result.exit_code == 0, result.output
    with open(unit) as fh:
        text = fh.read()
    exec_line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert exec_line.endswith("/aipager start") and exec_line[len("ExecStart="):].startswith("/")
    assert calls(systemctl) == ["--user daemon-reload", "--user enable --now aipager.service"]

    status = runner.invoke(app, ["service", "status"])
    assert status.exit_code == 3 and "inactive" in status.output
    assert runner.invoke(app, ["service", "stop"]).exit_code == 0
    assert runner.invoke(app, ["service", "start"]).exit_code == 0
    assert calls(systemctl)[-3:] == ["--user status --no-pager aipager.service",
                                      "--user stop aipager.service",
                                      "--user start aipager.service"]

    # Installing again over an identical unit leaves no backup behind.
    assert runner.invoke(app, ["service", "install"]).exit_code == 0
    assert [f for f in os.listdir(os.path.dirname(unit)) if ".bak-" in f] == []

    result = runner.invoke(app, ["service", "uninstall"])
    assert result.exit_code == 0, result.output
    assert not os.path.exists(unit)
    assert calls(systemctl)[-2:] == ["--user disable --now aipager.service", "--user daemon-reload"]
    again = runner.invoke(app, ["service", "uninstall"])
    assert again.exit_code == 0 and "not installed" in again.output


def test_a_different_unit_is_backed_up(systemctl, env):
    path = systemd.unit_path(env)
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as fh:
        fh.write("[Service]\nExecStart=/old/aipager start\n")
    _, backup = systemd.write_unit(env, systemd.unit_text("/new/aipager", env))
    with open(backup) as fh:
        assert "/old/aipager" in fh.read()


def test_systemctl_failure_is_reported(runner, systemctl, monkeypatch):
    monkeypatch.setenv("SYSTEMCTL_FAIL", "1")
    result = runner.invoke(app, ["service", "start"])
    assert result.exit_code == ServiceError.exit_code
    assert "Failed to connect to bus" in result.stderr


def test_no_systemctl(runner, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = runner.invoke(app, ["service", "start"])
    assert result.exit_code == ServiceError.exit_code
    assert "systemctl not found" in result.stderr


def test_the_unit_runs_the_hub_or_joins_one(runner, systemctl, env, tmp_path, monkeypatch):
    from aipager import config
    from aipager.hub import creds

    unit = systemd.unit_path(env)

    def exec_line():
        with open(unit) as fh:
            return next(line for line in fh.read().splitlines() if line.startswith("ExecStart="))

    # --hub needs the chat's config, as `start --hub` does: nothing written without it
    result = runner.invoke(app, ["service", "install", "--hub"])
    assert result.exit_code == 3 and "aipager setup" in result.output
    assert not os.path.exists(unit) and calls(systemctl) == []
    config.save(env, config.Config(bot_token="1:x", chat_id=7))
    result = runner.invoke(app, ["service", "install", "--hub"])
    assert result.exit_code == 0, result.output
    assert exec_line().endswith("/aipager start --hub")

    # a host: the URL, and the credential file by absolute path (the unit's folder differs)
    folder = tmp_path / "my creds"
    folder.mkdir()
    seed, _ = creds.new_nkey()
    ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    creds.write_creds(str(folder / "box.json"),
                      creds.Creds("box", url="nats://hub.lan:4222", ca=ca, seed=seed))
    monkeypatch.chdir(folder)
    from aipager.install import claude_code

    assert claude_code.check(env)  # nothing wired yet: the host never ran `aipager setup`
    result = runner.invoke(app, ["service", "install", "--creds", "box.json"])
    assert result.exit_code == 0, result.output
    assert claude_code.check(env) == []  # wired, as `start --join` wires it
    assert exec_line().endswith(
        f'/aipager start --join nats://hub.lan:4222 --creds "{folder}/box.json"')
    result = runner.invoke(app, ["service", "install", "--join", "nats://10.0.0.5:4222",
                                 "--creds", str(folder / "box.json")])
    assert exec_line().endswith(f'start --join nats://10.0.0.5:4222 --creds "{folder}/box.json"')
    # ... and recorded for the floor before the unit ever starts (model.config_secrets)
    from aipager.policy import model

    assert f"{folder}/box.json" in model.config_secrets(env)

    # what `start --join` refuses, the unit refuses too: a plain-text login across the network
    creds.write_creds(str(folder / "plain.json"),
                      creds.Creds("box", "pw", "nats://hub.lan:4222"))
    before = open(unit).read()
    result = runner.invoke(app, ["service", "install", "--creds", "plain.json"])
    assert result.exit_code == 3 and "unencrypted" in result.output
    result = runner.invoke(app, ["service", "install", "--hub", "--creds", "box.json"])
    assert result.exit_code == 3 and "exclude" in result.output
    assert open(unit).read() == before
