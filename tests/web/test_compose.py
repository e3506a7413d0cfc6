"""The composition root gives the daemon the page's notifier and service, beside the chat's."""

from __future__ import annotations

import os
import time

import pytest

from aipager import config, main
from aipager.port.outputs import FanoutNotifier
from aipager.proto.errors import ConfigError
from aipager.web.live import WebNotifier
from aipager.web.auth import AuthError
from aipager.web.service import Settings, WebPage

from .conftest import OWNER_ID, TOKEN, init_data
from fakes.port import FakePort
from support.door import door


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


def test_the_mini_apps_initdata_age_is_an_hour_unless_set():
    assert Settings.from_env({}, None).init_data_max_age == 3600
    cfg = config.Config(bot_token=TOKEN, chat_id=OWNER_ID, extra={"web_init_data_max_age": 600})
    assert Settings.from_env({}, cfg).init_data_max_age == 600
    env = {"AIPAGER_WEB_INIT_DATA_MAX_AGE": "7200"}
    assert Settings.from_env(env, cfg).init_data_max_age == 7200
    # a week, none, a word: refused at start, not taken as "forever" or "never"
    for bad in (7 * 24 * 3600, 0, -5, "soon", True):
        with pytest.raises(ConfigError, match="web_init_data_max_age"):
            Settings.from_env({}, config.Config(bot_token=TOKEN, chat_id=OWNER_ID,
                                                extra={"web_init_data_max_age": bad}))


def test_the_page_checks_initdata_against_the_age_it_was_set_up_with():
    env = dict(os.environ)
    cfg = config.Config(bot_token=TOKEN, chat_id=OWNER_ID)
    config.save(env, cfg)
    owner = {"id": OWNER_ID, "first_name": "Owner"}
    page = WebPage(env, cfg, Settings(init_data_max_age=600), lambda line: None)
    page.attach(door(FakePort(env)))
    with pytest.raises(AuthError, match="too old"):
        page.people.telegram(init_data(owner, auth_date=int(time.time()) - 700))
    assert page.people.telegram(init_data(owner, auth_date=int(time.time()) - 500)).role == "owner"


def test_the_chat_and_the_page_ask_one_service_the_root_composed():
    """One door: ``main`` builds the service of the use cases once and hands it to every
    surface; neither builds its own."""
    from aipager.bot.service import ChatBot
    from aipager.daemon.service import Service

    env = dict(os.environ)
    daemon = main.compose(env, config.Config(bot_token=TOKEN, chat_id=OWNER_ID))
    # each surface reports its health to the daemon (``add_facts``): that is how to find them
    clients = {type(f.__self__): f.__self__ for f in daemon.facts if hasattr(f, "__self__")}
    chat, page = clients[ChatBot], clients[WebPage]
    assert isinstance(chat.port, Service) and chat.port.port is daemon
    assert page.actions.port is chat.port
