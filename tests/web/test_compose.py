"""The composition root gives the daemon the page's notifier and service, beside the chat's."""

from __future__ import annotations

import os

import pytest

from aipager import config, main
from aipager.daemon.notifier import FanoutNotifier
from aipager.proto.errors import ConfigError
from aipager.web.live import WebNotifier
from aipager.web.service import Settings

from .conftest import OWNER_ID, TOKEN


def _targets(daemon) -> list:
    last = daemon.notifier._targets[-1]
    return list(last._targets) if isinstance(last, FanoutNotifier) else [last]


def _clients(daemon) -> list[str]:
    """The services that are clients (a bound ``run``), beside the daemon's own chores."""
    return [type(s.__self__).__name__ for s in daemon._services if hasattr(s, "__self__")]


def test_without_telegram_the_page_is_the_only_client():
    daemon = main.compose(dict(os.environ), None)
    assert [type(t) for t in _targets(daemon)] == [WebNotifier]
    assert _clients(daemon) == ["WebPage"]


def test_with_telegram_both_clients_get_every_output():
    env = dict(os.environ)
    cfg = config.Config(bot_token=TOKEN, chat_id=OWNER_ID)
    daemon = main.compose(env, cfg)
    kinds = [type(t).__name__ for t in _targets(daemon)]
    assert kinds == ["ChatNotifier", "WebNotifier"]
    off = main.compose(env, cfg, web=False)
    assert [type(t).__name__ for t in _targets(off)] == ["ChatNotifier"]
    # the page is one service more, beside the chat's
    assert _clients(daemon) == ["WebPage"] and _clients(off) == []
    assert len(daemon._services) == len(off._services) + 1


def test_settings_from_the_environment_then_the_config():
    cfg = config.Config(bot_token=TOKEN, chat_id=OWNER_ID, extra={
        "web_port": 9001, "web_public_url": "https://box.example.ts.net/"})
    settings = Settings.from_env({}, cfg)
    assert (settings.host, settings.port, settings.public_url) == \
        ("127.0.0.1", 9001, "https://box.example.ts.net")
    assert settings.hosts(9001) == {"127.0.0.1:9001", "box.example.ts.net"}
    assert settings.origins(9001) == {"http://127.0.0.1:9001", "https://box.example.ts.net"}
    assert Settings.from_env({"AIPAGER_WEB_PORT": "0"}, cfg).port == 0
    with pytest.raises(ConfigError):
        Settings.from_env({"AIPAGER_WEB_PORT": "http"}, None)
    with pytest.raises(ConfigError):
        Settings.from_env({"AIPAGER_WEB_PUBLIC_URL": "http://plain.example"}, None)
