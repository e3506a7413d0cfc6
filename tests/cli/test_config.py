"""aipager.config: typed load/save, owner-only, clear errors, token never shown."""

from __future__ import annotations

import json
import os
import stat

import pytest

from aipager import config
from aipager.proto import paths
from aipager.proto.errors import ConfigError

TOKEN = "123456:AAsecretSECRETsecretSECRET99"


def test_save_then_load_round_trips_and_is_owner_only(env):
    cfg = config.Config(TOKEN, 42, (config.Member(7, "admin", "alice"),), "/p.json", None)
    path = config.save(env, cfg)
    assert path == paths.config_file(env)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert config.load(env) == cfg


def test_unknown_keys_survive_a_round_trip(env):
    os.makedirs(paths.config_dir(env))
    with open(paths.config_file(env), "w") as fh:
        json.dump({"bot_token": TOKEN, "chat_id": 1, "future": {"x": 1}}, fh)
    config.save(env, config.load(env))
    with open(paths.config_file(env)) as fh:
        assert json.load(fh)["future"] == {"x": 1}


def test_repr_and_errors_never_show_the_token(env):
    cfg = config.Config(TOKEN, 42)
    assert "secret" not in repr(cfg) and "secret" not in str(cfg)
    assert config.mask_token(TOKEN) == "123456:…99"
    os.makedirs(paths.config_dir(env))
    with open(paths.config_file(env), "w") as fh:
        fh.write('{"bot_token": "' + TOKEN + '", ')  # cut short
    with pytest.raises(ConfigError) as err:
        config.load(env)
    assert "not valid JSON" in str(err.value) and "secret" not in str(err.value)
    assert err.value.__cause__ is None


def test_missing_file_says_run_setup(env):
    with pytest.raises(ConfigError, match="aipager setup"):
        config.load(env)


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ([], "JSON object"),
        ({"chat_id": 1}, "bot_token is missing"),
        ({"bot_token": TOKEN, "chat_id": "1"}, "chat_id must be an integer"),
        ({"bot_token": TOKEN, "chat_id": 1, "members": [{"id": 1, "role": "Boss!"}]},
         "not a valid role name"),
        ({"bot_token": TOKEN, "chat_id": 1, "schema_version": 9}, "schema_version"),
        ({"bot_token": TOKEN, "chat_id": 0}, "not a Telegram chat id"),
        ({"bot_token": TOKEN, "chat_id": 1 << 60}, "not a Telegram chat id"),
    ],
)
def test_invalid_documents_name_the_problem(doc, words):
    with pytest.raises(ConfigError, match=words):
        config.from_json(doc)


@pytest.mark.parametrize("good", [1, 4242, (1 << 52) - 1, -1, -4242, -1001234567890,
                                  -(1 << 52) + 1])
def test_chat_ids_telegram_can_make(good):
    assert config.check_chat_id(good) == good


@pytest.mark.parametrize("bad", [0, 1 << 52, -(1 << 52), 10**20, -(10**30), True])
def test_chat_ids_out_of_telegram_range(bad):
    with pytest.raises(ConfigError, match="52 bits"):
        config.check_chat_id(bad)


@pytest.mark.parametrize("bad", [0, -5, -1001234567890, 1 << 52, True])
def test_user_ids_out_of_telegram_range(bad):
    with pytest.raises(ConfigError, match="not a Telegram user id"):
        config.check_user_id(bad)
    assert config.check_user_id(4242) == 4242


def test_members_are_replaced_by_id_and_removed():
    cfg = config.Config(TOKEN, 1).with_member(config.Member(5, "user"))
    cfg = cfg.with_member(config.Member(5, "admin", "bob")).with_member(config.Member(6))
    assert [(m.id, m.role) for m in cfg.members] == [(5, "admin"), (6, "user")]
    assert [m.id for m in cfg.without_member(5).members] == [6]


@pytest.mark.parametrize(
    "bad", ["", "12345", "abc:def", "123456:short", "123456:" + "a" * 30 + " x"])
def test_token_shape(bad):
    with pytest.raises(ConfigError):
        config.check_token_shape(bad)
    assert config.check_token_shape(f"  {TOKEN}\n") == TOKEN


def test_member_roles_come_from_the_policy_file(env):
    import os

    from aipager.proto import paths

    with pytest.raises(ConfigError, match="unknown role 'reviewer'"):
        config.check_role("reviewer", env)
    os.makedirs(os.path.dirname(paths.policy_user_file(env)), exist_ok=True)
    with open(paths.policy_user_file(env), "w", encoding="utf-8") as fh:
        json.dump({"version": 1, "roles": {"reviewer": {"extends": "read_only"}}}, fh)
    assert config.check_role("reviewer", env) == "reviewer"
    doc = {"bot_token": TOKEN, "chat_id": 1, "members": [{"id": 3, "role": "reviewer"}]}
    assert config.from_json(doc).members[0].role == "reviewer"


def test_a_new_sessions_folder_is_the_configs_when_it_is_one_here_else_home(tmp_path):
    """One rule for the chat, the page and a hub's host (``config.new_session_folder``)."""
    env = {"HOME": str(tmp_path / "home")}
    work = tmp_path / "work"
    work.mkdir()
    chosen = config.Config(bot_token="1:x", chat_id=1, extra={"new_session_folder": str(work)})
    gone = config.Config(bot_token="1:x", chat_id=1,
                         extra={"new_session_folder": str(tmp_path / "gone")})
    assert config.new_session_folder(env, chosen) == str(work)
    assert config.new_session_folder(env, gone) == env["HOME"]
    assert config.new_session_folder(env, None) == env["HOME"]
