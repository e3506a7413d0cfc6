"""`aipager policy check` and `aipager policy explain`, in-process."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from aipager.proto import paths
from aipager.cli.app import app
from aipager.policy import match

ENGINES = ["python"] + (["c"] if match._c is not None else [])


@pytest.fixture
def runner():
    return CliRunner()


def write_policy(doc) -> str:
    path = paths.policy_user_file(os.environ)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def event_file(tmp_path, tool, **tool_input) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"hook_event_name": "PreToolUse", "cwd": str(tmp_path),
                                "tool_name": tool, "tool_input": tool_input}))
    return str(path)


def test_check_without_file(runner):
    res = runner.invoke(app, ["policy", "check"])
    assert res.exit_code == 0
    assert "built-in roles" in res.output


def test_check_ok(runner):
    write_policy({"version": 1, "roles": {"intern": {"extends": "read_only", "may_prompt": True}},
                  "floor": {"denied_commands": [{"regex": "^curl ", "ignore_case": True}]}})
    res = runner.invoke(app, ["policy", "check"])
    assert res.exit_code == 0, res.output
    assert "OK (5 roles, 1 additions to the floor)" in res.output


def test_check_lists_every_problem_with_its_place(runner):
    path = write_policy({
        "version": 2,
        "roles": {"Bad Name": {}, "dev": {"denied_commands": ["(?i)sudo", "a\\d"], "colour": "red"}},
        "floor": {"no_access_paths": ["[^a]*"]},
    })
    res = runner.invoke(app, ["policy", "check"])
    assert res.exit_code == 3
    lines = res.output.strip().splitlines()
    assert all(line.startswith(path + ": ") for line in lines)
    text = res.output
    assert "version: must be one of [1]" in text
    assert "roles.Bad Name: name does not match" in text
    assert "roles.dev.denied_commands[0]: pattern '(?i)sudo' uses a '(?' group" in text
    assert "roles.dev.denied_commands[1]: pattern 'a\\\\d' uses the escape '\\d'" in text
    assert "roles.dev.colour: is not a known field" in text
    assert "floor.no_access_paths[0]: pattern '[^a]*' uses '[^'" in text


@pytest.mark.parametrize("doc, problem", [
    ({"version": 1, "roles": 5}, "roles: expected object, got int"),
    ({"version": 1, "roles": "dev"}, "roles: expected object, got str"),
    ({"version": 1, "roles": [{"dev": {}}]}, "roles: expected object, got list"),
    ({"version": 1, "floor": 5}, "floor: expected object, got int"),
    ({"version": 1, "roles": {"dev": 5}}, "roles.dev: expected object, got int"),
    ({"version": 1, "floor": {"denied_commands": 5}}, "floor.denied_commands: expected array, got int"),
    (5, "(top level): expected object, got int"),
])
def test_check_wrong_types_are_problems_not_tracebacks(runner, doc, problem):
    path = write_policy(doc)
    res = runner.invoke(app, ["policy", "check"])
    assert res.exit_code == 3, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert f"{path}: {problem}" in res.output


def test_check_bad_json(runner):
    write_policy("{oops")
    res = runner.invoke(app, ["policy", "check"])
    assert res.exit_code == 3 and "not valid JSON" in res.output


@pytest.mark.parametrize("engine", ENGINES)
def test_explain_user_bash_denied(runner, tmp_path, engine):
    res = runner.invoke(app, ["policy", "explain", "--role", "user", "--engine", engine,
                              event_file(tmp_path, "Bash", command="ls")])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == {"decision": "deny", "reason": "tool Bash is denied for this task"}


@pytest.mark.parametrize("engine", ENGINES)
def test_explain_admin_floor_applies(runner, tmp_path, engine):
    res = runner.invoke(app, ["policy", "explain", "--role", "admin", "--engine", engine,
                              event_file(tmp_path, "Bash", command="sudo id")])
    assert json.loads(res.output)["decision"] == "deny"
    res = runner.invoke(app, ["policy", "explain", "--role", "admin", "--engine", engine,
                              event_file(tmp_path, "Bash", command="make test")])
    assert json.loads(res.output) == {"decision": "allow", "reason": None}


def test_explain_owner_exempt_and_cwd_option(runner, tmp_path):
    home = os.environ["HOME"]
    res = runner.invoke(app, ["policy", "explain", "--role", "owner",
                              event_file(tmp_path, "Read", file_path=".claude/settings.json"), "--cwd", home])
    assert json.loads(res.output)["decision"] == "allow"
    res = runner.invoke(app, ["policy", "explain", "--role", "admin",
                              event_file(tmp_path, "Read", file_path=".claude/settings.json"), "--cwd", home])
    out = json.loads(res.output)
    assert out["decision"] == "deny" and "no access" in out["reason"]


def test_explain_custom_role_and_unknown_role(runner, tmp_path):
    write_policy({"version": 1, "roles": {"auditor": {"extends": "user", "allowed_tools": ["Read", "Grep"]}}})
    res = runner.invoke(app, ["policy", "explain", "--role", "auditor",
                              event_file(tmp_path, "Write", file_path="x")])
    assert json.loads(res.output)["reason"] == "tool Write is not allowed for this task"
    res = runner.invoke(app, ["policy", "explain", "--role", "nobody", event_file(tmp_path, "Read", file_path="x")])
    assert res.exit_code == 3 and "unknown role 'nobody'" in res.output


def test_explain_reads_stdin(runner, tmp_path):
    event = json.dumps({"cwd": str(tmp_path), "tool_name": "Bash", "tool_input": {"command": "s'u'do id"}})
    res = runner.invoke(app, ["policy", "explain", "--role", "admin", "-"], input=event)
    assert json.loads(res.output)["decision"] == "deny"
