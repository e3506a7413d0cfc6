"""Which matcher loads, the schema/model contract, and the hook-side import cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from aipager.policy import model, rules, snapshot, validate

NO_NATIVE = os.environ.get("AIPAGER_NO_EXTENSIONS", "") not in ("", "0")


@pytest.mark.skipif(NO_NATIVE, reason="AIPAGER_NO_EXTENSIONS=1 run: the twin is expected")
def test_compiled_matcher_is_loaded_in_the_built_package(tmp_path):
    code = "from aipager.policy import match; print(match.ENGINE, match._c.__file__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path,
                         env={k: v for k, v in os.environ.items() if k != "AIPAGER_NO_EXTENSIONS"})
    engine, path = out.stdout.split()
    assert engine == "c"
    assert path.endswith(".so")


def test_no_extensions_switch_picks_python(tmp_path):
    code = "from aipager.policy import match; print(match.ENGINE, match._c)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path, env=dict(os.environ, AIPAGER_NO_EXTENSIONS="1"))
    assert out.stdout.split() == ["python", "None"]


def test_hook_side_imports_stay_builtin():
    """The hook's Python stage imports hookside on every declined event: no re, json, typer."""
    setup = "from aipager.policy import hookside, snapshot, notes, floor, marker, sendfile"
    modules = ("re", "json", "typer", "enum", "dataclasses", "aipager.policy.model")
    assert _loaded_after(setup, modules) == []


def _loaded_after(setup: str, modules: tuple) -> list:
    """Which of ``modules`` a fresh ``python -S -I`` has loaded after ``setup``."""
    code = (
        f"import sys; sys.path.insert(0, {_site_of_aipager()!r});{setup};"
        f"print(sorted(m for m in {modules!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-S", "-I", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.replace("'", '"'))


def _site_of_aipager() -> str:
    import aipager

    return os.path.dirname(os.path.dirname(os.path.abspath(aipager.__file__)))


def test_schema_and_model_agree():
    schema = validate.load_schema()
    role_fields = tuple(schema["$defs"]["role"]["properties"])
    floor_fields = tuple(schema["$defs"]["floor"]["properties"])
    assert role_fields == model.ROLE_FIELDS
    assert floor_fields == model.FLOOR_FIELDS
    assert set(schema["$defs"]["role"]["properties"]["extends"]["enum"]) == set(model.BUILTIN_ROLES) - {"owner"}


def test_schema_uses_only_keywords_the_validator_enforces():
    def walk(node):
        if isinstance(node, dict):
            yield set(node) - {"properties", "$defs"}
            for key, value in node.items():
                if key in ("properties", "$defs"):
                    for sub in value.values():
                        yield from walk(sub)
                elif isinstance(value, (dict, list)):
                    yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    used = set().union(*walk(validate.load_schema()))
    assert used <= validate.KNOWN


def test_every_builtin_role_validates_as_a_document():
    doc = {"version": 1, "roles": {}}
    for role in model.Policy().roles.values():
        spec = {"may_prompt": role.may_prompt, "may_approve": role.may_approve,
                "may_manage": role.may_manage, "bypasses_role_denies": role.bypasses_role_denies,
                "allowed_tools": role.allowed_tools, "denied_tools": list(role.denied_tools),
                "no_access_paths": list(role.no_access_paths), "no_write_paths": list(role.no_write_paths),
                "denied_commands": [p for p, _ in role.denied_commands]}
        doc["roles"][role.name] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in spec.items()}
    assert validate.problems(doc) == []


def test_floor_is_inside_the_dialect():
    from aipager.policy import dialect, floor

    for pattern in floor.FLOOR_COMMANDS:
        dialect.check_regex(pattern, "floor")
    for glob in floor.builtin_floor({"HOME": "/home/u"})["no_access"]:
        dialect.check_glob(glob, "floor")


def test_snapshot_keys_match_the_c_reader():
    """match.pxi and floor.pxi read exactly these keys; a new rule key must land there too."""
    source = "".join(_source_pxi(name) for name in ("match.pxi", "floor.pxi", "hookside.pxi"))
    for key in rules.RULE_KEYS + ("origin", "exempt", "halted"):
        assert f'"{key}"' in source, key
    assert set(snapshot.make("terminal", False, rules.empty())) >= set(rules.RULE_KEYS)


def _source_pxi(name: str) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "_fasthook", name)) as fh:
        return fh.read()


def test_published_floor_can_only_add(tmp_path):
    from aipager.policy import floor

    env = dict(os.environ)
    weaker = rules.empty()
    floor.publish_floor(env, weaker)
    assert floor.load_floor(env) == floor.builtin_floor(env)
    stronger = dict(rules.empty(), commands=["^curl "])
    floor.publish_floor(env, stronger)
    assert "^curl " in floor.load_floor(env)["commands"]
    with open(floor.paths.floor_file(env), "w") as fh:
        json.dump({"v": 1, "rules": {"commands": 3}}, fh)
    assert floor.load_floor(env) == floor.builtin_floor(env)


@pytest.mark.skipif(NO_NATIVE, reason="AIPAGER_NO_EXTENSIONS=1 run: no compiled policy")
def test_compiled_floor_commands_match_python():
    """floor.pxi builds the floor snapshot itself from these two literals (generated by setup.py)."""
    from aipager import _policy_c
    from aipager.policy import floor

    commands, needles = (json.loads(text) for text in _policy_c.floor_literals())
    assert commands == list(floor.FLOOR_COMMANDS)
    assert needles == [floor.KNOWN_NEEDLES[(p, False)] for p in floor.FLOOR_COMMANDS]


@pytest.mark.skipif(NO_NATIVE, reason="AIPAGER_NO_EXTENSIONS=1 run: no compiled policy")
def test_compiled_sendfile_lists_are_the_python_ones():
    from aipager import _policy_c
    from aipager.policy import floor, sendfile

    names, globs = (json.loads(text) for text in _policy_c.sendfile_literals())
    assert names == list(sendfile.SECRET_NAMES)
    assert globs == list(sendfile.SEND_GLOBS)
    assert globs == list(floor.CREDENTIAL_PATHS + sendfile.SYSTEM_SECRETS + sendfile.SEND_ONLY)
    assert _policy_c.sendfile_reasons() == (
        sendfile.REASON_PROTECTED, sendfile.REASON_OTHER_HOME, sendfile.REASON_SECRET_NAME,
        sendfile.REASON_TASK_RULES, sendfile.REASON_OUTSIDE, sendfile.REASON_NO_FOLDER)


def test_declined_paths_load_no_parser_nor_unused_steps():
    """A declined PreToolUse with a snapshot and the floor snapshot of a prompt
    (both Python) load neither the dialect parser nor what other steps use."""
    setup = (
        "from aipager.policy import floor, hookside, snapshot;"
        "snapshot.for_floor(floor.builtin_floor({'HOME': '/h'}), 1.0, floor.KNOWN_NEEDLES)"
    )
    modules = ("aipager.policy.dialect", "aipager.policy.notes", "aipager.policy._match_py", "aipager.errors")
    assert _loaded_after(setup, modules) == []
